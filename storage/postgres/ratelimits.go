package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/walletgate/walletgate/storage"
)

const (
	// limitHitSQL counts a hit in one statement: it opens a window when
	// there is none or the stored one has ended ($2 = now), and otherwise
	// counts the hit only while fewer than $4 were counted. A denied hit
	// updates nothing and returns no row; the row stays locked by this
	// transaction, so the follow-up read sees the window that denied it.
	limitHitSQL = `INSERT INTO {s}.rate_limit_windows AS w (key, window_end, hits) VALUES ($1, $3, 1)
	ON CONFLICT (key) DO UPDATE SET
		window_end = CASE WHEN w.window_end <= $2 THEN EXCLUDED.window_end ELSE w.window_end END,
		hits = CASE WHEN w.window_end <= $2 THEN 1 ELSE w.hits + 1 END
	WHERE w.window_end <= $2 OR w.hits < $4
	RETURNING 1`
	// limitOpenSQL opens a window without counting, for limits below one.
	limitOpenSQL = `INSERT INTO {s}.rate_limit_windows AS w (key, window_end, hits) VALUES ($1, $3, 0)
	ON CONFLICT (key) DO UPDATE SET
		window_end = CASE WHEN w.window_end <= $2 THEN EXCLUDED.window_end ELSE w.window_end END,
		hits = CASE WHEN w.window_end <= $2 THEN 0 ELSE w.hits END
	RETURNING window_end`
	limitEndSQL = `SELECT window_end FROM {s}.rate_limit_windows WHERE key = $1`
)

type limitRepo struct{ t *tx }

func (r limitRepo) Allow(ctx context.Context, k string, now time.Time, window time.Duration, limit int) (time.Duration, error) {
	if err := r.t.valid("rate-limit window", key("key", k)); err != nil {
		return 0, err
	}
	end := now.Add(window)
	if limit < 1 {
		var stored time.Time
		_, err := r.t.queryRow(ctx, r.t.s.q.limitOpen, []any{k, now, end}, func(row pgx.Row) error { return row.Scan(utc(&stored)) })
		if err != nil {
			return 0, wrap("open rate-limit window", err)
		}
		return max(stored.Sub(now), time.Microsecond), nil
	}
	found, err := r.t.queryRow(ctx, r.t.s.q.limitHit, []any{k, now, end, int64(limit)}, func(row pgx.Row) error { return row.Scan(new(int32)) })
	if err != nil {
		return 0, wrap("count rate-limit hit", err)
	}
	if found {
		return 0, nil
	}
	var stored time.Time
	found, err = r.t.queryRow(ctx, r.t.s.q.limitEnd, []any{k}, func(row pgx.Row) error { return row.Scan(utc(&stored)) })
	switch {
	case err != nil:
		return 0, wrap("read rate-limit window", err)
	case !found:
		return 0, storage.ErrNotFound // unreachable: the row is locked by this transaction
	}
	return max(stored.Sub(now), time.Microsecond), nil
}

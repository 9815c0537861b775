package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

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
	// limitHitDeferSQL is limitHitSQL for Hit, a deferred write: the guard
	// of a denied hit fails (guard_failed, SQLSTATE WG001).
	limitHitDeferSQL = `WITH hit AS (` + limitHitSQL + `) SELECT CASE WHEN count(*) = 0 THEN {s}.guard_failed('rate-limit hit') ELSE 1 END FROM hit`
)

type limitRepo struct{ t *tx }

// allow counts one hit on k at now when the window has room and returns
// 0; otherwise it counts nothing and returns how long until the window
// closes. It is sent at once.
func (r limitRepo) allow(ctx context.Context, k string, now time.Time, window time.Duration, limit int) (time.Duration, error) {
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
	return r.windowWait(ctx, k, now)
}

// windowWait reads how long until the window of k, which refused a hit of
// this transaction and is held by it, ends.
func (r limitRepo) windowWait(ctx context.Context, k string, now time.Time) (time.Duration, error) {
	var stored time.Time
	found, err := r.t.queryRow(ctx, r.t.s.q.limitEnd, []any{k}, func(row pgx.Row) error { return row.Scan(utc(&stored)) })
	switch {
	case err != nil:
		return 0, wrap("read rate-limit window", err)
	case !found:
		return 0, storage.ErrNotFound // unreachable: the row is locked by this transaction
	}
	return max(stored.Sub(now), time.Microsecond), nil
}

// Hit is a deferred write: the hit travels with the transaction's next
// statement or its COMMIT. A denied hit raises, and Store.attempt, after
// the rollback, reads when the window closes (see hitMiss). Inside a host
// transaction, and for limits below one, it is sent at once (allow).
func (r limitRepo) Hit(ctx context.Context, k string, now time.Time, window time.Duration, limit int) error {
	if limit < 1 || r.t.inHost() {
		wait, err := r.allow(ctx, k, now, window, limit)
		if err == nil && wait > 0 {
			return &storage.RateLimitError{Wait: wait}
		}
		return err
	}
	if err := r.t.valid("rate-limit window", key("key", k)); err != nil {
		return err
	}
	miss := &hitMiss{key: k, now: now}
	b := &batch{}
	b.Queue(r.t.s.q.limitHitDefer, k, now, now.Add(window), int64(limit)).Fn = func(br pgx.BatchResults) error {
		_, err := br.Exec()
		if pgCode(err) == codeGuardFailed {
			return miss
		}
		return err
	}
	return wrap("count rate-limit hit", r.t.deferWrite(ctx, b))
}

// hitMiss is the error of a deferred Hit that was denied. The transaction
// is aborted then; resolve, run after it rolled back, reads when the
// window closes and answers a *storage.RateLimitError.
type hitMiss struct {
	key string
	now time.Time
}

func (m *hitMiss) Error() string { return "postgres: count rate-limit hit: denied" }

// resolveHit answers a hitMiss on conn, outside any transaction.
func (s *Store) resolveHit(ctx context.Context, conn *pgxpool.Conn, m *hitMiss) error {
	var end time.Time
	err := conn.QueryRow(ctx, s.q.limitEnd.sql, m.key).Scan(utc(&end))
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		end = m.now // swept since: the window is over
	case err != nil:
		return wrap("read rate-limit window", err)
	}
	return &storage.RateLimitError{Wait: max(end.Sub(m.now), time.Microsecond)}
}

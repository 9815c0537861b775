package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/walletgate/walletgate/storage"
)

const idemColumns = `scope, key, token, fingerprint, state, status, header, body, created_at, expires_at`

const (
	// idemBeginSQL admits one request per key: the primary key on (scope,
	// key) lets one of concurrent inserts through; the others wait for its
	// transaction and then, under ON CONFLICT, re-check the WHERE clause on
	// the committed row: only an expired row ($11 = now) is replaced. No
	// row returned means a live record exists.
	idemBeginSQL = `INSERT INTO {s}.idempotency_keys AS k (` + idemColumns + `)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
	ON CONFLICT (scope, key) DO UPDATE SET token = EXCLUDED.token, fingerprint = EXCLUDED.fingerprint,
		state = EXCLUDED.state, status = EXCLUDED.status, header = EXCLUDED.header, body = EXCLUDED.body,
		created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at
	WHERE k.expires_at <= $11
	RETURNING 1`
	idemGetSQL = `SELECT ` + idemColumns + ` FROM {s}.idempotency_keys WHERE scope = $1 AND key = $2`
	// idemCompleteSQL is compare-and-set on the reservation's token.
	idemCompleteSQL = `UPDATE {s}.idempotency_keys SET state = 'COMPLETE', status = $4, header = $5, body = $6, expires_at = $7
	WHERE scope = $1 AND key = $2 AND token = $3 AND state = 'IN_PROGRESS'`
	idemExistsSQL  = `SELECT 1 FROM {s}.idempotency_keys WHERE scope = $1 AND key = $2`
	idemReleaseSQL = `DELETE FROM {s}.idempotency_keys WHERE scope = $1 AND key = $2 AND token = $3 AND state = 'IN_PROGRESS'`
)

type idemRepo struct{ t *tx }

func encodeHeader(h map[string][]string) ([]byte, error) {
	if h == nil {
		return nil, nil
	}
	return json.Marshal(h)
}

func scanIdem(row pgx.Row, r *storage.IdempotencyRecord) error {
	var header []byte
	var state string
	err := row.Scan(&r.Scope, &r.Key, &r.Token, &r.Fingerprint, &state, &r.Status, &header, &r.Body,
		utc(&r.CreatedAt), utc(&r.ExpiresAt))
	if err != nil {
		return err
	}
	r.State = storage.IdempotencyState(state)
	if header != nil {
		if err := json.Unmarshal(header, &r.Header); err != nil {
			return fmt.Errorf("decoding the stored header: %w", err)
		}
	}
	return nil
}

func (r idemRepo) fields(rec *storage.IdempotencyRecord) error {
	fs := []field{key("Scope", rec.Scope), key("Key", rec.Key), text("Token", rec.Token), text("State", string(rec.State))}
	for k, vs := range rec.Header {
		fs = append(fs, text("Header", k))
		for _, v := range vs {
			fs = append(fs, text("Header", v))
		}
	}
	return r.t.valid("idempotency record", fs...)
}

func (r idemRepo) Begin(ctx context.Context, rec *storage.IdempotencyRecord, now time.Time) error {
	if err := r.fields(rec); err != nil {
		return err
	}
	header, err := encodeHeader(rec.Header)
	if err != nil {
		return err
	}
	tag, err := r.t.exec(ctx, r.t.s.q.idemBegin, rec.Scope, rec.Key, rec.Token, rec.Fingerprint, string(rec.State),
		rec.Status, header, rec.Body, rec.CreatedAt, rec.ExpiresAt, now)
	if err != nil {
		return wrap("begin idempotency record", err)
	}
	if tag.RowsAffected() == 0 {
		return storage.ErrDuplicate
	}
	return nil
}

func (r idemRepo) Get(ctx context.Context, scope, k string) (storage.IdempotencyRecord, error) {
	var rec storage.IdempotencyRecord
	if !storableKey(scope) || !storableKey(k) {
		return rec, notFoundOrDone(r.t)
	}
	found, err := r.t.queryRow(ctx, r.t.s.q.idemGet, []any{scope, k}, func(row pgx.Row) error { return scanIdem(row, &rec) })
	switch {
	case err != nil:
		return storage.IdempotencyRecord{}, wrap("get idempotency record", err)
	case !found:
		return storage.IdempotencyRecord{}, storage.ErrNotFound
	}
	return rec, nil
}

func (r idemRepo) Complete(ctx context.Context, rec *storage.IdempotencyRecord) error {
	if err := r.fields(rec); err != nil {
		return err
	}
	header, err := encodeHeader(rec.Header)
	if err != nil {
		return err
	}
	tag, err := r.t.exec(ctx, r.t.s.q.idemComplete, rec.Scope, rec.Key, rec.Token, rec.Status, header, rec.Body, rec.ExpiresAt)
	if err != nil {
		return wrap("complete idempotency record", err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	found, err := r.t.queryRow(ctx, r.t.s.q.idemExists, []any{rec.Scope, rec.Key}, func(pgx.Row) error { return nil })
	switch {
	case err != nil:
		return wrap("complete idempotency record", err)
	case found:
		return storage.ErrConflict
	}
	return storage.ErrNotFound
}

func (r idemRepo) Release(ctx context.Context, scope, k, token string) error {
	if !storableKey(scope) || !storableKey(k) || !storableText(token) {
		return notFoundOrDone(r.t)
	}
	tag, err := r.t.exec(ctx, r.t.s.q.idemRelease, scope, k, token)
	if err != nil {
		return wrap("release idempotency record", err)
	}
	if tag.RowsAffected() == 0 {
		return storage.ErrNotFound
	}
	return nil
}

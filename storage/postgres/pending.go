package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/walletgate/walletgate/storage"
)

const pendingColumns = `id, kind, account_id, method, path, body_digest, payload, signer_rule, signer_ref, data,
	created_at, expires_at, consumed_at`

const (
	pendingGetSQL = `SELECT ` + pendingColumns + ` FROM {s}.pending_requests WHERE id = $1`
	// pendingSpendSQL is the single-use compare-and-set of Consume, a
	// deferred write: of concurrent consumers (on any replica) one updates
	// the row, the others wait for its lock, re-check the WHERE clause on
	// the committed row and match nothing, and then its guard fails
	// (guard_failed, SQLSTATE WG001), so a miss aborts the transaction
	// instead of passing unnoticed.
	pendingSpendSQL = `WITH spent AS (UPDATE {s}.pending_requests SET consumed_at = $2
	WHERE id = $1 AND consumed_at IS NULL AND expires_at > $2 RETURNING 1)
	SELECT CASE WHEN count(*) > 0 THEN 1 ELSE {s}.guard_failed(` + consumeCauseHead + `{s}.pending_requests` + consumeCauseTail + `) END FROM spent`
	// pendingLimitedSQL inserts the request only while its account has
	// fewer than $14 live requests. It runs after the advisory lock of the
	// account's requests was granted, in its own statement, so its count
	// reads a snapshot that holds every request committed under that lock.
	pendingLimitedSQL = `INSERT INTO {s}.pending_requests (` + pendingColumns + `)
	SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13
	WHERE (SELECT count(*) FROM {s}.pending_requests
		WHERE account_id = $3 AND consumed_at IS NULL AND expires_at > $11 AND bound_scope IS NULL) < $14
	ON CONFLICT DO NOTHING`
	// pendingLimitedDeferSQL is pendingLimitedSQL for a deferred insert: its
	// guard fails (guard_failed, SQLSTATE WG001) when it inserted nothing
	// (the limit, or a duplicate id), so the transaction aborts and the
	// COMMIT that carried it rolls back.
	pendingLimitedDeferSQL = `WITH made AS (INSERT INTO {s}.pending_requests (` + pendingColumns + `)
	SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13
	WHERE (SELECT count(*) FROM {s}.pending_requests
		WHERE account_id = $3 AND consumed_at IS NULL AND expires_at > $11 AND bound_scope IS NULL) < $14
	ON CONFLICT DO NOTHING RETURNING 1)
	SELECT CASE WHEN count(*) = 0 THEN {s}.guard_failed('pending request limit') ELSE 1 END FROM made`
	pendingLiveStateSQL = `SELECT EXISTS (SELECT 1 FROM {s}.pending_requests WHERE id = $1),
	(SELECT min(expires_at) FROM {s}.pending_requests
		WHERE account_id = $2 AND consumed_at IS NULL AND expires_at > $3 AND bound_scope IS NULL)`
	// pendingBoundedSQL stores a request in the scope $14 and deletes the
	// scope's requests that no longer count at its creation time
	// (consumed or expired) and, of the live ones, all but the $15-1
	// newest. It runs after the advisory lock of the scope was granted,
	// in its own statement, so its snapshot holds every request committed
	// under that lock. The DELETE and the INSERT share that snapshot: the
	// DELETE never sees the new row, and the id $1 is kept out of it, so
	// an id that exists raises a unique violation (no ON CONFLICT: a
	// deferred write) with nothing deleted. A row consumed concurrently is
	// deleted after that commits, or kept when it was among the newest.
	pendingBoundedSQL = `WITH gone AS (DELETE FROM {s}.pending_requests
		WHERE bound_scope = $14 AND id <> $1 AND id NOT IN (SELECT id FROM {s}.pending_requests
			WHERE bound_scope = $14 AND consumed_at IS NULL AND expires_at > $11
			ORDER BY created_at DESC, id COLLATE "C" DESC LIMIT $15::bigint - 1))
	INSERT INTO {s}.pending_requests (` + pendingColumns + `, bound_scope)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`
)

type pendingRepo struct{ t *tx }

func scanPending(row pgx.Row, p *storage.PendingRequest) error {
	var data []byte
	err := row.Scan(&p.ID, &p.Kind, &p.AccountID, &p.Method, &p.Path, &p.BodyDigest, &p.Payload, &p.SignerRule,
		&p.SignerRef, &data, utc(&p.CreatedAt), utc(&p.ExpiresAt), utc(&p.ConsumedAt))
	p.Data = json.RawMessage(data)
	return err
}

// Create stores p within its account's quota (createLimited) or its
// scope's (createBounded).
func (r pendingRepo) Create(ctx context.Context, p *storage.PendingRequest, quota storage.Quota) error {
	if quota.Limit <= 0 {
		return errors.New("postgres: a pending request's quota needs a positive limit")
	}
	if quota.Scope != "" {
		return r.createBounded(ctx, p, quota.Scope, quota.Limit)
	}
	return r.createLimited(ctx, p, quota.Limit)
}

// createLimited takes a transaction-level advisory lock of the account's
// requests (derived from the schema and the account, like LockEmail) and
// inserts under it, both in one round trip; only when nothing was inserted
// does a read tell a duplicate id from the limit.
func (r pendingRepo) createLimited(ctx context.Context, p *storage.PendingRequest, limit int) error {
	err := r.t.valid("pending request", key("ID", p.ID), text("Kind", p.Kind), key("AccountID", p.AccountID),
		text("Method", p.Method), text("Path", p.Path), text("SignerRule", p.SignerRule), text("SignerRef", p.SignerRef))
	if err != nil {
		return err
	}
	if !r.t.inHost() {
		// A deferred write: the lock and the insert travel with the
		// transaction's next statement or its COMMIT. A refusal raises,
		// and Store.attempt, after the rollback, tells the limit from a
		// duplicate id (see limitMiss).
		miss := &limitMiss{id: p.ID, accountID: p.AccountID, at: p.CreatedAt}
		b := &batch{}
		b.Queue(r.t.s.q.advisoryLock, lockKey("pending/"+p.AccountID, r.t.s.cfg.Schema))
		b.Queue(r.t.s.q.pendingLimitedDefer, p.ID, p.Kind, p.AccountID, p.Method, p.Path, p.BodyDigest,
			p.Payload, p.SignerRule, p.SignerRef, []byte(p.Data), p.CreatedAt, p.ExpiresAt, nullTime(p.ConsumedAt), limit).
			Fn = func(br pgx.BatchResults) error {
			_, err := br.Exec()
			if pgCode(err) == codeGuardFailed {
				return miss
			}
			return err
		}
		return wrap("create pending request", r.t.deferWrite(ctx, b))
	}
	var inserted int64
	b := &batch{}
	b.Queue(r.t.s.q.advisoryLock, lockKey("pending/"+p.AccountID, r.t.s.cfg.Schema)).Exec(func(pgconn.CommandTag) error { return nil })
	b.Queue(r.t.s.q.pendingLimited, p.ID, p.Kind, p.AccountID, p.Method, p.Path, p.BodyDigest,
		p.Payload, p.SignerRule, p.SignerRef, []byte(p.Data), p.CreatedAt, p.ExpiresAt, nullTime(p.ConsumedAt), limit).
		Exec(func(ct pgconn.CommandTag) error { inserted = ct.RowsAffected(); return nil })
	if err := r.t.send(ctx, b); err != nil {
		return wrap("create pending request", err)
	}
	if inserted == 1 {
		return nil
	}
	var exists bool
	var earliest pgtype.Timestamptz
	_, err = r.t.queryRow(ctx, r.t.s.q.pendingLiveState, []any{p.ID, p.AccountID, p.CreatedAt}, func(row pgx.Row) error {
		return row.Scan(&exists, &earliest)
	})
	switch {
	case err != nil:
		return wrap("create pending request", err)
	case exists:
		return storage.ErrDuplicate
	}
	return &storage.LimitError{RetryAt: earliest.Time.UTC()}
}

// createBounded is a deferred write (see deferWrite): a transaction-level
// advisory lock of the scope (derived from the schema and the scope, like
// LockEmail) and, under it, one statement that deletes what the scope no
// longer keeps and inserts p, both with the transaction's next statement
// or its COMMIT. An id that exists aborts the transaction with an error
// wrapping storage.ErrDuplicate, and the deletions roll back with it.
func (r pendingRepo) createBounded(ctx context.Context, p *storage.PendingRequest, scope string, limit int) error {
	err := r.t.valid("pending request", key("ID", p.ID), text("Kind", p.Kind), key("AccountID", p.AccountID),
		text("Method", p.Method), text("Path", p.Path), text("SignerRule", p.SignerRule), text("SignerRef", p.SignerRef),
		key("Scope", scope))
	if err != nil {
		return err
	}
	b := &batch{}
	b.Queue(r.t.s.q.advisoryLock, lockKey("pending-scope/"+scope, r.t.s.cfg.Schema))
	b.Queue(r.t.s.q.pendingBounded, p.ID, p.Kind, p.AccountID, p.Method, p.Path, p.BodyDigest,
		p.Payload, p.SignerRule, p.SignerRef, []byte(p.Data), p.CreatedAt, p.ExpiresAt, nullTime(p.ConsumedAt), scope, limit)
	return wrap("create bounded pending request", r.t.deferWrite(ctx, b))
}

// limitMiss is the error of a deferred createLimited that inserted
// nothing. The transaction is aborted then; resolve, run after it rolled
// back, reads whether the id exists and when the account's first live
// request expires, and answers storage.ErrDuplicate or a
// *storage.LimitError.
type limitMiss struct {
	id, accountID string
	at            time.Time
}

func (m *limitMiss) Error() string {
	return "postgres: create pending request: nothing inserted (limit or duplicate id)"
}

// resolveLimit answers a limitMiss on conn, outside any transaction.
func (s *Store) resolveLimit(ctx context.Context, conn *pgxpool.Conn, m *limitMiss) error {
	var exists bool
	var earliest pgtype.Timestamptz
	err := conn.QueryRow(ctx, s.q.pendingLiveState.sql, m.id, m.accountID, m.at).Scan(&exists, &earliest)
	switch {
	case err != nil:
		return wrap("create pending request", err)
	case exists:
		return fmt.Errorf("postgres: create pending request: %w", storage.ErrDuplicate)
	}
	return &storage.LimitError{RetryAt: earliest.Time.UTC()}
}

func (r pendingRepo) Get(ctx context.Context, id string) (storage.PendingRequest, error) {
	var p storage.PendingRequest
	if !storableKey(id) {
		return p, notFoundOrDone(r.t)
	}
	found, err := r.t.queryRow(ctx, r.t.s.q.pendingGet, []any{id}, func(row pgx.Row) error { return scanPending(row, &p) })
	switch {
	case err != nil:
		return storage.PendingRequest{}, wrap("get pending request", err)
	case !found:
		return storage.PendingRequest{}, storage.ErrNotFound
	}
	return p, nil
}

// Consume is the deferred consumption (see consume).
func (r pendingRepo) Consume(ctx context.Context, id string, now time.Time) error {
	return r.t.consume(ctx, r.t.s.q.pendingSpend, id, now)
}

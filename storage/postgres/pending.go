package postgres

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/walletgate/walletgate/storage"
)

const pendingColumns = `id, kind, account_id, method, path, body_digest, payload, signer_rule, signer_ref, data,
	created_at, expires_at, consumed_at`

const (
	pendingInsertSQL = `INSERT INTO {s}.pending_requests (` + pendingColumns + `)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) ON CONFLICT DO NOTHING`
	pendingGetSQL = `SELECT ` + pendingColumns + ` FROM {s}.pending_requests WHERE id = $1`
	// pendingConsumeSQL is the single-use compare-and-set: of concurrent
	// consumers (on any replica) one updates the row, the others wait for
	// its lock, re-check the WHERE clause on the committed row and match
	// nothing.
	pendingConsumeSQL = `UPDATE {s}.pending_requests SET consumed_at = $2
	WHERE id = $1 AND consumed_at IS NULL AND expires_at > $2 RETURNING ` + pendingColumns
	pendingStateSQL = `SELECT consumed_at, expires_at FROM {s}.pending_requests WHERE id = $1`
)

type pendingRepo struct{ t *tx }

func scanPending(row pgx.Row, p *storage.PendingRequest) error {
	var data []byte
	err := row.Scan(&p.ID, &p.Kind, &p.AccountID, &p.Method, &p.Path, &p.BodyDigest, &p.Payload, &p.SignerRule,
		&p.SignerRef, &data, utc(&p.CreatedAt), utc(&p.ExpiresAt), utc(&p.ConsumedAt))
	p.Data = json.RawMessage(data)
	return err
}

func (r pendingRepo) Create(ctx context.Context, p *storage.PendingRequest) error {
	err := r.t.valid("pending request", key("ID", p.ID), text("Kind", p.Kind), key("AccountID", p.AccountID),
		text("Method", p.Method), text("Path", p.Path), text("SignerRule", p.SignerRule), text("SignerRef", p.SignerRef))
	if err != nil {
		return err
	}
	tag, err := r.t.exec(ctx, r.t.s.q.pendingInsert, p.ID, p.Kind, p.AccountID, p.Method, p.Path, p.BodyDigest,
		p.Payload, p.SignerRule, p.SignerRef, []byte(p.Data), p.CreatedAt, p.ExpiresAt, nullTime(p.ConsumedAt))
	if err != nil {
		return wrap("create pending request", err)
	}
	if tag.RowsAffected() == 0 {
		return storage.ErrDuplicate
	}
	return nil
}

func (r pendingRepo) Get(ctx context.Context, id string) (storage.PendingRequest, error) {
	var p storage.PendingRequest
	if !storableKey(id) {
		return p, notFoundOrDone(r.t)
	}
	found, err := r.t.readRow(ctx, r.t.s.q.pendingGet, []any{id}, func(row pgx.Row) error { return scanPending(row, &p) })
	switch {
	case err != nil:
		return storage.PendingRequest{}, wrap("get pending request", err)
	case !found:
		return storage.PendingRequest{}, storage.ErrNotFound
	}
	return p, nil
}

func (r pendingRepo) Consume(ctx context.Context, id string, now time.Time) (storage.PendingRequest, error) {
	var p storage.PendingRequest
	if !storableKey(id) {
		return p, notFoundOrDone(r.t)
	}
	found, err := r.t.queryRow(ctx, r.t.s.q.pendingConsume, []any{id, now}, func(row pgx.Row) error { return scanPending(row, &p) })
	switch {
	case err != nil:
		return storage.PendingRequest{}, wrap("consume pending request", err)
	case found:
		return p, nil
	}
	return storage.PendingRequest{}, r.t.consumeMiss(ctx, r.t.s.q.pendingState, id, now, "pending request")
}

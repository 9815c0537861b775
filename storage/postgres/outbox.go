package postgres

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/walletgate/walletgate/storage"
)

const eventColumns = `id, type, account_id, payload, created_at, seq, delivered_at`

const (
	outboxLockSQL   = `SELECT pg_advisory_xact_lock($1)`
	outboxInsertSQL = `INSERT INTO {s}.outbox_events (id, type, account_id, payload, created_at, delivered_at)
	VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING RETURNING seq`
	outboxUndeliveredSQL = `SELECT ` + eventColumns + ` FROM {s}.outbox_events
	WHERE delivered_at IS NULL ORDER BY seq LIMIT $1`
	outboxMarkSQL = `UPDATE {s}.outbox_events SET delivered_at = $2 WHERE id = ANY($1) AND delivered_at IS NULL`
	outboxListSQL = `SELECT ` + eventColumns + ` FROM {s}.outbox_events WHERE account_id = $1 ORDER BY seq`
)

type outboxRepo struct{ t *tx }

func scanEvent(row pgx.Row, e *storage.Event) error {
	var payload []byte
	err := row.Scan(&e.ID, &e.Type, &e.AccountID, &payload, utc(&e.CreatedAt), &e.Seq, utc(&e.DeliveredAt))
	e.Payload = json.RawMessage(payload)
	return err
}

// Append adds e and sets e.Seq. Seq comes from an identity column, drawn
// while the transaction holds an advisory lock of the schema's outbox that it
// keeps until it commits or rolls back: a transaction that appends after it
// waits, so Seq increases in commit order, as the contract requires, also
// across replicas. The price is that appending transactions serialize from
// their first Append to their end; append late in the transaction. Seq values
// of rolled-back appends are skipped.
func (r outboxRepo) Append(ctx context.Context, e *storage.Event) error {
	err := r.t.valid("event", key("ID", e.ID), text("Type", e.Type), key("AccountID", e.AccountID))
	if err != nil {
		return err
	}
	var seq int64
	found := false
	b := &pgx.Batch{}
	b.Queue(outboxLockSQL, r.t.s.outboxLock)
	b.Queue(r.t.s.q.outboxInsert, e.ID, e.Type, e.AccountID, []byte(e.Payload), e.CreatedAt, nullTime(e.DeliveredAt)).
		Query(func(rows pgx.Rows) error {
			if rows.Next() {
				found = true
				return rows.Scan(&seq)
			}
			return nil
		})
	if err := r.t.send(ctx, b); err != nil {
		return wrap("append event", err)
	}
	if !found {
		return storage.ErrDuplicate
	}
	e.Seq = seq
	return nil
}

func (r outboxRepo) list(ctx context.Context, op, sql string, arg any) ([]storage.Event, error) {
	var out []storage.Event
	err := r.t.query(ctx, sql, []any{arg}, func(rows pgx.Rows) error {
		var e storage.Event
		if err := scanEvent(rows, &e); err != nil {
			return err
		}
		out = append(out, e)
		return nil
	})
	if err != nil {
		return nil, wrap(op, err)
	}
	return out, nil
}

func (r outboxRepo) Undelivered(ctx context.Context, limit int) ([]storage.Event, error) {
	if limit <= 0 {
		return nil, r.t.check()
	}
	return r.list(ctx, "list undelivered events", r.t.s.q.outboxUndelivered, int64(limit))
}

func (r outboxRepo) MarkDelivered(ctx context.Context, ids []string, at time.Time) error {
	keep := make([]string, 0, len(ids))
	for _, id := range ids {
		if storableKey(id) { // other ids cannot exist
			keep = append(keep, id)
		}
	}
	if len(keep) == 0 {
		return r.t.check()
	}
	_, err := r.t.exec(ctx, r.t.s.q.outboxMark, keep, nullTime(at))
	return wrap("mark events delivered", err)
}

func (r outboxRepo) ListByAccount(ctx context.Context, accountID string) ([]storage.Event, error) {
	if !storableKey(accountID) {
		return nil, r.t.check()
	}
	return r.list(ctx, "list events of account", r.t.s.q.outboxList, accountID)
}

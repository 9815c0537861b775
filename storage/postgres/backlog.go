package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/walletgate/walletgate/storage"
)

// outboxBacklogSQL counts the pending events (neither delivered nor
// parked) on the partial index that holds exactly them.
const outboxBacklogSQL = `SELECT count(*), min(created_at) FROM %s.outbox_events
	WHERE delivered_at IS NULL AND parked_at IS NULL`

// OutboxBacklog returns how many events are neither delivered nor parked,
// and the earliest CreatedAt among them (zero when there is none), in one
// statement outside any transaction. It implements the BacklogStore of
// storage/relay.
func (s *Store) OutboxBacklog(ctx context.Context) (pending int64, oldest time.Time, err error) {
	var first *time.Time
	sql := fmt.Sprintf(outboxBacklogSQL, pgx.Identifier{s.cfg.Schema}.Sanitize())
	if err := s.pool.QueryRow(ctx, sql).Scan(&pending, &first); err != nil {
		return 0, time.Time{}, fmt.Errorf("postgres: reading the outbox backlog: %w", err)
	}
	if first != nil {
		oldest = first.UTC()
	}
	return pending, oldest, nil
}

// Events returns the committed events of the account, delivered or not,
// in Seq order: the account's audit trail, as the relay delivers it. With
// a context of [Store.WithTx] it reads inside the host's transaction.
func (s *Store) Events(ctx context.Context, accountID string) ([]storage.Event, error) {
	var out []storage.Event
	err := s.Atomic(ctx, func(stx storage.Tx) error {
		t := stx.(*tx)
		if !storableKey(accountID) {
			return t.check()
		}
		var err error
		out, err = outboxRepo{t}.list(ctx, "list events of account", s.q.outboxList, accountID)
		return err
	})
	return out, err
}

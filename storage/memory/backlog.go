package memory

import (
	"context"
	"time"

	"github.com/walletgate/walletgate/storage"
)

// OutboxBacklog returns how many events are neither delivered nor parked,
// and the earliest CreatedAt among them (zero when there is none), as
// committed. It implements the BacklogStore of storage/relay.
func (s *Store) OutboxBacklog(ctx context.Context) (pending int64, oldest time.Time, err error) {
	err = s.Atomic(ctx, func(stx storage.Tx) error {
		t := stx.(*tx)
		if err := t.lockS(ctx, lkOutbox, ""); err != nil {
			return err
		}
		pending, oldest = 0, time.Time{}
		for _, e := range s.events {
			if !e.DeliveredAt.IsZero() || !e.ParkedAt.IsZero() {
				continue
			}
			pending++
			if oldest.IsZero() || e.CreatedAt.Before(oldest) {
				oldest = e.CreatedAt
			}
		}
		return nil
	})
	return pending, oldest, err
}

// Events returns the committed events of the account, delivered or not,
// in Seq order: the account's audit trail, as the relay delivers it.
func (s *Store) Events(ctx context.Context, accountID string) ([]storage.Event, error) {
	var out []storage.Event
	err := s.Atomic(ctx, func(stx storage.Tx) error {
		var err error
		out, err = outboxRepo{stx.(*tx)}.list(ctx, accountID)
		return err
	})
	return out, err
}

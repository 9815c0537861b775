package storage

import (
	"context"
	"time"
)

// Publisher delivers an event to its receivers (a webhook sender, a message
// bus); the host implements it. Publish may be called more than once for an
// event (delivery is at least once): receivers deduplicate by Event.ID.
type Publisher interface {
	Publish(ctx context.Context, e Event) error
}

// DeliverEvents publishes the store's undelivered events in Seq order, at
// most limit of them, marking each delivered after its Publish succeeds. It
// stops at the first failure, so events of an account are never delivered
// out of order; the failed event and those after it are tried again on the
// next call. It returns how many events were delivered. Run it in a loop or
// on a timer; at most one loop should run per store.
func DeliverEvents(ctx context.Context, s Store, p Publisher, limit int, now func() time.Time) (int, error) {
	var batch []Event
	if err := s.Atomic(ctx, func(tx Tx) error {
		var err error
		batch, err = tx.Outbox().Undelivered(ctx, limit)
		return err
	}); err != nil {
		return 0, err
	}
	for i, e := range batch {
		if err := p.Publish(ctx, e); err != nil {
			return i, err
		}
		if err := s.Atomic(ctx, func(tx Tx) error {
			return tx.Outbox().MarkDelivered(ctx, []string{e.ID}, now())
		}); err != nil {
			return i, err
		}
	}
	return len(batch), nil
}

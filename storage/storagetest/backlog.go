package storagetest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/walletgate/walletgate/storage"
)

// backlogStore is the BacklogStore of storage/relay, which stores may
// implement to report the relay's backlog.
type backlogStore interface {
	OutboxBacklog(ctx context.Context) (pending int64, oldest time.Time, err error)
}

// testBacklog: OutboxBacklog counts the committed events neither delivered
// nor parked (leased and failed ones included) and returns the earliest
// CreatedAt among them. Skipped for a store without it.
func testBacklog(t *testing.T, newStore Factory) {
	ctx := t.Context()
	s := newStore(t)
	bs, ok := s.(backlogStore)
	if !ok {
		t.Skip("the store does not implement OutboxBacklog")
	}
	want := func(n int64, oldest time.Time) {
		t.Helper()
		got, first, err := bs.OutboxBacklog(ctx)
		if err != nil {
			t.Fatalf("OutboxBacklog: %v", err)
		}
		if got != n || !first.Equal(oldest) {
			t.Fatalf("OutboxBacklog = %d, %v; want %d, %v", got, first, n, oldest)
		}
	}
	want(0, time.Time{})
	a1, a2, a3 := id(t, "ExternalAccount"), id(t, "ExternalAccount"), id(t, "ExternalAccount")
	evs := make([]storage.Event, 4)
	for i, acct := range []string{a1, a2, a3, a1} {
		evs[i] = storage.Event{ID: id(t, "Webhook"), Type: "EXTERNAL_ACCOUNT.STATUS_UPDATED", AccountID: acct,
			Payload: json.RawMessage(`{}`), CreatedAt: t0.Add(time.Duration(i) * time.Second)}
		run(t, s, func(tx storage.Tx) error { return tx.Outbox().Append(ctx, &evs[i]) })
	}
	// An uncommitted append is not counted.
	err := s.Atomic(ctx, func(tx storage.Tx) error {
		e := storage.Event{ID: id(t, "Webhook"), Type: "X", AccountID: a2, Payload: json.RawMessage(`{}`), CreatedAt: t0.Add(-time.Hour)}
		if err := tx.Outbox().Append(ctx, &e); err != nil {
			return err
		}
		return errRollback
	})
	wantErr(t, "rolled back Append", err, errRollback)
	want(4, t0)

	now := t0.Add(time.Hour)
	var leased []storage.Event
	run(t, s, func(tx storage.Tx) error {
		var err error
		leased, err = tx.Outbox().Lease(ctx, "r1", now, time.Minute, 10)
		return err
	})
	if len(leased) != 3 {
		t.Fatalf("leased %d events, want 3 (one per account)", len(leased))
	}
	want(4, t0) // leased events are still pending
	run(t, s, func(tx storage.Tx) error {
		ob := tx.Outbox()
		if err := ob.MarkDelivered(ctx, []string{evs[0].ID}, now); err != nil {
			return err
		}
		if err := ob.Park(ctx, evs[1].ID, "r1", now, "gone"); err != nil {
			return err
		}
		return ob.Retry(ctx, evs[2].ID, "r1", now.Add(time.Minute), "busy")
	})
	want(2, evs[2].CreatedAt) // evs[2] failed and waits; evs[3] is due
}

package postgres_test

import (
	"errors"
	"testing"
	"time"

	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/storagetest"
)

// TestOutboxSeqFollowsCommitOrder: a transaction that appends while another
// appending transaction is open (its append sent, here by the read that
// follows it) waits for it, so its Seq is larger and it commits after: a
// publisher never sees Seq n+1 committed before n.
func TestOutboxSeqFollowsCommitOrder(t *testing.T) {
	ctx := t.Context()
	pool := newPool(t, 4)
	s := newStore(t, pool)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a := storage.Event{ID: newID(t, "Webhook"), Type: "T", AccountID: "x", CreatedAt: now}
	b := storage.Event{ID: newID(t, "Webhook"), Type: "T", AccountID: "x", CreatedAt: now}
	appended := make(chan struct{})
	release := make(chan struct{})
	aDone := make(chan time.Time, 1)
	go func() {
		err := s.Atomic(ctx, func(tx storage.Tx) error {
			if err := tx.Outbox().Append(ctx, &a); err != nil {
				return err
			}
			if _, err := tx.PendingRequests().Get(ctx, "Request:none"); !errors.Is(err, storage.ErrNotFound) {
				return err
			}
			close(appended)
			<-release
			return nil
		})
		if err != nil {
			t.Error(err)
		}
		aDone <- time.Now()
	}()
	<-appended
	bErr := make(chan error, 1)
	go func() { bErr <- s.Atomic(ctx, func(tx storage.Tx) error { return tx.Outbox().Append(ctx, &b) }) }()
	select {
	case err := <-bErr:
		t.Fatalf("the second append committed (%v) while the first transaction was open", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	<-aDone
	if err := <-bErr; err != nil {
		t.Fatal(err)
	}
	if b.Seq <= a.Seq {
		t.Fatalf("Seq %d committed after Seq %d", b.Seq, a.Seq)
	}
	if evs := storagetest.Events(t, s, "x"); len(evs) != 2 || evs[0].ID != a.ID || evs[1].ID != b.ID {
		t.Fatalf("Events = %v; want a then b", evs)
	}
}

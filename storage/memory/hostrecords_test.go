package memory_test

import (
	"context"
	"testing"
	"time"

	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/memory"
)

// TestRecordsListHoldsGroup: a List of a kind and group holds it until
// its transaction ends, so a Create in that group waits and the List reads
// the same twice; and a Create holds the group until it ends, so a List
// waits and then sees the record.
func TestRecordsListHoldsGroup(t *testing.T) {
	ctx := context.Background()
	s := memory.New()
	list := func(tx storage.Tx) int {
		got, err := tx.Records().List(ctx, "k", "g")
		if err != nil {
			t.Fatal(err)
		}
		return len(got)
	}
	create := func(key string) error {
		return s.Atomic(ctx, func(tx storage.Tx) error {
			return tx.Records().Create(ctx, &storage.Record{Kind: "k", Key: key, Group: "g", CreatedAt: benchT0})
		})
	}

	holding, created := make(chan struct{}), make(chan error, 1)
	err := s.Atomic(ctx, func(tx storage.Tx) error {
		if n := list(tx); n != 0 {
			t.Fatalf("the group holds %d records, want none", n)
		}
		go func() {
			<-holding
			created <- create("a")
		}()
		close(holding)
		select {
		case err := <-created:
			t.Fatalf("a Create in the group returned %v while a List of it was open", err)
		case <-time.After(50 * time.Millisecond):
		}
		if n := list(tx); n != 0 {
			t.Fatalf("a second List in the transaction found %d records, want none", n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-created; err != nil {
		t.Fatalf("the Create after the List ended: %v", err)
	}

	listed := make(chan int, 1)
	err = s.Atomic(ctx, func(tx storage.Tx) error {
		if err := tx.Records().Create(ctx, &storage.Record{Kind: "k", Key: "b", Group: "g", CreatedAt: benchT0}); err != nil {
			return err
		}
		go func() {
			var n int
			err := s.Atomic(ctx, func(tx storage.Tx) error {
				got, err := tx.Records().List(ctx, "k", "g")
				n = len(got)
				return err
			})
			if err != nil {
				n = -1
			}
			listed <- n
		}()
		select {
		case n := <-listed:
			t.Fatalf("a List of the group found %d records while a Create in it was open", n)
		case <-time.After(50 * time.Millisecond):
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := <-listed; n != 2 {
		t.Fatalf("the List after the Create ended found %d records, want 2", n)
	}
}

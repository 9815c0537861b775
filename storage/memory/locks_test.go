package memory_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/memory"
)

// These tests pin the concurrency design of the store: no store-wide lock,
// record locks held until the transaction ends, and conflicts resolved by
// rerunning a transaction rather than by deadlock.

func newAccounts(t *testing.T, s storage.Store, n int) []string {
	t.Helper()
	ctx := context.Background()
	ids := make([]string, n)
	err := s.Atomic(ctx, func(tx storage.Tx) error {
		for i := range ids {
			a := storage.InternalAccount{ID: benchID("InternalAccount"), CustomerID: "Customer:c", CreatedAt: benchT0}
			if err := tx.InternalAccounts().Create(ctx, &a); err != nil {
				return err
			}
			ids[i] = a.ID
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// TestDistinctRecordsInParallel: a transaction that holds one account does
// not keep another from committing on another account.
func TestDistinctRecordsInParallel(t *testing.T) {
	ctx := context.Background()
	s := memory.New()
	ids := newAccounts(t, s, 2)
	holding, release := make(chan struct{}), make(chan struct{})
	done := make(chan error)
	go func() {
		done <- s.Atomic(ctx, func(tx storage.Tx) error {
			if _, err := tx.InternalAccounts().Lock(ctx, ids[0]); err != nil {
				return err
			}
			close(holding)
			<-release
			return nil
		})
	}()
	<-holding
	c, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err := s.Atomic(c, func(tx storage.Tx) error {
		a, err := tx.InternalAccounts().Lock(c, ids[1])
		if err != nil {
			return err
		}
		a.Email = "b@example.com"
		return tx.InternalAccounts().Update(c, &a)
	})
	if err != nil {
		t.Fatalf("a transaction on another account did not commit while the first was open: %v", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestLockHeldUntilEnd: a second transaction on the same account waits for
// the first to end and then sees what it committed.
func TestLockHeldUntilEnd(t *testing.T) {
	ctx := context.Background()
	s := memory.New()
	id := newAccounts(t, s, 1)[0]
	holding := make(chan struct{})
	var ended atomic.Bool
	done := make(chan error)
	go func() {
		done <- s.Atomic(ctx, func(tx storage.Tx) error {
			a, err := tx.InternalAccounts().Lock(ctx, id)
			if err != nil {
				return err
			}
			close(holding)
			time.Sleep(50 * time.Millisecond)
			a.Email = "first@example.com"
			err = tx.InternalAccounts().Update(ctx, &a)
			ended.Store(true)
			return err
		})
	}()
	<-holding
	err := s.Atomic(ctx, func(tx storage.Tx) error {
		a, err := tx.InternalAccounts().Get(ctx, id)
		if err != nil {
			return err
		}
		if !ended.Load() || a.Email != "first@example.com" || a.Version != 2 {
			t.Errorf("read %q version %d before the holder ended", a.Email, a.Version)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestOppositeOrder: transactions that lock two accounts in opposite orders
// all commit; the losers of the conflicts are rerun.
func TestOppositeOrder(t *testing.T) {
	ctx := context.Background()
	s := memory.New()
	ids := newAccounts(t, s, 2)
	var runs, commits atomic.Int32
	var wg sync.WaitGroup
	const workers = 32
	for i := range workers {
		wg.Go(func() {
			first, second := ids[i%2], ids[1-i%2]
			err := s.Atomic(ctx, func(tx storage.Tx) error {
				runs.Add(1)
				if _, err := tx.InternalAccounts().Lock(ctx, first); err != nil {
					return err
				}
				time.Sleep(time.Millisecond)
				a, err := tx.InternalAccounts().Lock(ctx, second)
				if err != nil {
					return err
				}
				a.Email = first
				return tx.InternalAccounts().Update(ctx, &a)
			})
			if err != nil {
				t.Error(err)
				return
			}
			commits.Add(1)
		})
	}
	wg.Wait()
	if commits.Load() != workers {
		t.Fatalf("%d of %d transactions committed", commits.Load(), workers)
	}
	err := s.Atomic(ctx, func(tx storage.Tx) error {
		a, err := tx.InternalAccounts().Get(ctx, ids[0])
		b, err2 := tx.InternalAccounts().Get(ctx, ids[1])
		if v := a.Version + b.Version; v != 2+workers {
			t.Errorf("versions add up to %d, want %d: an update was lost", v, 2+workers)
		}
		return errors.Join(err, err2)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d runs for %d transactions", runs.Load(), workers)
}

// TestRerunDiscardsPanic: a run that lost a conflict and then panicked over
// the error is rerun, not re-panicked; a panic of a run that lost nothing
// propagates after the rollback.
func TestRerunDiscardsPanic(t *testing.T) {
	ctx := context.Background()
	s := memory.New()
	ids := newAccounts(t, s, 2)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			first, second := ids[i%2], ids[1-i%2]
			err := s.Atomic(ctx, func(tx storage.Tx) error {
				if _, err := tx.InternalAccounts().Lock(ctx, first); err != nil {
					panic(err)
				}
				time.Sleep(time.Millisecond)
				if _, err := tx.InternalAccounts().Lock(ctx, second); err != nil {
					panic(err)
				}
				return nil
			})
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	defer func() {
		if r := recover(); r != "boom" {
			t.Fatalf("recovered %v, want boom", r)
		}
	}()
	_ = s.Atomic(ctx, func(tx storage.Tx) error { panic("boom") })
}

// TestCancelWhileWaiting: a transaction waiting for a lock gives up when its
// context ends, and leaves nothing behind.
func TestCancelWhileWaiting(t *testing.T) {
	ctx := context.Background()
	s := memory.New()
	id := newAccounts(t, s, 1)[0]
	holding, release := make(chan struct{}), make(chan struct{})
	done := make(chan error)
	go func() {
		done <- s.Atomic(ctx, func(tx storage.Tx) error {
			if _, err := tx.InternalAccounts().Lock(ctx, id); err != nil {
				return err
			}
			close(holding)
			<-release
			return nil
		})
	}()
	<-holding
	c, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	p := storage.PendingRequest{ID: benchID("Request"), ExpiresAt: benchT0.Add(time.Hour)}
	err := s.Atomic(c, func(tx storage.Tx) error {
		if err := tx.PendingRequests().Create(c, &p, storage.Quota{Limit: 1000}); err != nil {
			return err
		}
		_, err := tx.InternalAccounts().Lock(c, id)
		return err
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("waiting transaction returned %v, want context.DeadlineExceeded", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	err = s.Atomic(ctx, func(tx storage.Tx) error {
		if _, err := tx.PendingRequests().Get(ctx, p.ID); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("the cancelled transaction's write: Get returned %v, want ErrNotFound", err)
		}
		_, err := tx.InternalAccounts().Lock(ctx, id)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestSweepWaitsForUser: Sweep does not delete an expired record that a
// running transaction holds (a pending request, which Sweep deletes without
// a transaction of its own when nobody holds it); it deletes the record once
// the holder ended.
func TestSweepWaitsForUser(t *testing.T) {
	ctx := context.Background()
	s := memory.New()
	var ids []string
	for range 2 {
		p := storage.PendingRequest{ID: benchID("Request"), Kind: "REVOKE_SESSION", AccountID: "InternalAccount:a",
			CreatedAt: benchT0, ExpiresAt: benchT0.Add(time.Minute)}
		if err := s.Atomic(ctx, func(tx storage.Tx) error { return tx.PendingRequests().Create(ctx, &p, storage.Quota{Limit: 1000}) }); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, p.ID)
	}
	held, release := make(chan struct{}), make(chan struct{})
	userDone := make(chan error, 1)
	go func() {
		userDone <- s.Atomic(ctx, func(tx storage.Tx) error {
			if _, err := tx.PendingRequests().Get(ctx, ids[0]); err != nil {
				return err
			}
			select {
			case <-held:
			default:
				close(held)
			}
			<-release
			return nil
		})
	}()
	<-held
	type result struct {
		n   int
		err error
	}
	swept := make(chan result, 1)
	go func() {
		n, err := s.Sweep(ctx, benchT0.Add(time.Hour), 100)
		swept <- result{n, err}
	}()
	select {
	case r := <-swept:
		t.Fatalf("Sweep returned %d, %v while a transaction held an expired request", r.n, r.err)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	if err := <-userDone; err != nil {
		t.Fatal(err)
	}
	r := <-swept
	if r.err != nil || r.n != 2 {
		t.Fatalf("Sweep = %d, %v; want 2, nil", r.n, r.err)
	}
	err := s.Atomic(ctx, func(tx storage.Tx) error {
		_, err := tx.PendingRequests().Get(ctx, ids[0])
		return err
	})
	if !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Get of the swept request = %v, want ErrNotFound", err)
	}
}

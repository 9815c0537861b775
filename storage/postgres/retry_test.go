package postgres_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/postgres"
)

// raise fails the transaction behind tx with SQLSTATE code.
func raise(c context.Context, tx storage.Tx, code string) error {
	return postgres.ExecIn(c, tx, "DO $$ BEGIN RAISE EXCEPTION 'injected' USING ERRCODE = '"+code+"'; END $$")
}

func sqlState(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// TestRetrySerializationFailure: a transaction failing with 40001 or 40P01
// is rerun, its first attempt's writes rolled back; retries are bounded.
func TestRetrySerializationFailure(t *testing.T) {
	ctx := t.Context()
	pool := newPool(t, 2)
	s := newStoreWith(t, pool, postgres.WithBackoff(postgres.Config{}, time.Millisecond))
	for _, code := range []string{"40001", "40P01"} {
		t.Run(code, func(t *testing.T) {
			p := storage.PendingRequest{ID: newID(t, "Request"), AccountID: "a", CreatedAt: time.Unix(0, 0).UTC(),
				ExpiresAt: time.Unix(60, 0).UTC()}
			var runs atomic.Int32
			err := s.Atomic(ctx, func(tx storage.Tx) error {
				cp := p
				if err := tx.PendingRequests().Create(ctx, &cp, storage.Quota{Limit: 1000}); err != nil {
					return err
				}
				if runs.Add(1) == 1 {
					return raise(ctx, tx, code)
				}
				return nil
			})
			if err != nil || runs.Load() != 2 {
				t.Fatalf("Atomic: %v after %d runs; want success on the second run", err, runs.Load())
			}
		})
	}
	t.Run("Bounded", func(t *testing.T) {
		s, err := postgres.New(pool, postgres.WithBackoff(postgres.Config{Schema: s.Schema(), MaxRetries: 2}, time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		var runs atomic.Int32
		err = s.Atomic(ctx, func(tx storage.Tx) error { runs.Add(1); return raise(ctx, tx, "40001") })
		if sqlState(err) != "40001" || runs.Load() != 3 {
			t.Fatalf("Atomic: %v after %d runs; want the 40001 error after 3 runs", err, runs.Load())
		}
	})
	t.Run("Disabled", func(t *testing.T) {
		s, err := postgres.New(pool, postgres.WithBackoff(postgres.Config{Schema: s.Schema(), MaxRetries: -1}, time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		var runs atomic.Int32
		err = s.Atomic(ctx, func(tx storage.Tx) error { runs.Add(1); return raise(ctx, tx, "40001") })
		if sqlState(err) != "40001" || runs.Load() != 1 {
			t.Fatalf("Atomic: %v after %d runs; want the 40001 error after 1 run", err, runs.Load())
		}
	})
	t.Run("NotRetried", func(t *testing.T) {
		var runs atomic.Int32
		err := s.Atomic(ctx, func(tx storage.Tx) error { runs.Add(1); return raise(ctx, tx, "23514") })
		if sqlState(err) != "23514" || runs.Load() != 1 {
			t.Fatalf("Atomic: %v after %d runs; want the 23514 error after 1 run", err, runs.Load())
		}
	})
	t.Run("CancelledDuringBackoff", func(t *testing.T) {
		slow, err := postgres.New(pool, postgres.WithBackoff(postgres.Config{Schema: s.Schema()}, time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		c, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		err = slow.Atomic(c, func(tx storage.Tx) error { return raise(c, tx, "40001") })
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Atomic cancelled while backing off: %v", err)
		}
	})
}

// TestRetryRealDeadlock: two transactions update two accounts in opposite
// order; PostgreSQL aborts one with 40P01, Atomic reruns it, and both
// commit.
func TestRetryRealDeadlock(t *testing.T) {
	ctx := t.Context()
	pool := newPool(t, 4)
	s := newStoreWith(t, pool, postgres.WithBackoff(postgres.Config{}, time.Millisecond))
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a := storage.InternalAccount{ID: newID(t, "InternalAccount"), CustomerID: "c", CreatedAt: now, UpdatedAt: now}
	b := a
	b.ID = newID(t, "InternalAccount")
	mustAtomic(t, s, func(tx storage.Tx) error {
		return errors.Join(tx.InternalAccounts().Create(ctx, &a), tx.InternalAccounts().Create(ctx, &b))
	})
	var (
		both  sync.WaitGroup
		runs  atomic.Int32
		first sync.WaitGroup // each holds its first row before taking the second
	)
	first.Add(2)
	bump := func(tx storage.Tx, id string) error {
		w, err := tx.InternalAccounts().Get(ctx, id)
		if err != nil {
			return err
		}
		w.Phone += "1"
		return tx.InternalAccounts().Update(ctx, &w)
	}
	errs := make([]error, 2)
	for i, order := range [][2]string{{a.ID, b.ID}, {b.ID, a.ID}} {
		both.Add(1)
		go func() {
			defer both.Done()
			var once sync.Once
			// The store retries the deadlock. Its retry reads under READ
			// COMMITTED and may then lose the compare-and-set to the
			// other transaction's commit (ErrConflict), which a caller
			// answers by running the operation again, as done here.
			for range 5 {
				errs[i] = s.Atomic(ctx, func(tx storage.Tx) error {
					runs.Add(1)
					if err := postgres.ExecIn(ctx, tx, "SET LOCAL deadlock_timeout = '50ms'"); err != nil {
						return err
					}
					if err := bump(tx, order[0]); err != nil {
						return err
					}
					once.Do(func() { first.Done(); first.Wait() })
					return bump(tx, order[1])
				})
				if !errors.Is(errs[i], storage.ErrConflict) {
					break
				}
			}
		}()
	}
	both.Wait()
	if errs[0] != nil || errs[1] != nil {
		t.Fatalf("Atomic: %v, %v; want both to commit", errs[0], errs[1])
	}
	if runs.Load() < 3 {
		t.Fatalf("%d runs: the deadlock was not provoked", runs.Load())
	}
	mustAtomic(t, s, func(tx storage.Tx) error {
		for _, id := range []string{a.ID, b.ID} {
			w, err := tx.InternalAccounts().Get(ctx, id)
			if err != nil || w.Phone != "11" || w.Version != 3 {
				t.Fatalf("account after both transactions: %+v, %v; want two updates", w, err)
			}
		}
		return nil
	})
}

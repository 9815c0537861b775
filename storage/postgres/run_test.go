package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/postgres"
	"github.com/walletgate/walletgate/storage/postgres/pgtest"
	"github.com/walletgate/walletgate/storage/storagetest"
)

// inTxWorld is a store, the host's ledger table beside its tables and an
// account whose events tell what walletgate's writes committed.
type inTxWorld struct {
	pool    *pgxpool.Pool
	store   *postgres.Store
	ledger  string
	account string
}

func newInTxWorld(t *testing.T, cfg postgres.Config) *inTxWorld {
	t.Helper()
	pool := pgtest.Pool(t, pgtest.DSN(t), 4, nil)
	s := pgtest.Store(t, pool, postgres.WithBackoff(cfg, time.Millisecond))
	return &inTxWorld{pool: pool, store: s, ledger: pgtest.Ledger(t, pool, s.Schema()), account: "ExternalAccount:" + s.Schema()}
}

// write writes the host's row id through tx and a walletgate event through
// the store, in the host transaction ctx carries.
func (w *inTxWorld) write(ctx context.Context, tx pgx.Tx, id string) error {
	if _, err := tx.Exec(ctx, "INSERT INTO "+w.ledger+" (id) VALUES ($1)", id); err != nil {
		return err
	}
	return w.store.Atomic(ctx, func(wt storage.Tx) error {
		e, err := storage.NewEvent(nil, "HOST.WRITTEN", w.account, map[string]string{"id": id}, time.Now())
		if err != nil {
			return err
		}
		return wt.Outbox().Append(ctx, &e)
	})
}

// committed returns the host's committed rows and the number of committed
// events.
func (w *inTxWorld) committed(t *testing.T) ([]string, int) {
	t.Helper()
	return pgtest.LedgerRows(t, w.pool, w.ledger), len(storagetest.Events(t, w.store, w.account))
}

// raiseCode fails the statement with SQLSTATE code, as the server reports a
// serialization failure (40001) or a deadlock (40P01).
func raiseCode(ctx context.Context, tx pgx.Tx, code string) error {
	_, err := tx.Exec(ctx, fmt.Sprintf(`DO $$ BEGIN RAISE EXCEPTION 'injected' USING ERRCODE = '%s'; END $$`, code))
	return err
}

// TestInTxCommits: fn's host row and walletgate's write commit together
// when fn returns nil; fn runs once.
func TestInTxCommits(t *testing.T) {
	w := newInTxWorld(t, postgres.Config{})
	runs := 0
	err := w.store.InTx(t.Context(), func(ctx context.Context, tx pgx.Tx) error {
		runs++
		return w.write(ctx, tx, "a")
	})
	rows, events := w.committed(t)
	if err != nil || runs != 1 || !slices.Equal(rows, []string{"a"}) || events != 1 {
		t.Fatalf("InTx: %v after %d runs; rows %v, %d events", err, runs, rows, events)
	}
}

// TestInTxRollsBack: an error of fn rolls back both its writes and is
// returned unchanged; it is not rerun. A panic of fn rolls back too and
// reaches the caller.
func TestInTxRollsBack(t *testing.T) {
	w := newInTxWorld(t, postgres.Config{})
	failed := errors.New("the host's check failed")
	runs := 0
	err := w.store.InTx(t.Context(), func(ctx context.Context, tx pgx.Tx) error {
		runs++
		if err := w.write(ctx, tx, "a"); err != nil {
			return err
		}
		return failed
	})
	if !errors.Is(err, failed) || runs != 1 {
		t.Fatalf("InTx: %v after %d runs, want the function's error after one", err, runs)
	}
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Fatalf("recovered %v, want the function's panic", r)
			}
		}()
		_ = w.store.InTx(t.Context(), func(ctx context.Context, tx pgx.Tx) error {
			if err := w.write(ctx, tx, "b"); err != nil {
				return err
			}
			panic("boom")
		})
	}()
	if rows, events := w.committed(t); len(rows) != 0 || events != 0 {
		t.Fatalf("a rolled back transaction left rows %v and %d events", rows, events)
	}
}

// TestInTxReruns: a run that lost a conflict (a serialization failure or
// a deadlock from the server) is rolled back and fn runs again whole; only
// the last run's writes commit. The reruns are bounded by MaxRetries, and
// the last error is returned; a nested InTx is refused.
func TestInTxReruns(t *testing.T) {
	w := newInTxWorld(t, postgres.Config{MaxRetries: 2})
	ctx := t.Context()
	for _, code := range []string{"40001", "40P01"} {
		runs := 0
		err := w.store.InTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
			runs++
			if err := w.write(ctx, tx, fmt.Sprintf("%s-run-%d", code, runs)); err != nil {
				return err
			}
			if runs == 1 {
				return raiseCode(ctx, tx, code)
			}
			return nil
		})
		rows, _ := w.committed(t)
		if err != nil || runs != 2 || !slices.Contains(rows, code+"-run-2") || slices.Contains(rows, code+"-run-1") {
			t.Fatalf("%s: %v after %d runs, rows %v; want the second run alone committed", code, err, runs, rows)
		}
	}
	runs := 0
	err := w.store.InTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		runs++
		return raiseCode(ctx, tx, "40001")
	})
	if !postgres.Rerunnable(err) || runs != 3 {
		t.Fatalf("always failing: %v after %d runs, want a rerunnable error after 1+MaxRetries runs", err, runs)
	}
	// A walletgate write that lost a conflict inside the host transaction
	// comes back as ErrRerun, and is rerun the same way.
	runs = 0
	err = w.store.InTx(ctx, func(ctx context.Context, _ pgx.Tx) error {
		runs++
		if runs == 1 {
			return w.store.Atomic(ctx, func(wt storage.Tx) error {
				pg, err := postgres.HostTx(ctx, wt)
				if err != nil {
					return err
				}
				return raiseCode(ctx, pg, "40001")
			})
		}
		return nil
	})
	if err != nil || runs != 2 {
		t.Fatalf("a lost conflict of walletgate's: %v after %d runs", err, runs)
	}
	err = w.store.InTx(ctx, func(ctx context.Context, _ pgx.Tx) error {
		return w.store.InTx(ctx, func(context.Context, pgx.Tx) error {
			t.Error("a nested InTx ran its function")
			return nil
		})
	})
	if err == nil {
		t.Fatal("a nested InTx was not refused")
	}
}

// TestInTxSerializable: on a SERIALIZABLE store two host transactions
// read and increment one counter at once; PostgreSQL aborts one (40001,
// at its UPDATE or its COMMIT), InTx runs it again, and both increments
// count.
func TestInTxSerializable(t *testing.T) {
	w := newInTxWorld(t, postgres.Config{Isolation: pgx.Serializable})
	ctx := t.Context()
	counter := pgx.Identifier{w.store.Schema(), "host_counter"}.Sanitize()
	if _, err := w.pool.Exec(ctx, "CREATE TABLE "+counter+" (id int PRIMARY KEY, n int NOT NULL); INSERT INTO "+counter+" VALUES (1, 0)"); err != nil {
		t.Fatal(err)
	}
	var (
		runs atomic.Int32
		read sync.WaitGroup // both first runs have read
		wg   sync.WaitGroup
		errs [2]error
	)
	read.Add(2)
	for i := range errs {
		wg.Go(func() {
			first := true
			errs[i] = w.store.InTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
				runs.Add(1)
				var n int
				if err := tx.QueryRow(ctx, "SELECT n FROM "+counter+" WHERE id = 1").Scan(&n); err != nil {
					return err
				}
				if first {
					first = false
					read.Done()
					read.Wait()
				}
				_, err := tx.Exec(ctx, "UPDATE "+counter+" SET n = $1 WHERE id = 1", n+1)
				return err
			})
		})
	}
	wg.Wait()
	var n int
	if err := w.pool.QueryRow(ctx, "SELECT n FROM "+counter+" WHERE id = 1").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if errs[0] != nil || errs[1] != nil || n != 2 || runs.Load() != 3 {
		t.Fatalf("errors %v, counter %d after %d runs; want 2 after 3", errs, n, runs.Load())
	}
}

// ExampleStore_InTx makes a payout of the host in one host transaction:
// walletgate's operations (here an event; in a service the payout gate,
// a signed retry) and the host's own rows commit together, and a run that
// lost a conflict with another transaction is run again whole. It needs a
// database, so it has no checked output.
func ExampleStore_InTx() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("WALLETGATE_POSTGRES_DSN"))
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	store, err := postgres.New(pool, postgres.Config{})
	if err != nil {
		log.Fatal(err)
	}
	err = store.InTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		// Every walletgate operation called with ctx writes in tx.
		err := store.Atomic(ctx, func(wt storage.Tx) error {
			e, err := storage.NewEvent(nil, "PAYOUT.CREATED", "ExternalAccount:1", map[string]int{"amount": 5}, time.Now())
			if err != nil {
				return err
			}
			return wt.Outbox().Append(ctx, &e)
		})
		if err != nil {
			return err
		}
		// The host's own statement, in the same transaction.
		_, err = tx.Exec(ctx, `UPDATE ledger SET balance = balance - 5 WHERE account = 'a'`)
		return err // an error rolls back both
	})
	if err != nil {
		log.Print(err)
	}
}

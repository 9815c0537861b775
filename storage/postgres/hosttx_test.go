package postgres_test

import (
	"context"
	"errors"
	mrand "math/rand/v2"
	"slices"
	"strings"
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

func newRequest(tb testing.TB) storage.PendingRequest {
	return storage.PendingRequest{ID: newID(tb, "Request"), AccountID: "InternalAccount:host", CreatedAt: time.Unix(0, 0).UTC(),
		ExpiresAt: time.Unix(60, 0).UTC()}
}

// stored reports whether the pending request id is committed.
func stored(tb testing.TB, s storage.Store, id string) bool {
	tb.Helper()
	var found bool
	mustAtomic(tb, s, func(tx storage.Tx) error {
		_, err := tx.PendingRequests().Get(tb.Context(), id)
		found = err == nil
		if errors.Is(err, storage.ErrNotFound) {
			return nil
		}
		return err
	})
	return found
}

// TestHostTxCommitOrRollback: a host transaction writes its own row and,
// through WithTx, walletgate's; the host's commit commits both, its
// rollback neither.
func TestHostTxCommitOrRollback(t *testing.T) {
	ctx := t.Context()
	pool := newPool(t, 4)
	s := newStore(t, pool)
	table := pgtest.Ledger(t, pool, s.Schema())
	for _, commit := range []bool{true, false} {
		tx := pgtest.Begin(t, pool, pgx.TxOptions{})
		host := newID(t, "Ledger")
		pgtest.HostWrite(t, tx, table, host)
		p := newRequest(t)
		if err := s.Atomic(s.WithTx(ctx, tx), func(wt storage.Tx) error {
			return wt.PendingRequests().Create(ctx, &p, storage.Quota{Limit: 1000})
		}); err != nil {
			t.Fatal(err)
		}
		if stored(t, s, p.ID) {
			t.Fatal("walletgate's write committed before the host committed")
		}
		end := tx.Rollback
		if commit {
			end = tx.Commit
		}
		if err := end(ctx); err != nil {
			t.Fatal(err)
		}
		got := pgtest.LedgerRows(t, pool, table)
		hostThere := slices.Contains(got, host)
		if hostThere != commit || stored(t, s, p.ID) != commit {
			t.Fatalf("commit=%v: host row committed %v, walletgate's %v", commit, hostThere, stored(t, s, p.ID))
		}
	}
}

// TestHostTxSavepoint: inside a host transaction, an Atomic whose function
// fails (a Go error, a failed statement of walletgate's, a failed statement
// of the host's made through HostTx) undoes its own writes and the host's
// made through HostTx, and leaves the host transaction usable, with what it
// wrote before.
func TestHostTxSavepoint(t *testing.T) {
	ctx := t.Context()
	pool := newPool(t, 4)
	s := newStore(t, pool)
	table := pgtest.Ledger(t, pool, s.Schema())
	boom := errors.New("boom")
	fails := map[string]func(c context.Context, wt storage.Tx, pg pgx.Tx) error{
		"error":         func(context.Context, storage.Tx, pgx.Tx) error { return boom },
		"walletgate":    func(c context.Context, wt storage.Tx, _ pgx.Tx) error { return raise(c, wt, "23514") },
		"host":          func(c context.Context, _ storage.Tx, pg pgx.Tx) error { _, err := pg.Exec(c, "SELECT 1/0"); return err },
		"host first":    nil, // HostTx before any statement of walletgate's
		"panic (error)": nil,
	}
	for name, fail := range fails {
		t.Run(name, func(t *testing.T) {
			tx := pgtest.Begin(t, pool, pgx.TxOptions{})
			hctx := s.WithTx(ctx, tx)
			before, inside, after := newID(t, "Ledger"), newID(t, "Ledger"), newID(t, "Ledger")
			pgtest.HostWrite(t, tx, table, before)
			p1, p2 := newRequest(t), newRequest(t)
			err := func() (err error) {
				if name == "panic (error)" {
					defer func() {
						if r := recover(); r != nil {
							err = boom
						}
					}()
				}
				return s.Atomic(hctx, func(wt storage.Tx) error {
					if name != "host first" {
						if err := wt.PendingRequests().Create(ctx, &p1, storage.Quota{Limit: 1000}); err != nil {
							return err
						}
					}
					pg, err := postgres.HostTx(ctx, wt)
					if err != nil {
						return err
					}
					if _, err := pg.Exec(ctx, "INSERT INTO "+table+" (id) VALUES ($1)", inside); err != nil {
						return err
					}
					if err := pg.Commit(ctx); err == nil {
						t.Error("the host transaction was committed from inside the Atomic")
					}
					if name == "host first" {
						if err := wt.PendingRequests().Create(ctx, &p1, storage.Quota{Limit: 1000}); err != nil {
							return err
						}
						return boom
					}
					if name == "panic (error)" {
						panic(boom)
					}
					return fail(ctx, wt, pg)
				})
			}()
			if err == nil {
				t.Fatal("the failing Atomic succeeded")
			}
			// The host transaction goes on: a walletgate write and one of its own.
			if err := s.Atomic(hctx, func(wt storage.Tx) error { return wt.PendingRequests().Create(ctx, &p2, storage.Quota{Limit: 1000}) }); err != nil {
				t.Fatalf("Atomic after the failure: %v", err)
			}
			pgtest.HostWrite(t, tx, table, after)
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			got := pgtest.LedgerRows(t, pool, table)
			if !slices.Contains(got, before) || slices.Contains(got, inside) || !slices.Contains(got, after) {
				t.Fatalf("host rows %v: want %s and %s, not %s", got, before, after, inside)
			}
			if stored(t, s, p1.ID) || !stored(t, s, p2.ID) {
				t.Fatalf("walletgate rows: failed Atomic's committed %v, later one's %v", stored(t, s, p1.ID), stored(t, s, p2.ID))
			}
		})
	}
}

// TestHostTxNoRerun: inside a host transaction a serialization failure or
// a deadlock is returned wrapping ErrRerun after one run, and the host
// transaction is still usable (the host decides to roll back and rerun).
// Outside one, the store reruns, and once the retries are spent the error
// wraps ErrRerun too.
func TestHostTxNoRerun(t *testing.T) {
	ctx := t.Context()
	pool := newPool(t, 4)
	s := newStore(t, pool)
	for _, code := range []string{"40001", "40P01"} {
		t.Run(code, func(t *testing.T) {
			tx := pgtest.Begin(t, pool, pgx.TxOptions{})
			hctx := s.WithTx(ctx, tx)
			var runs atomic.Int32
			p := newRequest(t)
			err := s.Atomic(hctx, func(wt storage.Tx) error {
				runs.Add(1)
				if err := wt.PendingRequests().Create(ctx, &p, storage.Quota{Limit: 1000}); err != nil {
					return err
				}
				return raise(ctx, wt, code)
			})
			if !errors.Is(err, postgres.ErrRerun) || sqlState(err) != code {
				t.Fatalf("error %v, want ErrRerun with SQLSTATE %s", err, code)
			}
			if runs.Load() != 1 {
				t.Fatalf("fn ran %d times inside the host transaction, want 1", runs.Load())
			}
			if _, err := tx.Exec(ctx, "SELECT 1"); err != nil {
				t.Fatalf("the host transaction is not usable after the failure: %v", err)
			}
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			if stored(t, s, p.ID) {
				t.Fatal("the failed Atomic's write committed")
			}
		})
	}
	t.Run("pool", func(t *testing.T) {
		r := newStoreWith(t, pool, postgres.WithBackoff(postgres.Config{MaxRetries: 1}, time.Millisecond))
		err := r.Atomic(ctx, func(wt storage.Tx) error { return raise(ctx, wt, "40001") })
		if !errors.Is(err, postgres.ErrRerun) {
			t.Fatalf("error %v, want ErrRerun once the retries are spent", err)
		}
	})
}

// TestHostTxRefused: a context bound to another store, a nil, aborted or
// ended host transaction, and a level other than READ COMMITTED
// (REPEATABLE READ, SERIALIZABLE) are refused with an error that names the
// problem; HostTx outside a host transaction fails.
func TestHostTxRefused(t *testing.T) {
	ctx := t.Context()
	pool := newPool(t, 4)
	s := newStore(t, pool)
	other := newStore(t, pool)
	write := func(c context.Context, st storage.Store) error {
		p := newRequest(t)
		return st.Atomic(c, func(wt storage.Tx) error { return wt.PendingRequests().Create(ctx, &p, storage.Quota{Limit: 1000}) })
	}
	wantErr := func(err error, part string) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), part) {
			t.Fatalf("error %v, want one saying %q", err, part)
		}
	}

	tx := pgtest.Begin(t, pool, pgx.TxOptions{})
	wantErr(write(s.WithTx(ctx, tx), other), "bound to another store")
	wantErr(write(s.WithTx(ctx, nil), s), "nil host transaction")

	if _, err := tx.Exec(ctx, "SELECT 1/0"); err == nil {
		t.Fatal("division by zero succeeded")
	}
	wantErr(write(s.WithTx(ctx, tx), s), "aborted")
	_ = tx.Rollback(ctx)

	rr := pgtest.Begin(t, pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	wantErr(write(s.WithTx(ctx, rr), s), "REPEATABLE READ")

	ser := pgtest.Begin(t, pool, pgx.TxOptions{IsoLevel: pgx.Serializable})
	wantErr(write(s.WithTx(ctx, ser), s), "SERIALIZABLE")

	err := s.Atomic(ctx, func(wt storage.Tx) error {
		_, err := postgres.HostTx(ctx, wt)
		return err
	})
	wantErr(err, "does not run inside a host transaction")
}

// hostStore is a storage.Store whose every transaction is a host's: Atomic
// begins a transaction on the pool, runs the store's Atomic inside it
// (WithTx) and commits, rerunning the whole transaction, after a jittered
// pause, when it lost a conflict (postgres.Rerunnable): walletgate's
// ErrRerun, or a serialization failure of the host's own COMMIT (at
// SERIALIZABLE the serializable checks may refuse the commit itself), as a
// host does.
type hostStore struct {
	*postgres.Store
	pool *pgxpool.Pool
	opts pgx.TxOptions // how the host begins its transactions
}

func (h hostStore) Atomic(ctx context.Context, fn func(storage.Tx) error) error {
	for run := 0; ; run++ {
		err := h.once(ctx, fn)
		if !postgres.Rerunnable(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(mrand.Int64N(int64(time.Millisecond) << min(run, 6)))):
		}
	}
}

func (h hostStore) once(ctx context.Context, fn func(storage.Tx) error) error {
	tx, err := h.pool.BeginTx(ctx, h.opts)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if err := h.Store.Atomic(h.WithTx(ctx, tx), fn); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// TestHostTxRaces runs the check-then-act race cases of storagetest with
// every transaction a host's (four replicas, 16 goroutines each): the
// store's rules hold inside host transactions as inside its own.
func TestHostTxRaces(t *testing.T) {
	storagetest.RunRaces(t, func(tb testing.TB) []storage.Store {
		first := newPool(tb, 4)
		s := newStore(tb, first)
		out := []storage.Store{hostStore{s, first, pgx.TxOptions{}}}
		for range replicas - 1 {
			p := newPool(tb, 4)
			out = append(out, hostStore{pgtest.SameSchema(tb, s, p, postgres.Config{}), p, pgx.TxOptions{}})
		}
		return out
	}, workersPerReplica)
}

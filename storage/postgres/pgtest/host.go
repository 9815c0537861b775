package pgtest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/walletgate/walletgate/storage/postgres"
)

// Begin begins a transaction on pool as a host does, with opts; it is
// rolled back when tb ends unless the test ended it before.
func Begin(tb testing.TB, pool *pgxpool.Pool, opts pgx.TxOptions) pgx.Tx {
	tb.Helper()
	tx, err := pool.BeginTx(tb.Context(), opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	return tx
}

// Ledger creates a host's own table, host_ledger (one text id per row), in
// schema and returns its qualified name, for tests of what commits with a
// host's transaction.
func Ledger(tb testing.TB, pool *pgxpool.Pool, schema string) string {
	tb.Helper()
	name := pgx.Identifier{schema, "host_ledger"}.Sanitize()
	if _, err := pool.Exec(tb.Context(), "CREATE TABLE "+name+" (id text PRIMARY KEY)"); err != nil {
		tb.Fatal(err)
	}
	return name
}

// LedgerRows returns the ids the ledger table holds, as committed, in
// order.
func LedgerRows(tb testing.TB, pool *pgxpool.Pool, table string) []string {
	tb.Helper()
	rows, err := pool.Query(tb.Context(), "SELECT id FROM "+table+" ORDER BY id")
	if err != nil {
		tb.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		tb.Fatal(err)
	}
	return ids
}

// HostWrite writes the ledger row id inside the host's transaction tx.
func HostWrite(tb testing.TB, tx pgx.Tx, table, id string) {
	tb.Helper()
	if _, err := tx.Exec(tb.Context(), "INSERT INTO "+table+" (id) VALUES ($1)", id); err != nil {
		tb.Fatal(err)
	}
}

// Race runs fn from workers goroutines on each of stores (replicas of one
// schema), all released at once, and returns every result (nil for a
// success). It fails the test when the race does not finish within 30
// seconds: a deadlock or a lost wake-up.
func Race(t *testing.T, stores []*postgres.Store, workers int, fn func(ctx context.Context, s *postgres.Store) error) []error {
	t.Helper()
	c, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		errs  []error
		start = make(chan struct{})
	)
	for _, s := range stores {
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				err := fn(c, s)
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}()
		}
	}
	began := time.Now()
	close(start)
	wg.Wait()
	if c.Err() != nil {
		t.Fatalf("the race did not finish within its deadline (%v): a deadlock or a lost wake-up", time.Since(began))
	}
	return errs
}

// OneWinner checks that exactly one of errs is a success and that loser
// accepts every other.
func OneWinner(t *testing.T, what string, errs []error, loser func(error) bool) {
	t.Helper()
	wins := 0
	for _, err := range errs {
		switch {
		case err == nil:
			wins++
		case !loser(err):
			t.Fatalf("%s: losing attempt failed with %v (%T)", what, err, err)
		}
	}
	if wins != 1 {
		t.Fatalf("%s: %d of %d attempts succeeded, want exactly 1", what, wins, len(errs))
	}
}

// End ends the host's transaction tx by commit or rollback, failing the
// test when that fails.
func End(tb testing.TB, tx pgx.Tx, commit bool) {
	tb.Helper()
	end := tx.Rollback
	if commit {
		end = tx.Commit
	}
	if err := end(tb.Context()); err != nil {
		tb.Fatal(err)
	}
}

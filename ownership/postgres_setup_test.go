package ownership_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/postgres"
	"github.com/walletgate/walletgate/storage/postgres/pgtest"
)

// replicas is how many stores the replica tests open on one schema.
const replicas = 4

// newPool opens a pool of at most maxConns connections on the test
// database, or skips the test when none is set.
func newPool(tb testing.TB, maxConns int32) *pgxpool.Pool {
	tb.Helper()
	return pgtest.Pool(tb, pgtest.DSN(tb), maxConns, nil)
}

// newStore migrates a fresh schema on pool and returns a store on it.
func newStore(tb testing.TB, pool *pgxpool.Pool) *postgres.Store {
	tb.Helper()
	return pgtest.Store(tb, pool, postgres.Config{})
}

// sameSchema returns a store on the schema of s through another pool: a
// second replica.
func sameSchema(tb testing.TB, s *postgres.Store, pool *pgxpool.Pool) *postgres.Store {
	tb.Helper()
	r, err := postgres.New(pool, postgres.Config{Schema: s.Schema()})
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// mustAtomic runs fn in a transaction of s and fails the test on error.
func mustAtomic(tb testing.TB, s storage.Store, fn func(tx storage.Tx) error) {
	tb.Helper()
	if err := s.Atomic(tb.Context(), fn); err != nil {
		tb.Fatalf("Atomic: %v", err)
	}
}

// begin starts a host transaction on pool, rolled back on cleanup unless
// ended before.
func begin(tb testing.TB, pool *pgxpool.Pool, opts pgx.TxOptions) pgx.Tx {
	tb.Helper()
	tx, err := pool.BeginTx(tb.Context(), opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	return tx
}

// ledger creates the host's own table, host_ledger, in the schema of s and
// returns its qualified name.
func ledger(tb testing.TB, pool *pgxpool.Pool, s *postgres.Store) string {
	tb.Helper()
	name := pgx.Identifier{s.Schema(), "host_ledger"}.Sanitize()
	if _, err := pool.Exec(tb.Context(), "CREATE TABLE "+name+" (id text PRIMARY KEY)"); err != nil {
		tb.Fatal(err)
	}
	return name
}

// newID returns a fresh identifier with prefix.
func newID(tb testing.TB, prefix string) string {
	tb.Helper()
	id, err := storage.NewID(nil, prefix)
	if err != nil {
		tb.Fatal(err)
	}
	return id
}

// ledgerRows returns the ids in the host's table, as committed.
func ledgerRows(tb testing.TB, pool *pgxpool.Pool, table string) []string {
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

// hostWrite writes the host's ledger row id inside its own transaction tx.
func hostWrite(tb testing.TB, tx pgx.Tx, table, id string) {
	tb.Helper()
	if _, err := tx.Exec(tb.Context(), "INSERT INTO "+table+" (id) VALUES ($1)", id); err != nil {
		tb.Fatal(err)
	}
}

// contains reports whether ids holds id.
func contains(ids []string, id string) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// containsText reports whether part occurs in s.
func containsText(s, part string) bool {
	for i := 0; i+len(part) <= len(s); i++ {
		if s[i:i+len(part)] == part {
			return true
		}
	}
	return false
}

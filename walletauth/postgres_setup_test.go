package walletauth_test

import (
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/postgres"
	"github.com/walletgate/walletgate/storage/postgres/pgtest"
)

// replicas is how many stores the replica tests open on one schema, and
// workersPerReplica how many goroutines race on each.
const (
	replicas          = 4
	workersPerReplica = 16
)

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

// mustAtomic runs fn in a transaction of s and fails the test on error.
func mustAtomic(tb testing.TB, s storage.Store, fn func(tx storage.Tx) error) {
	tb.Helper()
	if err := s.Atomic(tb.Context(), fn); err != nil {
		tb.Fatalf("Atomic: %v", err)
	}
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

package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/postgres"
	"github.com/walletgate/walletgate/storage/postgres/pgtest"
)

// dsn returns the test database or skips the test.
func dsn(tb testing.TB) string { return pgtest.DSN(tb) }

// newPool opens a pool of at most maxConns connections, closed on cleanup.
func newPool(tb testing.TB, maxConns int32) *pgxpool.Pool {
	tb.Helper()
	ctx := tb.Context()
	cfg, err := pgxpool.ParseConfig(dsn(tb))
	if err != nil {
		tb.Fatal(err)
	}
	cfg.MaxConns = maxConns
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(pool.Close)
	return pool
}

// freshSchema returns the name of a schema that does not exist yet and is
// dropped (if created) on cleanup.
func freshSchema(tb testing.TB, pool *pgxpool.Pool) string {
	tb.Helper()
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		tb.Fatal(err)
	}
	name := "wgtest_" + hex.EncodeToString(b[:])
	tb.Cleanup(func() {
		if _, err := pool.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{name}.Sanitize()+" CASCADE"); err != nil {
			tb.Errorf("dropping schema %s: %v", name, err)
		}
	})
	return name
}

// newStore migrates a fresh schema and returns a store on it.
func newStore(tb testing.TB, pool *pgxpool.Pool) *postgres.Store {
	tb.Helper()
	return newStoreWith(tb, pool, postgres.Config{})
}

// newStoreWith is newStore with cfg, whose Schema it replaces by the fresh
// one.
func newStoreWith(tb testing.TB, pool *pgxpool.Pool, cfg postgres.Config) *postgres.Store {
	tb.Helper()
	ctx := tb.Context()
	cfg.Schema = freshSchema(tb, pool)
	if _, err := postgres.Migrate(ctx, pool, cfg); err != nil {
		tb.Fatal(err)
	}
	s, err := postgres.New(pool, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

func newID(tb testing.TB, prefix string) string {
	tb.Helper()
	id, err := storage.NewID(nil, prefix)
	if err != nil {
		tb.Fatal(err)
	}
	return id
}

// mustAtomic runs fn in a transaction of s and fails the test on error.
func mustAtomic(tb testing.TB, s storage.Store, fn func(tx storage.Tx) error) {
	tb.Helper()
	ctx := tb.Context()
	if err := s.Atomic(ctx, fn); err != nil {
		tb.Fatalf("Atomic: %v", err)
	}
}

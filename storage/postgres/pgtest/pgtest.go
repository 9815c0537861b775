// Package pgtest gives a test a PostgreSQL store of its own: a pool on the
// database the test was pointed at and a fresh schema, migrated, that is
// dropped when the test ends. Tests of every package that run against
// PostgreSQL open their stores through it.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/walletgate/walletgate/storage/postgres"
)

// EnvDSN names the environment variable that holds the connection string
// of the test database.
const EnvDSN = "WALLETGATE_POSTGRES_DSN"

// DSN returns the connection string of the test database, or skips tb with
// a message saying how to run it when EnvDSN is unset.
func DSN(tb testing.TB) string {
	tb.Helper()
	dsn := os.Getenv(EnvDSN)
	if dsn == "" {
		tb.Skip("set " + EnvDSN + " to run the PostgreSQL tests (for example postgres://postgres@127.0.0.1:5432/test?sslmode=disable; .ci/run sets it)")
	}
	return dsn
}

// Pool opens a pool on dsn with at most maxConns connections, after
// configure (when not nil) has adjusted its configuration; it is closed
// when tb ends.
func Pool(tb testing.TB, dsn string, maxConns int32, configure func(*pgxpool.Config)) *pgxpool.Pool {
	tb.Helper()
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		tb.Fatal(err)
	}
	cfg.MaxConns = maxConns
	if configure != nil {
		configure(cfg)
	}
	pool, err := pgxpool.NewWithConfig(tb.Context(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(pool.Close)
	return pool
}

// Store migrates a fresh schema on pool, dropped when tb ends, and returns
// a store on it configured by cfg, whose Schema it sets.
func Store(tb testing.TB, pool *pgxpool.Pool, cfg postgres.Config) *postgres.Store {
	tb.Helper()
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		tb.Fatal(err)
	}
	cfg.Schema = "wgtest_" + hex.EncodeToString(b[:])
	tb.Cleanup(func() {
		if _, err := pool.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{cfg.Schema}.Sanitize()+" CASCADE"); err != nil {
			tb.Errorf("dropping schema %s: %v", cfg.Schema, err)
		}
	})
	if _, err := postgres.Migrate(tb.Context(), pool, cfg); err != nil {
		tb.Fatal(err)
	}
	s, err := postgres.New(pool, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// SameSchema returns a store on the schema of s through another pool, a
// second replica, configured by cfg, whose Schema it sets.
func SameSchema(tb testing.TB, s *postgres.Store, pool *pgxpool.Pool, cfg postgres.Config) *postgres.Store {
	tb.Helper()
	cfg.Schema = s.Schema()
	r, err := postgres.New(pool, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// Replicas returns n stores configured by cfg on one fresh schema, each
// through a pool of its own of at most conns connections: n replicas of
// one service.
func Replicas(tb testing.TB, n int, conns int32, cfg postgres.Config) []*postgres.Store {
	tb.Helper()
	dsn := DSN(tb)
	first := Store(tb, Pool(tb, dsn, conns, nil), cfg)
	stores := []*postgres.Store{first}
	for range n - 1 {
		stores = append(stores, SameSchema(tb, first, Pool(tb, dsn, conns, nil), cfg))
	}
	return stores
}

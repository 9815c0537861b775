package postgres_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/postgres"
	"github.com/walletgate/walletgate/storage/postgres/pgtest"
	"github.com/walletgate/walletgate/storage/storagetest"
)

// serializable is the configuration of a SERIALIZABLE store in the tests:
// every lost race on a row is a serialization failure there, and 16
// goroutines on each of four replicas contend for one row at a time, so
// it allows as many reruns as a contended row needs.
var serializable = postgres.Config{Isolation: pgx.Serializable, MaxRetries: 200}

// serializableReplicas returns four stores configured SERIALIZABLE on one
// fresh schema, each with a pool of its own, as a host sees them.
func serializableReplicas(tb testing.TB) []hostStore {
	tb.Helper()
	host := pgx.TxOptions{IsoLevel: pgx.Serializable}
	pool := newPool(tb, 4)
	first := newStoreWith(tb, pool, serializable)
	stores := []hostStore{{first, pool, host}}
	for range replicas - 1 {
		pool := newPool(tb, 4)
		stores = append(stores, hostStore{pgtest.SameSchema(tb, first, pool, serializable), pool, host})
	}
	return stores
}

// TestSerializableRaces runs the check-then-act race cases of storagetest
// on four replicas whose transactions run SERIALIZABLE: the rules hold at
// that level too, through the serializable checks where a lock's waiter
// reads a snapshot older than what the lock's holder committed.
func TestSerializableRaces(t *testing.T) {
	storagetest.RunRaces(t, func(tb testing.TB) []storage.Store {
		var out []storage.Store
		for _, h := range serializableReplicas(tb) {
			out = append(out, h.Store)
		}
		return out
	}, workersPerReplica)
}

// TestSerializableHostRaces runs them with every transaction a
// SERIALIZABLE host's, bound to SERIALIZABLE stores and rerun by the host
// on ErrRerun.
func TestSerializableHostRaces(t *testing.T) {
	storagetest.RunRaces(t, func(tb testing.TB) []storage.Store {
		var out []storage.Store
		for _, h := range serializableReplicas(tb) {
			out = append(out, h)
		}
		return out
	}, workersPerReplica)
}

// TestSerializableContract runs the storage contract on a SERIALIZABLE
// store.
func TestSerializableContract(t *testing.T) {
	storagetest.Run(t, func(tb testing.TB) storage.Store { return newStoreWith(tb, newPool(tb, 4), serializable) })
}

// TestSerializableLevels: a SERIALIZABLE store accepts host transactions
// at SERIALIZABLE only; a READ COMMITTED store at READ COMMITTED only.
// Config refuses the levels it was not proven at.
func TestSerializableLevels(t *testing.T) {
	ctx := t.Context()
	pool := newPool(t, 4)
	for _, c := range []struct {
		store          pgx.TxIsoLevel
		host           pgx.TxIsoLevel
		want, wantText string
	}{
		{pgx.Serializable, pgx.Serializable, "", ""},
		{pgx.Serializable, pgx.ReadCommitted, "refused", "READ COMMITTED and the store at SERIALIZABLE"},
		{pgx.Serializable, pgx.RepeatableRead, "refused", "REPEATABLE READ and the store at SERIALIZABLE"},
		{pgx.ReadCommitted, pgx.Serializable, "refused", "SERIALIZABLE and the store at READ COMMITTED"},
		{pgx.ReadCommitted, pgx.ReadCommitted, "", ""},
	} {
		s := newStoreWith(t, pool, postgres.Config{Isolation: c.store})
		tx := pgtest.Begin(t, pool, pgx.TxOptions{IsoLevel: c.host})
		p := newRequest(t)
		err := s.Atomic(s.WithTx(ctx, tx), func(wt storage.Tx) error { return wt.PendingRequests().Create(ctx, &p, storage.Quota{Limit: 1000}) })
		switch {
		case c.want == "" && err != nil:
			t.Fatalf("store %s, host %s: %v", c.store, c.host, err)
		case c.want != "" && (!errors.Is(err, postgres.ErrIsolation) || !strings.Contains(err.Error(), c.wantText)):
			t.Fatalf("store %s, host %s: %v, want ErrIsolation saying %q", c.store, c.host, err, c.wantText)
		}
		pgtest.End(t, tx, true)
		if stored(t, s, p.ID) != (c.want == "") {
			t.Fatalf("store %s, host %s: the request is stored: %v", c.store, c.host, !(c.want == ""))
		}
	}
	for _, level := range []pgx.TxIsoLevel{pgx.RepeatableRead, pgx.ReadUncommitted, "snapshot"} {
		if _, err := postgres.New(pool, postgres.Config{Isolation: level}); err == nil || !strings.Contains(err.Error(), "Config.Isolation") {
			t.Fatalf("New with Isolation %q: %v, want a refusal naming Config.Isolation", level, err)
		}
	}
}

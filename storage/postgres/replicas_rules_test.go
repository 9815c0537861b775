package postgres_test

import (
	"testing"

	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/postgres"
	"github.com/walletgate/walletgate/storage/postgres/pgtest"
	"github.com/walletgate/walletgate/storage/storagetest"
)

// TestReplicasRaces runs the check-then-act race cases of storagetest with
// 16 goroutines on each of four replicas.
func TestReplicasRaces(t *testing.T) {
	storagetest.RunRaces(t, func(tb testing.TB) []storage.Store {
		var out []storage.Store
		for _, s := range pgtest.Replicas(tb, replicas, 4, postgres.Config{}) {
			out = append(out, s)
		}
		return out
	}, workersPerReplica)
}

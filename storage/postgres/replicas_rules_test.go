package postgres_test

import (
	"testing"

	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/postgres"
	"github.com/walletgate/walletgate/storage/storagetest"
)

// replicaStores returns four stores on one fresh schema, each through its
// own pool: four replicas of one service.
func replicaStores(tb testing.TB) []*postgres.Store {
	tb.Helper()
	first := newStore(tb, newPool(tb, 4))
	stores := []*postgres.Store{first}
	for range replicas - 1 {
		stores = append(stores, sameSchema(tb, first, newPool(tb, 4)))
	}
	return stores
}

// TestReplicasRaces runs the check-then-act race cases of storagetest with
// 16 goroutines on each of four replicas.
func TestReplicasRaces(t *testing.T) {
	storagetest.RunRaces(t, func(tb testing.TB) []storage.Store {
		var out []storage.Store
		for _, s := range replicaStores(tb) {
			out = append(out, s)
		}
		return out
	}, workersPerReplica)
}

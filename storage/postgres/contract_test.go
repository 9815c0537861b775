package postgres_test

import (
	"testing"

	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/storagetest"
)

// TestContract runs the storage conformance suite, every subtest on its own
// freshly migrated schema.
func TestContract(t *testing.T) {
	pool := newPool(t, 8)
	storagetest.Run(t, func(tb testing.TB) storage.Store { return newStore(tb, pool) })
}

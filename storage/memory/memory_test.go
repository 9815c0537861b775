package memory_test

import (
	"testing"

	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/memory"
	"github.com/walletgate/walletgate/storage/storagetest"
)

func TestContract(t *testing.T) {
	storagetest.Run(t, func(testing.TB) storage.Store { return memory.New() })
}

func BenchmarkStore(b *testing.B) {
	storagetest.Benchmark(b, func(testing.TB) storage.Store { return memory.New() })
}

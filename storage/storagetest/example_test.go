package storagetest_test

import (
	"testing"

	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/memory"
	"github.com/walletgate/walletgate/storage/storagetest"
)

// A store proves it keeps the contract with a test in its own package that
// runs the suite on a new, empty store per subtest (the memory store stands
// in for the host's store here), and measures itself with a benchmark.
func ExampleRun() {
	testMyStore := func(t *testing.T) {
		storagetest.Run(t, func(testing.TB) storage.Store { return memory.New() })
	}
	benchmarkMyStore := func(b *testing.B) {
		storagetest.Benchmark(b, func(testing.TB) storage.Store { return memory.New() })
	}
	_, _ = testMyStore, benchmarkMyStore
}

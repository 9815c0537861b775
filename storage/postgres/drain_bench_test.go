package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/walletgate/walletgate/storage"
)

// instant is a receiver that accepts every event at once.
type instant struct{}

func (instant) Publish(context.Context, storage.Event) error { return nil }

// BenchmarkRelayDrain: four relays (each on its own pool) deliver 1,000
// events to a receiver that answers at once, from a backlog of 1k and of
// 100k pending events over 1,000 accounts (and over 4), seeded by
// INSERT ... SELECT with the statistics left stale (see seedStale). The rate on the deep backlog, measured while the
// backlog stays above 90k, should be close to the rate on the shallow one:
// a lease costs the same whatever waits behind it.
func BenchmarkRelayDrain(b *testing.B) {
	const drain = 1_000
	created := time.Now().Add(-time.Minute)
	for _, accounts := range []int{1_000, 4} {
		for _, backlog := range []int{1_000, 100_000} {
			b.Run(fmt.Sprintf("accounts=%d/backlog=%d", accounts, backlog), func(b *testing.B) {
				var elapsed time.Duration
				for b.Loop() {
					b.StopTimer()
					stores := relayReplicas(b, 4)
					seedStale(b, newPool(b, 1), stores[0], leaseCase{backlog, accounts}, created)
					b.StartTimer()
					start := time.Now()
					deliverAll(b, stores, instant{}, drain, time.Now)
					elapsed += time.Since(start)
				}
				b.ReportMetric(float64(drain*b.N)/elapsed.Seconds(), "events/s")
			})
		}
	}
}

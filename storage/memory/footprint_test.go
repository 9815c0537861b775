package memory_test

import (
	"context"
	"crypto/rand"
	"runtime"
	"testing"
	"time"

	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/memory"
)

// footprint stores n live pending requests, each with a payload of
// payloadSize bytes, and returns the heap bytes held per request beyond the
// payload.
func footprint(tb testing.TB, n, payloadSize int) float64 {
	tb.Helper()
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// Ids are made before measuring: the store keeps them, and they count.
	// The requests belong to accounts of perAccount live requests each, at
	// their quota, as a busy service holds them.
	const perAccount = 10
	accts := make([]string, (n+perAccount-1)/perAccount)
	for i := range accts {
		accts[i], _ = storage.NewID(rand.Reader, "InternalAccount")
	}
	ids := make([]string, n)
	for i := range ids {
		ids[i], _ = storage.NewID(rand.Reader, "Request")
	}
	payload := make([]byte, payloadSize)
	digest := make([]byte, 32)

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s := memory.New()
	for i := range n {
		p := storage.PendingRequest{ID: ids[i], Kind: "REVOKE_CREDENTIAL", AccountID: accts[i/perAccount], Method: "DELETE",
			Path: "/auth/credentials/AuthMethod:8d2c7d7e-7a0c-4cf5-8e50-7d0c2b1f5e11", BodyDigest: digest,
			Payload: payload, SignerRule: "OTHER_CREDENTIAL", SignerRef: "AuthMethod:8d2c7d7e-7a0c-4cf5-8e50-7d0c2b1f5e11",
			CreatedAt: now, ExpiresAt: now.Add(5 * time.Minute)}
		if err := s.Atomic(ctx, func(tx storage.Tx) error {
			return tx.PendingRequests().Create(ctx, &p, storage.Quota{Limit: perAccount})
		}); err != nil {
			tb.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(s)
	runtime.KeepAlive(ids)
	runtime.KeepAlive(accts)
	// The ids were allocated before the first reading; add their bytes as the
	// store's since it keeps the strings alive.
	idBytes := float64(len(ids[0])) + float64(len(accts[0]))/perAccount
	held := float64(after.HeapAlloc-before.HeapAlloc)/float64(n) + idBytes
	return held - float64(payloadSize)
}

// TestLivePendingFootprint keeps the memory held per live pending request
// under 1 KiB beyond its payload, measured over 100,000 requests.
func TestLivePendingFootprint(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates 100,000 requests")
	}
	per := footprint(t, 100_000, 512)
	t.Logf("%.0f bytes per live pending request beyond the payload", per)
	if per > 1024 {
		t.Fatalf("%.0f bytes per live pending request beyond the payload, want under 1024", per)
	}
}

// BenchmarkLivePendingFootprint reports bytes/req: heap held per live pending
// request beyond its payload, over 100,000 requests.
func BenchmarkLivePendingFootprint(b *testing.B) {
	var per float64
	for b.Loop() {
		per = footprint(b, 100_000, 512)
	}
	b.ReportMetric(per, "bytes/req")
}

package idempotency_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/memory"
)

// BenchmarkBeginComplete measures the store side of one idempotent request
// on the memory store (Begin, then Complete, each its own transaction, as
// Once.Do runs them) beside the raw map insert it replaces; compare their
// ns/op for the overhead ratio.
func BenchmarkBeginComplete(b *testing.B) {
	now := time.Date(2026, 3, 14, 0, 0, 0, 0, time.UTC)
	body := []byte(`{"id":"Quote:1","status":"PROCESSING"}`)
	var seq atomic.Int64
	b.Run("memory", func(b *testing.B) {
		s := memory.New()
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			r := storage.IdempotencyRecord{Scope: "Platform:1", Key: fmt.Sprint(seq.Add(1)), Token: "t", Fingerprint: []byte("fp"),
				State: storage.IdempotencyInProgress, CreatedAt: now, ExpiresAt: now.Add(time.Minute)}
			if err := s.Atomic(ctx, func(tx storage.Tx) error { return tx.Idempotency().Begin(ctx, &r, now) }); err != nil {
				b.Fatal(err)
			}
			r.State, r.Status, r.Body, r.ExpiresAt = storage.IdempotencyComplete, 200, body, now.Add(time.Hour)
			if err := s.Atomic(ctx, func(tx storage.Tx) error { return tx.Idempotency().Complete(ctx, &r) }); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("rawmap", func(b *testing.B) {
		type entry struct {
			digest [32]byte
			result []byte
		}
		m := map[string]entry{}
		b.ReportAllocs()
		for b.Loop() {
			k := "Platform:1\x00" + fmt.Sprint(seq.Add(1))
			if _, ok := m[k]; ok {
				b.Fatal("duplicate")
			}
			m[k] = entry{}
			m[k] = entry{result: body}
		}
	})
}

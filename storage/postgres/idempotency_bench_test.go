package postgres_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/walletgate/walletgate/storage"
)

// BenchmarkIdempotencyBeginComplete measures the store side of one
// idempotent request on PostgreSQL, Begin then Complete, each its own
// Atomic call as storage/idempotency's Once runs them, beside one raw
// autocommit INSERT of the completed row on the same table and pool: the
// ratio of the two ns/op is the cost of the reservation protocol (two
// transactions instead of one statement).
func BenchmarkIdempotencyBeginComplete(b *testing.B) {
	ctx := context.Background()
	pool := newPool(b, 4)
	s := newStore(b, pool)
	now := time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)
	body := []byte(`{"id":"Quote:1","status":"PROCESSING"}`)
	var seq atomic.Int64 // keys stay unique across -count runs of one schema
	b.Run("store", func(b *testing.B) {
		for b.Loop() {
			r := storage.IdempotencyRecord{Scope: "Platform:1", Key: fmt.Sprint(seq.Add(1)), Token: "t", Fingerprint: []byte("fp"),
				State: storage.IdempotencyInProgress, CreatedAt: now, ExpiresAt: now.Add(time.Minute)}
			if err := s.Atomic(ctx, func(tx storage.Tx) error { return tx.Idempotency().Begin(ctx, &r, now) }); err != nil {
				b.Fatal(err)
			}
			r.Status, r.Body, r.ExpiresAt = 200, body, now.Add(time.Hour)
			if err := s.Atomic(ctx, func(tx storage.Tx) error { return tx.Idempotency().Complete(ctx, &r) }); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("rawinsert", func(b *testing.B) {
		table := pgx.Identifier{s.Schema(), "idempotency_keys"}.Sanitize()
		sql := `INSERT INTO ` + table + ` (scope, key, token, fingerprint, state, status, header, body, created_at, expires_at)
			VALUES ($1, $2, 't', $3, 'COMPLETE', 200, NULL, $4, $5, $6)`
		for b.Loop() {
			if _, err := pool.Exec(ctx, sql, "Platform:1", fmt.Sprint(seq.Add(1)), []byte("fp"), body, now, now.Add(time.Hour)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

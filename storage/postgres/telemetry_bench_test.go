package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/walletgate/walletgate/apierror/operation/telemetrytest"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/postgres"
)

// BenchmarkTransactionTelemetry measures what the telemetry around Atomic
// costs: Bare is the transaction without it, NilProviders with the
// default no-op providers and discarding logger, SDK with the
// OpenTelemetry SDK recording every span and measurement. Empty runs a
// transaction that issues no statement (a pool acquire and release, no
// round trip), so the wrapper's cost shows undiluted; Read runs one plain
// read, one round trip.
func BenchmarkTransactionTelemetry(b *testing.B) {
	ctx := context.Background()
	pool := newPool(b, 4)
	plain := newStore(b, pool)
	p := storage.PendingRequest{ID: newID(b, "Request"), AccountID: "a", CreatedAt: time.Unix(0, 0).UTC(),
		ExpiresAt: time.Unix(60, 0).UTC()}
	mustAtomic(b, plain, func(tx storage.Tx) error { return tx.PendingRequests().Create(ctx, &p, storage.Quota{Limit: 1000}) })
	c := telemetrytest.New(b)
	sdk, err := postgres.New(pool, postgres.Config{Schema: plain.Schema(), Telemetry: c.Telemetry()})
	if err != nil {
		b.Fatal(err)
	}
	bodies := []struct {
		name string
		fn   func(storage.Tx) error
	}{
		{"Empty", func(storage.Tx) error { return nil }},
		{"Read", func(tx storage.Tx) error { _, err := tx.PendingRequests().Get(ctx, p.ID); return err }},
	}
	for _, body := range bodies {
		b.Run(body.name+"/Bare", func(b *testing.B) {
			for b.Loop() {
				if err := postgres.AtomicBare(plain, ctx, body.fn); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(body.name+"/NilProviders", func(b *testing.B) {
			for b.Loop() {
				if err := plain.Atomic(ctx, body.fn); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(body.name+"/SDK", func(b *testing.B) {
			for b.Loop() {
				if err := sdk.Atomic(ctx, body.fn); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

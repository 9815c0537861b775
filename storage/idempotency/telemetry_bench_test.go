package idempotency_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/walletgate/walletgate/apierror/operation/telemetrytest"
	"github.com/walletgate/walletgate/storage/idempotency"
	"github.com/walletgate/walletgate/storage/memory"
)

// BenchmarkDoTelemetry runs Once.Do for a first request (reserve, run,
// store) on the memory store with the default no-op providers and with the
// OpenTelemetry SDK recording every span, count and log record: their ratio
// is the cost of the telemetry. BenchmarkBeginComplete beside it is the
// store side alone.
func BenchmarkDoTelemetry(b *testing.B) {
	ctx := context.Background()
	fn := func(context.Context) (idempotency.Response, error) {
		return idempotency.Response{Status: 200, Body: []byte(`{"ok":true}`)}, nil
	}
	c := telemetrytest.New(b)
	for _, bc := range []struct {
		name string
		cfg  idempotency.Config
	}{
		{"NilProviders", idempotency.Config{}},
		{"SDK", idempotency.Config{Telemetry: c.Telemetry()}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			cfg := bc.cfg
			cfg.Store = memory.New()
			g, err := idempotency.New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				r := idempotency.Request{Scope: "Platform:1", Key: fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i),
					Method: "POST", Path: "/quotes/Q1/execute", Body: []byte(`{"a":1}`)}
				if _, _, err := g.Do(ctx, r, fn); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

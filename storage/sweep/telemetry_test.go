package sweep_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"go.opentelemetry.io/otel/codes"

	"github.com/walletgate/walletgate/apierror/operation/telemetrytest"
	"github.com/walletgate/walletgate/storage/memory"
	"github.com/walletgate/walletgate/storage/sweep"
)

// TestRunTelemetry: Run counts the records it deletes and the sweeps that
// failed, records a "sweep.run" span per sweep and logs each failure at
// Error with the store's error.
func TestRunTelemetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := telemetrytest.New(t)
		store := &counting{Store: memory.New()}
		pending(t, store, 3, time.Now().Add(-2*time.Hour))
		s, err := sweep.New(sweep.Config{Store: store, Interval: time.Minute,
			Telemetry: c.Telemetry()})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- s.Run(ctx) }()
		synctest.Wait()
		store.mu.Lock()
		store.fail = errors.New("relation is gone")
		store.mu.Unlock()
		time.Sleep(time.Minute)
		synctest.Wait()
		cancel()
		<-done

		if n := c.Sum(t, "walletgate.sweep.deleted"); n != 3 {
			t.Errorf("%d deleted records counted, want 3", n)
		}
		if n := c.Sum(t, "walletgate.sweep.failures"); n != 1 {
			t.Errorf("%d failed sweeps counted, want 1", n)
		}
		spans := c.Ended("sweep.run")
		if len(spans) != 2 {
			t.Fatalf("%d sweep.run spans, want 2", len(spans))
		}
		if v, _ := telemetrytest.SpanAttr(spans[0], "walletgate.sweep.deleted"); v.AsInt64() != 3 || spans[1].Status().Code != codes.Error {
			t.Errorf("spans: deleted %d, second status %v", v.AsInt64(), spans[1].Status())
		}
		logs := c.Find(slog.LevelError, "sweep")
		if len(logs) != 1 || logs[0].Attrs["error"] != "sweep: relation is gone" {
			t.Errorf("Error records %+v, want one with the store's error", logs)
		}
	})
}

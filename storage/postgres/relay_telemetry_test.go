package postgres_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"

	"github.com/walletgate/walletgate/apierror/operation/telemetrytest"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/relay"
)

// TestRelayReportsStoreErrors: on PostgreSQL, a relay whose store fails
// while recording the outcomes, while leasing and while reading the
// backlog reports each failure to OnStoreError, the store_errors counter
// and an Error log record. The store fails for real: the outbox table is
// renamed away under it.
func TestRelayReportsStoreErrors(t *testing.T) {
	ctx := t.Context()
	pool := newPool(t, 4)
	s := newStore(t, pool)
	c := telemetrytest.New(t)
	table := pgx.Identifier{s.Schema(), "outbox_events"}.Sanitize()
	hide := func(t *testing.T) {
		t.Helper()
		if _, err := pool.Exec(context.Background(), "ALTER TABLE "+table+" RENAME TO outbox_events_hidden"); err != nil {
			t.Fatal(err)
		}
	}
	restore := func(t *testing.T) {
		t.Helper()
		hidden := pgx.Identifier{s.Schema(), "outbox_events_hidden"}.Sanitize()
		if _, err := pool.Exec(context.Background(), "ALTER TABLE "+hidden+" RENAME TO outbox_events"); err != nil {
			t.Fatal(err)
		}
	}
	appendOutbox(t, s, 1, 1, time.Now())

	var mu sync.Mutex
	var ops []string
	pub := publisherFunc(func(context.Context, storage.Event) error {
		hide(t) // the delivery succeeds; recording it fails
		return nil
	})
	r, err := relay.New(relay.Config{Store: s, Publisher: pub, Lease: 10 * time.Second,
		Telemetry: c.Telemetry(),
		OnStoreError: func(op string, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				t.Error("OnStoreError without an error")
			}
			ops = append(ops, op)
		}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.RunOnce(ctx); err == nil {
		t.Fatal("RunOnce recorded the outcome in a missing table")
	}
	if _, err := r.RunOnce(ctx); err == nil {
		t.Fatal("RunOnce leased from a missing table")
	}
	if _, ok := c.Gauge(t, "walletgate.relay.backlog"); ok {
		t.Error("backlog gauge observed from a missing table")
	}
	restore(t)
	if n, ok := c.Gauge(t, "walletgate.relay.backlog"); !ok || n != 1 {
		t.Errorf("backlog %v after the table came back, want 1", n)
	}

	mu.Lock()
	got := ops
	mu.Unlock()
	want := []string{relay.OpRecord, relay.OpLease, relay.OpBacklog}
	if len(got) != len(want) {
		t.Fatalf("OnStoreError saw %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("OnStoreError saw %v, want %v", got, want)
		}
		if n := c.Sum(t, "walletgate.relay.store_errors", attribute.String("walletgate.operation", want[i])); n != 1 {
			t.Errorf("store_errors{%s} = %d, want 1", want[i], n)
		}
	}
	leases := c.Ended("relay.lease")
	if len(leases) != 2 || leases[0].Status().Code == codes.Error || leases[1].Status().Code != codes.Error {
		t.Errorf("relay.lease spans: %d, want 2, the second failed", len(leases))
	} else if et, _ := telemetrytest.SpanAttr(leases[1], "error.type"); et.AsString() == "" {
		t.Error("failed relay.lease span without error.type")
	}
	if n := c.Sum(t, "walletgate.relay.deliveries", attribute.String("walletgate.outcome", "ok")); n != 1 {
		t.Errorf("%d ok deliveries counted, want 1", n)
	}
	logs := c.Find(slog.LevelError, "store operation failed")
	if len(logs) != 3 {
		t.Fatalf("%d Error records, want 3: %+v", len(logs), logs)
	}
	for i, l := range logs {
		if l.Attrs["operation"] != "relay."+want[i] || l.Attrs["error"] == "" {
			t.Errorf("Error record %+v", l)
		}
	}
}

// publisherFunc is a relay.Publisher made of a function.
type publisherFunc func(context.Context, storage.Event) error

func (f publisherFunc) Publish(ctx context.Context, e storage.Event) error { return f(ctx, e) }

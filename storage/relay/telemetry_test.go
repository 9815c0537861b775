package relay_test

import (
	"errors"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"

	"github.com/walletgate/walletgate/apierror/operation"
	"github.com/walletgate/walletgate/apierror/operation/telemetrytest"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/memory"
	"github.com/walletgate/walletgate/storage/relay"
)

var (
	outcomeOK  = attribute.String("walletgate.outcome", "ok")
	outcomeErr = attribute.String("walletgate.outcome", "error")
)

// TestTelemetry: the relay's spans, counters, gauges and logs follow its
// deliveries, retries and parked events, and never carry the payload.
func TestTelemetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		s := memory.New()
		c := telemetrytest.New(t)
		const secret = "payload-secret-5d1e0f"
		bad, err := storage.NewEvent(nil, "TEST.BAD", "ExternalAccount:z", map[string]string{"token": secret}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		mustAtomic(t, s, func(tx storage.Tx) error { return tx.Outbox().Append(ctx, &bad) })
		good := appendEvents(t, s, 2, 2, time.Now())
		f := &fake{fail: func(e storage.Event) error {
			if e.ID == bad.ID {
				return errors.New("receiver answered 503")
			}
			return nil
		}}
		var storeErrs int
		r := newRelay(t, relay.Config{Store: s, Publisher: f, MaxAge: time.Hour, MaxBackoff: time.Minute,
			Telemetry:    c.Telemetry(),
			OnStoreError: func(string, error) { storeErrs++ }})

		if n, ok := c.Gauge(t, "walletgate.relay.backlog"); !ok || n != 3 {
			t.Fatalf("backlog %v before delivery, want 3", n)
		}
		time.Sleep(30 * time.Second)
		if age, _ := c.Gauge(t, "walletgate.relay.oldest_age"); age != 30 {
			t.Fatalf("oldest_age %v, want 30", age)
		}
		if res := runOnce(t, r); res != (relay.Result{Delivered: 2, Retried: 1}) {
			t.Fatalf("first run: %+v", res)
		}
		if n, _ := c.Gauge(t, "walletgate.relay.backlog"); n != 1 {
			t.Fatalf("backlog %v after the first run, want 1", n)
		}
		time.Sleep(time.Hour)
		if res := runOnce(t, r); res != (relay.Result{Parked: 1}) {
			t.Fatalf("after MaxAge: %+v", res)
		}
		if n, _ := c.Gauge(t, "walletgate.relay.backlog"); n != 0 {
			t.Fatalf("backlog %v after parking, want 0", n)
		}
		if age, _ := c.Gauge(t, "walletgate.relay.oldest_age"); age != 0 {
			t.Fatalf("oldest_age %v with no backlog, want 0", age)
		}

		if n := len(c.Ended("relay.lease")); n != 2 {
			t.Errorf("%d relay.lease spans, want 2", n)
		}
		pubs := c.Ended("relay.publish")
		if len(pubs) != 4 {
			t.Fatalf("%d relay.publish spans, want 4", len(pubs))
		}
		failed := 0
		for _, sp := range pubs {
			typ, _ := telemetrytest.SpanAttr(sp, "walletgate.event.type")
			if sp.Status().Code == codes.Error {
				failed++
				if typ.AsString() != "TEST.BAD" {
					t.Errorf("failed publish span of type %q", typ.AsString())
				}
				if et, ok := telemetrytest.SpanAttr(sp, "error.type"); !ok || et.AsString() == "" {
					t.Error("failed publish span without error.type")
				}
			}
		}
		if failed != 2 {
			t.Errorf("%d failed publish spans, want 2", failed)
		}
		if n := c.Sum(t, "walletgate.relay.deliveries", outcomeOK, attribute.String("walletgate.event.type", good[0].Type)); n != 2 {
			t.Errorf("%d ok deliveries, want 2", n)
		}
		if n := c.Sum(t, "walletgate.relay.deliveries", outcomeErr, attribute.String("walletgate.event.type", "TEST.BAD")); n != 2 {
			t.Errorf("%d failed deliveries, want 2", n)
		}
		if n := c.Sum(t, "walletgate.relay.retries"); n != 1 {
			t.Errorf("%d retries, want 1", n)
		}
		if n := c.Sum(t, "walletgate.relay.parked"); n != 1 {
			t.Errorf("%d parked, want 1", n)
		}
		if w := c.Find(slog.LevelWarn, "delivery failed"); len(w) != 2 || w[0].Attrs["event_id"] != bad.ID {
			t.Errorf("Warn records %+v, want 2 naming %s", w, bad.ID)
		}
		if e := c.Find(slog.LevelError, "parked"); len(e) != 1 || e[0].Attrs["event_id"] != bad.ID {
			t.Errorf("Error records %+v, want one naming %s", e, bad.ID)
		}
		if storeErrs != 0 {
			t.Errorf("%d store errors reported, want 0", storeErrs)
		}
		c.NoSecrets(t, secret, string(bad.Payload))
	})
}

// TestTelemetryLostLease: outcomes lost with an ended lease are counted
// and logged at Warn.
func TestTelemetryLostLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		s := memory.New()
		c := telemetrytest.New(t)
		release := make(chan struct{})
		started := make(chan struct{})
		slow := &fake{fail: func(storage.Event) error { close(started); <-release; return errors.New("too late") }}
		a := newRelay(t, relay.Config{Store: s, Publisher: slow, Owner: "a", Lease: time.Minute,
			Telemetry: operation.Telemetry{Logger: c.Logger, MeterProvider: c.MeterProvider}})
		b := newRelay(t, relay.Config{Store: s, Publisher: &fake{}, Owner: "b", Lease: time.Minute})
		appendEvents(t, s, 1, 1, time.Now())
		resA := make(chan relay.Result)
		go func() { res, _ := a.RunOnce(ctx); resA <- res }()
		<-started
		time.Sleep(time.Minute)
		runOnce(t, b)
		close(release)
		if res := <-resA; res != (relay.Result{Lost: 1}) {
			t.Fatalf("a: %+v, want the event lost", res)
		}
		if n := c.Sum(t, "walletgate.relay.lost_leases"); n != 1 {
			t.Errorf("%d lost leases counted, want 1", n)
		}
		if w := c.Find(slog.LevelWarn, "lease had ended"); len(w) != 1 || w[0].Attrs["events"] != "1" {
			t.Errorf("Warn records %+v", w)
		}
	})
}

func mustAtomic(t testing.TB, s storage.Store, fn func(storage.Tx) error) {
	t.Helper()
	if err := s.Atomic(t.Context(), fn); err != nil {
		t.Fatal(err)
	}
}

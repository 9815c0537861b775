package webhook_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/walletgate/walletgate/apierror/operation"
	"github.com/walletgate/walletgate/apierror/operation/telemetrytest"
	"github.com/walletgate/walletgate/apierror/webhooksig"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/memory"
	"github.com/walletgate/walletgate/storage/relay"
	"github.com/walletgate/walletgate/storage/webhook"
)

// TestPublisherTelemetry: each delivery is one "webhook.deliver" client
// span with the HTTP attributes, one count of walletgate.webhook.deliveries
// by outcome and one duration; neither they nor the logs nor the returned
// errors carry the body, the signature or the URL's query.
func TestPublisherTelemetry(t *testing.T) {
	ctx := context.Background()
	c := telemetrytest.New(t)
	const bodySecret, urlSecret = "body-secret-a41f", "url-secret-9e2b"
	payload := []byte(`{"id":"` + testID + `","type":"T","timestamp":"2026-11-23T12:00:00Z","data":{"k":"` + bodySecret + `"}}`)
	e := storage.Event{ID: testID, Type: "EXTERNAL_ACCOUNT.STATUS_UPDATED", Payload: payload}

	var mu sync.Mutex
	var sigs []string
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		sigs = append(sigs, r.Header.Get(webhooksig.SignatureHeader))
		mu.Unlock()
		w.WriteHeader(status)
	}))
	target := srv.URL + "/hook?token=" + urlSecret
	route := target
	p, err := webhook.NewPublisher(webhook.PublisherConfig{
		Route:  func(storage.Event) (string, error) { return route, nil },
		Signer: testSigner(t), Telemetry: c.Telemetry()})
	if err != nil {
		t.Fatal(err)
	}

	if err := p.Publish(ctx, e); err != nil { // ok
		t.Fatal(err)
	}
	status = http.StatusInternalServerError
	if err := p.Publish(ctx, e); err == nil { // refused
		t.Fatal("a 500 counted as delivered")
	}
	srv.Close()
	errs := []error{}
	err = p.Publish(ctx, e) // no answer
	var de *webhook.DeliveryError
	if !errors.As(err, &de) || de.Status != 0 {
		t.Fatalf("no answer: %v", err)
	}
	errs = append(errs, err)
	route = "not a url ?token=" + urlSecret
	if err := p.Publish(ctx, e); err == nil { // not sent
		t.Fatal("sent to a bad URL")
	} else {
		errs = append(errs, err)
	}

	spans := c.Ended("webhook.deliver")
	if len(spans) != 4 {
		t.Fatalf("%d webhook.deliver spans, want 4", len(spans))
	}
	wantStatus := []int64{200, 500, 0, 0}
	wantErrType := []string{"", "500", "net.dial", "not_sent"}
	for i, sp := range spans {
		if sp.SpanKind() != trace.SpanKindClient {
			t.Errorf("span %d: kind %v", i, sp.SpanKind())
		}
		if m, _ := telemetrytest.SpanAttr(sp, "http.request.method"); m.AsString() != "POST" {
			t.Errorf("span %d: method %q", i, m.AsString())
		}
		addr, _ := telemetrytest.SpanAttr(sp, "server.address")
		if i < 3 && addr.AsString() != "127.0.0.1" {
			t.Errorf("span %d: server.address %q", i, addr.AsString())
		}
		st, _ := telemetrytest.SpanAttr(sp, "http.response.status_code")
		if st.AsInt64() != wantStatus[i] {
			t.Errorf("span %d: status %d, want %d", i, st.AsInt64(), wantStatus[i])
		}
		et, _ := telemetrytest.SpanAttr(sp, "error.type")
		if et.AsString() != wantErrType[i] {
			t.Errorf("span %d: error.type %q, want %q", i, et.AsString(), wantErrType[i])
		}
		if (sp.Status().Code == codes.Error) != (i > 0) {
			t.Errorf("span %d: status %v", i, sp.Status())
		}
	}
	ok := attribute.String("walletgate.outcome", "ok")
	bad := attribute.String("walletgate.outcome", "error")
	if n := c.Sum(t, "walletgate.webhook.deliveries", ok, attribute.Int("http.response.status_code", 200)); n != 1 {
		t.Errorf("%d ok deliveries, want 1", n)
	}
	if n := c.Sum(t, "walletgate.webhook.deliveries", bad); n != 3 {
		t.Errorf("%d failed deliveries, want 3", n)
	}
	if n := c.Count(t, "walletgate.webhook.delivery.duration"); n != 4 {
		t.Errorf("%d durations, want 4", n)
	}
	if n := len(c.Find(slog.LevelDebug, "")); n != 2 {
		t.Errorf("%d Debug records, want 2 (500 and no answer)", n)
	}
	if l := c.Find(slog.LevelError, ""); len(l) != 1 || l[0].Attrs["code"] != "not_sent" {
		t.Errorf("Error records %+v, want one not_sent", l)
	}

	if len(sigs) != 2 || sigs[0] == "" {
		t.Fatalf("receiver saw signatures %q", sigs)
	}
	secrets := append([]string{bodySecret, string(payload), urlSecret}, sigs...)
	c.NoSecrets(t, secrets...)
	for _, err := range errs {
		for _, s := range secrets {
			if strings.Contains(err.Error(), s) {
				t.Errorf("error %q carries %q", err, s)
			}
		}
	}
}

// TestRelayPublishParentsDelivery: driven by storage/relay, each
// "webhook.deliver" span is the child of the relay's "relay.publish" span,
// in the same trace.
func TestRelayPublishParentsDelivery(t *testing.T) {
	ctx := t.Context()
	c := telemetrytest.New(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	defer srv.Close()
	p, err := webhook.NewPublisher(webhook.PublisherConfig{Target: srv.URL, Signer: testSigner(t), Telemetry: operation.Telemetry{TracerProvider: c.TracerProvider}})
	if err != nil {
		t.Fatal(err)
	}
	store := memory.New()
	e := testEvent()
	if err := store.Atomic(ctx, func(tx storage.Tx) error { return tx.Outbox().Append(ctx, &e) }); err != nil {
		t.Fatal(err)
	}
	r, err := relay.New(relay.Config{Store: store, Publisher: p, Telemetry: operation.Telemetry{TracerProvider: c.TracerProvider}})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := r.RunOnce(ctx); err != nil || res.Delivered != 1 {
		t.Fatalf("RunOnce = %+v, %v", res, err)
	}
	pub, del := c.Ended("relay.publish"), c.Ended("webhook.deliver")
	if len(pub) != 1 || len(del) != 1 {
		t.Fatalf("%d relay.publish and %d webhook.deliver spans, want 1 each", len(pub), len(del))
	}
	if del[0].Parent().SpanID() != pub[0].SpanContext().SpanID() || del[0].SpanContext().TraceID() != pub[0].SpanContext().TraceID() {
		t.Fatal("webhook.deliver is not the child of relay.publish")
	}
}

package idempotency_test

import (
	"context"
	"log/slog"
	"net/http"
	"sync/atomic"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/apierror/operation"
	"github.com/walletgate/walletgate/apierror/operation/telemetrytest"
	"github.com/walletgate/walletgate/storage/idempotency"
	"github.com/walletgate/walletgate/storage/memory"
)

// TestMiddlewareTelemetry: every answer of the middleware to a keyed
// request is counted by reason, set on the "idempotency.do" span and
// logged with the request id at the level of its kind (Info for a replay
// and a 409, Debug for an execution and a 400, Error with the cause for a
// 500); the key and the body are never recorded.
func TestMiddlewareTelemetry(t *testing.T) {
	c := telemetrytest.New(t)
	store := memory.New()
	cfg := idempotency.Config{Store: store, Telemetry: c.Telemetry()}
	g := newOnce(t, cfg)
	var runs atomic.Int32
	scope := func(*http.Request) string { return "Platform:1" }
	h := apierror.Observe(middleware(t, g, scope, counter(&runs)), nil)
	const bodySecret = `{"secret":"idem-body-secret-77ab"}`
	rid := func(id string) []string { return []string{idempotency.Header, key, apierror.RequestIDHeader, id} }

	if r := send(t, h, "POST", "/x", bodySecret, rid("req-1")...); r.status != http.StatusCreated {
		t.Fatalf("first: %d %s", r.status, r.body)
	}
	if r := send(t, h, "POST", "/x", bodySecret, rid("req-2")...); r.header.Get(idempotency.ReplayedHeader) != "true" {
		t.Fatalf("repeat not replayed: %d %v", r.status, r.header)
	}
	send(t, h, "POST", "/x", `{"other":1}`, rid("req-3")...).wantError(t, http.StatusConflict, apierror.Conflict)
	send(t, h, "POST", "/x", `{}`, idempotency.Header, "not-a-uuid", apierror.RequestIDHeader, "req-4").
		wantError(t, http.StatusBadRequest, apierror.InvalidInput)
	down := apierror.Observe(middleware(t, newOnce(t, idempotency.Config{Store: failingStore{store}, Telemetry: c.Telemetry()}), scope, counter(&runs)), nil)
	send(t, down, "POST", "/x", bodySecret, rid("req-5")...).wantError(t, http.StatusInternalServerError, apierror.InternalError)
	if runs.Load() != 1 {
		t.Fatalf("%d runs, want 1", runs.Load())
	}

	const outcomes = "walletgate.idempotency.outcomes"
	reason := func(r string) attribute.KeyValue { return attribute.String("walletgate.reason", r) }
	for _, w := range []struct {
		reason, outcome string
	}{{"executed", "ok"}, {"replayed", "ok"}, {"mismatch", "refused"}, {"invalid_key", "refused"}, {"store", "error"}} {
		if n := c.Sum(t, outcomes, reason(w.reason), attribute.String("walletgate.outcome", w.outcome)); n != 1 {
			t.Errorf("%s/%s counted %d times, want 1", w.reason, w.outcome, n)
		}
	}
	spans := c.Ended("idempotency.do")
	if len(spans) != 5 {
		t.Fatalf("%d idempotency.do spans, want 5", len(spans))
	}
	for i, want := range []string{"executed", "replayed", "mismatch", "invalid_key", "store"} {
		if v, _ := telemetrytest.SpanAttr(spans[i], "walletgate.reason"); v.AsString() != want {
			t.Errorf("span %d: reason %q, want %q", i, v.AsString(), want)
		}
		if (spans[i].Status().Code == codes.Error) != (want == "store") {
			t.Errorf("span %d: status %v", i, spans[i].Status())
		}
	}

	byID := map[string]telemetrytest.Log{}
	for _, r := range c.Logs() {
		byID[r.Attrs["request_id"]] = r
	}
	for id, want := range map[string]struct {
		level  slog.Level
		reason string
	}{
		"req-1": {slog.LevelDebug, "executed"},
		"req-2": {slog.LevelInfo, "replayed"},
		"req-3": {slog.LevelInfo, "mismatch"},
		"req-4": {slog.LevelDebug, "invalid_key"},
		"req-5": {slog.LevelError, "store"},
	} {
		r, ok := byID[id]
		if !ok || r.Level != want.level || r.Attrs["reason"] != want.reason {
			t.Errorf("record of %s: %+v, want %v %s", id, r, want.level, want.reason)
		}
	}
	if r := byID["req-3"]; r.Attrs["code"] != "CONFLICT" {
		t.Errorf("409 record without its code: %+v", r)
	}
	if r := byID["req-5"]; r.Attrs["error"] != "db down" {
		t.Errorf("500 record without its cause: %+v", r)
	}
	c.NoSecrets(t, "idem-body-secret-77ab", key)
}

// TestDoInProgressTelemetry: a repeat while the first request still runs
// is counted and logged at Info as in_progress, with the 409's code.
func TestDoInProgressTelemetry(t *testing.T) {
	ctx := t.Context()
	c := telemetrytest.New(t)
	g := newOnce(t, idempotency.Config{Store: memory.New(), Telemetry: operation.Telemetry{Logger: c.Logger, MeterProvider: c.MeterProvider}})
	started, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, _, err := g.Do(ctx, req(`{}`), func(context.Context) (idempotency.Response, error) {
			close(started)
			<-release
			return idempotency.Response{Status: 200}, nil
		})
		done <- err
	}()
	<-started
	_, _, err := g.Do(ctx, req(`{}`), func(context.Context) (idempotency.Response, error) {
		t.Error("the repeat executed")
		return idempotency.Response{}, nil
	})
	apierrortest.Want(t, err, apierror.Conflict, "")
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := c.Sum(t, "walletgate.idempotency.outcomes", attribute.String("walletgate.reason", "in_progress"),
		attribute.String("walletgate.outcome", "refused"), attribute.String("walletgate.code", "CONFLICT")); n != 1 {
		t.Errorf("in_progress counted %d times, want 1", n)
	}
	if l := c.Find(slog.LevelInfo, "in progress"); len(l) != 1 || l[0].Attrs["reason"] != "in_progress" {
		t.Errorf("Info records %+v", l)
	}
}

package oidc_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/walletgate/walletgate/walletauth/oidc"
)

// logLines is a slog handler keeping "LEVEL msg k=v ..." lines.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) Enabled(context.Context, slog.Level) bool { return true }
func (l *logLines) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logLines) WithGroup(string) slog.Handler            { return l }
func (l *logLines) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", r.Level, r.Message)
	r.Attrs(func(a slog.Attr) bool { fmt.Fprintf(&b, " %s=%v", a.Key, a.Value); return true })
	l.mu.Lock()
	l.lines = append(l.lines, b.String())
	l.mu.Unlock()
	return nil
}

// TestKeySetFetchTelemetry: every fetch of a key set is a client span and
// a count by outcome; a failed refresh that keeps the last key set logs at
// Warn (stale), one that leaves no key set at Error, with the issuer and
// the cause and never the token.
func TestKeySetFetchTelemetry(t *testing.T) {
	spans := tracetest.NewSpanRecorder()
	reader := sdkmetric.NewManualReader()
	logs := &logLines{}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	telemetry := func(c *oidc.Config) { c.Logger, c.TracerProvider, c.MeterProvider = slog.New(logs), tp, mp }

	clk := newClock()
	k := rs256("k1")
	srv := newKeyServer(t, jwksOf(t, publicJWK(t, k, nil)))
	v := newVerifier(t, srv, clk, telemetry)
	tok := mint(t, k, claims(clk.Now()), nil)
	verifyOK(t, v, tok) // ok
	srv.serve([]byte("oops"), http.StatusInternalServerError)
	clk.Advance(61 * time.Second)
	unknown := mint(t, rs256("k2"), claims(clk.Now()), nil)
	if _, err := v.Verify(context.Background(), unknown, oidc.Expect{}); err == nil {
		t.Fatal("a token of an unknown key verified")
	} // stale

	down := newKeyServer(t, []byte("down"))
	down.serve([]byte("down"), http.StatusServiceUnavailable)
	v2 := newVerifier(t, down, newClock(), telemetry)
	if _, err := v2.Verify(context.Background(), tok, oidc.Expect{}); err == nil {
		t.Fatal("verified without keys")
	} // error

	var outcomes []string
	for _, s := range spans.Ended() {
		if s.Name() != "oidc.jwks.fetch" || s.SpanKind().String() != "client" {
			t.Fatalf("span %s (%s)", s.Name(), s.SpanKind())
		}
		for _, a := range s.Attributes() {
			if a.Key == "walletgate.outcome" {
				outcomes = append(outcomes, a.Value.AsString())
			}
		}
	}
	if !slices.Equal(outcomes, []string{"ok", "stale", "error"}) {
		t.Fatalf("span outcomes %v", outcomes)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != "walletgate.oidc.jwks.fetches" {
				continue
			}
			for _, p := range m.Data.(metricdata.Sum[int64]).DataPoints {
				o, _ := p.Attributes.Value("walletgate.outcome")
				counts[o.AsString()] += p.Value
			}
		}
	}
	if counts["ok"] != 1 || counts["stale"] != 1 || counts["error"] != 1 {
		t.Fatalf("counts %v", counts)
	}
	logs.mu.Lock()
	defer logs.mu.Unlock()
	if len(logs.lines) != 2 || !strings.HasPrefix(logs.lines[0], "WARN ") || !strings.HasPrefix(logs.lines[1], "ERROR ") {
		t.Fatalf("records %q", logs.lines)
	}
	for _, l := range logs.lines {
		if !strings.Contains(l, "issuer="+testIssuer) || !strings.Contains(l, "error=") ||
			strings.Contains(l, tok) || strings.Contains(l, unknown) {
			t.Fatalf("record %q", l)
		}
	}
}

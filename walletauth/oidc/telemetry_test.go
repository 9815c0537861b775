package oidc_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/walletgate/walletgate/apierror/operation/telemetrytest"
	"github.com/walletgate/walletgate/storage/storagetest"
	"github.com/walletgate/walletgate/walletauth/oidc"
)

// TestKeySetFetchTelemetry: every fetch of a key set is a client span and
// a count by outcome; a failed refresh that keeps the last key set logs at
// Warn (stale), one that leaves no key set at Error, with the issuer and
// the cause and never the token.
func TestKeySetFetchTelemetry(t *testing.T) {
	tc := telemetrytest.New(t)
	telemetry := func(c *oidc.Config) {
		c.Telemetry = tc.Telemetry()
	}

	clk := storagetest.NewClock(t0)
	k := rs256("k1")
	srv := newKeyServer(t, jwksOf(t, publicJWK(t, k, nil)))
	v := newVerifier(t, srv, clk, telemetry)
	tok := mint(t, k, claims(clk.Now()), nil)
	verifyOK(t, v, tok) // ok
	srv.serve([]byte("oops"), http.StatusInternalServerError)
	clk.Add(61 * time.Second)
	unknown := mint(t, rs256("k2"), claims(clk.Now()), nil)
	if _, err := v.Verify(context.Background(), unknown, oidc.Expect{}); err == nil {
		t.Fatal("a token of an unknown key verified")
	} // stale

	down := newKeyServer(t, []byte("down"))
	down.serve([]byte("down"), http.StatusServiceUnavailable)
	v2 := newVerifier(t, down, storagetest.NewClock(t0), telemetry)
	if _, err := v2.Verify(context.Background(), tok, oidc.Expect{}); err == nil {
		t.Fatal("verified without keys")
	} // error

	var outcomes []string
	for _, s := range tc.Spans() {
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
	counts := map[string]int64{}
	for _, o := range []string{"ok", "stale", "error"} {
		counts[o] = tc.Sum(t, "walletgate.oidc.jwks.fetches", attribute.String("walletgate.outcome", o))
	}
	if counts["ok"] != 1 || counts["stale"] != 1 || counts["error"] != 1 {
		t.Fatalf("counts %v", counts)
	}
	lines := tc.Lines()
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "WARN ") || !strings.HasPrefix(lines[1], "ERROR ") {
		t.Fatalf("records %q", lines)
	}
	for _, l := range lines {
		if !strings.Contains(l, "issuer="+testIssuer) || !strings.Contains(l, "error=") ||
			strings.Contains(l, tok) || strings.Contains(l, unknown) {
			t.Fatalf("record %q", l)
		}
	}
}

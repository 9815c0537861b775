package policy_test

import (
	"log/slog"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/operation/telemetrytest"
	"github.com/walletgate/walletgate/ownership/policy"
	"github.com/walletgate/walletgate/storage/memory"
)

// TestTelemetry: each decision is counted by outcome, code and the rule
// that made it; a refusal logs at Warn with its code and reason; no id of
// a customer, wallet, session, credential or account is recorded.
func TestTelemetry(t *testing.T) {
	c := telemetrytest.New(t)
	r, err := policy.Parse([]byte(testRules))
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.New(policy.Config{Rules: r, Rates: rates{}, Clock: func() time.Time { return t0 },
		Telemetry: c.Telemetry()})
	if err != nil {
		t.Fatal(err)
	}
	w := newWorld(t, memory.New())
	dest := w.destination(t, "USD_ACCOUNT", t0.Add(-48*time.Hour))
	if _, err := w.pay(t, p, w.email, dest, 10_000, "USD", t0, true); err != nil {
		t.Fatal(err)
	}
	_, err = w.pay(t, p, w.email, dest, 50_000, "USD", t0, true)
	wantRefusal(t, err, apierror.StepUpRequired, "large-needs-passkey")

	const counter = "walletgate.policy.decisions"
	if n := c.Sum(t, counter, attribute.String("walletgate.outcome", "ok"), attribute.String("walletgate.rule", "default")); n != 1 {
		t.Fatalf("%d allowed decisions by rule default, want 1", n)
	}
	if n := c.Sum(t, counter, attribute.String("walletgate.outcome", "refused"), attribute.String("walletgate.code", "STEP_UP_REQUIRED"),
		attribute.String("walletgate.rule", "large-needs-passkey")); n != 1 {
		t.Fatalf("%d refusals by rule large-needs-passkey, want 1", n)
	}
	if spans := c.Ended("policy.decide"); len(spans) != 2 {
		t.Fatalf("%d policy.decide spans, want 2", len(spans))
	}
	warns := c.Find(slog.LevelWarn, "refused")
	if len(warns) != 1 || warns[0].Attrs["code"] != "STEP_UP_REQUIRED" {
		t.Fatalf("warn records %+v", warns)
	}
	c.NoSecrets(t, w.cust, w.wallet, w.email.cred, w.email.session, dest)
}

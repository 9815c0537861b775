package ownership

import (
	"errors"
	"log/slog"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/walletgate/walletgate/apierror/operation"
)

// scope is the instrumentation scope of the package's tracer and meter.
const scope = "github.com/walletgate/walletgate/ownership"

// Operation names of ownership: span names and walletgate.operation
// values.
const (
	opVerify = "ownership.verify"
	opPayout = "ownership.payout.decide"
)

// instruments are the Recorder of ownership's operations and its
// counters.
type instruments struct {
	*operation.Recorder
	// log is the Recorder's logger, for the HTTP adapter.
	log *slog.Logger
	// verify counts signature verifications by outcome and code.
	verify metric.Int64Counter
	// payouts counts payout decisions by outcome, code (a refusal's) and
	// walletgate.rule (an allowed payout's).
	payouts metric.Int64Counter
}

func newInstruments(cfg *Config) (*instruments, error) {
	r, err := operation.New(operation.Config{
		Scope: scope, Telemetry: cfg.Telemetry,
		Duration:            "walletgate.ownership.operation.duration",
		DurationDescription: "Duration of ownership operations, by walletgate.operation and walletgate.outcome.",
	})
	if err != nil {
		return nil, err
	}
	in := &instruments{Recorder: r, log: r.Logger()}
	meter := r.Meter()
	if in.verify, err = meter.Int64Counter("walletgate.ownership.verify.outcomes",
		metric.WithDescription("Ownership signature verifications, by walletgate.outcome and walletgate.code.")); err != nil {
		return nil, err
	}
	in.payouts, err = meter.Int64Counter("walletgate.ownership.payout.decisions",
		metric.WithDescription("Payout gate decisions, by walletgate.outcome, walletgate.code and walletgate.rule."))
	return in, err
}

// ruleOf is the walletgate.rule attribute of a decision: the rule that
// allowed it, or "" for a refusal.
func ruleOf(d *Decision) attribute.KeyValue {
	if d == nil {
		return attribute.String("walletgate.rule", "")
	}
	return attribute.String("walletgate.rule", d.Rule)
}

// signatureRefused reports whether err refuses the wallet's signature (it
// does not verify, or is malformed), a refusal worth a Warn log; a missing
// field or an unknown account is not.
func signatureRefused(err error) bool {
	return errors.Is(err, ErrMismatch) || errors.Is(err, ErrMalformed)
}

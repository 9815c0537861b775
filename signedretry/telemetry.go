package signedretry

import (
	"go.opentelemetry.io/otel/metric"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/operation"
)

// scope is the instrumentation scope of the package's tracer and meter.
const scope = "github.com/walletgate/walletgate/signedretry"

// Operation names of signedretry: span names and walletgate.operation
// values.
const (
	opIssue    = "signedretry.issue"
	opComplete = "signedretry.complete"
)

// instruments are the Recorder of signedretry's operations and its
// counters.
type instruments struct {
	*operation.Recorder
	// outcomes counts issued challenges and completed retries by outcome
	// and code (WALLET_SIGNATURE_INVALID, REQUEST_ID_MISSING, ...).
	outcomes metric.Int64Counter
}

func newInstruments(cfg *Config) (*instruments, error) {
	r, err := operation.New(operation.Config{
		Scope: scope, Telemetry: cfg.Telemetry,
		Duration:            "walletgate.signedretry.operation.duration",
		DurationDescription: "Duration of signedretry operations, by walletgate.operation and walletgate.outcome.",
		Reason:              refusalReason,
	})
	if err != nil {
		return nil, err
	}
	in := &instruments{Recorder: r}
	in.outcomes, err = r.Meter().Int64Counter("walletgate.signedretry.outcomes",
		metric.WithDescription("Signed-retry challenges issued and retries completed, by walletgate.operation, walletgate.outcome and walletgate.code."))
	return in, err
}

// refusalReason is the reason of a refusal's Warn log: details.reason or,
// when it is empty, the message of a WALLET_SIGNATURE_INVALID: the
// manager's are fixed texts naming the check that refused (the signature,
// or a signer that is revoked, expired or not allowed).
func refusalReason(e *apierror.Error) string {
	if r := e.Reason(); r != "" || e.Code != apierror.WalletSignatureInvalid {
		return r
	}
	return e.Message
}

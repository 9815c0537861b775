package policy

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/operation"
	"github.com/walletgate/walletgate/storage"
)

// scope is the instrumentation scope of the package's tracer and meter.
const scope = "github.com/walletgate/walletgate/ownership/policy"

// Operation names: span names and walletgate.operation values.
const (
	opDecide  = "policy.decide"
	opApprove = "policy.approve"
	opRefuse  = "policy.refuse"
)

// instruments are the Recorder of the policy's operations and its counter.
type instruments struct {
	*operation.Recorder
	// decisions counts decisions by walletgate.operation, walletgate.outcome,
	// walletgate.code (a refusal's) and walletgate.rule (the rule that
	// decided, allowing or refusing).
	decisions metric.Int64Counter
}

func newInstruments(cfg *Config) (*instruments, error) {
	r, err := operation.New(operation.Config{
		Scope: scope, Telemetry: cfg.Telemetry,
		Duration:            "walletgate.policy.operation.duration",
		DurationDescription: "Duration of payout policy operations, by walletgate.operation and walletgate.outcome.",
	})
	if err != nil {
		return nil, err
	}
	in := &instruments{Recorder: r}
	in.decisions, err = r.Meter().Int64Counter("walletgate.policy.decisions",
		metric.WithDescription("Payout policy decisions, by walletgate.operation, walletgate.outcome, walletgate.code and walletgate.rule."))
	return in, err
}

// ruleAttr is the walletgate.rule of an outcome: the rule that decided it,
// allowing (executed), holding (held) or refusing (err's details.rule), or
// "" when no rule did. Rule names come from the host's policy, a bounded
// set.
func ruleAttr(executed *Allowed, held *storage.PayoutApproval, err error) attribute.KeyValue {
	rule := ""
	switch {
	case executed != nil:
		rule = executed.Rule
	case held != nil:
		rule = held.Rule
	case err != nil:
		if e := apierror.As(err); e != nil {
			rule, _ = e.Details["rule"].(string)
		}
	}
	return attribute.String("walletgate.rule", rule)
}

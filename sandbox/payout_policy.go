package sandbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/walletgate/walletgate/ownership/policy"
)

// The values of [DefaultPayoutRules], in US dollars at the sandbox's fixed
// rates (a payout's amount is valued in USD cents, rounded up, before any
// rule sees it: a window counts a payout at no less than its worth).
const (
	// DailyPayoutLimitUSD is the most, in whole US dollars, the payouts of
	// one customer allowed within any 24 hours may total (rule
	// [PayoutRuleDailyLimit], window [PayoutWindowCustomerDay]): the
	// payout that would pass it is 403 PAYOUT_BLOCKED with
	// details.availableAt.
	DailyPayoutLimitUSD = 100_000
	// StepUpPayoutUSDCents is the magic value, in US cents, of a payout
	// that needs a PASSKEY session of at most [StepUpMaxSessionAge] (rule
	// [PayoutRuleStepUp]): any other session is 403 STEP_UP_REQUIRED.
	// 777.77 USD, USDB or USDC, or any amount worth 777.77 USD rounded
	// up to the cent. The session's credential must carry a passkey's
	// assurance: a passkey enrolled by an EMAIL_OTP, SMS_OTP or OAUTH
	// session carries that session's for its security-change period (24
	// hours; POST /sandbox/clock/advance moves past it).
	StepUpPayoutUSDCents = 77_777
	// StepUpMaxSessionAge is the oldest a session signing a payout of
	// [StepUpPayoutUSDCents] may be.
	StepUpMaxSessionAge = 5 * time.Minute
	// NewDestinationPayoutUSDCents is the magic value, in US cents, of a
	// payout refused to a new destination (rule
	// [PayoutRuleNewDestination]): 403 PAYOUT_BLOCKED when the external
	// account was registered, or changed status, within the last 24 hours,
	// however much it was paid meanwhile. 555.55 USD, USDB or USDC, or any
	// amount worth 555.55 USD rounded up to the cent.
	NewDestinationPayoutUSDCents = 55_555
	// ApprovalPayoutUSDCents is the magic value, in US cents, of a payout
	// held for approval (rule [PayoutRuleApproval]): the retry commits
	// without paying and answers 202 with the [PayoutApproval]; one
	// approval, by a session of another credential of the wallet (one
	// independent of the signer's: not enrolled by a weaker session, or by
	// the signer, less than 24 hours ago) or by the operator
	// [SandboxRiskOperator], within [ApprovalTTL], pays it. 888.88 USD,
	// USDB or USDC, or any amount worth 888.88 USD rounded up to the cent.
	ApprovalPayoutUSDCents = 88_888
	// ApprovalTTL is how long a payout of [ApprovalPayoutUSDCents] waits
	// for its approval; it is EXPIRED after.
	ApprovalTTL = 24 * time.Hour
	// SandboxRiskOperator is the operator principal of the sandbox's
	// approval rule: the POST /sandbox/payout-approvals/{id}/approve and
	// /refuse routes act as it.
	SandboxRiskOperator = "sandbox-risk-desk"
)

// The names of [DefaultPayoutRules]' refusing and holding rules and of its
// window, as refusals name them in details.rule and details.window and a
// held payout in its [PayoutApproval].Rule.
const (
	PayoutRuleDailyLimit     = "daily-limit"
	PayoutRuleStepUp         = "step-up-amount"
	PayoutRuleNewDestination = "new-destination"
	PayoutRuleApproval       = "approval-amount"
	PayoutWindowCustomerDay  = "customer-day"
)

// DefaultPayoutRules is the payout policy of a simulator configured
// without Config.PayoutRules, as the JSON [policy.Parse] reads. Amounts are
// USD cents. In order, the first rule that matches deciding:
//
//   - daily-limit: a payout that would bring the customer's payouts of the
//     last 24 hours above [DailyPayoutLimitUSD] is blocked;
//   - above-approval-amount: a payout above [ApprovalPayoutUSDCents] is
//     allowed;
//   - approval-amount: a payout of exactly [ApprovalPayoutUSDCents] is
//     held until one approval, by a session of another credential of the
//     source wallet or by the operator [SandboxRiskOperator], within
//     [ApprovalTTL];
//   - above-step-up-amount: a payout above [StepUpPayoutUSDCents] is
//     allowed;
//   - step-up-amount: a payout of exactly [StepUpPayoutUSDCents] is allowed
//     when signed by a PASSKEY session of at most [StepUpMaxSessionAge];
//   - above-new-destination-amount: a payout above
//     [NewDestinationPayoutUSDCents] is allowed;
//   - new-destination: a payout of exactly [NewDestinationPayoutUSDCents]
//     to a destination registered or changed within 24 hours, however
//     much it was paid meanwhile, is blocked;
//   - default: everything else is allowed.
//
// So the approval, the step-up and the cool-off are reached by their magic
// amounts only, and the daily limit by paying out more than 100,000 USD in
// a day (two payouts of the single-transaction maximum,
// [TransactionMaximumUSD], fill it). A held payout counts in the window
// when it is approved, and its approval pays it only if it still fits.
const DefaultPayoutRules = `{
	"referenceCurrency": "USD",
	"windows": [{"name": "customer-day", "scope": "CUSTOMER", "period": "24h", "maxAmount": 10000000}],
	"rules": [
		{"name": "daily-limit", "match": {"exceedsWindows": ["customer-day"]}, "action": "BLOCK"},
		{"name": "above-approval-amount", "match": {"minAmount": 88889}, "action": "ALLOW"},
		{"name": "approval-amount", "match": {"minAmount": 88888}, "action": "REQUIRE_APPROVAL",
			"approval": {"count": 1, "secondCredential": true, "operators": ["sandbox-risk-desk"], "ttl": "24h"}},
		{"name": "above-step-up-amount", "match": {"minAmount": 77778}, "action": "ALLOW"},
		{"name": "step-up-amount", "match": {"minAmount": 77777}, "action": "ALLOW",
			"require": {"credentialTypes": ["PASSKEY"], "maxSessionAge": "5m"}},
		{"name": "above-new-destination-amount", "match": {"minAmount": 55556}, "action": "ALLOW"},
		{"name": "new-destination", "match": {"minAmount": 55555, "newDestinationWithin": "24h"}, "action": "BLOCK"},
		{"name": "default", "match": {}, "action": "ALLOW"}
	]
}`

// defaultPayoutRules parses [DefaultPayoutRules].
func defaultPayoutRules() (*policy.Rules, error) {
	r, err := policy.Parse([]byte(DefaultPayoutRules))
	if err != nil {
		return nil, fmt.Errorf("sandbox: DefaultPayoutRules: %w", err)
	}
	return &r, nil
}

// newPayoutLimits returns the payout policy of cfg (normalized): its
// PayoutRules, valued with the sandbox's fixed rates. It fails when the
// rules do not validate or their reference currency is not a sandbox
// currency (no payout could be valued in it).
func newPayoutLimits(cfg *Config) (*policy.Policy, error) {
	ref := cfg.PayoutRules.ReferenceCurrency
	if !knownCurrency(ref) {
		return nil, fmt.Errorf("sandbox: Config.PayoutRules: referenceCurrency %q is not a sandbox currency", ref)
	}
	p, err := policy.New(policy.Config{Rules: *cfg.PayoutRules, Rates: rates{to: ref}, Clock: cfg.Clock, Rand: cfg.Rand,
		Telemetry: cfg.Telemetry})
	if err != nil {
		return nil, fmt.Errorf("sandbox: Config.PayoutRules: %w", err)
	}
	return p, nil
}

// rates values amounts in the currency to at the sandbox's fixed rates,
// rounded up to its smallest unit (a window counts a payout at no less
// than its worth): the [policy.Rates] of the simulator.
type rates struct{ to string }

// ToReference converts amount of currency into smallest units of r.to. An
// unknown currency, a negative amount or a result beyond int64 is an
// error.
func (r rates) ToReference(_ context.Context, currency string, amount int64) (int64, error) {
	if amount < 0 {
		return 0, errors.New("negative amount")
	}
	v, ok := convert(amount, currency, r.to, true)
	if !ok {
		return 0, fmt.Errorf("no sandbox rate from %s to %s for %d", currency, r.to, amount)
	}
	return v, nil
}

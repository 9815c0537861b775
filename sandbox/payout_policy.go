package sandbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/walletgate/walletgate/ownership/policy"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
)

// The values of [DefaultPayoutRules], in US dollars at the sandbox's fixed
// rates (a payout's amount is valued in USD cents, rounded down, before
// any rule sees it).
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
	// down to the cent.
	StepUpPayoutUSDCents = 77_777
	// StepUpMaxSessionAge is the oldest a session signing a payout of
	// [StepUpPayoutUSDCents] may be.
	StepUpMaxSessionAge = 5 * time.Minute
	// NewDestinationPayoutUSDCents is the magic value, in US cents, of a
	// payout refused to a new destination (rule
	// [PayoutRuleNewDestination]): 403 PAYOUT_BLOCKED when the external
	// account was registered, or changed status, within the last 24 hours
	// and has not been paid since. 555.55 USD, USDB or USDC, or any amount
	// worth 555.55 USD rounded down to the cent.
	NewDestinationPayoutUSDCents = 55_555
)

// The names of [DefaultPayoutRules]' refusing rules and window, as
// refusals name them in details.rule and details.window.
const (
	PayoutRuleDailyLimit     = "daily-limit"
	PayoutRuleStepUp         = "step-up-amount"
	PayoutRuleNewDestination = "new-destination"
	PayoutWindowCustomerDay  = "customer-day"
)

// DefaultPayoutRules is the payout policy of a simulator configured
// without Config.PayoutRules, as the JSON [policy.Parse] reads. Amounts are
// USD cents. In order, the first rule that matches deciding:
//
//   - daily-limit: a payout that would bring the customer's payouts of the
//     last 24 hours above [DailyPayoutLimitUSD] is blocked;
//   - above-step-up-amount: a payout above [StepUpPayoutUSDCents] is
//     allowed;
//   - step-up-amount: a payout of exactly [StepUpPayoutUSDCents] is allowed
//     when signed by a PASSKEY session of at most [StepUpMaxSessionAge];
//   - above-new-destination-amount: a payout above
//     [NewDestinationPayoutUSDCents] is allowed;
//   - new-destination: a payout of exactly [NewDestinationPayoutUSDCents]
//     to a destination registered or changed within 24 hours and not paid
//     since is blocked;
//   - default: everything else is allowed.
//
// So the step-up and the cool-off are reached by their magic amounts only,
// and the daily limit by paying out more than 100,000 USD in a day (two
// payouts of the single-transaction maximum, [TransactionMaximumUSD], fill
// it).
const DefaultPayoutRules = `{
	"referenceCurrency": "USD",
	"windows": [{"name": "customer-day", "scope": "CUSTOMER", "period": "24h", "maxAmount": 10000000}],
	"rules": [
		{"name": "daily-limit", "match": {"exceedsWindows": ["customer-day"]}, "action": "BLOCK"},
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
	p, err := policy.New(policy.Config{Rules: *cfg.PayoutRules, Rates: rates{to: ref}, Clock: cfg.Clock, Rand: cfg.Rand})
	if err != nil {
		return nil, fmt.Errorf("sandbox: Config.PayoutRules: %w", err)
	}
	return p, nil
}

// rates values amounts in the currency to at the sandbox's fixed rates,
// rounded down to its smallest unit: the [policy.Rates] of the simulator.
type rates struct{ to string }

// ToReference converts amount of currency into smallest units of r.to. An
// unknown currency, a negative amount or a result beyond int64 is an
// error.
func (r rates) ToReference(_ context.Context, currency string, amount int64) (int64, error) {
	if amount < 0 {
		return 0, errors.New("negative amount")
	}
	v, ok := convert(amount, currency, r.to, false)
	if !ok {
		return 0, fmt.Errorf("no sandbox rate from %s to %s for %d", currency, r.to, amount)
	}
	return v, nil
}

// decidePayout runs the payout policy on a payout of amount (smallest
// units of cur) from the embedded wallet wal to the external account
// destID (or, with destType policy.DestinationUMA, to a UMA address), inside tx, the transaction that consumes the signed request a
// (the Effect of the payout's [walletauth.Authorize]). The payout counts
// under a's request id; it counts in the windows when tx commits, and a
// refusal (403 PAYOUT_BLOCKED, 403 STEP_UP_REQUIRED) rolls tx back, so the
// signed request stays usable and nothing is debited.
func (s *Simulator) decidePayout(ctx context.Context, tx storage.Tx, a *signedretry.Authorization, wal *storage.InternalAccount,
	destID, destType string, amount int64, cur string) error {
	_, err := s.limits.Decide(ctx, tx, policy.Payout{ID: a.RequestID, CustomerID: wal.CustomerID, SourceID: wal.ID,
		DestinationID: destID, DestinationType: destType, Amount: amount, Currency: cur, Authorization: a})
	return err
}

package ownership

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/storage"
)

// Ownership types of an external account (its ownershipType).
const (
	// FirstParty: the account belongs to the customer.
	FirstParty = "FIRST_PARTY"
	// ThirdParty: the account belongs to someone else.
	ThirdParty = "THIRD_PARTY"
)

// Rules under which the payout gate allows a payout ([Decision.Rule]).
const (
	// RuleNotGated: the account is not a first-party self-custody wallet
	// (a fiat account, a THIRD_PARTY wallet or a custodial wallet), so the
	// ownership rule does not apply; only the maximum does.
	RuleNotGated = "NOT_GATED"
	// RuleVerified: the wallet is ACTIVE (its ownership is verified, or it
	// never needed a proof).
	RuleVerified = "VERIFIED"
	// RuleBelowThreshold: the wallet is PENDING_OWNERSHIP_VERIFICATION and
	// the amount is below the verification threshold.
	RuleBelowThreshold = "BELOW_THRESHOLD"
)

// Scopes of a [Limit].
const (
	// ScopeCurrency: the limit is configured for the payout's currency.
	ScopeCurrency = "currency"
	// ScopeCorridor: the limit is configured for the payout's corridor.
	ScopeCorridor = "corridor"
	// ScopeDefault: no verification threshold is configured for the
	// payout's currency or corridor, so the threshold is zero.
	ScopeDefault = "default"
)

// Limits are amounts in minor units (exact integers, never floats) keyed by
// currency code and by corridor. Keys are compared exactly and validated
// when the policy is ([PayoutPolicy.Validate], which [New] runs): a
// currency code is 3 to 12 uppercase ASCII letters and digits, the first a
// letter (ISO 4217 such as USD, or a token code such as USDC); a corridor is
// the sending and the receiving currency codes joined by a colon, for
// example "USD:MXN".
type Limits struct {
	// ByCurrency holds the limit per currency, in minor units of that
	// currency.
	ByCurrency map[string]int64
	// ByCorridor holds the limit per corridor, in minor units of the
	// corridor's receiving currency (the payout's currency).
	ByCorridor map[string]int64
}

// ValidCurrency reports whether code is a currency code as the payout gate
// accepts it: 3 to 12 uppercase ASCII letters and digits, the first a
// letter. No other spelling is accepted ("usdc" is not USDC).
func ValidCurrency(code string) bool {
	if len(code) < 3 || len(code) > 12 || code[0] < 'A' || code[0] > 'Z' {
		return false
	}
	for i := 1; i < len(code); i++ {
		if c := code[i]; (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// corridorCurrencies splits a corridor "SEND:RECV" into its currency codes;
// ok is false when it is not two valid codes joined by one colon.
func corridorCurrencies(corridor string) (send, recv string, ok bool) {
	send, recv, found := strings.Cut(corridor, ":")
	return send, recv, found && ValidCurrency(send) && ValidCurrency(recv)
}

// currencyRule and corridorRule describe the accepted spellings in errors.
const (
	currencyRule = "3 to 12 uppercase letters and digits, the first a letter"
	corridorRule = `two currency codes joined by a colon, sending then receiving, e.g. "USD:MXN"`
)

// find returns the stricter (lower) of the limits that apply to the currency
// and the corridor, or ok false when neither is configured. On a tie the
// corridor's is reported.
func (l *Limits) find(currency, corridor string) (Limit, bool) {
	var out Limit
	ok := false
	if corridor != "" {
		if v, found := l.ByCorridor[corridor]; found {
			out, ok = Limit{Scope: ScopeCorridor, Key: corridor, Amount: v}, true
		}
	}
	if v, found := l.ByCurrency[currency]; found && (!ok || v < out.Amount) {
		out, ok = Limit{Scope: ScopeCurrency, Key: currency, Amount: v}, true
	}
	return out, ok
}

func (l *Limits) validate(name string) error {
	for k, v := range l.ByCurrency {
		if !ValidCurrency(k) {
			return fmt.Errorf("ownership: payout policy: %s.ByCurrency[%q] is not a currency code (%s)", name, k, currencyRule)
		}
		if v < 0 {
			return fmt.Errorf("ownership: payout policy: %s.ByCurrency[%q] is negative (%d)", name, k, v)
		}
	}
	for k, v := range l.ByCorridor {
		if _, _, ok := corridorCurrencies(k); !ok {
			return fmt.Errorf("ownership: payout policy: %s.ByCorridor[%q] is not a corridor (%s)", name, k, corridorRule)
		}
		if v < 0 {
			return fmt.Errorf("ownership: payout policy: %s.ByCorridor[%q] is negative (%d)", name, k, v)
		}
	}
	return nil
}

// Currencies returns the currencies the policy pays out, those with a
// single-transaction maximum (MaxAmounts.ByCurrency), sorted. They are the
// currencies [Service.RegisterAccount] accepts; a host that keeps balances
// or accounts of its own refuses every other currency the same way.
func (p *PayoutPolicy) Currencies() []string {
	return slices.Sorted(maps.Keys(p.MaxAmounts.ByCurrency))
}

func (l Limits) clone() Limits {
	return Limits{ByCurrency: maps.Clone(l.ByCurrency), ByCorridor: maps.Clone(l.ByCorridor)}
}

// PayoutPolicy is the host's configuration of the payout gate. It fails
// closed: a payout is refused in a currency without a configured
// single-transaction maximum (MaxAmounts.ByCurrency), so the zero value
// refuses every payout; a host that wants no maximum in a currency
// configures math.MaxInt64 for it. Build it once, check it with
// [PayoutPolicy.Validate] (New does), and do not modify it afterwards.
type PayoutPolicy struct {
	// VerificationThresholds are the amounts from which a first-party
	// self-custody wallet must be ACTIVE (ownership verified) to be paid:
	// a wallet in PENDING_OWNERSHIP_VERIFICATION receives amounts strictly
	// below the threshold (transfers below regulatory thresholds are still
	// allowed). When both the currency and the corridor have one, the lower
	// applies; when neither has one, the threshold is zero (fail closed:
	// such a wallet receives nothing in that currency).
	VerificationThresholds Limits
	// MaxAmounts are the single-transaction maxima: an amount above the
	// maximum (equal passes) answers 400 TRANSACTION_SIZE_LIMIT_EXCEEDED for
	// every account. Every currency paid out must have one in ByCurrency: a
	// payout in a currency without one is refused (400 INVALID_CURRENCY). A
	// corridor's maximum, when lower, applies instead.
	MaxAmounts Limits
}

// Validate checks the policy: every key is a currency code or a corridor as
// [Limits] describes, and no limit is negative. The error names the first
// offending map and key. [New] runs it on Config.Payouts; a host that calls
// [PayoutPolicy.Decide] on its own policy runs it once when building it.
func (p *PayoutPolicy) Validate() error {
	if err := p.VerificationThresholds.validate("VerificationThresholds"); err != nil {
		return err
	}
	return p.MaxAmounts.validate("MaxAmounts")
}

// Payout is a payment a host is about to make to an external account.
type Payout struct {
	// AccountID is the destination external account, ExternalAccount:<uuid>.
	AccountID string
	// Amount is in minor units of Currency; it must be positive.
	Amount int64
	// Currency is the currency of Amount, a currency code (see [Limits]);
	// empty means the account's currency. It must be the account's
	// currency: an account is paid in its own currency only. The limits
	// are looked up by it.
	Currency string
	// Corridor optionally names the trade corridor of the payment,
	// "SEND:RECV" as keyed in [Limits.ByCorridor]; its receiving currency
	// must be the payout's. A corridor the policy does not configure adds
	// no limit: the currency's apply.
	Corridor string
}

// Limit is one configured limit: where it comes from and its amount.
type Limit struct {
	// Scope is ScopeCurrency, ScopeCorridor or ScopeDefault.
	Scope string `json:"scope"`
	// Key is the currency code or the corridor name ("" for ScopeDefault).
	Key string `json:"key,omitempty"`
	// Amount is the limit in minor units.
	Amount int64 `json:"amount"`
}

// String describes the limit for a reason: "100000 (currency EUR)".
func (l Limit) String() string {
	if l.Scope == ScopeDefault {
		return "0 (default: none is configured)"
	}
	return fmt.Sprintf("%d (%s %s)", l.Amount, l.Scope, l.Key)
}

// Decision is the gate's answer for an allowed payout.
type Decision struct {
	// Account is the account as the gate read it. After CheckPayoutIn it is
	// held until the transaction ends (see [Service.CheckPayoutIn]).
	Account storage.ExternalAccount
	// Gated reports whether the ownership rule applies to the account (a
	// first-party self-custody wallet).
	Gated bool
	// Rule is RuleNotGated, RuleVerified or RuleBelowThreshold.
	Rule string
	// Threshold is the verification threshold that applied, for
	// RuleBelowThreshold; nil otherwise.
	Threshold *Limit
	// Maximum is the single-transaction maximum that applied (every allowed
	// payout has one).
	Maximum *Limit

	limits [2]Limit // what Threshold and Maximum point to: one allocation
}

// Gated reports whether the ownership rule applies to the account: a wallet
// (any account type that is not one of the service's fiat types, see
// [IsFiat]; LIGHTNING_ACCOUNT and unknown types count as wallets) that is
// self custody (no vaspName) and not THIRD_PARTY. An empty ownershipType
// counts as first party, so an unknown owner or type fails closed.
func Gated(a *storage.ExternalAccount) bool {
	return !IsFiat(a.AccountType) && a.VaspName == "" && a.OwnershipType != ThirdParty
}

// Decide applies the payout rules (see the package documentation) to an
// account already read, with no store access. It returns the decision for
// an allowed payout, or:
//
//   - 400 INVALID_AMOUNT: the amount is not positive;
//   - 400 INVALID_INPUT with details.field "currency" or "corridor": not a
//     currency code or a corridor as [Limits] describes;
//   - 400 INVALID_CURRENCY with details.field "currency": the payout's
//     currency is not the account's;
//   - 400 INVALID_INPUT with details.field "corridor": the corridor's
//     receiving currency is not the payout's;
//   - 409 CONFLICT: the account's status allows no payout (PENDING,
//     UNDER_REVIEW, INACTIVE or a status the gate does not know);
//   - 400 INVALID_CURRENCY with details.field "currency": the policy has
//     no single-transaction maximum for the currency (fail closed);
//   - 400 TRANSACTION_SIZE_LIMIT_EXCEEDED: the amount is above the maximum;
//   - 400 EXTERNAL_ACCOUNT_VERIFICATION_REQUIRED: a gated wallet that is
//     UNVERIFIED, or PENDING_OWNERSHIP_VERIFICATION with an amount at or
//     above the threshold.
//
// Every refusal carries details.reason (a sentence naming the rule, and the
// limit and amount where one applied), details.accountId, details.status,
// details.amount and details.currency, plus details.corridor when set and
// details.limit (a [Limit]) when a limit applied. Checks run in the order
// listed, so an error names the first rule that refuses.
func (p *PayoutPolicy) Decide(a *storage.ExternalAccount, pay Payout) (*Decision, error) {
	cur := pay.Currency
	if cur == "" {
		cur = a.Currency
	}
	refuse := func(code apierror.Code, limit *Limit, reason string) *apierror.Error {
		e := apierror.New(code, "payout to %s refused: %s", a.ID, reason).WithDetail("reason", reason).
			WithDetail("accountId", a.ID).WithDetail("status", string(a.Status)).
			WithDetail("amount", pay.Amount).WithDetail("currency", cur)
		if pay.Corridor != "" {
			e.WithDetail("corridor", pay.Corridor)
		}
		if limit != nil {
			e.WithDetail("limit", *limit)
		}
		return e
	}
	if pay.Amount <= 0 {
		return nil, refuse(apierror.InvalidAmount, nil,
			fmt.Sprintf("amount %d is not a positive integer in minor units", pay.Amount)).WithDetail("field", "amount")
	}
	if pay.Currency != "" && !ValidCurrency(pay.Currency) {
		return nil, refuse(apierror.InvalidInput, nil,
			fmt.Sprintf("currency %q is not a currency code (%s)", pay.Currency, currencyRule)).WithDetail("field", "currency")
	}
	_, recv, ok := corridorCurrencies(pay.Corridor)
	if pay.Corridor != "" && !ok {
		return nil, refuse(apierror.InvalidInput, nil,
			fmt.Sprintf("corridor %q is not a corridor (%s)", pay.Corridor, corridorRule)).WithDetail("field", "corridor")
	}
	if cur != a.Currency {
		return nil, refuse(apierror.InvalidCurrency, nil,
			fmt.Sprintf("the payout is in %s but the account receives %s only", cur, a.Currency)).WithDetail("field", "currency")
	}
	if pay.Corridor != "" && recv != cur {
		return nil, refuse(apierror.InvalidInput, nil,
			fmt.Sprintf("corridor %s receives %s, not the payout's currency %s", pay.Corridor, recv, cur)).WithDetail("field", "corridor")
	}
	switch a.Status {
	case storage.StatusActive, storage.StatusPendingOwnershipVerification, storage.StatusUnverified:
	case storage.StatusPending:
		return nil, refuse(apierror.Conflict, nil, "the account is PENDING: it is not usable until it becomes ACTIVE")
	case storage.StatusUnderReview:
		return nil, refuse(apierror.Conflict, nil, "the account is UNDER_REVIEW: payouts wait for the review to end")
	case storage.StatusInactive:
		return nil, refuse(apierror.Conflict, nil, "the account is INACTIVE: it receives no payouts")
	default:
		return nil, refuse(apierror.Conflict, nil, fmt.Sprintf("the account status %q allows no payouts", a.Status))
	}
	d := &Decision{Account: *a, Gated: Gated(a)}
	if _, ok := p.MaxAmounts.ByCurrency[cur]; !ok {
		return nil, refuse(apierror.InvalidCurrency, nil, fmt.Sprintf(
			"no single-transaction maximum is configured for %q: payouts in it are refused", cur)).WithDetail("field", "currency")
	}
	m, _ := p.MaxAmounts.find(cur, pay.Corridor)
	d.limits[0] = m
	d.Maximum = &d.limits[0]
	if pay.Amount > m.Amount {
		return nil, refuse(apierror.TransactionSizeLimitExceeded, &m, fmt.Sprintf(
			"amount %d %s is above the single-transaction maximum %s", pay.Amount, cur, m))
	}
	switch {
	case !d.Gated:
		d.Rule = RuleNotGated
		return d, nil
	case a.Status == storage.StatusActive:
		d.Rule = RuleVerified
		return d, nil
	case a.Status == storage.StatusUnverified:
		return nil, refuse(apierror.ExternalAccountVerificationRequired, nil, fmt.Sprintf(
			"the wallet's last ownership verification failed (UNVERIFIED): no amount is allowed (amount %d %s) until a new challenge is started", pay.Amount, cur))
	}
	t, ok := p.VerificationThresholds.find(cur, pay.Corridor)
	if !ok {
		t = Limit{Scope: ScopeDefault}
	}
	if pay.Amount >= t.Amount {
		return nil, refuse(apierror.ExternalAccountVerificationRequired, &t, fmt.Sprintf(
			"amount %d %s reaches the verification threshold %s of a wallet PENDING_OWNERSHIP_VERIFICATION", pay.Amount, cur, t))
	}
	d.limits[1] = t
	d.Rule, d.Threshold = RuleBelowThreshold, &d.limits[1]
	return d, nil
}

// CheckPayout reads the account and decides the payout (see
// [PayoutPolicy.Decide] and the package documentation). The answer is a
// snapshot: the account may change as soon as CheckPayout returns. A host
// that debits in the same database uses [Service.CheckPayoutIn] instead.
// The [Config].Guard is asked about the destination before the payout
// rules; a plain refusal is answered as an unknown account.
//
// Errors: those of Decide, 404 REFERENCE_NOT_FOUND (unknown account, or
// refused by the guard).
func (s *Service) CheckPayout(ctx context.Context, p Payout) (d *Decision, err error) {
	ctx, o := s.tel.Begin(ctx, opPayout, s.tel.payouts)
	defer func() { o.End(ctx, err, ruleOf(d)) }()
	err = s.cfg.Store.Atomic(ctx, func(tx storage.Tx) error {
		a, err := load(ctx, tx, p.AccountID, AnyTree)
		if err != nil {
			return err
		}
		if err := s.admitNamed(ctx, &a); err != nil {
			return err
		}
		d, err = s.cfg.Payouts.Decide(&a, p)
		return err
	})
	if err != nil {
		return nil, apierror.From(err)
	}
	return d, nil
}

// CheckPayoutIn decides the payout inside the transaction tx (of the
// service's store), so that the host gates and debits atomically. On
// PostgreSQL the transaction is the host's own: it binds its pgx
// transaction to the context with the store's WithTx, and writes the debit
// through postgres.HostTx, in the same transaction as the gate:
//
//	hctx := store.WithTx(ctx, hostTx) // hostTx: the host's pgx.Tx
//	err := store.Atomic(hctx, func(tx storage.Tx) error {
//		if _, err := svc.CheckPayoutIn(ctx, tx, payout); err != nil {
//			return err
//		}
//		pg, err := postgres.HostTx(ctx, tx)
//		if err != nil {
//			return err
//		}
//		return debit(ctx, pg, payout) // same transaction
//	})
//	// then hostTx.Commit, or Rollback: the gate, the debit and whatever
//	// else hostTx wrote commit together or not at all.
//
// A refused payout (or a failed debit) rolls back what the function wrote
// and leaves hostTx usable.
//
// It holds the account until tx ends, asks the [Config].Guard about it (a
// plain refusal answered as an unknown account) and then decides on the
// held state. The
// guarantee: a status change made by compare-and-set on the account's
// Version (every change the library makes, and any ExternalAccounts.Update)
// commits either before the hold, and the gate decides on it, or after tx
// ends; so no payout that passed the gate commits after a change that would
// have refused it. The decision is made on the account as held, and is as
// fresh as the latest committed change.
//
// The cost: payouts to one account, and the library's own status changes of
// it (which hold the account the same way), run one at a time. The account
// is held with [storage.ExternalAccounts.Lock].
//
// Errors: those of CheckPayout.
// The returned error is an *apierror.Error; return it from the transaction
// function to roll back.
func (s *Service) CheckPayoutIn(ctx context.Context, tx storage.Tx, p Payout) (d *Decision, err error) {
	ctx, o := s.tel.Begin(ctx, opPayout, s.tel.payouts)
	defer func() { o.End(ctx, err, ruleOf(d)) }()
	a, err := hold(ctx, tx, p.AccountID)
	if err != nil {
		return nil, apierror.From(err)
	}
	if err := s.admitNamed(ctx, &a); err != nil {
		return nil, err
	}
	return s.cfg.Payouts.Decide(&a, p)
}

// hold reads the account and holds it until the transaction ends.
func hold(ctx context.Context, tx storage.Tx, id string) (storage.ExternalAccount, error) {
	a, err := tx.ExternalAccounts().Lock(ctx, id)
	if errors.Is(err, storage.ErrNotFound) {
		return a, notFound(id)
	}
	return a, err
}

func notFound(id string) error {
	return apierror.New(apierror.ReferenceNotFound, "external account %s not found", id)
}

package policy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/operation"
	"github.com/walletgate/walletgate/ownership"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
)

// EventDecided is the type of the event every allowed payout writes, in the
// transaction that records it: the payout, the rule that allowed it, the
// amount the windows counted and the signer, never a secret.
const EventDecided = "PAYOUT.POLICY_ALLOWED"

// Rates converts a payout's amount into the policy's reference currency.
// The host implements it with its own rates; walletgate never fetches one.
type Rates interface {
	// ToReference returns amount (minor units of currency) in minor units
	// of the reference currency, rounded up: a window counts a payout at
	// no less than its worth. An error, for a currency without a rate
	// among others, refuses the payout: an amount that cannot be valued
	// cannot be counted. The policy counts a positive amount the rate
	// values at zero as one minor unit, so that no payout, however small,
	// passes a full window.
	ToReference(ctx context.Context, currency string, amount int64) (int64, error)
}

// Config configures a [Policy].
type Config struct {
	// Rules are the policy, validated by [New]. Required.
	Rules Rules
	// Rates converts payouts in other currencies than the reference one;
	// nil pays out in the reference currency only (any other is refused).
	Rates Rates
	// Clock returns the current time when a payout carries none (see
	// [Payout].Authorization); nil means time.Now.
	Clock func() time.Time
	// Rand supplies event ids; nil means crypto/rand.
	Rand io.Reader
	// Telemetry receives the policy's records, spans and metrics; the
	// zero value reports nothing. Each refusal (403 PAYOUT_BLOCKED or
	// STEP_UP_REQUIRED) is logged at Warn with its code and reason, which
	// names the rule and amounts, never an id of a customer, wallet or
	// account. Each decision, approval and refusal is a span
	// ("policy.decide", "policy.approve", "policy.refuse") with the
	// outcome, code and rule, counted by walletgate.policy.decisions and
	// timed by walletgate.policy.operation.duration, by operation, outcome,
	// code and rule.
	Telemetry operation.Telemetry
}

// Policy decides payouts by its rules. It holds no state of its own (the
// windows are in the store) and is safe for concurrent use.
type Policy struct {
	rules   Rules
	rates   Rates
	clock   func() time.Time
	rand    io.Reader
	horizon time.Duration // the longest period a decision looks back
	windows map[string]*Window
	// securityRules is set when a rule judges the source wallet's
	// security changes, which a decision then reads and holds.
	securityRules bool
	tel           *instruments
}

// New validates cfg.Rules (see [Rules]) and returns the policy. The error
// names the first rule or window at fault and what is wrong with it: an
// unknown action, scope, credential or account type, a window no rule
// could use, a missing catch-all, a name used twice.
func New(cfg Config) (*Policy, error) {
	if err := cfg.Rules.validate(); err != nil {
		return nil, err
	}
	tel, err := newInstruments(&cfg)
	if err != nil {
		return nil, err
	}
	p := &Policy{rules: cfg.Rules.clone(), rates: cfg.Rates, clock: cfg.Clock, rand: cfg.Rand, windows: map[string]*Window{}, tel: tel}
	if p.clock == nil {
		p.clock = time.Now
	}
	for i := range p.rules.Windows {
		w := &p.rules.Windows[i]
		p.windows[w.Name] = w
		p.horizon = max(p.horizon, time.Duration(w.Period))
	}
	for _, r := range p.rules.Rules {
		if d := r.Match.NewDestinationWithin; d != nil {
			p.horizon = max(p.horizon, time.Duration(*d))
		}
		p.securityRules = p.securityRules || r.Match.SecurityChangeWithin != nil
	}
	p.horizon = max(p.horizon, MinPeriod)
	return p, nil
}

// Payout is a payout to decide.
type Payout struct {
	// ID identifies the payout; it is counted once (a second decision
	// with the same ID in another transaction is refused with 409
	// CONFLICT). Empty means the signed request's id.
	ID string
	// CustomerID is the customer paying; the windows of ScopeCustomer
	// count per customer.
	CustomerID string
	// SourceID is the embedded wallet paid from, the one whose session
	// signs the payout; the windows of ScopeSource count per source, and
	// securityChangeWithin judges its credentials' changes.
	SourceID string
	// DestinationID is the external account paid or, with a
	// DestinationType, the other destination (a UMA address).
	DestinationID string
	// DestinationType is empty for an external account. A payout to a
	// destination that is no external account names its kind:
	// [DestinationUMA]. Such a destination has no registration, so a
	// cool-off treats it as new until it was paid within the cool-off.
	DestinationType string
	// Amount is in minor units of Currency; it must be positive.
	Amount int64
	// Currency is the payout's currency code.
	Currency string
	// Authorization is the signed retry's authorization of the payout
	// (what walletauth.Authorize hands its Effect): the signer a step-up
	// judges, and the time of the decision. Required.
	Authorization *signedretry.Authorization
}

// Execute is the host's payout: the debit of its ledger, its payout
// record, its event, written through tx (and, inside a host's
// transaction, through the host's own). The policy calls it in tx for a
// payout a rule allows, and for no other: a payout the policy holds for
// approval or refuses never reaches it, so no host can pay one by
// overlooking an outcome. An error rolls back the transaction whole, the
// payout's count in the windows included. It may run more than once when
// the store reruns the transaction, so it must have no effect outside tx.
type Execute func(ctx context.Context, tx storage.Tx, a *Allowed) error

// Allowed is a payout the policy allows, as [Execute] gets it: only
// [Policy.Decide] and [Policy.Approve] make one, for the Execute they
// were given.
type Allowed struct {
	// Payout is the payout to make: as decided, or, for a payout that
	// waited for approval, from the approval's fields (then with no
	// Authorization).
	Payout Payout `json:"-"`
	// Rule is the name of the rule that allowed it.
	Rule string `json:"rule"`
	// ReferenceAmount is the amount in minor units of the reference
	// currency, as the windows counted it.
	ReferenceAmount int64 `json:"referenceAmount"`
	// Approval is the approval the payout waited for; nil when it did not.
	Approval *storage.PayoutApproval `json:"approval,omitempty"`
}

// Outcome is what [Policy.Decide] did with a payout it did not refuse:
// exactly one member is set. The two cannot be confused: Executed is an
// allowed payout that Execute has made in the transaction, Held a payout
// that waits for its approval and was not executed.
type Outcome struct {
	// Executed is the payout the policy allowed and Execute made.
	Executed *Allowed
	// Held is the approval a REQUIRE_APPROVAL rule stored: the host
	// commits (which stores it) and answers that the payout waits;
	// [Policy.Approve] executes it once approved.
	Held *storage.PayoutApproval
}

// Decide decides pay inside tx, the transaction that makes the payout (on
// the retry of its signed operation, in its Effect), and makes it only
// when a rule allows it: it records the payout in every window, writes
// the [EventDecided] event and calls execute, all in tx, so that the
// payout, its count and its audit commit together and a payout rolled
// back counts nothing. It first holds the customer
// ([storage.PayoutUsages.Hold]): concurrent payouts of one customer decide
// one at a time, on every store and replica.
//
// The rules are tried in order and the first that matches decides. An
// allowed payout is Outcome.Executed; a held one is Outcome.Held, and
// execute does not run. Errors: 403 PAYOUT_BLOCKED naming the rule
// (details.rule, details.reason; for a window, details.window and, when
// the window will have room for the payout, details.availableAt), 403
// STEP_UP_REQUIRED when the allowing rule wants a stronger credential or
// a more recent authentication (details.rule, details.credentialTypes,
// details.maxSessionAgeSeconds), 400 INVALID_INPUT naming a malformed
// member of pay, 400 INVALID_CURRENCY for a currency without a rate, 404
// REFERENCE_NOT_FOUND for an unknown destination, 409 CONFLICT for a
// payout ID already counted, execute's errors unchanged, and 500 when pay
// carries no authorization or execute is nil.
func (p *Policy) Decide(ctx context.Context, tx storage.Tx, pay Payout, execute Execute) (out Outcome, err error) {
	ctx, o := p.tel.Begin(ctx, opDecide, p.tel.decisions)
	defer func() { o.End(ctx, err, ruleAttr(out.Executed, out.Held, err)) }()
	a := pay.Authorization
	if a == nil {
		return Outcome{}, apierror.Internal(errors.New("policy: Decide needs the payout's signed-retry authorization"))
	}
	if execute == nil {
		return Outcome{}, apierror.Internal(errors.New("policy: Decide needs the host's Execute"))
	}
	if pay.ID == "" {
		pay.ID = a.RequestID
	}
	var v apierror.Validation
	v.Check(pay.ID != "", "id", nil, "is required")
	v.Check(pay.CustomerID != "", "customerId", nil, "is required")
	v.Check(pay.SourceID != "", "sourceId", nil, "is required")
	v.Check(pay.DestinationID != "", "destinationId", nil, "is required")
	v.Check(pay.Amount > 0, "amount", nil, "is not a positive integer in minor units")
	v.Check(ownership.ValidCurrency(pay.Currency), "currency", nil, "is not a currency code")
	v.Check(pay.DestinationType == "" || pay.DestinationType == DestinationUMA, "destinationType",
		apierror.OneOf(DestinationUMA), "is not a kind of destination other than an external account")
	v.Check(pay.DestinationType != DestinationUMA || strings.HasPrefix(pay.DestinationID, "$"), "destinationId", nil,
		"is not a UMA address (it begins with '$')")
	if err := v.Err(); err != nil {
		return Outcome{}, err
	}
	s, err := p.load(ctx, tx, &pay, p.now(a))
	if err != nil {
		return Outcome{}, err
	}
	r, refusal := p.first(s)
	switch {
	case refusal != nil:
		return Outcome{}, refusal
	case r == nil:
		// Unreachable: New requires a final catch-all.
		return Outcome{}, apierror.Internal(errors.New("policy: no rule decided the payout"))
	}
	if err := s.stepUp(ctx, tx, r); err != nil {
		return Outcome{}, err
	}
	if r.Action == RequireApproval {
		held, err := p.hold(ctx, tx, r, s)
		if err != nil {
			return Outcome{}, err
		}
		return Outcome{Held: held}, nil
	}
	allowed, err := p.allow(ctx, tx, r, s, nil, execute)
	if err != nil {
		return Outcome{}, err
	}
	return Outcome{Executed: allowed}, nil
}

// now is the time of a decision: the signed retry's, or the clock's.
func (p *Policy) now(a *signedretry.Authorization) time.Time {
	if a != nil && !a.Now.IsZero() {
		return a.Now
	}
	return p.clock().UTC()
}

// load values the payout, holds its customer and reads what the rules look
// at: the source wallet when a rule judges its security changes (held to
// the commit, so no change of its credentials commits between the
// decision and the payout), the customer's payouts within the horizon and
// the destination, which it holds too. The wallet comes before the
// customer's hold in the lock order, as the signer's lock takes it.
func (p *Policy) load(ctx context.Context, tx storage.Tx, pay *Payout, now time.Time) (*subject, error) {
	ref, err := p.toReference(ctx, pay.Currency, pay.Amount)
	if err != nil {
		return nil, err
	}
	s := &subject{pay: pay, ref: ref, now: now}
	if p.securityRules {
		if s.wallet, err = p.sourceWallet(ctx, tx, pay); err != nil {
			return nil, err
		}
	}
	if s.past, err = tx.PayoutUsage().Hold(ctx, pay.CustomerID, now.Add(-p.horizon)); err != nil {
		return nil, apierror.From(err)
	}
	if pay.DestinationType != "" {
		s.dest = &storage.ExternalAccount{ID: pay.DestinationID, AccountType: pay.DestinationType}
		return s, nil
	}
	// Held to the commit, as the gate holds it: no status change (which a
	// cool-off reads) commits between the decision and the payout.
	dest, err := tx.ExternalAccounts().Lock(ctx, pay.DestinationID)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, apierror.New(apierror.ReferenceNotFound, "external account %s not found", pay.DestinationID).WithDetail("field", "destinationId")
	}
	if err != nil {
		return nil, apierror.From(err)
	}
	s.dest = &dest
	return s, nil
}

// sourceWallet reads the embedded wallet pay is made from, held until the
// transaction ends: through the signer's lock when its session signed the
// payout (the wallet is held already), otherwise by a lock of its own. A
// source that is no wallet of the store reads as nil, which a rule on
// security changes treats as changed (it fails closed).
func (p *Policy) sourceWallet(ctx context.Context, tx storage.Tx, pay *Payout) (*storage.InternalAccount, error) {
	if !storage.ValidID(pay.SourceID, "InternalAccount") {
		return nil, nil
	}
	var w storage.InternalAccount
	var err error
	if a := pay.Authorization; a != nil && a.AccountID == pay.SourceID {
		w, err = tx.InternalAccounts().Get(ctx, pay.SourceID)
	} else {
		w, err = tx.InternalAccounts().Lock(ctx, pay.SourceID)
	}
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, apierror.From(err)
	}
	return &w, nil
}

// first returns the first rule that matches s, or the refusal of a
// blocking one.
func (p *Policy) first(s *subject) (*Rule, error) {
	for i := range p.rules.Rules {
		r := &p.rules.Rules[i]
		refusal, matched := p.match(r, s)
		switch {
		case !matched:
			continue
		case r.Action == Block:
			return r, refusal
		}
		return r, nil
	}
	return nil, nil
}

// subject is what a decision looks at.
type subject struct {
	pay    *Payout
	ref    int64
	now    time.Time
	past   []storage.PayoutUsage // the customer's usages within the horizon
	dest   *storage.ExternalAccount
	wallet *storage.InternalAccount // the source wallet, read when a rule judges its security changes
}

// toReference values amount in the reference currency.
func (p *Policy) toReference(ctx context.Context, currency string, amount int64) (int64, error) {
	if currency == p.rules.ReferenceCurrency {
		return amount, nil
	}
	refuse := func(why string) error {
		return apierror.New(apierror.InvalidCurrency, "payout in %s refused: %s", currency, why).WithDetail("field", "currency")
	}
	if p.rates == nil {
		return 0, refuse("the policy counts in " + p.rules.ReferenceCurrency + " and has no rates for other currencies")
	}
	v, err := p.rates.ToReference(ctx, currency, amount)
	if err != nil {
		return 0, refuse(fmt.Sprintf("no rate to %s (%v)", p.rules.ReferenceCurrency, err))
	}
	if v < 0 {
		return 0, refuse("the rate gave a negative amount")
	}
	if v == 0 && amount > 0 {
		// Worth less than a minor unit: counted as one, so that no
		// payout passes a full window for nothing.
		v = 1
	}
	return v, nil
}

// match reports whether r matches s; when r blocks, refusal is the error
// that names why.
func (p *Policy) match(r *Rule, s *subject) (refusal error, matched bool) {
	m := &r.Match
	reason := ""
	if m.MinAmount != nil {
		if s.ref < *m.MinAmount {
			return nil, false
		}
		reason = fmt.Sprintf("the amount %d %s is at least %d", s.ref, p.rules.ReferenceCurrency, *m.MinAmount)
	}
	if len(m.Currencies) > 0 && !slices.Contains(m.Currencies, s.pay.Currency) {
		return nil, false
	}
	if len(m.DestinationTypes) > 0 && !slices.Contains(m.DestinationTypes, s.dest.AccountType) {
		return nil, false
	}
	if d := m.NewDestinationWithin; d != nil {
		cool := time.Duration(*d)
		since := s.newSince()
		if !s.now.Before(since.Add(cool)) {
			return nil, false
		}
		what := fmt.Sprintf("the destination is new until %s (%v after its registration or last status change)",
			since.Add(cool).UTC().Format(time.RFC3339), cool)
		if s.pay.DestinationType != "" {
			what = fmt.Sprintf("the destination (%s) is new until %s (%v after its first payout)",
				s.pay.DestinationType, since.Add(cool).UTC().Format(time.RFC3339), cool)
		}
		reason = what
		if limit := m.NewDestinationMaxAmount; limit != nil {
			received := s.receivedSince(since)
			if received+s.ref <= *limit {
				return nil, false
			}
			reason = fmt.Sprintf("%s and would receive %d %s in that time, more than %d", what, received+s.ref,
				p.rules.ReferenceCurrency, *limit)
		}
	}
	if d := m.SecurityChangeWithin; d != nil {
		within := time.Duration(*d)
		switch w := s.wallet; {
		case w == nil:
			reason = "the payout's source is no embedded wallet whose security changes are known"
		case w.SecurityChangedAt.IsZero() || !s.now.Before(w.SecurityChangedAt.Add(within)):
			return nil, false
		default:
			reason = fmt.Sprintf("the wallet's credentials changed at %s, less than %v ago", w.SecurityChangedAt.UTC().Format(time.RFC3339), within)
		}
	}
	var window *Window
	var availableAt time.Time
	if len(m.ExceedsWindows) > 0 {
		exceeded := false
		for _, name := range m.ExceedsWindows {
			w := p.windows[name]
			if at, fits := s.fits(w); !fits {
				exceeded, window, availableAt = true, w, at
				break
			}
		}
		if !exceeded {
			return nil, false
		}
		reason = fmt.Sprintf("the payout does not fit the window %s", window.Name)
	}
	if r.Action != Block {
		return nil, true
	}
	if reason == "" {
		reason = "the rule blocks every payout it matches"
	}
	e := apierror.New(apierror.PayoutBlocked, "payout refused by rule %s: %s", r.Name, reason).
		WithDetail("rule", r.Name).WithDetail("reason", reason)
	if window != nil {
		e.WithDetail("window", window.Name)
		if !availableAt.IsZero() {
			e.WithDetail("availableAt", availableAt.UTC().Format(time.RFC3339))
		}
	}
	return e, true
}

// newSince is when the destination became new: an external account's
// registration or last status change; for a destination that has no
// registration (a UMA address), its first payout the policy can see, or
// now when it has none.
func (s *subject) newSince() time.Time {
	if s.pay.DestinationType == "" {
		return s.dest.UpdatedAt
	}
	for _, u := range s.past { // oldest first
		if u.DestinationID == s.dest.ID {
			return u.CreatedAt
		}
	}
	return s.now
}

// receivedSince is what the destination was paid at or after t, in the
// reference currency, however many payouts it took.
func (s *subject) receivedSince(t time.Time) int64 {
	var total int64
	for _, u := range s.past {
		if u.DestinationID == s.dest.ID && !u.CreatedAt.Before(t) {
			total += u.Amount
		}
	}
	return total
}

// fits reports whether the payout fits w; when it does not, availableAt is
// when enough of the window's payouts will have left it for this one to
// fit, or zero when it never will (the payout alone passes a maximum).
func (s *subject) fits(w *Window) (availableAt time.Time, fits bool) {
	start := s.now.Add(-time.Duration(w.Period))
	var in []storage.PayoutUsage // oldest first, as Hold returns them
	var total, count int64
	for _, u := range s.past {
		// A payout leaves the window a period after it was made.
		if !u.CreatedAt.After(start) || (w.Scope == ScopeSource && u.SourceID != s.pay.SourceID) {
			continue
		}
		in = append(in, u)
		total += u.Amount
		count++
	}
	over := func(total, count int64) bool {
		return (w.MaxAmount != nil && total+s.ref > *w.MaxAmount) || (w.MaxCount != nil && count+1 > *w.MaxCount)
	}
	if !over(total, count) {
		return time.Time{}, true
	}
	if over(0, 0) {
		return time.Time{}, false
	}
	for _, u := range in {
		total -= u.Amount
		count--
		if !over(total, count) {
			return u.CreatedAt.Add(time.Duration(w.Period)), false
		}
	}
	return time.Time{}, false // unreachable: with every payout gone it fits
}

// stepUp checks r's requirement on the signer of the payout, read in tx:
// the credential the signing session was opened with and the session.
func (s *subject) stepUp(ctx context.Context, tx storage.Tx, r *Rule) error {
	req := r.Require
	if req == nil {
		return nil
	}
	a := s.pay.Authorization
	refuse := func(why string) error {
		e := apierror.New(apierror.StepUpRequired, "payout refused by rule %s: %s", r.Name, why).
			WithDetail("rule", r.Name).WithDetail("reason", why)
		if len(req.CredentialTypes) > 0 {
			e.WithDetail("credentialTypes", append([]string(nil), req.CredentialTypes...))
		}
		if req.MaxSessionAge != nil {
			e.WithDetail("maxSessionAgeSeconds", int64(time.Duration(*req.MaxSessionAge)/time.Second))
		}
		return e
	}
	// The sandbox literal stands in for a key, never for a credential.
	if a.Sandbox || a.SessionID == "" || a.CredentialID == "" {
		return refuse("the payout was not signed by a session's key")
	}
	if len(req.CredentialTypes) > 0 {
		// The signer's credential is held by the retry's transaction; it
		// counts as the assurance it carries now, which for one enrolled
		// by a weaker session within its security-change period is that
		// session's, not its own type's.
		c, err := tx.Credentials().Get(ctx, a.CredentialID)
		if err != nil {
			return apierror.From(err)
		}
		if as := c.AssuredAs(s.now); !slices.Contains(req.CredentialTypes, string(as)) {
			if as != c.Type {
				return refuse(fmt.Sprintf("the signing %s credential was enrolled by a session of %s and carries %s assurance until %s",
					c.Type, as, as, c.Enrolment.SettlesAt.UTC().Format(time.RFC3339)))
			}
			return refuse(fmt.Sprintf("the signing session was opened with %s", c.Type))
		}
	}
	if req.MaxSessionAge != nil {
		// Judged on the time of the ceremony that authenticated the
		// session, which a refresh keeps.
		sess, err := tx.Sessions().Get(ctx, a.SessionID)
		if err != nil {
			return apierror.From(err)
		}
		if age := s.now.Sub(sess.Authenticated()); age > time.Duration(*req.MaxSessionAge) {
			return refuse(fmt.Sprintf("the signing session was authenticated %v ago", age.Truncate(time.Second)))
		}
	}
	return nil
}

// allow records the payout in the windows, makes it (execute) and writes
// its event, in that order: the host's writes and locks come before the
// event, the last of the transaction. approved is the approval the payout
// waited for, nil when it did not wait.
func (p *Policy) allow(ctx context.Context, tx storage.Tx, r *Rule, s *subject, approved *storage.PayoutApproval, execute Execute) (*Allowed, error) {
	u := storage.PayoutUsage{ID: s.pay.ID, CustomerID: s.pay.CustomerID, SourceID: s.pay.SourceID,
		DestinationID: s.pay.DestinationID, Amount: s.ref, CreatedAt: s.now, ExpiresAt: s.now.Add(p.horizon)}
	if err := tx.PayoutUsage().Record(ctx, &u); err != nil {
		if errors.Is(err, storage.ErrDuplicate) {
			return nil, apierror.New(apierror.Conflict, "payout %s was already decided", s.pay.ID).WithDetail("field", "id")
		}
		return nil, apierror.From(err)
	}
	allowed := &Allowed{Payout: *s.pay, Rule: r.Name, ReferenceAmount: s.ref, Approval: approved}
	if err := execute(ctx, tx, allowed); err != nil {
		return nil, err
	}
	data := p.eventOf(r, s)
	if approved != nil {
		data.RequestID, data.ApprovalID, data.Approvers = approved.RequestID, approved.ID, approved.Approvers
	} else if a := s.pay.Authorization; a != nil {
		data.RequestID, data.SessionID, data.CredentialID = a.RequestID, a.SessionID, a.CredentialID
	}
	if err := p.append(ctx, tx, EventDecided, s, data); err != nil {
		return nil, err
	}
	return allowed, nil
}

// eventOf is the data every payout event carries.
func (p *Policy) eventOf(r *Rule, s *subject) eventData {
	return eventData{PayoutID: s.pay.ID, CustomerID: s.pay.CustomerID, SourceID: s.pay.SourceID,
		DestinationID: s.pay.DestinationID, Amount: s.pay.Amount, Currency: s.pay.Currency,
		ReferenceAmount: s.ref, ReferenceCurrency: p.rules.ReferenceCurrency, Rule: r.Name}
}

// append writes an event of typ about s's source to tx's outbox.
func (p *Policy) append(ctx context.Context, tx storage.Tx, typ string, s *subject, data eventData) error {
	e, err := storage.NewEvent(p.rand, typ, s.pay.SourceID, data, s.now)
	if err != nil {
		return apierror.Internal(err)
	}
	return apierror.From(tx.Outbox().Append(ctx, &e))
}

// eventData is the data of an [EventDecided] event.
type eventData struct {
	PayoutID          string `json:"payoutId"`
	CustomerID        string `json:"customerId"`
	SourceID          string `json:"sourceId"`
	DestinationID     string `json:"destinationId"`
	Amount            int64  `json:"amount"`
	Currency          string `json:"currency"`
	ReferenceAmount   int64  `json:"referenceAmount"`
	ReferenceCurrency string `json:"referenceCurrency"`
	Rule              string `json:"rule"`
	RequestID         string `json:"requestId"`
	SessionID         string `json:"sessionId,omitempty"`
	CredentialID      string `json:"credentialId,omitempty"`
	// The approval the payout waits for or waited for, and who approved.
	ApprovalID string   `json:"approvalId,omitempty"`
	Approvers  []string `json:"approvers,omitempty"`
	// State is the approval's state, on the approval events.
	State string `json:"state,omitempty"`
}

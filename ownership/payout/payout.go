// Package payout is the payout of an embedded wallet as one operation: the
// wallet's session signs it ([walletauth.Authorize]), and, in the
// transaction that consumes the signed request, the destination must be
// the wallet's customer's own, the payout gate must allow it
// ([ownership.Service.CheckPayoutIn], holding the destination until the
// transaction ends), the payout policy decides it ([policy.Policy.Decide])
// and only a payout the policy allows reaches the host's Pay, which debits
// its ledger and records the payout through the same transaction. A payout
// the policy holds for approval answers as held and pays nothing; its last
// approval ([Approve], [ApprovalOperation]) runs the same chain on the
// approval's payout, exactly once.
//
// The host writes only what is its own: the rule of its operation
// (Spec.Check: a balance, a quote's expiry), the debit and its record
// (Spec.Pay and the PayFunc of an approval), its rates (the policy's).
//
// # The chain
//
// Every payout, on either leg of its signed operation and again at its
// approval, is decided by one chain, in this order, in the transaction of
// the leg:
//
//  1. the transfer is read from the parameters (Spec.Transfer), and its
//     SourceID must be the signing wallet (500 otherwise: the host's Spec
//     names another wallet than the one that signs);
//  2. an external-account destination and the source wallet are read, and
//     the destination must be of the wallet's customer: 404
//     REFERENCE_NOT_FOUND (details.field the destination field) for an
//     unknown account and for another customer's alike, decided before
//     the gate, so that another customer's account reveals nothing of its
//     state;
//  3. the payout gate on the destination ([ownership.Service.CheckPayoutIn]
//     with the Received amount when set, the Amount otherwise), which holds
//     the account until the transaction ends; its refusals name the
//     destination field in details.field;
//  4. the host's rule (Spec.Check), when set, on a payout the gate allows
//     (a balance: a payout above the maximum is refused for that, whatever
//     the wallet holds).
//
// A destination of type [policy.DestinationUMA] is no external account: it
// has no customer and no gate, so steps 2 (but the wallet's read) and 3 do
// not apply.
//
// The first leg runs the chain at the clock's time before a signature is
// asked, so a payout the chain refuses costs the user no signature. The
// retry runs it whole in its Effect, at the time its transaction read once
// the signer was locked (signedretry.Authorization.Now), so a quote that
// expired while the retry waited for those locks is refused; then the
// policy decides, and Pay runs for an allowed payout only. Every refusal of
// the retry rolls its transaction back and leaves the signed request
// usable.
//
// # Lock order
//
// A signed payout and a signed approval lock the signer (the wallet, its
// session and credential) first, through walletauth; an approval then
// locks the approval, then the gate the destination. An operator's
// approval, which has no signer, locks the approval first; when the policy
// has a rule on security changes it then locks the source wallet after the
// approval and the destination, against the store's order (internal
// accounts first). A store resolves the cycle this can make with a signed
// approval of the same payout as a lost conflict (a rerun: storage/memory
// reruns the younger transaction, storage/postgres reports a deadlock as
// postgres.ErrRerun).
package payout

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/ownership"
	"github.com/walletgate/walletgate/ownership/policy"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/walletauth"
)

// Config configures a [Service]. Every member is required.
type Config struct {
	// Store is the store of the three services; Approve, ApprovalOperation,
	// Refuse and Get run their transactions on it (inside a host's
	// transaction when the context carries one, as every operation does).
	Store storage.Store
	// Gate is the payout gate.
	Gate *ownership.Service
	// Policy is the risk team's payout policy.
	Policy *policy.Policy
	// Wallets signs the payouts and the wallets' approvals.
	Wallets *walletauth.Service
	// Clock is the services' time, the Clock of the configurations of
	// Wallets and Policy (time.Now when they use the real time): the time
	// a first leg and an operator's approval or refusal are decided at. A
	// retry is decided at the time its signed retry read
	// (signedretry.Authorization.Now), from the same clock.
	Clock func() time.Time
}

// Service runs payouts. It is safe for concurrent use.
type Service struct {
	cfg Config
}

// New checks that every member of cfg is set and returns the service; the
// error names each missing member.
func New(cfg Config) (*Service, error) {
	var missing []string
	if cfg.Store == nil {
		missing = append(missing, "Store")
	}
	if cfg.Gate == nil {
		missing = append(missing, "Gate")
	}
	if cfg.Policy == nil {
		missing = append(missing, "Policy")
	}
	if cfg.Wallets == nil {
		missing = append(missing, "Wallets")
	}
	if cfg.Clock == nil {
		missing = append(missing, "Clock")
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("payout: Config.%s is required", strings.Join(missing, ", Config."))
	}
	return &Service{cfg: cfg}, nil
}

// Transfer is what a payout moves, as signed: from the embedded wallet
// SourceID to the destination, Amount of Currency leaving the wallet.
type Transfer struct {
	// SourceID is the embedded wallet paid from (InternalAccount:<uuid>);
	// a session of it signs the payout.
	SourceID string
	// DestinationID is the external account paid (ExternalAccount:<uuid>)
	// or, with DestinationType [policy.DestinationUMA], a UMA address.
	DestinationID   string
	DestinationType string
	// Amount, in minor units of Currency, is what leaves the wallet: the
	// policy values and counts it.
	Amount   int64
	Currency string
	// Received, when set, is what the destination receives in another
	// amount or currency (a quote's conversion): the gate decides on it. A
	// converting payout is never held for approval: a rule that would
	// hold it refuses it (403 PAYOUT_BLOCKED naming the rule), since its
	// approval would execute it at a rate its quote no longer has.
	Received *Money
}

// Money is an amount in minor units of a currency.
type Money struct {
	Amount   int64
	Currency string
}

// Payment is what Pay is handed: a payout the gate and the policy allowed,
// to debit and record in tx.
type Payment struct {
	// Transfer is the payout as signed, or as its approval holds it.
	Transfer Transfer
	// ID is the payout's id: the signed request's.
	ID string
	// CustomerID is the source wallet's customer.
	CustomerID string
	// Destination is the external account as the gate held it; nil for a
	// destination that is no external account.
	Destination *storage.ExternalAccount
	// Allowed is the policy's decision (its rule, the reference amount
	// the windows counted, the approval it waited for).
	Allowed *policy.Allowed
	// SignedBy is the credential whose session signed the payout.
	SignedBy string
	// Authorization is the signed retry's of the payout; nil for a payout
	// made by its approval.
	Authorization *signedretry.Authorization
	// Now is the time of the decision.
	Now time.Time
}

// PayFunc is the host's payout: the debit of its ledger and its record of
// the payout, written through tx (and, inside a host's transaction,
// through the host's own). It is called for a payout the policy allows and
// for no other. An error rolls back the transaction whole. It may run more
// than once when the store reruns the transaction, so it must have no
// effect outside tx.
type PayFunc[R any] func(ctx context.Context, tx storage.Tx, p *Payment) (R, error)

// Spec is a payout a host offers its wallets: the signed operation's type
// and parameters, how the parameters name the transfer, and the host's
// rule and payout.
type Spec[P, R any] struct {
	// Type names the operation in the signed payload, e.g. "TRANSFER_OUT".
	Type string
	// AccountID is the embedded wallet that signs, on both legs; the
	// transfer's SourceID must be it.
	AccountID string
	// Parameters are what the wallet signs (first leg only; the retry
	// acts on the stored ones): every value the payout acts on.
	Parameters P
	// Transfer reads the transfer from the parameters. Required.
	Transfer func(P) Transfer
	// Check, when not nil, is the host's rule on the parameters (a
	// balance, a quote's expiry) at now, run on both legs in the
	// operation's transaction once the gate allowed the payout: on the
	// first before a
	// signature is asked, on the retry at the time its transaction read
	// once the signer was locked. It must not write.
	Check func(ctx context.Context, tx storage.Tx, p P, now time.Time) error
	// Pay makes an allowed payout. Required.
	Pay func(ctx context.Context, tx storage.Tx, p P, pay *Payment) (R, error)
	// DestinationField is the name of the destination in the host's
	// request, which a refusal about the destination names in
	// details.field; empty is "destinationId".
	DestinationField string
}

// Outcome is what a payout's signed retry did: exactly one member is set.
// Paid is what Pay returned for a payout made in the transaction; Held is
// the approval the payout waits for, and nothing was paid.
type Outcome[R any] struct {
	Paid *R
	Held *storage.PayoutApproval
}

// Operation returns the signed operation of spec for the leg call is, for
// [walletauth.Authorize] to run with the same call. The host builds it on
// both legs from the same request and hands Authorize that request.
//
// On the first leg (a call without signed-retry headers) its Check runs
// the chain (see the package documentation) on spec.Parameters at the
// clock's time, before the challenge is issued. On the retry it has no
// Check: its Effect runs the chain on the stored parameters at the
// retry's time (signedretry.Authorization.Now), then the policy decides
// the payout of the transfer (its id the signed request's) and, for an
// allowed payout only, Pay runs with the stored parameters and returns
// what Outcome.Paid points to. A payout the policy holds is Outcome.Held,
// committed with the consumed request; Pay does not run. A converting
// transfer (Received set) the policy would hold is refused instead: 403
// PAYOUT_BLOCKED naming the rule (details.rule, details.reason), and
// nothing of it commits.
//
// The Effect is set on both legs (Authorize never runs it on the first):
// an operation built for a first leg and run on a retry runs the chain
// twice, and still decides and pays once.
//
// Errors of the retry (each rolls its transaction back and leaves the
// signed request usable): the chain's, the policy's refusals (403
// PAYOUT_BLOCKED, 403 STEP_UP_REQUIRED, naming the rule), Pay's errors
// unchanged, and 500 INTERNAL_ERROR for a Spec without Transfer or Pay, or
// a decision that is neither paid nor held.
func Operation[P, R any](s *Service, spec Spec[P, R], call signedretry.Request) walletauth.HostOperation[P, Outcome[R]] {
	op := walletauth.HostOperation[P, Outcome[R]]{Type: spec.Type, AccountID: spec.AccountID, Parameters: spec.Parameters,
		Effect: func(ctx context.Context, tx storage.Tx, a *signedretry.Authorization, p P) (Outcome[R], error) {
			return retry(ctx, s, tx, &spec, a, p)
		}}
	if !call.IsRetry() {
		op.Check = func(ctx context.Context, tx storage.Tx, p P) error {
			_, err := checkSpec(ctx, s, tx, &spec, p, s.cfg.Clock())
			return err
		}
	}
	return op
}

// checkSpec runs the chain on the parameters p of spec at now.
func checkSpec[P, R any](ctx context.Context, s *Service, tx storage.Tx, spec *Spec[P, R], p P, now time.Time) (checked, error) {
	if spec.Transfer == nil || spec.Pay == nil {
		return checked{}, apierror.Internal(errors.New("payout: Spec.Transfer and Spec.Pay are required"))
	}
	var rule func() error
	if spec.Check != nil {
		rule = func() error { return spec.Check(ctx, tx, p, now) }
	}
	return s.chain(ctx, tx, spec.Transfer(p), spec.AccountID, spec.DestinationField, rule)
}

// retry is the Effect of a payout's signed retry authorized by a, on the
// stored parameters p: the chain at a.Now, the policy's decision and, for
// an allowed payout, spec.Pay.
func retry[P, R any](ctx context.Context, s *Service, tx storage.Tx, spec *Spec[P, R], a *signedretry.Authorization, p P) (Outcome[R], error) {
	c, err := checkSpec(ctx, s, tx, spec, p, a.Now)
	if err != nil {
		return Outcome[R]{}, err
	}
	t := c.transfer
	var paid *R
	out, err := s.cfg.Policy.Decide(ctx, tx, policy.Payout{ID: a.RequestID, CustomerID: c.customerID, SourceID: t.SourceID,
		DestinationID: t.DestinationID, DestinationType: t.DestinationType, Amount: t.Amount, Currency: t.Currency, Authorization: a},
		func(ctx context.Context, tx storage.Tx, allowed *policy.Allowed) error {
			r, err := spec.Pay(ctx, tx, p, &Payment{Transfer: t, ID: allowed.Payout.ID, CustomerID: c.customerID,
				Destination: c.destination, Allowed: allowed, SignedBy: a.CredentialID, Authorization: a, Now: a.Now})
			if err != nil {
				return err
			}
			paid = &r
			return nil
		})
	if err != nil {
		return Outcome[R]{}, err
	}
	switch {
	case out.Executed != nil && out.Held == nil && paid != nil:
		return Outcome[R]{Paid: paid}, nil
	case out.Held != nil && out.Executed == nil && paid == nil:
		if t.Received != nil {
			return Outcome[R]{}, heldConversion(out.Held.Rule)
		}
		return Outcome[R]{Held: out.Held}, nil
	}
	return Outcome[R]{}, apierror.Internal(errors.New("payout: the policy's decision is neither one payout made nor one held"))
}

// heldConversion is the refusal of a converting payout that rule would
// hold for approval.
func heldConversion(rule string) error {
	const reason = "the rule holds the payout for approval, and a converting payout is never held: its approval would execute it at a rate its quote no longer has"
	return apierror.New(apierror.PayoutBlocked, "payout refused by rule %s: %s", rule, reason).
		WithDetail("rule", rule).WithDetail("reason", reason)
}

// checked is a transfer the chain allowed, with what its payout is made
// of.
type checked struct {
	transfer Transfer
	// customerID is the source wallet's customer.
	customerID string
	// destination is the external account as the gate held it; nil for a
	// UMA address.
	destination *storage.ExternalAccount
}

// chain runs the checks of a payout of t, signed by a session of the
// embedded wallet accountID, in tx (see the package documentation): the
// source, the destination's customer, the gate, rule when not nil. field
// names the destination in refusals ("" is "destinationId").
func (s *Service) chain(ctx context.Context, tx storage.Tx, t Transfer, accountID, field string, rule func() error) (checked, error) {
	if field == "" {
		field = "destinationId"
	}
	if t.SourceID != accountID {
		return checked{}, apierror.Internal(fmt.Errorf("payout: the transfer is from %q, not from the signing wallet %q", t.SourceID, accountID))
	}
	c := checked{transfer: t}
	switch t.DestinationType {
	case "":
		if !storage.ValidID(t.DestinationID, "ExternalAccount") {
			return checked{}, unknownDestination(t.DestinationID, field)
		}
		dest, err := tx.ExternalAccounts().Get(ctx, t.DestinationID)
		if errors.Is(err, storage.ErrNotFound) {
			return checked{}, unknownDestination(t.DestinationID, field)
		}
		if err != nil {
			return checked{}, apierror.From(err)
		}
		w, err := wallet(ctx, tx, t.SourceID)
		if err != nil {
			return checked{}, err
		}
		if dest.CustomerID == "" || dest.CustomerID != w.CustomerID {
			return checked{}, unknownDestination(t.DestinationID, field)
		}
		c.customerID = w.CustomerID
	case policy.DestinationUMA:
		if !strings.HasPrefix(t.DestinationID, "$") {
			return checked{}, apierror.InvalidField(field, nil, "is not a UMA address (it begins with '$')")
		}
		w, err := wallet(ctx, tx, t.SourceID)
		if err != nil {
			return checked{}, err
		}
		c.customerID = w.CustomerID
	default:
		return checked{}, apierror.Internal(fmt.Errorf("payout: the transfer's destination type %q is neither an external account's nor %s", t.DestinationType, policy.DestinationUMA))
	}
	if t.DestinationType == "" {
		gated := ownership.Payout{AccountID: t.DestinationID, Amount: t.Amount, Currency: t.Currency}
		if r := t.Received; r != nil {
			gated.Amount, gated.Currency = r.Amount, r.Currency
		}
		d, err := s.cfg.Gate.CheckPayoutIn(ctx, tx, gated)
		if err != nil {
			if e := apierror.As(err); e != nil && !e.Code.IsZero() && e.Code != apierror.InternalError {
				return checked{}, e.WithDetail("field", field)
			}
			return checked{}, err
		}
		held := d.Account
		c.destination = &held
	}
	if rule != nil {
		if err := rule(); err != nil {
			return checked{}, err
		}
	}
	return c, nil
}

// unknownDestination is the answer for a destination that is no external
// account of the wallet's customer, whether it exists or not.
func unknownDestination(id, field string) error {
	return apierror.New(apierror.ReferenceNotFound, "external account %s not found", id).WithDetail("field", field)
}

// wallet reads the embedded wallet id in tx.
func wallet(ctx context.Context, tx storage.Tx, id string) (storage.InternalAccount, error) {
	w, err := tx.InternalAccounts().Get(ctx, id)
	if errors.Is(err, storage.ErrNotFound) {
		return w, apierror.New(apierror.ReferenceNotFound, "internal account %s not found", id)
	}
	return w, apierror.From(err)
}

// Approved is what an approval did: the approval after it, and Paid, what
// the host's PayFunc returned, when it was the last and the payout was
// made (nil while approvals are missing).
type Approved[R any] struct {
	Approval storage.PayoutApproval
	Paid     *R
}

// OpApprove is the type of a wallet's signed approval of a held payout.
const OpApprove = "APPROVE_PAYOUT"

// ApprovalParams are the parameters of an [OpApprove] payload: the
// approval and the payout it makes, so the signer sees where the money
// goes and how much leaves the wallet.
type ApprovalParams struct {
	ApprovalID           string `json:"approvalId"`
	SourceAccountID      string `json:"sourceAccountId"`
	DestinationAccountID string `json:"destinationAccountId"`
	Amount               int64  `json:"amount"`
	Currency             string `json:"currency"`
}

// paramsOf returns the approval parameters of ap.
func paramsOf(ap *storage.PayoutApproval) ApprovalParams {
	return ApprovalParams{ApprovalID: ap.ID, SourceAccountID: ap.SourceID, DestinationAccountID: ap.DestinationID,
		Amount: ap.Amount, Currency: ap.Currency}
}

// transferOf returns the payout ap holds. A held payout is never a
// converting one, so it has no Received.
func transferOf(ap *storage.PayoutApproval) Transfer {
	t := Transfer{SourceID: ap.SourceID, DestinationID: ap.DestinationID, Amount: ap.Amount, Currency: ap.Currency}
	if strings.HasPrefix(ap.DestinationID, "$") {
		t.DestinationType = policy.DestinationUMA
	}
	return t
}

// lockWaiting reads and holds the approval id in tx and refuses one that
// no longer waits at now: 404 REFERENCE_NOT_FOUND for an unknown id or
// one that is no PayoutApproval id, 409 CONFLICT with details.state
// APPROVED, REFUSED or EXPIRED.
func lockWaiting(ctx context.Context, tx storage.Tx, id string, now time.Time) (storage.PayoutApproval, error) {
	ap, err := lockApproval(ctx, tx, id)
	if err != nil {
		return ap, err
	}
	if st := policy.StateOf(&ap, now); st != storage.ApprovalWaiting {
		return storage.PayoutApproval{}, apierror.New(apierror.Conflict, "payout approval %s is %s", ap.ID, st).WithDetail("state", st)
	}
	return ap, nil
}

// lockApproval reads and holds the approval id in tx: 404
// REFERENCE_NOT_FOUND for an unknown id or one that is no PayoutApproval
// id.
func lockApproval(ctx context.Context, tx storage.Tx, id string) (storage.PayoutApproval, error) {
	unknown := apierror.New(apierror.ReferenceNotFound, "payout approval %q not found", id)
	if !storage.ValidID(id, "PayoutApproval") {
		return storage.PayoutApproval{}, unknown
	}
	ap, err := tx.PayoutApprovals().Lock(ctx, id)
	if errors.Is(err, storage.ErrNotFound) {
		return storage.PayoutApproval{}, unknown
	}
	return ap, apierror.From(err)
}

// approve records by's approval of the held payout ap, locked in tx and
// allowed by the chain as c, with [policy.Policy.Approve]; the last
// approval pays it with pay, signed by the credential that signed the
// payout, at now.
func approve[R any](ctx context.Context, s *Service, tx storage.Tx, ap *storage.PayoutApproval, c checked, by policy.Approver,
	now time.Time, pay PayFunc[R]) (Approved[R], error) {
	if pay == nil {
		return Approved[R]{}, apierror.Internal(errors.New("payout: an approval needs the host's PayFunc"))
	}
	var paid *R
	done, after, err := s.cfg.Policy.Approve(ctx, tx, ap.ID, by, func(ctx context.Context, tx storage.Tx, allowed *policy.Allowed) error {
		r, err := pay(ctx, tx, &Payment{Transfer: c.transfer, ID: allowed.Payout.ID, CustomerID: c.customerID,
			Destination: c.destination, Allowed: allowed, SignedBy: ap.RequestedBy, Now: now})
		if err != nil {
			return err
		}
		paid = &r
		return nil
	})
	switch {
	case err != nil:
		return Approved[R]{}, err
	case after != nil && (done == nil) == (paid == nil):
		return Approved[R]{Approval: *after, Paid: paid}, nil
	}
	return Approved[R]{}, apierror.Internal(errors.New("payout: the policy's approval is neither recorded nor one payout made"))
}

// checkApproval runs the chain on the payout of ap, locked in tx, as it is
// now.
func (s *Service) checkApproval(ctx context.Context, tx storage.Tx, ap *storage.PayoutApproval) (checked, error) {
	return s.chain(ctx, tx, transferOf(ap), ap.SourceID, "", nil)
}

// ApprovalOperation reads the held payout approvalID and returns the
// signed approval of it by a session of its source wallet, for
// [walletauth.Authorize] to run with call, the request the host hands
// Authorize; the last approval pays it with pay.
//
// The operation is of type [OpApprove] on the approval's source wallet,
// its parameters the approval's (first leg). Its Check (first leg only)
// and the head of its Effect (the retry, at the retry's time
// signedretry.Authorization.Now) lock the approval the parameters name,
// require that it waits and that the parameters are its own (409 CONFLICT
// otherwise), and run the chain on its payout as it is now, before
// anything is recorded; then the Effect records the approval with
// [policy.Policy.Approve] (the signer's credential must be another, and
// independent, credential of the wallet, as the policy rules), and the
// last approval pays with pay: its Payment's SignedBy is the credential
// that signed the payout, and it has no Authorization. The result's Paid
// is set when the payout was made. A refusal on the retry rolls back and
// leaves the signed request usable.
//
// Errors (from ApprovalOperation, and then from either leg): 404
// REFERENCE_NOT_FOUND for an unknown or malformed id, 409 CONFLICT with
// details.state for an approval that no longer waits; then the chain's
// refusals, the policy's (403 FORBIDDEN, 409 CONFLICT, 403
// PAYOUT_BLOCKED), pay's errors unchanged, and 500 for a nil pay.
func ApprovalOperation[R any](ctx context.Context, s *Service, approvalID string, call signedretry.Request, pay PayFunc[R]) (walletauth.HostOperation[ApprovalParams, Approved[R]], error) {
	var stored storage.PayoutApproval
	err := s.cfg.Store.Atomic(ctx, func(tx storage.Tx) error {
		var err error
		stored, err = lockWaiting(ctx, tx, approvalID, s.cfg.Clock())
		return err
	})
	if err != nil {
		return walletauth.HostOperation[ApprovalParams, Approved[R]]{}, apierror.From(err)
	}
	// rule locks the approval p names and runs the checks an approval
	// runs at now before anything is recorded.
	rule := func(ctx context.Context, tx storage.Tx, p ApprovalParams, now time.Time) (storage.PayoutApproval, checked, error) {
		ap, err := lockWaiting(ctx, tx, p.ApprovalID, now)
		if err != nil {
			return ap, checked{}, err
		}
		if paramsOf(&ap) != p {
			return ap, checked{}, apierror.New(apierror.Conflict, "payout approval %s is not the payout of the signed approval", ap.ID)
		}
		c, err := s.checkApproval(ctx, tx, &ap)
		return ap, c, err
	}
	op := walletauth.HostOperation[ApprovalParams, Approved[R]]{Type: OpApprove, AccountID: stored.SourceID, Parameters: paramsOf(&stored),
		Effect: func(ctx context.Context, tx storage.Tx, a *signedretry.Authorization, p ApprovalParams) (Approved[R], error) {
			ap, c, err := rule(ctx, tx, p, a.Now)
			if err != nil {
				return Approved[R]{}, err
			}
			return approve(ctx, s, tx, &ap, c, policy.Approver{Authorization: a}, a.Now, pay)
		}}
	if !call.IsRetry() {
		op.Check = func(ctx context.Context, tx storage.Tx, p ApprovalParams) error {
			_, _, err := rule(ctx, tx, p, s.cfg.Clock())
			return err
		}
	}
	return op, nil
}

// Approve records the approval of the held payout approvalID by operator,
// whom the host authenticated; the last approval pays it with pay.
//
// In one transaction of the store (the host's, when ctx carries one), it
// locks the approval, requires that it waits, runs the chain on its payout
// as it is now (the destination still of the wallet's customer, the gate
// holding it until the transaction ends) before anything is recorded,
// then records the approval with [policy.Policy.Approve]; the last
// approval pays with pay (its Payment's SignedBy is the credential that
// signed the payout; it has no Authorization). Of concurrent approvals
// one decides at a time, so the payout is made once. The result's Paid is
// set when the payout was made.
//
// Errors: 404 REFERENCE_NOT_FOUND for an unknown or malformed id, 409
// CONFLICT with details.state for an approval that no longer waits, the
// chain's refusals, the policy's (403 FORBIDDEN for an operator the rule
// does not name, 409 CONFLICT, 403 PAYOUT_BLOCKED when the payout no
// longer fits the rules: the approval then still waits), pay's errors
// unchanged, and 500 for an empty operator or a nil pay. Every error rolls
// back what the approval wrote.
func Approve[R any](ctx context.Context, s *Service, approvalID, operator string, pay PayFunc[R]) (Approved[R], error) {
	if operator == "" {
		return Approved[R]{}, apierror.Internal(errors.New("payout: Approve needs the authenticated operator"))
	}
	var out Approved[R]
	err := s.cfg.Store.Atomic(ctx, func(tx storage.Tx) error {
		now := s.cfg.Clock()
		ap, err := lockWaiting(ctx, tx, approvalID, now)
		if err != nil {
			return err
		}
		c, err := s.checkApproval(ctx, tx, &ap)
		if err != nil {
			return err
		}
		out, err = approve(ctx, s, tx, &ap, c, policy.Approver{Operator: operator}, now, pay)
		return err
	})
	if err != nil {
		return Approved[R]{}, apierror.From(err)
	}
	return out, nil
}

// Refuse records the refusal of the held payout approvalID by operator: it
// is REFUSED and never paid. It returns the approval after the refusal.
// Errors: 404 REFERENCE_NOT_FOUND for an unknown or malformed id, 409
// CONFLICT with details.state for an approval that no longer waits, 403
// FORBIDDEN for an operator the approval's rule does not name, 500 for an
// empty operator.
func (s *Service) Refuse(ctx context.Context, approvalID, operator string) (*storage.PayoutApproval, error) {
	if operator == "" {
		return nil, apierror.Internal(errors.New("payout: Refuse needs the authenticated operator"))
	}
	var out *storage.PayoutApproval
	err := s.cfg.Store.Atomic(ctx, func(tx storage.Tx) error {
		if _, err := lockWaiting(ctx, tx, approvalID, s.cfg.Clock()); err != nil {
			return err
		}
		var err error
		out, err = s.cfg.Policy.Refuse(ctx, tx, approvalID, policy.Approver{Operator: operator})
		return err
	})
	if err != nil {
		return nil, apierror.From(err)
	}
	return out, nil
}

// Get returns the payout approval id as stored; [policy.StateOf] tells
// its state at a time. It checks nothing of the caller: a host answering
// a customer compares the approval's CustomerID with its caller's. Errors:
// 404 REFERENCE_NOT_FOUND for an unknown or malformed id.
func (s *Service) Get(ctx context.Context, approvalID string) (*storage.PayoutApproval, error) {
	var ap storage.PayoutApproval
	err := s.cfg.Store.Atomic(ctx, func(tx storage.Tx) error {
		var err error
		ap, err = lockApproval(ctx, tx, approvalID)
		return err
	})
	if err != nil {
		return nil, apierror.From(err)
	}
	return &ap, nil
}

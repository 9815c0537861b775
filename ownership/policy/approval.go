package policy

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
)

// Events of payouts held for approval, written in the transaction that
// holds, approves or refuses the payout; an approved payout then writes
// [EventDecided] too, in the transaction that executes it.
const (
	EventApprovalRequested = "PAYOUT.APPROVAL_REQUESTED"
	EventApprovalRecorded  = "PAYOUT.APPROVAL_RECORDED"
	EventApprovalRefused   = "PAYOUT.APPROVAL_REFUSED"
)

// StateExpired is the state [StateOf] reports for a payout that waited
// past its approval's TTL; it is never stored.
const StateExpired = "EXPIRED"

// StateOf returns the state of a at now: WAITING, APPROVED, REFUSED, or
// EXPIRED for one still waiting at or after its expiry.
func StateOf(a *storage.PayoutApproval, now time.Time) string {
	if a.State == storage.ApprovalWaiting && !now.Before(a.ExpiresAt) {
		return StateExpired
	}
	return a.State
}

// Approver is who approves or refuses a held payout: the authorization of
// a signed operation of the wallet, or an operator the host
// authenticated. Exactly one is set.
//
// A wallet's approval counts only from a credential independent of the
// one whose session signed the payout: another credential, carrying its
// own type's assurance (not one enrolled by a session of a weaker
// credential within its security-change period), and answering to
// another holder ([storage.Credential].OriginAt: not enrolled by the
// payout's signer, nor its enroller, within the period). So one phished
// session cannot enroll a "second credential" and approve its own payout;
// the owner's credentials approve, and a credential the owner added
// approves once its period has passed. The sandbox literal, which stands
// in for a key, approves nothing.
type Approver struct {
	Authorization *signedretry.Authorization
	Operator      string
}

// hold stores the payout for approval by r and writes its event.
func (p *Policy) hold(ctx context.Context, tx storage.Tx, r *Rule, s *subject) (*storage.PayoutApproval, error) {
	id, err := storage.NewID(p.rand, "PayoutApproval")
	if err != nil {
		return nil, apierror.Internal(err)
	}
	a := s.pay.Authorization
	ap := storage.PayoutApproval{ID: id, CustomerID: s.pay.CustomerID, SourceID: s.pay.SourceID, DestinationID: s.pay.DestinationID,
		Amount: s.pay.Amount, Currency: s.pay.Currency, Rule: r.Name, RequestID: s.pay.ID, RequestedBy: a.CredentialID,
		Required: r.Approval.Count, State: storage.ApprovalWaiting, CreatedAt: s.now, UpdatedAt: s.now,
		ExpiresAt: s.now.Add(time.Duration(r.Approval.TTL))}
	if err := tx.PayoutApprovals().Create(ctx, &ap); err != nil {
		return nil, apierror.From(err)
	}
	data := p.eventOf(r, s)
	data.RequestID, data.SessionID, data.CredentialID = a.RequestID, a.SessionID, a.CredentialID
	data.ApprovalID, data.State = ap.ID, ap.State
	if err := p.append(ctx, tx, EventApprovalRequested, s, data); err != nil {
		return nil, err
	}
	return &ap, nil
}

// Approve records by's approval of the held payout approvalID inside tx.
// While approvals are missing it returns the approval and a nil Allowed.
// The last approval executes the payout: the rules are tried again on it
// as it is now (a window may have filled meanwhile; the approval counts
// as given and no step-up is asked again), it is recorded in the windows
// and execute makes it in tx, from the approval's fields
// ([Allowed].Payout); the Allowed execute was handed is returned. The
// approval is held for the transaction, so of concurrent approvals one
// decides at a time and the payout executes once; a rollback undoes the
// approval with the payout.
//
// Errors: 404 REFERENCE_NOT_FOUND (no such approval), 409 CONFLICT (it is
// APPROVED, REFUSED or expired, or by approved already, or its rule is no
// longer in the policy), 403 FORBIDDEN (by may not approve it, naming
// why), the refusals of [Policy.Decide] when the payout no longer passes
// the rules (the approval then stays as it was), execute's errors
// unchanged, and 500 for an Approver with neither or both members set or
// a nil execute.
func (p *Policy) Approve(ctx context.Context, tx storage.Tx, approvalID string, by Approver, execute Execute) (done *Allowed, _ *storage.PayoutApproval, err error) {
	ctx, o := p.tel.Begin(ctx, opApprove, p.tel.decisions)
	defer func() { o.End(ctx, err, ruleAttr(done, nil, err)) }()
	if execute == nil {
		return nil, nil, apierror.Internal(errors.New("policy: Approve needs the host's Execute"))
	}
	ap, r, principal, now, err := p.lockFor(ctx, tx, approvalID, by)
	if err != nil {
		return nil, nil, err
	}
	ap.Approvers = append(ap.Approvers, principal)
	ap.UpdatedAt = now
	if len(ap.Approvers) < ap.Required {
		if err := tx.PayoutApprovals().Update(ctx, &ap); err != nil {
			return nil, nil, apierror.From(err)
		}
		err := p.approvalEvent(ctx, tx, EventApprovalRecorded, r, &ap, now)
		return nil, &ap, err
	}
	pay := &Payout{ID: ap.RequestID, CustomerID: ap.CustomerID, SourceID: ap.SourceID, DestinationID: ap.DestinationID,
		DestinationType: destinationTypeOf(ap.DestinationID), Amount: ap.Amount, Currency: ap.Currency}
	s, err := p.load(ctx, tx, pay, now)
	if err != nil {
		return nil, nil, err
	}
	rule, refusal := p.first(s)
	switch {
	case refusal != nil:
		return nil, nil, refusal
	case rule == nil:
		return nil, nil, apierror.Internal(errors.New("policy: no rule decided the payout"))
	}
	ap.State = storage.ApprovalApproved
	if err := tx.PayoutApprovals().Update(ctx, &ap); err != nil {
		return nil, nil, apierror.From(err)
	}
	if done, err = p.allow(ctx, tx, r, s, &ap, execute); err != nil {
		return nil, nil, err
	}
	return done, &ap, nil
}

// Refuse records by's refusal of the held payout approvalID inside tx: the
// approval is REFUSED and the payout never executes. Errors: those of
// [Policy.Approve] but the rules' refusals.
func (p *Policy) Refuse(ctx context.Context, tx storage.Tx, approvalID string, by Approver) (_ *storage.PayoutApproval, err error) {
	ctx, o := p.tel.Begin(ctx, opRefuse, p.tel.decisions)
	defer func() { o.End(ctx, err, ruleAttr(nil, nil, err)) }()
	ap, r, principal, now, err := p.lockFor(ctx, tx, approvalID, by)
	if err != nil {
		return nil, err
	}
	ap.Approvers = append(ap.Approvers, principal)
	ap.State, ap.UpdatedAt = storage.ApprovalRefused, now
	if err := tx.PayoutApprovals().Update(ctx, &ap); err != nil {
		return nil, apierror.From(err)
	}
	return &ap, p.approvalEvent(ctx, tx, EventApprovalRefused, r, &ap, now)
}

// lockFor holds the approval and checks that it waits and that by may
// decide it, returning the approval, its rule, by's principal and the
// time of the decision.
func (p *Policy) lockFor(ctx context.Context, tx storage.Tx, approvalID string, by Approver) (storage.PayoutApproval, *Rule, string, time.Time, error) {
	fail := func(err error) (storage.PayoutApproval, *Rule, string, time.Time, error) {
		return storage.PayoutApproval{}, nil, "", time.Time{}, err
	}
	if (by.Authorization == nil) == (by.Operator == "") {
		return fail(apierror.Internal(errors.New("policy: an Approver is an authorization or an operator, exactly one")))
	}
	if !storage.ValidID(approvalID, "PayoutApproval") {
		return fail(apierror.InvalidField("approvalId", nil, "must be a PayoutApproval id"))
	}
	ap, err := tx.PayoutApprovals().Lock(ctx, approvalID)
	if errors.Is(err, storage.ErrNotFound) {
		return fail(apierror.New(apierror.ReferenceNotFound, "payout approval %s not found", approvalID))
	}
	if err != nil {
		return fail(apierror.From(err))
	}
	now := p.now(by.Authorization)
	if st := StateOf(&ap, now); st != storage.ApprovalWaiting {
		return fail(apierror.New(apierror.Conflict, "payout approval %s is %s", ap.ID, st).WithDetail("state", st))
	}
	i := slices.IndexFunc(p.rules.Rules, func(r Rule) bool { return r.Name == ap.Rule })
	if i < 0 || p.rules.Rules[i].Action != RequireApproval {
		return fail(apierror.New(apierror.Conflict, "payout approval %s: its rule %s no longer requires approval in this policy", ap.ID, ap.Rule))
	}
	r := &p.rules.Rules[i]
	var principal string
	switch a := by.Authorization; {
	case a != nil:
		if !r.Approval.SecondCredential || a.AccountID != ap.SourceID || a.Sandbox || a.CredentialID == "" || a.CredentialID == ap.RequestedBy {
			return fail(apierror.New(apierror.Forbidden, "payout approval %s needs another credential of wallet %s or an operator", ap.ID, ap.SourceID))
		}
		if err := independent(ctx, tx, &ap, a.CredentialID, now); err != nil {
			return fail(err)
		}
		principal = "credential:" + a.CredentialID
	default:
		if !slices.Contains(r.Approval.Operators, by.Operator) {
			return fail(apierror.New(apierror.Forbidden, "payout approval %s: operator %q is not one of its approvers", ap.ID, by.Operator))
		}
		principal = "operator:" + by.Operator
	}
	if slices.Contains(ap.Approvers, principal) {
		return fail(apierror.New(apierror.Conflict, "payout approval %s: %s approved it already", ap.ID, principal))
	}
	return ap, r, principal, now, nil
}

// independent refuses the approval of ap by credential approver at now
// unless approver is independent of the credential that signed the payout
// (see [Approver]): 403 FORBIDDEN naming why. Both credentials are read in
// tx; the approver's is held by the approval's signed retry. A payout
// whose signing credential was revoked since it was held has no
// credential to be independent of, and no wallet credential approves it
// (an operator may).
func independent(ctx context.Context, tx storage.Tx, ap *storage.PayoutApproval, approver string, now time.Time) error {
	forbid := func(format string, args ...any) error {
		return apierror.New(apierror.Forbidden, "payout approval %s: "+format, append([]any{ap.ID}, args...)...)
	}
	a, err := tx.Credentials().Get(ctx, approver)
	if err != nil {
		return apierror.From(err)
	}
	signer, err := tx.Credentials().Get(ctx, ap.RequestedBy)
	if errors.Is(err, storage.ErrNotFound) {
		return forbid("the credential %s that signed the payout was revoked since; only an operator may approve it", ap.RequestedBy)
	}
	if err != nil {
		return apierror.From(err)
	}
	if as := a.AssuredAs(now); as != a.Type {
		return forbid("the approving %s credential was enrolled by a session of %s and does not count as another credential until %s",
			a.Type, as, a.Enrolment.SettlesAt.UTC().Format(time.RFC3339))
	}
	if a.OriginAt(now) == signer.OriginAt(now) {
		until := a.Enrolment.SettlesAt
		if signer.OriginAt(now) != signer.ID {
			until = signer.Enrolment.SettlesAt
		}
		return forbid("the approving credential and the one that signed the payout were enrolled one by the other less than their security-change period ago; they count as one until %s",
			until.UTC().Format(time.RFC3339))
	}
	return nil
}

// destinationTypeOf is the DestinationType of a stored destination: a UMA
// address begins with '$', an external account id never does.
func destinationTypeOf(id string) string {
	if strings.HasPrefix(id, "$") {
		return DestinationUMA
	}
	return ""
}

// approvalEvent writes an approval event of ap.
func (p *Policy) approvalEvent(ctx context.Context, tx storage.Tx, typ string, r *Rule, ap *storage.PayoutApproval, now time.Time) error {
	s := &subject{pay: &Payout{ID: ap.RequestID, CustomerID: ap.CustomerID, SourceID: ap.SourceID, DestinationID: ap.DestinationID,
		Amount: ap.Amount, Currency: ap.Currency}, now: now}
	ref, err := p.toReference(ctx, ap.Currency, ap.Amount)
	if err != nil {
		return err
	}
	s.ref = ref
	data := p.eventOf(r, s)
	data.RequestID, data.ApprovalID, data.Approvers, data.State = ap.RequestID, ap.ID, ap.Approvers, ap.State
	return p.append(ctx, tx, typ, s, data)
}

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/ownership/policy"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/walletauth"
)

// PayoutApproval is a transfer out the payout policy holds for approval
// (a REQUIRE_APPROVAL rule; under [DefaultPayoutRules] the rule
// [PayoutRuleApproval]): the payout as it was signed, who approved it so
// far and its state, evaluated at the simulator's clock. It is the 202
// body of POST /transfer-out when the payout is held (it has no
// payloadToSign, unlike a challenge) and of GET
// /payout-approvals/{id}.
type PayoutApproval struct {
	// ID is "PayoutApproval:<uuid>".
	ID string `json:"id"`
	// State is WAITING, APPROVED, REFUSED or EXPIRED (WAITING at or after
	// ExpiresAt).
	State string `json:"state"`
	// Rule names the rule that holds the payout.
	Rule       string `json:"rule"`
	CustomerID string `json:"customerId"`
	// The payout as signed: from the embedded wallet to the external
	// account, Amount in the smallest unit of Currency.
	SourceAccountID      string `json:"sourceAccountId"`
	DestinationAccountID string `json:"destinationAccountId"`
	Amount               int64  `json:"amount"`
	Currency             string `json:"currency"`
	// RequiredApprovals is how many approvers the payout waits for;
	// Approvers are who approved or refused it so far, in order:
	// "credential:<id>" (a session of that credential of the wallet
	// signed the approval) or "operator:<name>".
	RequiredApprovals int      `json:"requiredApprovals"`
	Approvers         []string `json:"approvers"`
	// TransactionID is the transaction the approved payout was made as,
	// once this simulator made it.
	TransactionID string    `json:"transactionId,omitempty"`
	CreatedAt     time.Time `json:"createdAt"`
	UpdatedAt     time.Time `json:"updatedAt"`
	// ExpiresAt is when a payout still WAITING becomes EXPIRED.
	ExpiresAt time.Time `json:"expiresAt"`
}

// PayoutHeldError is the error [Simulator.TransferOut] returns for a
// transfer out the payout policy holds for approval: the signed request is
// consumed, the approval stored and nothing debited; Approval says what
// waits. Over HTTP it is the 202 PayoutApproval answer, not an error.
type PayoutHeldError struct {
	Approval *PayoutApproval
}

// Error names the approval and the rule that holds the payout.
func (e *PayoutHeldError) Error() string {
	return fmt.Sprintf("sandbox: the payout waits for approval %s (rule %s)", e.Approval.ID, e.Approval.Rule)
}

// approvalView renders ap at now, with the transaction its payout was made
// as, with the simulator's lock held.
func (st *state) approvalView(ap *storage.PayoutApproval, now time.Time) *PayoutApproval {
	return &PayoutApproval{ID: ap.ID, State: policy.StateOf(ap, now), Rule: ap.Rule, CustomerID: ap.CustomerID,
		SourceAccountID: ap.SourceID, DestinationAccountID: ap.DestinationID, Amount: ap.Amount, Currency: ap.Currency,
		RequiredApprovals: ap.Required, Approvers: append([]string{}, ap.Approvers...), TransactionID: st.approvalTxs[ap.ID],
		CreatedAt: ap.CreatedAt, UpdatedAt: ap.UpdatedAt, ExpiresAt: ap.ExpiresAt}
}

// approvalNotFound is the answer for an unknown payout approval id (or
// one that is no PayoutApproval id at all).
func approvalNotFound(id string) error {
	return apierror.New(apierror.ReferenceNotFound, "payout approval %q not found", id)
}

// lockApproval reads and holds the approval id in tx: 404
// REFERENCE_NOT_FOUND when there is none (the store deletes an approval an
// hour after its expiry, see storage/sweep).
func lockApproval(ctx context.Context, tx storage.Tx, id string) (storage.PayoutApproval, error) {
	if !storage.ValidID(id, "PayoutApproval") {
		return storage.PayoutApproval{}, approvalNotFound(id)
	}
	ap, err := tx.PayoutApprovals().Lock(ctx, id)
	if errors.Is(err, storage.ErrNotFound) {
		return storage.PayoutApproval{}, approvalNotFound(id)
	}
	return ap, err
}

// waiting refuses an approval that no longer waits at now: 409 CONFLICT
// with details.state APPROVED, REFUSED or EXPIRED.
func waiting(ap *storage.PayoutApproval, now time.Time) error {
	if st := policy.StateOf(ap, now); st != storage.ApprovalWaiting {
		return apierror.New(apierror.Conflict, "payout approval %s is %s", ap.ID, st).WithDetail("state", st)
	}
	return nil
}

// GetPayoutApproval returns the payout approval id as of now. Errors: 404
// REFERENCE_NOT_FOUND.
func (s *Simulator) GetPayoutApproval(ctx context.Context, id string) (*PayoutApproval, error) {
	now := s.lock()
	defer s.mu.Unlock()
	var ap storage.PayoutApproval
	err := s.cfg.Store.Atomic(ctx, func(tx storage.Tx) error {
		var err error
		ap, err = lockApproval(ctx, tx, id)
		return err
	})
	if err != nil {
		return nil, apierror.As(err)
	}
	return s.state.approvalView(&ap, now), nil
}

// approvalParams are the parameters of an APPROVE_PAYOUT payload: the
// approval and the payout it makes, so the signer sees where the money
// goes and how much leaves the wallet. They are the approval's and never
// change.
type approvalParams struct {
	ApprovalID           string `json:"approvalId"`
	SourceAccountID      string `json:"sourceAccountId"`
	DestinationAccountID string `json:"destinationAccountId"`
	Amount               int64  `json:"amount"`
	Currency             string `json:"currency"`
}

// paramsOf returns the approval parameters of ap.
func paramsOf(ap *storage.PayoutApproval) approvalParams {
	return approvalParams{ApprovalID: ap.ID, SourceAccountID: ap.SourceID, DestinationAccountID: ap.DestinationID,
		Amount: ap.Amount, Currency: ap.Currency}
}

// transfer returns the transfer out p approves.
func (p approvalParams) transfer() transferParams {
	return transferParams{SourceAccountID: p.SourceAccountID, DestinationAccountID: p.DestinationAccountID,
		Amount: p.Amount, Currency: p.Currency}
}

// approvalRule returns the rule of an approval at now, on its parameters
// p, run inside tx with the simulator's lock held (by
// [walletauth.Authorize] on both legs of a signed approval, and before an
// operator's): the approval must exist (404) and wait (409), p must be its
// payout, and the payout must pass what a transfer out of it would
// (transferOutRule: the accounts, the payout gate holding the destination
// account until tx ends, the wallet's balance), so an approval that could
// not pay is refused before anything is recorded. Who may approve is the
// payout policy's to decide ([policy.Policy.Approve]).
func (s *Simulator) approvalRule(ctx context.Context, now time.Time) func(context.Context, storage.Tx, approvalParams) error {
	return func(_ context.Context, tx storage.Tx, p approvalParams) error {
		ap, err := lockApproval(ctx, tx, p.ApprovalID)
		if err != nil {
			return err
		}
		if err := waiting(&ap, now); err != nil {
			return err
		}
		if paramsOf(&ap) != p {
			return apierror.New(apierror.Conflict, "payout approval %s no longer matches its signed approval", ap.ID)
		}
		return s.transferOutRule(ctx)(ctx, tx, p.transfer())
	}
}

// approval is what an approval decided: the approval as it is after it,
// and, when it was the last and the payout policy allowed the payout, the
// transfer to write to the ledger.
type approval struct {
	ap   storage.PayoutApproval
	plan *transferPlan
}

// approve records by's approval of the payout p in tx (the approval rule
// has held it and allowed p) with [policy.Policy.Approve]; the last
// approval makes the payout, from the approval's fields, exactly as a
// transfer out's effect would (payoutPlan). A refusal (403 FORBIDDEN, 409
// CONFLICT, 403 PAYOUT_BLOCKED when the payout no longer fits the rules)
// rolls tx back and records nothing.
func (s *Simulator) approve(ctx context.Context, tx storage.Tx, p approvalParams, by policy.Approver) (approval, error) {
	d, ap, err := s.limits.Approve(ctx, tx, p.ApprovalID, by, allowedOnly)
	if err != nil {
		return approval{}, err
	}
	if ap == nil {
		return approval{}, apierror.Internal(errors.New("sandbox: the payout policy returned no approval"))
	}
	out := approval{ap: *ap}
	if d == nil {
		return out, nil
	}
	plan, err := payoutPlan(ctx, tx, paramsOf(ap).transfer())
	if err != nil {
		return approval{}, err
	}
	out.plan = &plan
	return out, nil
}

// ApprovePayout approves the held payout approvalID as a signed operation
// of its source wallet (APPROVE_PAYOUT, [walletauth.Authorize]; the
// payload's parameters are the approval id and the payout: source and
// destination accounts, amount, currency). A call without the signed-retry
// headers checks the approval and the payout and answers the challenge;
// the retry must be signed by a session of another credential of the
// wallet than the one whose session signed the payout (the policy's rule
// must allow a second credential, as [DefaultPayoutRules]' does). The
// last approval makes the payout in the transaction that consumes the
// request, as the transfer out would have: tx is its Transaction (the
// wallet is debited at once); while approvals are missing tx is nil. ap
// is the approval after this one. call is the request as in
// [Simulator.UpdateCustomer].
//
// Errors: 404 REFERENCE_NOT_FOUND (no such approval), 409 CONFLICT (it is
// APPROVED, REFUSED or EXPIRED, details.state; or this credential approved
// it already), 403 FORBIDDEN (the signer's credential signed the payout,
// or the rule takes no credential's approval; the sandbox literal signs
// for no credential), 403 PAYOUT_BLOCKED (the payout no longer fits the
// rules, a window filled meanwhile: the approval still waits and the
// request stays usable), the refusals of the payout gate and 400
// INVALID_AMOUNT (balance too low) as for a transfer out, the 401s of
// signedretry (a session of another wallet).
func (s *Simulator) ApprovePayout(ctx context.Context, approvalID string, call signedretry.Request) (tx *Transaction, ap *PayoutApproval, ch *signedretry.Challenge, err error) {
	call, err = s.defaults(call, http.MethodPost, "/payout-approvals/"+approvalID+"/approve", nil)
	if err != nil {
		return nil, nil, nil, err
	}
	var txID string
	if call.IsRetry() {
		if txID, err = s.newID("Transaction"); err != nil {
			return nil, nil, nil, err
		}
	}
	now := s.lock()
	defer s.mu.Unlock()
	// Both legs name the wallet whose session signs, the approval's
	// source, and refuse an approval that no longer waits, so the retry
	// of a made payout answers so, not with its consumed request.
	var stored storage.PayoutApproval
	if err := s.cfg.Store.Atomic(ctx, func(tx storage.Tx) error {
		var err error
		stored, err = lockApproval(ctx, tx, approvalID)
		return err
	}); err != nil {
		return nil, nil, nil, apierror.As(err)
	}
	if err := waiting(&stored, now); err != nil {
		return nil, nil, nil, err
	}
	op := walletauth.HostOperation[approvalParams, approval]{Type: OpApprovePayout, AccountID: stored.SourceID,
		Check: s.approvalRule(ctx, now),
		Effect: func(ctx context.Context, tx storage.Tx, a *signedretry.Authorization, p approvalParams) (approval, error) {
			return s.approve(ctx, tx, p, policy.Approver{Authorization: a})
		}}
	if !call.IsRetry() {
		op.Parameters = paramsOf(&stored)
	}
	done, _, ch, err := walletauth.Authorize(ctx, s.auth, op, call)
	if err != nil || ch != nil {
		return nil, nil, ch, err
	}
	tx, ap = s.state.made(done, txID, now)
	return tx, ap, nil, nil
}

// made writes the payout of done to the ledger as transaction txID when
// the approval made it, with the simulator's lock held, and returns the
// transaction (nil when none was made) and the approval.
func (st *state) made(done approval, txID string, now time.Time) (*Transaction, *PayoutApproval) {
	var tx *Transaction
	if done.plan != nil {
		tx = st.scheduleTransfer(*done.plan, txID, now)
		st.approvalTxs[done.ap.ID] = tx.ID
	}
	return tx, st.approvalView(&done.ap, now)
}

// OperatorApprovePayout approves the held payout approvalID as the
// operator [SandboxRiskOperator] (POST
// /sandbox/payout-approvals/{id}/approve: the platform credentials stand
// for the operator's authentication). Like [Simulator.ApprovePayout], the
// last approval makes the payout at once (tx), in the transaction that
// records it. Errors: those of ApprovePayout but the signed retry's; 403
// FORBIDDEN when the approval's rule does not name the operator.
func (s *Simulator) OperatorApprovePayout(ctx context.Context, approvalID string) (tx *Transaction, ap *PayoutApproval, err error) {
	txID, err := s.newID("Transaction")
	if err != nil {
		return nil, nil, err
	}
	now := s.lock()
	defer s.mu.Unlock()
	var done approval
	err = s.cfg.Store.Atomic(ctx, func(tx storage.Tx) error {
		stored, err := lockApproval(ctx, tx, approvalID)
		if err != nil {
			return err
		}
		p := paramsOf(&stored)
		if err := s.approvalRule(ctx, now)(ctx, tx, p); err != nil {
			return err
		}
		done, err = s.approve(ctx, tx, p, policy.Approver{Operator: SandboxRiskOperator})
		return err
	})
	if err != nil {
		return nil, nil, apierror.As(err)
	}
	tx, ap = s.state.made(done, txID, now)
	return tx, ap, nil
}

// OperatorRefusePayout refuses the held payout approvalID as the operator
// [SandboxRiskOperator] (POST /sandbox/payout-approvals/{id}/refuse): it
// is REFUSED and never paid. Errors: 404 REFERENCE_NOT_FOUND, 409 CONFLICT
// (APPROVED, REFUSED or EXPIRED already, details.state), 403 FORBIDDEN
// when the approval's rule does not name the operator.
func (s *Simulator) OperatorRefusePayout(ctx context.Context, approvalID string) (*PayoutApproval, error) {
	now := s.lock()
	defer s.mu.Unlock()
	var ap *storage.PayoutApproval
	err := s.cfg.Store.Atomic(ctx, func(tx storage.Tx) error {
		stored, err := lockApproval(ctx, tx, approvalID)
		if err != nil {
			return err
		}
		if err := waiting(&stored, now); err != nil {
			return err
		}
		ap, err = s.limits.Refuse(ctx, tx, approvalID, policy.Approver{Operator: SandboxRiskOperator})
		return err
	})
	if err != nil {
		return nil, apierror.As(err)
	}
	return s.state.approvalView(ap, now), nil
}

// approvalAnswer is the 200 body of an approval: the Transaction when the
// approval made the payout, the PayoutApproval while approvals are
// missing.
func approvalAnswer(tx *Transaction, ap *PayoutApproval) any {
	if tx != nil {
		return tx
	}
	if ap != nil {
		return ap
	}
	return nil
}

func (s *Simulator) hGetPayoutApproval(w http.ResponseWriter, r *http.Request) {
	ap, err := s.GetPayoutApproval(r.Context(), r.PathValue("id"))
	signedretry.WriteResult(w, http.StatusOK, ap, nil, err)
}

func (s *Simulator) hApprovePayout(w http.ResponseWriter, r *http.Request) {
	body, ok := readBody(w, r, &struct{}{}, false)
	if !ok {
		return
	}
	tx, ap, ch, err := s.ApprovePayout(r.Context(), r.PathValue("id"), signedretry.RequestFrom(r, body))
	signedretry.WriteResult(w, http.StatusOK, approvalAnswer(tx, ap), ch, err)
}

func (s *Simulator) hOperatorApprove(w http.ResponseWriter, r *http.Request) {
	if _, ok := readBody(w, r, &struct{}{}, false); !ok {
		return
	}
	tx, ap, err := s.OperatorApprovePayout(r.Context(), r.PathValue("id"))
	signedretry.WriteResult(w, http.StatusOK, approvalAnswer(tx, ap), nil, err)
}

func (s *Simulator) hOperatorRefuse(w http.ResponseWriter, r *http.Request) {
	if _, ok := readBody(w, r, &struct{}{}, false); !ok {
		return
	}
	ap, err := s.OperatorRefusePayout(r.Context(), r.PathValue("id"))
	signedretry.WriteResult(w, http.StatusOK, ap, nil, err)
}

// approvalRoutes registers the payout approval routes.
func (s *Simulator) approvalRoutes(r func(string, http.HandlerFunc)) {
	r("GET /payout-approvals/{id}", s.hGetPayoutApproval)
	r("POST /payout-approvals/{id}/approve", s.hApprovePayout)
	r("POST /sandbox/payout-approvals/{id}/approve", s.hOperatorApprove)
	r("POST /sandbox/payout-approvals/{id}/refuse", s.hOperatorRefuse)
}

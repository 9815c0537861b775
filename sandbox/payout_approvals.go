package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/walletgate/walletgate/ownership/payout"
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

// approvedPayout is the simulator's record of an approved payout: the
// transaction it was made as.
type approvedPayout struct {
	TransactionID string `json:"transactionId"`
}

// approvalView renders ap at now, with the transaction its payout was made
// as.
func (s *Simulator) approvalView(ctx context.Context, ap *storage.PayoutApproval) (*PayoutApproval, error) {
	var out *PayoutApproval
	err := s.read(ctx, func(st *state) error {
		var err error
		out, err = st.approvalView(ap)
		return err
	})
	return out, err
}

// approvalView renders ap at the state's now, with the transaction its
// payout was made as.
func (st *state) approvalView(ap *storage.PayoutApproval) (*PayoutApproval, error) {
	out := &PayoutApproval{ID: ap.ID, State: policy.StateOf(ap, st.now), Rule: ap.Rule, CustomerID: ap.CustomerID,
		SourceAccountID: ap.SourceID, DestinationAccountID: ap.DestinationID, Amount: ap.Amount, Currency: ap.Currency,
		RequiredApprovals: ap.Required, Approvers: append([]string{}, ap.Approvers...),
		CreatedAt: ap.CreatedAt, UpdatedAt: ap.UpdatedAt, ExpiresAt: ap.ExpiresAt}
	made, err := load[approvedPayout](st, kindApproved, ap.ID)
	switch {
	case err == nil:
		out.TransactionID = made.TransactionID
	case !errors.Is(err, storage.ErrNotFound):
		return nil, err
	}
	return out, nil
}

// GetPayoutApproval returns the payout approval id as of now. Errors: 404
// REFERENCE_NOT_FOUND.
func (s *Simulator) GetPayoutApproval(ctx context.Context, id string) (*PayoutApproval, error) {
	ap, err := s.payouts.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	return s.approvalView(ctx, ap)
}

// ApprovePayout approves the held payout approvalID as a signed operation
// of its source wallet ([payout.OpApprove], [walletauth.Authorize]; the
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
	op, err := payout.ApprovalOperation(ctx, s.payouts, approvalID, call, s.payOut)
	if err != nil {
		return nil, nil, nil, err
	}
	done, _, ch, err := walletauth.Authorize(ctx, s.auth, op, call)
	if err != nil || ch != nil {
		return nil, nil, ch, err
	}
	return s.approved(ctx, done)
}

// approved renders what an approval did: the transaction it made, if any,
// and the approval after it.
func (s *Simulator) approved(ctx context.Context, done payout.Approved[Transaction]) (*Transaction, *PayoutApproval, *signedretry.Challenge, error) {
	ap, err := s.approvalView(ctx, &done.Approval)
	if err != nil {
		return nil, nil, nil, err
	}
	return done.Paid, ap, nil, nil
}

// OperatorApprovePayout approves the held payout approvalID as the
// operator [SandboxRiskOperator] (POST
// /sandbox/payout-approvals/{id}/approve: the platform credentials stand
// for the operator's authentication). Like [Simulator.ApprovePayout], the
// last approval makes the payout at once (tx), in the transaction that
// records it. Errors: those of ApprovePayout but the signed retry's; 403
// FORBIDDEN when the approval's rule does not name the operator.
func (s *Simulator) OperatorApprovePayout(ctx context.Context, approvalID string) (tx *Transaction, ap *PayoutApproval, err error) {
	done, err := payout.Approve(ctx, s.payouts, approvalID, SandboxRiskOperator, s.payOut)
	if err != nil {
		return nil, nil, err
	}
	tx, ap, _, err = s.approved(ctx, done)
	return tx, ap, err
}

// OperatorRefusePayout refuses the held payout approvalID as the operator
// [SandboxRiskOperator] (POST /sandbox/payout-approvals/{id}/refuse): it
// is REFUSED and never paid. Errors: 404 REFERENCE_NOT_FOUND, 409 CONFLICT
// (APPROVED, REFUSED or EXPIRED already, details.state), 403 FORBIDDEN
// when the approval's rule does not name the operator.
func (s *Simulator) OperatorRefusePayout(ctx context.Context, approvalID string) (*PayoutApproval, error) {
	ap, err := s.payouts.Refuse(ctx, approvalID, SandboxRiskOperator)
	if err != nil {
		return nil, err
	}
	return s.approvalView(ctx, ap)
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
	signedretry.WriteAnswer(w, http.StatusOK, ap, nil, err)
}

func (s *Simulator) hApprovePayout(w http.ResponseWriter, r *http.Request) {
	body, ok := readBody(w, r, &struct{}{}, false)
	if !ok {
		return
	}
	tx, ap, ch, err := s.ApprovePayout(r.Context(), r.PathValue("id"), signedretry.RequestFrom(r, body))
	signedretry.WriteAnswer(w, http.StatusOK, approvalAnswer(tx, ap), ch, err)
}

func (s *Simulator) hOperatorApprove(w http.ResponseWriter, r *http.Request) {
	if _, ok := readBody(w, r, &struct{}{}, false); !ok {
		return
	}
	tx, ap, err := s.OperatorApprovePayout(r.Context(), r.PathValue("id"))
	signedretry.WriteAnswer(w, http.StatusOK, approvalAnswer(tx, ap), nil, err)
}

func (s *Simulator) hOperatorRefuse(w http.ResponseWriter, r *http.Request) {
	if _, ok := readBody(w, r, &struct{}{}, false); !ok {
		return
	}
	ap, err := s.OperatorRefusePayout(r.Context(), r.PathValue("id"))
	signedretry.WriteAnswer(w, http.StatusOK, ap, nil, err)
}

// approvalRoutes registers the payout approval routes.
func (s *Simulator) approvalRoutes(r func(string, http.HandlerFunc)) {
	r("GET /payout-approvals/{id}", s.hGetPayoutApproval)
	r("POST /payout-approvals/{id}/approve", s.hApprovePayout)
	r("POST /sandbox/payout-approvals/{id}/approve", s.hOperatorApprove)
	r("POST /sandbox/payout-approvals/{id}/refuse", s.hOperatorRefuse)
}

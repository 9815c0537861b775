package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/ownership"
	"github.com/walletgate/walletgate/ownership/payout"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/walletauth"
)

// Transaction statuses.
const (
	TxPending    = "PENDING"
	TxProcessing = "PROCESSING"
	TxCompleted  = "COMPLETED"
	TxFailed     = "FAILED"
)

// Transaction directions.
const (
	Incoming = "INCOMING"
	Outgoing = "OUTGOING"
)

// Transaction is a transaction record. Its status is the timeline of its
// outcome evaluated at the simulator's clock.
type Transaction struct {
	ID             string     `json:"id"`
	Status         string     `json:"status"`
	Type           string     `json:"type"`
	CustomerID     string     `json:"customerId,omitempty"`
	Source         Endpoint   `json:"source"`
	Destination    Endpoint   `json:"destination"`
	SentAmount     *Money     `json:"sentAmount,omitempty"`
	ReceivedAmount *Money     `json:"receivedAmount,omitempty"`
	ExchangeRate   float64    `json:"exchangeRate,omitempty"`
	QuoteID        string     `json:"quoteId,omitempty"`
	FailureReason  string     `json:"failureReason,omitempty"`
	CreatedAt      time.Time  `json:"createdAt"`
	UpdatedAt      time.Time  `json:"updatedAt"`
	SettledAt      *time.Time `json:"settledAt,omitempty"`
}

// Endpoint is one side of a transaction or quote: an account, a UMA address
// or (for real-time funding) a customer and currency.
type Endpoint struct {
	AccountID  string `json:"accountId,omitempty"`
	UMAAddress string `json:"umaAddress,omitempty"`
	CustomerID string `json:"customerId,omitempty"`
	Currency   string `json:"currency,omitempty"`
}

// transaction is a stored transaction and its timeline.
type transaction struct {
	Rec   Transaction `json:"rec"`
	Steps []step      `json:"steps"`
}

// view returns the transaction as of now: its record with the last step
// whose time has come applied.
func (t *transaction) view(now time.Time) *Transaction {
	out := t.Rec
	for _, s := range t.Steps {
		if now.Before(s.At) {
			break
		}
		out.Status, out.FailureReason, out.UpdatedAt = s.Status, s.Reason, s.At
		if s.Status == TxCompleted {
			at := s.At
			out.SettledAt = &at
		}
	}
	if t.Rec.SentAmount != nil {
		m := *t.Rec.SentAmount
		out.SentAmount = &m
	}
	if t.Rec.ReceivedAmount != nil {
		m := *t.Rec.ReceivedAmount
		out.ReceivedAmount = &m
	}
	return &out
}

// GetTransaction returns a transaction as of now: 404 TRANSACTION_NOT_FOUND
// when there is none.
func (s *Simulator) GetTransaction(ctx context.Context, id string) (*Transaction, error) {
	var out *Transaction
	err := s.read(ctx, func(st *state) error {
		tx, err := st.transaction(id)
		if err == nil {
			out = tx.view(st.now)
		}
		return err
	})
	return out, err
}

// FundRequest is the body of POST /sandbox/internal-accounts/{id}/fund.
type FundRequest struct {
	// Amount is in the smallest unit, 1..MaxAmount.
	Amount int64 `json:"amount"`
	// Currency defaults to the wallet currency (Config.WalletCurrency).
	Currency string `json:"currency,omitempty"`
}

// Fund credits an embedded wallet at once and returns it. Errors: 400
// INVALID_AMOUNT, 400 AMOUNT_OUT_OF_RANGE, 400 INVALID_CURRENCY, 404
// REFERENCE_NOT_FOUND.
func (s *Simulator) Fund(ctx context.Context, accountID string, req FundRequest) (*InternalAccount, error) {
	cur := req.Currency
	if cur == "" {
		cur = s.cfg.WalletCurrency
	}
	if err := checkAmount("amount", req.Amount, cur); err != nil {
		return nil, err
	}
	var out InternalAccount
	err := s.atomic(ctx, func(st *state) error {
		acct, err := internalIn(st, accountID)
		if err != nil {
			return err
		}
		w, err := st.wallet(accountID)
		if err != nil {
			return err
		}
		if w.Balances[cur] > MaxAmount*10-req.Amount {
			return apierror.New(apierror.AmountOutOfRange, "the balance would exceed the sandbox maximum")
		}
		w.Balances[cur] += req.Amount
		out = s.view(w, &acct)
		return nil
	})
	return &out, err
}

// checkAmount checks an amount and its currency.
func checkAmount(field string, amount int64, cur string) error {
	if _, ok := currencies[cur]; !ok {
		return apierror.New(apierror.InvalidCurrency, "currency %q is not supported in the sandbox", cur).WithDetail("field", "currency")
	}
	if amount <= 0 {
		return apierror.New(apierror.InvalidAmount, "%s must be a positive integer in the smallest currency unit", field).WithDetail("field", field)
	}
	if amount > MaxAmount {
		return apierror.New(apierror.AmountOutOfRange, "%s must be at most %d", field, MaxAmount).WithDetail("field", field)
	}
	return nil
}

// AccountRef names an account in a transfer.
type AccountRef struct {
	AccountID string `json:"accountId"`
}

// TransferRequest is the body of POST /transfer-in (source an external
// account, destination an internal one) and POST /transfer-out (the
// reverse). Amount is in the smallest unit of the external account's
// currency.
type TransferRequest struct {
	Source      AccountRef `json:"source"`
	Destination AccountRef `json:"destination"`
	Amount      int64      `json:"amount"`
	// IdempotencyKey (HTTP: the Idempotency-Key header), when set, must be
	// a UUID and makes the transfer happen at most once: a repeat of the
	// same request returns the first result, another request under the key
	// is 409 CONFLICT (see the package documentation, Idempotency-Key).
	IdempotencyKey string `json:"-"`
}

// TransferIn pulls money from a customer's external account into their
// embedded wallet. The outcome follows the external account identifier's
// magic suffix: 002 insufficient funds, 003 account closed, 004
// rejected by the bank (all FAILED at once), 005 PENDING for
// DelayedFailureAfter then FAILED, anything else COMPLETED at once (the
// wallet is credited then).
//
// Errors: 400 INVALID_INPUT (accounts of different customers), 400
// INVALID_AMOUNT / AMOUNT_OUT_OF_RANGE / INVALID_CURRENCY, 404
// REFERENCE_NOT_FOUND, 400 INVALID_INPUT (an Idempotency-Key that is not a
// UUID), 409 CONFLICT (Idempotency-Key used for another request or still
// in flight).
func (s *Simulator) TransferIn(ctx context.Context, req TransferRequest) (*Transaction, error) {
	body, err := marshalBody(req)
	if err != nil {
		return nil, err
	}
	t, _, err := s.transferIn(ctx, req, body)
	return t, err
}

// transferIn is TransferIn with body, the request as sent, for the
// Idempotency-Key fingerprint; replayed reports a stored result.
func (s *Simulator) transferIn(ctx context.Context, req TransferRequest, body []byte) (*Transaction, bool, error) {
	t, _, replayed, err := keyed(ctx, s, req.IdempotencyKey, "/transfer-in", body, http.StatusCreated,
		func(ctx context.Context) (*Transaction, *signedretry.Challenge, error) {
			t, err := s.transfer(ctx, req.Source.AccountID, req.Destination.AccountID, req.Amount, true)
			return t, nil, err
		})
	return t, replayed, err
}

// TransferOut pushes money from a customer's embedded wallet to their
// external account, in the external account's currency, with the suffix
// outcomes of [Simulator.TransferIn]. The wallet is debited at once and
// refunded when the transfer fails.
//
// Moving funds out of an embedded wallet is a wallet action, so it is a
// signed retry ([walletauth.Authorize], any active session of the
// wallet signs): a call without the signed-retry headers checks the request
// and answers the challenge (202), whose parameters bind the source wallet,
// the destination account, the amount and the currency; the retry executes
// those parameters, never the retry's own values. One rule decides both
// legs, on the parameters and inside the store transaction of the leg: the
// accounts, the amount, the balance, the destination the wallet
// customer's own (404 REFERENCE_NOT_FOUND otherwise, before anything about
// it is answered) and the payout gate ([ownership.Service.CheckPayoutIn],
// holding the destination account until that transaction ends). On the
// first call it refuses before a challenge is issued; on the retry it
// decides on the signed parameters in the transaction that consumes the
// signed request, which also runs the payout policy and debits the wallet
// (held until it commits), so a retry it refuses leaves the request
// usable and no status change commits between the gate's decision and the
// debit. call is the request as in [Simulator.UpdateCustomer]. With an
// IdempotencyKey, a repeat of a completed transfer returns the first
// result, signed or not (the challenge leg is not remembered: the key then
// carries the retry).
//
// A retry the payout policy holds for approval (a REQUIRE_APPROVAL rule:
// under [DefaultPayoutRules], a payout worth exactly
// [ApprovalPayoutUSDCents]) consumes the signed request, stores the
// approval and debits nothing: TransferOut returns a [*PayoutHeldError]
// naming the [PayoutApproval] (over HTTP, 202 with the PayoutApproval,
// which has no payloadToSign, unlike a challenge). The payout is made when
// it is approved ([Simulator.ApprovePayout],
// [Simulator.OperatorApprovePayout]). With an IdempotencyKey the held
// result is final: a repeat gets the same PayoutApproval, as it was held.
//
// Errors: those of TransferIn, 400 INVALID_AMOUNT (balance too low), 400
// EXTERNAL_ACCOUNT_VERIFICATION_REQUIRED (the destination is a first-party
// self-custody wallet still pending ownership verification and the amount
// reaches the verification threshold, see Config.VerificationThreshold, or
// whose last verification failed), 400 TRANSACTION_SIZE_LIMIT_EXCEEDED
// (the amount is above the currency's single-transaction maximum, see
// [TransactionMaximumUSD]), 409 CONFLICT (the destination receives no
// payouts: PENDING, UNDER_REVIEW, INACTIVE), decided by the library's
// payout gate with details.field destination.accountId, the refusals of
// the payout policy on the retry (Config.PayoutRules: 403 PAYOUT_BLOCKED,
// 403 STEP_UP_REQUIRED, naming the rule in details.rule; see
// [DefaultPayoutRules]), the 401s of signedretry.
func (s *Simulator) TransferOut(ctx context.Context, req TransferRequest, call signedretry.Request) (*Transaction, *signedretry.Challenge, error) {
	o, ch, _, err := s.transferOutKeyed(ctx, req, call)
	switch {
	case err != nil || ch != nil:
		return nil, ch, err
	case o.held != nil:
		return nil, nil, &PayoutHeldError{Approval: o.held}
	}
	return o.tx, nil, nil
}

// transferOutKeyed is TransferOut; replayed reports a stored result. The
// outcome is set when the error and the challenge are nil.
func (s *Simulator) transferOutKeyed(ctx context.Context, req TransferRequest, call signedretry.Request) (*transferOutcome, *signedretry.Challenge, bool, error) {
	call, err := s.defaults(call, http.MethodPost, "/transfer-out", req)
	if err != nil {
		return nil, nil, false, err
	}
	return keyed(ctx, s, req.IdempotencyKey, "/transfer-out", call.Body, http.StatusCreated,
		func(ctx context.Context) (*transferOutcome, *signedretry.Challenge, error) {
			return s.transferOut(ctx, req, call)
		})
}

// transferOutcome is what the retry of a transfer out answers: the
// Transaction (201), or the PayoutApproval the payout waits for (202). It
// marshals as the one that is set, and unmarshals a stored answer by its
// id's prefix.
type transferOutcome struct {
	tx   *Transaction
	held *PayoutApproval
}

// MarshalJSON writes the Transaction, or the PayoutApproval when held.
func (o transferOutcome) MarshalJSON() ([]byte, error) {
	if o.held != nil {
		return json.Marshal(o.held)
	}
	return json.Marshal(o.tx)
}

// UnmarshalJSON reads a stored answer: a PayoutApproval when its id is
// one, a Transaction otherwise.
func (o *transferOutcome) UnmarshalJSON(b []byte) error {
	var probe struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(b, &probe); err != nil {
		return err
	}
	*o = transferOutcome{}
	if strings.HasPrefix(probe.ID, "PayoutApproval:") {
		o.held = new(PayoutApproval)
		return json.Unmarshal(b, o.held)
	}
	o.tx = new(Transaction)
	return json.Unmarshal(b, o.tx)
}

// keyedStatus is 202 for a held payout, final (201) otherwise.
func (o transferOutcome) keyedStatus(final int) int {
	if o.held != nil {
		return http.StatusAccepted
	}
	return final
}

// body is what the route writes: the PayoutApproval or the Transaction.
func (o *transferOutcome) body() any {
	switch {
	case o == nil:
		return nil
	case o.held != nil:
		return o.held
	}
	return o.tx
}

// transferParams are the parameters of a TRANSFER_OUT payload.
type transferParams struct {
	SourceAccountID      string `json:"sourceAccountId"`
	DestinationAccountID string `json:"destinationAccountId"`
	Amount               int64  `json:"amount"`
	Currency             string `json:"currency"`
}

// transferOut runs TRANSFER_OUT, the payout of [payout.Operation], through
// [walletauth.Authorize] on either leg. The sandbox adds its own rule
// (transferOutCheck) and its ledger (the debit and the transaction,
// payTransfer); the payout's chain (the destination the wallet customer's
// own, the gate holding it, the payout policy, the hold) is the library's.
//
// The signed parameters carry the currency, which the request does not:
// it is the destination account's, so the first leg reads it from that
// account to bind it (transferCurrency), and the rule requires the signed
// currency to be the destination's. On the first leg that holds by
// construction; on the retry it refuses a destination whose currency is no
// longer the signed one.
func (s *Simulator) transferOut(ctx context.Context, req TransferRequest, call signedretry.Request) (*transferOutcome, *signedretry.Challenge, error) {
	extID, walletID := req.Destination.AccountID, req.Source.AccountID
	spec := payout.Spec[transferParams, Transaction]{Type: OpTransferOut, AccountID: walletID,
		Transfer: transferOf, Check: s.transferOutCheck, Pay: s.payTransfer, DestinationField: "destination.accountId"}
	if !call.IsRetry() {
		if err := checkTransferIDs(extID, walletID, false); err != nil {
			return nil, nil, err
		}
		cur, err := s.transferCurrency(ctx, extID)
		if err != nil {
			return nil, nil, err
		}
		spec.Parameters = transferParams{SourceAccountID: walletID, DestinationAccountID: extID, Amount: req.Amount, Currency: cur}
	}
	out, _, ch, err := walletauth.Authorize(ctx, s.auth, payout.Operation(s.payouts, spec, call), call)
	switch {
	case err != nil || ch != nil:
		return nil, ch, err
	case out.Held != nil:
		ap, err := s.approvalView(ctx, out.Held)
		if err != nil {
			return nil, nil, err
		}
		return &transferOutcome{held: ap}, nil, nil
	}
	return &transferOutcome{tx: out.Paid}, nil, nil
}

// transferOf is the payout a transfer out's parameters name.
func transferOf(p transferParams) payout.Transfer {
	return payout.Transfer{SourceID: p.SourceAccountID, DestinationID: p.DestinationAccountID, Amount: p.Amount, Currency: p.Currency}
}

// transferCurrency returns the currency of the external account extID, the
// currency of a transfer out to it: 404 REFERENCE_NOT_FOUND when there is
// no such account (or it was deleted), the answer transferOutCheck would
// give.
func (s *Simulator) transferCurrency(ctx context.Context, extID string) (string, error) {
	ext, err := s.externalAccount(ctx, extID)
	if err != nil {
		return "", err
	}
	return ext.Currency, nil
}

// transferOutCheck is the sandbox's rule of a transfer out at now, on its
// parameters p, run by the payout operation on both legs inside its
// transaction, once the gate allowed the payout: the account ids, a
// destination not deleted, the amount in the destination's currency, that currency the
// signed one, and the wallet's balance (which the debit checks again,
// holding the wallet).
func (s *Simulator) transferOutCheck(ctx context.Context, tx storage.Tx, p transferParams, now time.Time) error {
	if err := checkTransferIDs(p.DestinationAccountID, p.SourceAccountID, false); err != nil {
		return err
	}
	st := newState(ctx, tx, now, false)
	ext, err := externalIn(st, p.DestinationAccountID)
	if err != nil {
		return err
	}
	if err := checkAmount("amount", p.Amount, ext.Currency); err != nil {
		return err
	}
	if ext.Currency != p.Currency {
		return apierror.New(apierror.Conflict, "the destination account's currency is %s, the signed transfer is in %s", ext.Currency, p.Currency)
	}
	return balanceCheck(st, p.SourceAccountID, p.Amount, p.Currency)
}

// payTransfer is the sandbox's payout of an allowed transfer out (for a
// signed one, p is what was signed): the debit of the wallet, held until
// the transaction ends, and the transaction, written in the payout's
// transaction.
func (s *Simulator) payTransfer(ctx context.Context, tx storage.Tx, _ transferParams, pay *payout.Payment) (Transaction, error) {
	return s.payOut(ctx, tx, pay)
}

// payOut debits and records the transfer out pay in tx: the payout of a
// signed transfer and of an approved one alike.
func (s *Simulator) payOut(ctx context.Context, tx storage.Tx, pay *payout.Payment) (Transaction, error) {
	id, err := s.newID("Transaction")
	if err != nil {
		return Transaction{}, err
	}
	st := newState(ctx, tx, pay.Now, true)
	t := pay.Transfer
	plan := transferPlan{extID: t.DestinationID, identifier: pay.Destination.Address, walletID: t.SourceID,
		customerID: pay.CustomerID, amount: t.Amount, cur: t.Currency}
	if err := balanceCheck(st, t.SourceID, t.Amount, t.Currency); err != nil {
		return Transaction{}, err
	}
	out, err := st.scheduleTransfer(plan, id)
	if err != nil {
		return Transaction{}, err
	}
	if a := pay.Allowed.Approval; a != nil {
		add(st, kindApproved, a.ID, "", &approvedPayout{TransactionID: id})
	}
	if err := st.flush(); err != nil {
		return Transaction{}, err
	}
	return *out, nil
}

// transferPlan is a checked transfer, ready to schedule.
type transferPlan struct {
	extID, identifier    string // the external account and its identifier, which selects the outcome
	walletID, customerID string
	amount               int64
	cur                  string
	in                   bool
}

// transfer makes a transfer in (the only unsigned transfer).
func (s *Simulator) transfer(ctx context.Context, extID, walletID string, amount int64, in bool) (*Transaction, error) {
	if err := checkTransferIDs(extID, walletID, in); err != nil {
		return nil, err
	}
	id, err := s.newID("Transaction")
	if err != nil {
		return nil, err
	}
	var out *Transaction
	err = s.atomic(ctx, func(st *state) error {
		ext, err := externalIn(st, extID)
		if err != nil {
			return err
		}
		wal, err := internalIn(st, walletID)
		if err != nil {
			return err
		}
		if ext.CustomerID != wal.CustomerID {
			return apierror.New(apierror.InvalidInput, "the external account and the internal account belong to different customers")
		}
		if err := checkAmount("amount", amount, ext.Currency); err != nil {
			return err
		}
		out, err = st.scheduleTransfer(transferPlan{extID: extID, identifier: ext.Address, walletID: walletID,
			customerID: wal.CustomerID, amount: amount, cur: ext.Currency, in: in}, id)
		return err
	})
	return out, err
}

// checkTransferIDs checks the form of a transfer's account ids.
func checkTransferIDs(extID, walletID string, in bool) error {
	extField, walletField := "destination.accountId", "source.accountId"
	if in {
		extField, walletField = walletField, extField
	}
	var v apierror.Validation
	v.Check(storage.ValidID(extID, "ExternalAccount"), extField, apierror.Pattern(`^ExternalAccount:[0-9a-fA-F-]{36}$`), "must be an ExternalAccount id")
	v.Check(storage.ValidID(walletID, "InternalAccount"), walletField, apierror.Pattern(`^InternalAccount:[0-9a-fA-F-]{36}$`), "must be an InternalAccount id")
	return v.Err()
}

// balanceCheck refuses a wallet that holds less than amount of cur: 400
// INVALID_AMOUNT.
func balanceCheck(st *state, walletID string, amount int64, cur string) error {
	w, err := st.wallet(walletID)
	if err != nil {
		return err
	}
	if w.Balances[cur] < amount {
		return apierror.New(apierror.InvalidAmount, "the wallet holds less than %d %s", amount, cur).WithDetail("field", "amount")
	}
	return nil
}

// scheduleTransfer creates the transaction of a planned transfer; a
// transfer out debits the wallet at once.
func (st *state) scheduleTransfer(plan transferPlan, id string) (*Transaction, error) {
	extID, walletID, amount, cur, now := plan.extID, plan.walletID, plan.amount, plan.cur, st.now
	tx := &transaction{Rec: Transaction{ID: id, CustomerID: plan.customerID, CreatedAt: now, UpdatedAt: now}}
	m := Money{amount, cur}
	tx.Rec.SentAmount, tx.Rec.ReceivedAmount = &m, &m
	var hold, release, credit []move
	if plan.in {
		tx.Rec.Type = Incoming
		tx.Rec.Source, tx.Rec.Destination = Endpoint{AccountID: extID, Currency: cur}, Endpoint{AccountID: walletID, Currency: cur}
		credit = []move{{walletID, cur, amount}}
	} else {
		tx.Rec.Type = Outgoing
		tx.Rec.Source, tx.Rec.Destination = Endpoint{AccountID: walletID, Currency: cur}, Endpoint{AccountID: extID, Currency: cur}
		hold, release = []move{{walletID, cur, -amount}}, []move{{walletID, cur, amount}}
	}
	tx.Steps = transferSteps(plan.identifier, now, hold, release, credit)
	if err := st.schedule(tx); err != nil {
		return nil, err
	}
	return tx.view(now), nil
}

// withField names field in details.field of an *apierror.Error.
func withField(err error, field string) error {
	if e := apierror.As(err); e != nil {
		return e.WithDetail("field", field)
	}
	return err
}

// checkVerified applies the library's payout gate
// ([ownership.PayoutPolicy.Decide]) to a payment of amount (smallest units
// of ext's currency) to ext as already read, with the sandbox's policy. It
// is an early answer (quote creation); a payout itself decides with
// [ownership.Service.CheckPayoutIn] in the transaction that records it. The
// refusal names field in details.field.
func (s *Simulator) checkVerified(ext *storage.ExternalAccount, amount int64, field string) error {
	_, err := s.gate.Decide(ext, ownership.Payout{AccountID: ext.ID, Amount: amount, Currency: ext.Currency})
	return withField(err, field)
}

// payoutPolicy is the gate configuration of the simulator. The
// verification threshold of each sandbox currency is the same value,
// Config.VerificationThreshold US dollars, converted at the sandbox's fixed
// rates and rounded down to the currency's smallest unit (so 1000 USD is
// 1000 USDC, 920 EUR and 0.01 BTC). The single-transaction maximum of each
// is [TransactionMaximumUSD] US dollars converted the same way (so 50000
// USDC, 46000 EUR, 0.5 BTC), below [MaxAmount] in every currency, so that
// TRANSACTION_SIZE_LIMIT_EXCEEDED is an answer a client can reach. The
// ownership service is configured with it, and the simulator's own payouts
// decide with the same policy.
func (s *Simulator) payoutPolicy() (ownership.PayoutPolicy, error) {
	thr := make(map[string]int64, len(currencies))
	maxima := make(map[string]int64, len(currencies))
	usd := majorUnits(s.cfg.VerificationThreshold, "USD")
	maxUSD := majorUnits(TransactionMaximumUSD, "USD")
	for cur := range currencies {
		v, ok := convert(usd, "USD", cur, false)
		if !ok {
			return ownership.PayoutPolicy{}, fmt.Errorf("sandbox: Config.VerificationThreshold %d USD is beyond the range of %s", s.cfg.VerificationThreshold, cur)
		}
		m, ok := convert(maxUSD, "USD", cur, false)
		if !ok || m > MaxAmount {
			return ownership.PayoutPolicy{}, fmt.Errorf("sandbox: the single-transaction maximum of %s is beyond its range", cur)
		}
		thr[cur], maxima[cur] = v, m
	}
	p := ownership.PayoutPolicy{VerificationThresholds: ownership.Limits{ByCurrency: thr}, MaxAmounts: ownership.Limits{ByCurrency: maxima}}
	return p, p.Validate()
}

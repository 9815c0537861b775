package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/ownership"
	"github.com/walletgate/walletgate/ownership/payout"
	"github.com/walletgate/walletgate/ownership/policy"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/walletauth"
)

// Quote statuses.
const (
	QuotePending    = "PENDING"
	QuoteProcessing = "PROCESSING"
	QuoteCompleted  = "COMPLETED"
	QuoteFailed     = "FAILED"
	QuoteExpired    = "EXPIRED"
)

// Quote source and destination types.
const (
	SourceAccount         = "ACCOUNT"
	SourceRealtimeFunding = "REALTIME_FUNDING"
	DestinationAccount    = "ACCOUNT"
	DestinationUMAAddress = "UMA_ADDRESS"
)

// Locked currency sides.
const (
	LockSending   = "SENDING"
	LockReceiving = "RECEIVING"
)

func quoteStatusOf(txStatus string) string {
	switch txStatus {
	case TxCompleted:
		return QuoteCompleted
	case TxFailed:
		return QuoteFailed
	default:
		return QuoteProcessing
	}
}

// QuoteSource is where a quote's money comes from: an embedded wallet
// (ACCOUNT, accountId) or a payment the customer makes in real time
// (REALTIME_FUNDING, customerId and currency).
type QuoteSource struct {
	SourceType string `json:"sourceType,omitempty"`
	AccountID  string `json:"accountId,omitempty"`
	CustomerID string `json:"customerId,omitempty"`
	// Currency is required for REALTIME_FUNDING and defaults to the wallet
	// currency for ACCOUNT.
	Currency string `json:"currency,omitempty"`
}

// QuoteDestination is where a quote's money goes: an external account
// (ACCOUNT) or a UMA address (UMA_ADDRESS, with its currency).
type QuoteDestination struct {
	DestinationType string `json:"destinationType,omitempty"`
	AccountID       string `json:"accountId,omitempty"`
	UMAAddress      string `json:"umaAddress,omitempty"`
	Currency        string `json:"currency,omitempty"`
}

// QuoteRequest is the body of POST /quotes.
type QuoteRequest struct {
	Source               QuoteSource      `json:"source"`
	Destination          QuoteDestination `json:"destination"`
	LockedCurrencySide   string           `json:"lockedCurrencySide"`
	LockedCurrencyAmount int64            `json:"lockedCurrencyAmount"`
	Description          string           `json:"description,omitempty"`
	// IdempotencyKey (HTTP: the Idempotency-Key header), when set, must be
	// a UUID and makes the quote be created at most once: a repeat of the
	// same request returns the first quote, another request under the key
	// is 409 CONFLICT (see the package documentation, Idempotency-Key).
	IdempotencyKey string `json:"-"`
}

// PaymentInstruction tells the customer how to fund a real-time quote.
type PaymentInstruction struct {
	Reference         string         `json:"reference"`
	InstructionsNotes string         `json:"instructionsNotes"`
	AccountOrWallet   map[string]any `json:"accountOrWalletInfo"`
}

// Quote is a quote record; its status is evaluated at the simulator's
// clock (a PENDING quote past ExpiresAt reads EXPIRED).
type Quote struct {
	ID                   string               `json:"id"`
	Status               string               `json:"status"`
	Source               QuoteSource          `json:"source"`
	Destination          QuoteDestination     `json:"destination"`
	SendingCurrency      string               `json:"sendingCurrency"`
	ReceivingCurrency    string               `json:"receivingCurrency"`
	TotalSendingAmount   int64                `json:"totalSendingAmount"`
	TotalReceivingAmount int64                `json:"totalReceivingAmount"`
	ExchangeRate         float64              `json:"exchangeRate"`
	Fees                 int64                `json:"fees"`
	Description          string               `json:"description,omitempty"`
	PaymentInstructions  []PaymentInstruction `json:"paymentInstructions,omitempty"`
	TransactionID        string               `json:"transactionId,omitempty"`
	CreatedAt            time.Time            `json:"createdAt"`
	UpdatedAt            time.Time            `json:"updatedAt"`
	ExpiresAt            time.Time            `json:"expiresAt"`
}

// quote is a stored quote with what executing it needs.
type quote struct {
	Rec        Quote  `json:"rec"`
	CustomerID string `json:"customerId"`
	Identifier string `json:"identifier,omitempty"` // destination account identifier (suffix outcomes)
}

func (q *quote) view(st *state) (*Quote, error) {
	out := q.Rec
	if out.TransactionID != "" {
		tx, err := st.transaction(out.TransactionID)
		if err != nil {
			return nil, err
		}
		v := tx.view(st.now)
		out.Status, out.UpdatedAt = quoteStatusOf(v.Status), v.UpdatedAt
	}
	if out.Status == QuotePending && !st.now.Before(out.ExpiresAt) {
		out.Status = QuoteExpired
	}
	out.PaymentInstructions = append([]PaymentInstruction(nil), q.Rec.PaymentInstructions...)
	return &out, nil
}

// quote returns the quote id: 404 QUOTE_NOT_FOUND when there is none.
func (st *state) quote(id string) (*quote, error) {
	q, err := load[quote](st, kindQuote, id)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, apierror.New(apierror.QuoteNotFound, "quote %q not found", id)
	}
	return q, err
}

// CreateQuote prices a payment at the sandbox's fixed rates (no fees). An
// external-account destination must belong to the source's customer (as
// for transfer-out). The payout gate's answer at creation is an early one:
// execution decides again.
//
// Errors: 400 INVALID_INPUT (every invalid field; a destination account of
// another customer, with details.field destination.accountId), 400 INVALID_AMOUNT /
// AMOUNT_OUT_OF_RANGE / INVALID_CURRENCY, 400 INVALID_UMA_ADDRESS, 400
// EXTERNAL_ACCOUNT_VERIFICATION_REQUIRED, 400 TRANSACTION_SIZE_LIMIT_EXCEEDED
// (an account destination receiving more than the currency's
// single-transaction maximum), 404 REFERENCE_NOT_FOUND (an
// account), 404 USER_NOT_FOUND (a customer), 404 UMA_NOT_FOUND (a UMA
// address at the sandbox domain that is not one of the sandbox addresses,
// or at any other domain), 400 INVALID_INPUT (an Idempotency-Key that is
// not a UUID), 409 CONFLICT (Idempotency-Key used for another request or
// still in flight).
func (s *Simulator) CreateQuote(ctx context.Context, req QuoteRequest) (*Quote, error) {
	body, err := marshalBody(req)
	if err != nil {
		return nil, err
	}
	q, _, err := s.createQuoteKeyed(ctx, req, body)
	return q, err
}

// createQuoteKeyed is CreateQuote with body, the request as sent, for the
// Idempotency-Key fingerprint; replayed reports a stored result.
func (s *Simulator) createQuoteKeyed(ctx context.Context, req QuoteRequest, body []byte) (*Quote, bool, error) {
	q, _, replayed, err := keyed(ctx, s, req.IdempotencyKey, "/quotes", body, http.StatusCreated,
		func(ctx context.Context) (*Quote, *signedretry.Challenge, error) {
			q, err := s.createQuote(ctx, req)
			return q, nil, err
		})
	return q, replayed, err
}

func (s *Simulator) createQuote(ctx context.Context, req QuoteRequest) (*Quote, error) {
	src, dst := req.Source, req.Destination
	if src.SourceType == "" {
		src.SourceType = SourceAccount
		if src.AccountID == "" && src.CustomerID != "" {
			src.SourceType = SourceRealtimeFunding
		}
	}
	if dst.DestinationType == "" {
		dst.DestinationType = DestinationAccount
		if dst.AccountID == "" && dst.UMAAddress != "" {
			dst.DestinationType = DestinationUMAAddress
		}
	}
	var v apierror.Validation
	v.Check(src.SourceType == SourceAccount || src.SourceType == SourceRealtimeFunding, "source.sourceType",
		apierror.OneOf(SourceAccount, SourceRealtimeFunding), "is not one of the allowed values")
	v.Check(src.SourceType != SourceAccount || src.AccountID != "", "source.accountId", nil, "is required")
	v.Check(src.SourceType != SourceRealtimeFunding || src.CustomerID != "", "source.customerId", nil, "is required")
	v.Check(src.SourceType != SourceRealtimeFunding || src.Currency != "", "source.currency", nil, "is required")
	v.Check(dst.DestinationType == DestinationAccount || dst.DestinationType == DestinationUMAAddress, "destination.destinationType",
		apierror.OneOf(DestinationAccount, DestinationUMAAddress), "is not one of the allowed values")
	v.Check(dst.DestinationType != DestinationAccount || dst.AccountID != "", "destination.accountId", nil, "is required")
	v.Check(dst.DestinationType != DestinationUMAAddress || dst.UMAAddress != "", "destination.umaAddress", nil, "is required")
	v.Check(req.LockedCurrencySide == LockSending || req.LockedCurrencySide == LockReceiving, "lockedCurrencySide",
		apierror.OneOf(LockSending, LockReceiving), "is not one of the allowed values")
	v.Check(len(req.Description) <= 255, "description", apierror.Length(-1, 255), "is too long")
	if err := v.Err(); err != nil {
		return nil, err
	}
	q := &quote{}
	var dstExt *storage.ExternalAccount

	// Source.
	switch src.SourceType {
	case SourceAccount:
		acct, err := s.internalAccount(ctx, src.AccountID)
		if err != nil {
			return nil, err
		}
		q.CustomerID = acct.CustomerID
		if src.Currency == "" {
			src.Currency = s.cfg.WalletCurrency
		}
		src.CustomerID = ""
	default:
		if _, err := s.GetCustomer(ctx, src.CustomerID); err != nil {
			return nil, err
		}
		q.CustomerID = src.CustomerID
		src.AccountID = ""
	}
	// Destination.
	switch dst.DestinationType {
	case DestinationAccount:
		ext, err := s.externalAccount(ctx, dst.AccountID)
		if err != nil {
			return nil, err
		}
		if ext.CustomerID != q.CustomerID {
			return nil, apierror.New(apierror.InvalidInput, "the destination external account belongs to another customer than the source").
				WithDetail("field", "destination.accountId")
		}
		dstExt, q.Identifier = &ext, ext.Address
		dst.Currency, dst.UMAAddress = ext.Currency, ""
	default:
		addr := strings.ToLower(strings.TrimSpace(dst.UMAAddress))
		if !umaRe.MatchString(addr) {
			return nil, apierror.New(apierror.InvalidUMAAddress, "%q is not a UMA address such as $alice@example.com", dst.UMAAddress)
		}
		sc, ok := umaScenarios[addr]
		if !ok {
			return nil, apierror.New(apierror.UMANotFound, "no receiver at %s (sandbox counterparties: %s, %s, %s, %s, %s)", addr,
				UMASuccessUSD, UMASuccessEUR, UMASuccessMXN, UMALongPendingUSD, UMAComplianceFailUSD)
		}
		if dst.Currency == "" {
			dst.Currency = sc.currency
		}
		if dst.Currency != sc.currency {
			return nil, apierror.New(apierror.InvalidCurrency, "%s receives %s only", addr, sc.currency).WithDetail("field", "destination.currency")
		}
		dst.UMAAddress, dst.AccountID = addr, ""
	}
	send, recv, err := price(req.LockedCurrencySide, req.LockedCurrencyAmount, src.Currency, dst.Currency)
	if err != nil {
		return nil, err
	}
	if dstExt != nil {
		if err := s.checkVerified(dstExt, recv, "destination.accountId"); err != nil {
			return nil, err
		}
	}
	id, err := s.newID("Quote")
	if err != nil {
		return nil, err
	}
	var out *Quote
	err = s.atomic(ctx, func(st *state) error {
		now := st.now
		q.Rec = Quote{ID: id, Status: QuotePending, Source: src, Destination: dst, SendingCurrency: src.Currency,
			ReceivingCurrency: dst.Currency, TotalSendingAmount: send, TotalReceivingAmount: recv,
			ExchangeRate: rateFloat(src.Currency, dst.Currency), Description: req.Description,
			CreatedAt: now, UpdatedAt: now, ExpiresAt: now.Add(s.cfg.QuoteTTL)}
		if src.SourceType == SourceRealtimeFunding {
			q.Rec.PaymentInstructions = []PaymentInstruction{{
				Reference:         "SANDBOX-" + strings.ToUpper(strings.TrimPrefix(id, "Quote:")[:8]),
				InstructionsNotes: "sandbox: simulate this payment with POST /sandbox/send {quoteId, currencyCode}",
				AccountOrWallet:   map[string]any{"accountType": "SANDBOX_FUNDING", "currency": src.Currency},
			}}
		}
		add(st, kindQuote, id, q.CustomerID, q)
		var err error
		out, err = q.view(st)
		return err
	})
	return out, err
}

// price returns the sending and receiving amounts of a quote.
func price(side string, amount int64, from, to string) (send, recv int64, err error) {
	lockedCur := from
	if side == LockReceiving {
		lockedCur = to
	}
	if err := checkAmount("lockedCurrencyAmount", amount, lockedCur); err != nil {
		return 0, 0, err
	}
	if _, ok := currencies[from]; !ok {
		return 0, 0, apierror.New(apierror.InvalidCurrency, "currency %q is not supported in the sandbox", from).WithDetail("field", "source.currency")
	}
	var ok bool
	if side == LockSending {
		send = amount
		recv, ok = convert(amount, from, to, false)
	} else {
		recv = amount
		send, ok = convert(amount, to, from, true)
	}
	if !ok || send <= 0 || recv <= 0 || send > MaxAmount || recv > MaxAmount {
		return 0, 0, apierror.New(apierror.AmountOutOfRange, "the converted amount is outside the sandbox range").WithDetail("field", "lockedCurrencyAmount")
	}
	return send, recv, nil
}

// GetQuote returns a quote as of now: 404 QUOTE_NOT_FOUND when there is
// none.
func (s *Simulator) GetQuote(ctx context.Context, id string) (*Quote, error) {
	var out *Quote
	err := s.read(ctx, func(st *state) error {
		q, err := st.quote(id)
		if err != nil {
			return err
		}
		out, err = q.view(st)
		return err
	})
	return out, err
}

// ExecuteQuote executes a quote funded from an embedded wallet. As every
// embedded-wallet payment, it needs the signed retry: the first call
// answers a challenge, the retry (same body, stamped by an active session of
// the source wallet) debits the wallet and starts the payout, whose outcome
// follows the destination's magic suffix (002 execution failed, 003
// completes after LongPaymentAfter, 004 counterparty delivery failed, 005
// completed then returned after ReturnedAfter, 006 user cancellation, 007
// payout and refund failed, anything else completed) or the sandbox UMA
// address. Failed payouts refund the wallet, except 007.
//
// The challenge's parameters (EXECUTE_QUOTE) bind every value the execution
// uses: the quote, the source wallet, the sending amount and currency, the
// destination (account or UMA address), the receiving amount and currency,
// the exchange rate and the fees. The retry executes those signed values
// only. One rule decides both legs, on the parameters and inside the store
// transaction of the leg: the quote has not expired, the payout gate
// allows the payout ([ownership.Service.CheckPayoutIn] on the destination
// account and the receiving amount, deciding again what quote creation
// answered early) and the wallet holds the sending amount. On the first
// call it refuses before a challenge is issued; on the retry it decides on
// the signed parameters in the transaction that consumes the signed
// request, at the time that transaction read once the signer's locks were
// granted, so a wallet that became UNVERIFIED or INACTIVE after the
// challenge, or a quote that expired while the retry waited, is refused
// (the request stays usable), and no status change commits between the
// decision and the consumption. That transaction also runs the payout
// policy, debits the wallet (held until it commits) and starts the payout,
// so of two signed executions of one quote one pays.
//
// idempotencyKey (the Idempotency-Key header), when not empty, must be a
// UUID and makes execution happen at most once per key, through the
// storage-backed [idempotency.Once] (records in the simulator's Store, so
// replicas sharing a database agree), scoped by the platform credentials
// (the keys of one platform are never another's). The fingerprint is POST, the path of
// the quote's execute route and the canonical body. Only the 200 of the
// retry that executed is stored: the 202 challenge of a first call is not a
// final response and releases the key at once (the same key then carries
// the signed retry), as does every error, so a failed call may be repeated
// with the key. Once stored, a call with the key and the same quote and
// body, first call or retry, signed or not, replays that 200 Quote (as it
// was at execution) without checking a signature: the key, like the
// execution, belongs to the platform. While the executing retry runs, the
// key answers 409 CONFLICT "a request with this key is in progress".
//
// Errors: 400 INVALID_AMOUNT (balance too low), 400 INVALID_INPUT (the
// Idempotency-Key is not a UUID), the refusals of the payout gate (400
// EXTERNAL_ACCOUNT_VERIFICATION_REQUIRED, 400
// TRANSACTION_SIZE_LIMIT_EXCEEDED, 409 CONFLICT for an account that
// receives no payouts, with details.field destination.accountId), the
// refusals of the payout policy on the retry of an execution to an
// external account (Config.PayoutRules, valuing the sending amount: 403
// PAYOUT_BLOCKED, 403 STEP_UP_REQUIRED, naming the rule in details.rule;
// see [DefaultPayoutRules]), 404 QUOTE_NOT_FOUND, 409 CONFLICT (not pending, expired, funded in real time,
// or the Idempotency-Key was used for another request or its request is in
// progress), the 401s of signedretry.
func (s *Simulator) ExecuteQuote(ctx context.Context, quoteID, idempotencyKey string, call signedretry.Request) (*Quote, *signedretry.Challenge, error) {
	q, ch, _, err := s.executeQuoteKeyed(ctx, quoteID, idempotencyKey, call)
	return q, ch, err
}

// executeQuoteKeyed is ExecuteQuote; replayed reports a stored result.
func (s *Simulator) executeQuoteKeyed(ctx context.Context, quoteID, idempotencyKey string, call signedretry.Request) (*Quote, *signedretry.Challenge, bool, error) {
	path := "/quotes/" + quoteID + "/execute"
	call, err := s.defaults(call, http.MethodPost, path, nil)
	if err != nil {
		return nil, nil, false, err
	}
	return keyed(ctx, s, idempotencyKey, path, call.Body, http.StatusOK,
		func(ctx context.Context) (*Quote, *signedretry.Challenge, error) {
			return s.executeQuote(ctx, quoteID, call)
		})
}

// executeQuote runs EXECUTE_QUOTE, the payout of [payout.Operation],
// through [walletauth.Authorize] on either leg. The quote names the wallet
// that signs (executableQuote); the sandbox adds its rule (quoteCheck: the
// quote as signed, not expired, the balance) and its ledger (payQuote: the
// debit, the transaction, the quote's execution); the payout's chain (the
// destination the wallet customer's own, the gate on the receiving amount,
// the payout policy valuing the sending amount) is the library's. A quote
// whose payout the policy would hold is refused (a converting payout is
// never held).
func (s *Simulator) executeQuote(ctx context.Context, quoteID string, call signedretry.Request) (*Quote, *signedretry.Challenge, error) {
	var q *quote
	err := s.read(ctx, func(st *state) error {
		var err error
		q, err = executableQuote(st, quoteID)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	spec := payout.Spec[quoteParams, Quote]{Type: OpExecuteQuote, AccountID: q.Rec.Source.AccountID,
		Transfer: quoteParams.transfer, Check: s.quoteCheck, Pay: s.payQuote, DestinationField: "destination.accountId"}
	if !call.IsRetry() {
		spec.Parameters = q.params()
	}
	out, _, ch, err := walletauth.Authorize(ctx, s.auth, payout.Operation(s.payouts, spec, call), call)
	switch {
	case err != nil || ch != nil:
		return nil, ch, err
	case out.Paid == nil:
		return nil, nil, apierror.Internal(errors.New("sandbox: a quote execution was held"))
	}
	return out.Paid, nil, nil
}

// executableQuote returns the quote quoteID as an execution a wallet can
// sign: 404 QUOTE_NOT_FOUND when there is none, 409 CONFLICT when it is
// funded in real time (no wallet signs it) or no longer pending (there is
// no execution left to authorize, so the retry of an executed quote
// answers so, not with its consumed request). Both legs ask it first,
// since it names the wallet whose session signs, and the payout asks it
// again holding the quote.
func executableQuote(st *state, quoteID string) (*quote, error) {
	q, err := st.quote(quoteID)
	switch {
	case err != nil:
		return nil, err
	case q.Rec.Source.SourceType == SourceRealtimeFunding:
		return nil, apierror.New(apierror.Conflict, "quote %s is funded in real time: pay its paymentInstructions (sandbox: POST /sandbox/send)", quoteID)
	case q.Rec.TransactionID != "":
		v, err := q.view(st)
		if err != nil {
			return nil, err
		}
		return nil, apierror.New(apierror.Conflict, "quote %s was already executed (status %s)", quoteID, v.Status)
	}
	return q, nil
}

// quoteCheck is the sandbox's rule of the execution of a quote at now, on
// its parameters p, run by the payout operation on both legs inside its
// transaction (on the retry at the time the transaction read once the
// signer's locks were granted): the quote is executable, p is its
// execution (the quote never changes, so a difference is a broken
// invariant, 500), it has not expired, and the wallet holds the sending
// amount (which the debit checks again, holding the wallet).
func (s *Simulator) quoteCheck(ctx context.Context, tx storage.Tx, p quoteParams, now time.Time) error {
	st := newState(ctx, tx, now, false)
	q, err := executableQuote(st, p.QuoteID)
	if err != nil {
		return err
	}
	if p != q.params() {
		return apierror.Internal(fmt.Errorf("sandbox: quote %s no longer matches its signed execution", q.Rec.ID))
	}
	if !now.Before(q.Rec.ExpiresAt) {
		return apierror.New(apierror.Conflict, "quote %s expired at %s; request a new quote", q.Rec.ID, q.Rec.ExpiresAt.Format(time.RFC3339))
	}
	w, err := st.wallet(p.SourceAccountID)
	if err != nil {
		return err
	}
	if w.Balances[p.Currency] < p.Amount {
		return apierror.New(apierror.InvalidAmount, "the wallet holds less than %d %s", p.Amount, p.Currency)
	}
	return nil
}

// payQuote is the sandbox's payout of an allowed execution p: holding the
// quote, which must still be unexecuted, and the wallet, which must hold
// the sending amount, it debits the wallet and starts the payout, whose
// outcome the destination account's identifier (as the gate held it) or
// the UMA address selects.
func (s *Simulator) payQuote(ctx context.Context, tx storage.Tx, p quoteParams, pay *payout.Payment) (Quote, error) {
	txID, err := s.newID("Transaction")
	if err != nil {
		return Quote{}, err
	}
	st := newState(ctx, tx, pay.Now, true)
	q, err := executableQuote(st, p.QuoteID)
	if err != nil {
		return Quote{}, err
	}
	if err := balanceCheck(st, p.SourceAccountID, p.Amount, p.Currency); err != nil {
		return Quote{}, err
	}
	identifier := ""
	if pay.Destination != nil {
		identifier = pay.Destination.Address
	}
	debit := []move{{p.SourceAccountID, p.Currency, -p.Amount}}
	refund := []move{{p.SourceAccountID, p.Currency, p.Amount}}
	if err := st.startPayout(q, p, identifier, txID, debit, refund); err != nil {
		return Quote{}, err
	}
	out, err := q.view(st)
	if err != nil {
		return Quote{}, err
	}
	return *out, st.flush()
}

// quoteParams are the parameters of an EXECUTE_QUOTE payload: every value
// the execution uses, so the signer sees where the money goes, how much
// leaves the wallet and how much arrives. The execution uses these values
// only.
type quoteParams struct {
	QuoteID         string `json:"quoteId"`
	SourceAccountID string `json:"sourceAccountId"`
	// Amount and Currency are what leaves the wallet.
	Amount   int64  `json:"amount"`
	Currency string `json:"currency"`
	// The destination: an external account or a UMA address.
	DestinationAccountID  string `json:"destinationAccountId,omitempty"`
	DestinationUMAAddress string `json:"destinationUmaAddress,omitempty"`
	// ReceivingAmount and ReceivingCurrency are what the destination
	// receives.
	ReceivingAmount   int64   `json:"receivingAmount"`
	ReceivingCurrency string  `json:"receivingCurrency"`
	ExchangeRate      float64 `json:"exchangeRate"`
	Fees              int64   `json:"fees"`
}

// params returns the execution parameters of the quote.
func (q *quote) params() quoteParams {
	r := &q.Rec
	return quoteParams{QuoteID: r.ID, SourceAccountID: r.Source.AccountID, Amount: r.TotalSendingAmount, Currency: r.SendingCurrency,
		DestinationAccountID: r.Destination.AccountID, DestinationUMAAddress: r.Destination.UMAAddress,
		ReceivingAmount: r.TotalReceivingAmount, ReceivingCurrency: r.ReceivingCurrency, ExchangeRate: r.ExchangeRate, Fees: r.Fees}
}

// transfer is the payout an execution's parameters name: what leaves the
// wallet, and what the destination (an external account or a UMA address)
// receives.
func (p quoteParams) transfer() payout.Transfer {
	t := payout.Transfer{SourceID: p.SourceAccountID, DestinationID: p.DestinationAccountID, Amount: p.Amount, Currency: p.Currency,
		Received: &payout.Money{Amount: p.ReceivingAmount, Currency: p.ReceivingCurrency}}
	if p.DestinationAccountID == "" {
		t.DestinationID, t.DestinationType = p.DestinationUMAAddress, policy.DestinationUMA
	}
	return t
}

// gateQuote decides the payout gate for the parameters p of quote q
// inside st's transaction, holding the destination account until it ends:
// the account must not be deleted and must still be the quote customer's,
// and the gate must allow the receiving amount in the receiving currency.
// It is the gate of a quote funded in real time (Send), which no wallet
// signs; a wallet's execution is the payout operation's.
func (s *Simulator) gateQuote(st *state, q *quote, p quoteParams) (*ownership.Decision, error) {
	m, err := st.metaOf(p.DestinationAccountID)
	if err != nil {
		return nil, err
	}
	if m != nil && m.Deleted {
		return nil, apierror.New(apierror.Conflict, "the destination external account %s was deleted", p.DestinationAccountID).
			WithDetail("field", "destination.accountId")
	}
	d, err := s.own.CheckPayoutIn(st.ctx, st.tx, ownership.Payout{AccountID: p.DestinationAccountID, Amount: p.ReceivingAmount,
		Currency: p.ReceivingCurrency})
	if err != nil {
		return nil, withField(err, "destination.accountId")
	}
	if d.Account.CustomerID != q.CustomerID {
		return nil, apierror.New(apierror.InvalidInput, "the destination external account belongs to another customer than the source").
			WithDetail("field", "destination.accountId")
	}
	return d, nil
}

// startPayout creates the transaction of an executed quote from its
// execution parameters p and schedules its timeline; identifier is the
// destination account's identifier, which selects the sandbox outcome.
func (st *state) startPayout(q *quote, p quoteParams, identifier, txID string, debit, refund []move) error {
	r, now := &q.Rec, st.now
	tx := &transaction{Rec: Transaction{ID: txID, Type: Outgoing, CustomerID: q.CustomerID, QuoteID: p.QuoteID,
		Source:      Endpoint{AccountID: p.SourceAccountID, CustomerID: r.Source.CustomerID, Currency: p.Currency},
		Destination: Endpoint{AccountID: p.DestinationAccountID, UMAAddress: p.DestinationUMAAddress, Currency: p.ReceivingCurrency},
		SentAmount:  &Money{p.Amount, p.Currency}, ReceivedAmount: &Money{p.ReceivingAmount, p.ReceivingCurrency},
		ExchangeRate: p.ExchangeRate, CreatedAt: now, UpdatedAt: now}}
	if sc, ok := umaScenarios[p.DestinationUMAAddress]; ok && p.DestinationUMAAddress != "" {
		tx.Steps = umaSteps(sc, now, debit, nil, refund)
	} else {
		tx.Steps = payoutSteps(identifier, now, debit, refund)
	}
	r.TransactionID, r.Status, r.UpdatedAt = txID, QuoteProcessing, now
	return st.schedule(tx)
}

// SendRequest is the body of POST /sandbox/send.
type SendRequest struct {
	QuoteID      string `json:"quoteId"`
	CurrencyCode string `json:"currencyCode"`
	// CurrencyAmount defaults to the quote's totalSendingAmount and must
	// equal it when given.
	CurrencyAmount int64 `json:"currencyAmount,omitempty"`
}

// Send simulates the customer paying a real-time funded quote's payment
// instructions: the quote executes with the destination outcomes of
// [Simulator.ExecuteQuote] (nothing is debited or refunded) and the
// transaction is returned. The payout gate decides again, on the
// destination account as held in a store transaction, as for
// [Simulator.ExecuteQuote].
//
// Errors: the refusals of the payout gate (details.field
// destination.accountId), 400 INVALID_INPUT (quoteId missing, or the quote
// has no real-time funding instructions), 400 INVALID_CURRENCY (not the
// quote's sending currency), 400 INVALID_AMOUNT (not the quote's amount),
// 404 QUOTE_NOT_FOUND, 409 CONFLICT (not pending or expired).
func (s *Simulator) Send(ctx context.Context, req SendRequest) (*Transaction, error) {
	if req.QuoteID == "" {
		return nil, apierror.InvalidField("quoteId", nil, "is required")
	}
	txID, err := s.newID("Transaction")
	if err != nil {
		return nil, err
	}
	var out *Transaction
	err = s.atomic(ctx, func(st *state) error {
		now := st.now
		q, err := st.quote(req.QuoteID)
		if err != nil {
			return err
		}
		switch {
		case q.Rec.Source.SourceType != SourceRealtimeFunding:
			return apierror.InvalidField("quoteId", nil, "the quote is funded from an account and has no real-time payment instructions; execute it instead")
		case req.CurrencyCode != q.Rec.SendingCurrency:
			return apierror.New(apierror.InvalidCurrency, "the quote is funded in %s, not %q", q.Rec.SendingCurrency, req.CurrencyCode).WithDetail("field", "currencyCode")
		case req.CurrencyAmount != 0 && req.CurrencyAmount != q.Rec.TotalSendingAmount:
			return apierror.New(apierror.InvalidAmount, "the quote expects exactly %d %s", q.Rec.TotalSendingAmount, q.Rec.SendingCurrency).WithDetail("field", "currencyAmount")
		case q.Rec.TransactionID != "":
			v, err := q.view(st)
			if err != nil {
				return err
			}
			return apierror.New(apierror.Conflict, "quote %s was already paid (status %s)", req.QuoteID, v.Status)
		case !now.Before(q.Rec.ExpiresAt):
			return apierror.New(apierror.Conflict, "quote %s expired at %s", req.QuoteID, q.Rec.ExpiresAt.Format(time.RFC3339))
		}
		// The payout gate decides on the destination account, held in
		// the transaction that starts the payout.
		p, identifier := q.params(), q.Identifier
		if p.DestinationAccountID != "" {
			d, err := s.gateQuote(st, q, p)
			if err != nil {
				return err
			}
			identifier = d.Account.Address
		}
		if err := st.startPayout(q, p, identifier, txID, nil, nil); err != nil {
			return err
		}
		tx, err := st.transaction(txID)
		if err != nil {
			return err
		}
		out = tx.view(now)
		return nil
	})
	return out, err
}

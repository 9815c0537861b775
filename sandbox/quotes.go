package sandbox

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/ownership"
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
	rec        Quote
	customerID string
	identifier string // destination account identifier (suffix outcomes)
}

func (q *quote) view(now time.Time) *Quote {
	out := q.rec
	if out.Status == QuotePending && !now.Before(out.ExpiresAt) {
		out.Status = QuoteExpired
	}
	out.PaymentInstructions = append([]PaymentInstruction(nil), q.rec.PaymentInstructions...)
	return &out
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
		q.customerID = acct.CustomerID
		if src.Currency == "" {
			src.Currency = s.cfg.WalletCurrency
		}
		src.CustomerID = ""
	default:
		if _, err := s.GetCustomer(ctx, src.CustomerID); err != nil {
			return nil, err
		}
		q.customerID = src.CustomerID
		src.AccountID = ""
	}
	// Destination.
	switch dst.DestinationType {
	case DestinationAccount:
		ext, err := s.externalAccount(ctx, dst.AccountID)
		if err != nil {
			return nil, err
		}
		if ext.CustomerID != q.customerID {
			return nil, apierror.New(apierror.InvalidInput, "the destination external account belongs to another customer than the source").
				WithDetail("field", "destination.accountId")
		}
		dstExt, q.identifier = &ext, ext.Address
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
	err = s.locked(func(st *state, now time.Time) error {
		q.rec = Quote{ID: id, Status: QuotePending, Source: src, Destination: dst, SendingCurrency: src.Currency,
			ReceivingCurrency: dst.Currency, TotalSendingAmount: send, TotalReceivingAmount: recv,
			ExchangeRate: rateFloat(src.Currency, dst.Currency), Description: req.Description,
			CreatedAt: now, UpdatedAt: now, ExpiresAt: now.Add(s.cfg.QuoteTTL)}
		if src.SourceType == SourceRealtimeFunding {
			q.rec.PaymentInstructions = []PaymentInstruction{{
				Reference:         "SANDBOX-" + strings.ToUpper(strings.TrimPrefix(id, "Quote:")[:8]),
				InstructionsNotes: "sandbox: simulate this payment with POST /sandbox/send {quoteId, currencyCode}",
				AccountOrWallet:   map[string]any{"accountType": "SANDBOX_FUNDING", "currency": src.Currency},
			}}
		}
		st.quotes[id] = q
		out = q.view(now)
		return nil
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
func (s *Simulator) GetQuote(_ context.Context, id string) (*Quote, error) {
	var out *Quote
	err := s.locked(func(st *state, now time.Time) error {
		q := st.quotes[id]
		if q == nil {
			return apierror.New(apierror.QuoteNotFound, "quote %q not found", id)
		}
		out = q.view(now)
		return nil
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
// decision and the consumption. The ledger is process
// memory: the simulator's lock is held from before that transaction until
// the payout is written to it, so the payout is ordered at the
// transaction's commit.
//
// idempotencyKey (the Idempotency-Key header), when not empty, must be a
// UUID and makes execution happen at most once per key, through the
// storage-backed [idempotency.Guard] (records in the simulator's Store, so
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

// executeQuote runs EXECUTE_QUOTE through [walletauth.Authorize] on either
// leg. executableQuote names the operation (the quote and the wallet that
// signs); one rule, quoteRule, decides both legs in Authorize's
// transaction: on the first leg as the operation's Check, at the time the
// simulator's lock was taken; on the retry at the head of the Effect, at
// the time the transaction read once the signer's locks were granted
// (signedretry.Authorization.Now), so a quote that expired while the retry
// waited for those locks is refused, as it is on the first leg. Then
// quoteEffect only reads what the ledger entry names. The simulator's lock
// is held from before that transaction until the payout is written to the
// ledger (lock before store, as everywhere in the simulator), so a retry
// the rule allows cannot fail after consuming its request, one it refuses
// leaves the request usable, and the ledger the rule read is the one the
// payout is written to.
func (s *Simulator) executeQuote(ctx context.Context, quoteID string, call signedretry.Request) (*Quote, *signedretry.Challenge, error) {
	var txID string
	if call.IsRetry() {
		var err error
		if txID, err = s.newID("Transaction"); err != nil {
			return nil, nil, err
		}
	}
	now := s.lock()
	defer s.mu.Unlock()
	q, err := executableQuote(s.state, quoteID)
	if err != nil {
		return nil, nil, err
	}
	op := walletauth.HostOperation[quoteParams, quoteExecution]{Type: OpExecuteQuote, AccountID: q.rec.Source.AccountID}
	if call.IsRetry() {
		// The retry is decided at the time its transaction read once the
		// signer's locks were granted (a.Now), which may be later than
		// now: the rule runs at the head of the Effect, before anything is
		// written or debited, in the order it runs as a Check (and, as
		// there, deciding with the call's context).
		op.Effect = func(tctx context.Context, tx storage.Tx, a *signedretry.Authorization, p quoteParams) (quoteExecution, error) {
			if err := s.quoteRule(ctx, q, a.Now)(tctx, tx, p); err != nil {
				return quoteExecution{}, err
			}
			return s.quoteEffect(tctx, tx, a, p)
		}
	} else {
		op.Parameters, op.Check = q.params(), s.quoteRule(ctx, q, now)
	}
	done, _, ch, err := walletauth.Authorize(ctx, s.auth, op, call)
	if err != nil || ch != nil {
		return nil, ch, err
	}
	signed := done.signed
	debit := []move{{signed.SourceAccountID, signed.Currency, -signed.Amount}}
	refund := []move{{signed.SourceAccountID, signed.Currency, signed.Amount}}
	s.state.startPayout(q, signed, done.identifier, txID, now, debit, refund)
	return q.view(now), nil, nil
}

// executableQuote returns the quote quoteID of st as an execution a wallet
// can sign, with the simulator's lock held: 404 QUOTE_NOT_FOUND when there
// is none, 409 CONFLICT when it is funded in real time (no wallet signs it)
// or no longer pending (there is no execution left to authorize, so the
// retry of an executed quote answers so, not with its consumed request).
// Both legs ask it first, since it names the wallet whose session signs.
func executableQuote(st *state, quoteID string) (*quote, error) {
	q := st.quotes[quoteID]
	switch {
	case q == nil:
		return nil, apierror.New(apierror.QuoteNotFound, "quote %q not found", quoteID)
	case q.rec.Source.SourceType == SourceRealtimeFunding:
		return nil, apierror.New(apierror.Conflict, "quote %s is funded in real time: pay its paymentInstructions (sandbox: POST /sandbox/send)", quoteID)
	case q.rec.Status != QuotePending:
		return nil, apierror.New(apierror.Conflict, "quote %s was already executed (status %s)", quoteID, q.rec.Status)
	}
	return q, nil
}

// quoteRule is the rule of the execution of quote q at now, on its
// parameters p, run by [walletauth.Authorize] on both legs inside its
// transaction tx with the simulator's lock held (the Check of the first
// leg, at the time the lock was taken; the head of the retry's Effect, at
// the retry's Authorization.Now): p must be the quote's
// execution parameters (the quote is immutable and the lock is held, so a
// difference is a broken invariant, 500), the quote must not have expired,
// the payout gate must allow the receiving amount to the destination
// account (gateQuote, holding it until tx ends), and the wallet must hold
// the sending amount. It decides with ctx, the call's context, as
// transferOutRule does.
func (s *Simulator) quoteRule(ctx context.Context, q *quote, now time.Time) func(context.Context, storage.Tx, quoteParams) error {
	return func(_ context.Context, tx storage.Tx, p quoteParams) error {
		if p != q.params() {
			return apierror.Internal(fmt.Errorf("sandbox: quote %s no longer matches its signed execution", q.rec.ID))
		}
		if !now.Before(q.rec.ExpiresAt) {
			return apierror.New(apierror.Conflict, "quote %s expired at %s; request a new quote", q.rec.ID, q.rec.ExpiresAt.Format(time.RFC3339))
		}
		if p.DestinationAccountID != "" {
			if _, err := s.gateQuote(ctx, tx, q, p); err != nil {
				return err
			}
		}
		if s.state.wallet(p.SourceAccountID).balances[p.Currency] < p.Amount {
			return apierror.New(apierror.InvalidAmount, "the wallet holds less than %d %s", p.Amount, p.Currency)
		}
		return nil
	}
}

// quoteEffect is the effect of a signed execution, once quoteRule has
// allowed the signed parameters p in tx. For an account destination, the
// payout policy (Config.PayoutRules) decides the payout signed by a and
// counts it in tx (decidePayout): its value is what leaves the wallet, the
// sending amount and currency (p.Amount, p.Currency), as for a transfer
// out; a UMA-address destination is decided as one
// (policy.DestinationUMA), so it counts in the windows too. Then it
// returns the payout to write to the ledger, made of p and, for an
// account destination, the account's identifier (which selects the
// sandbox outcome), read from the account the rule holds. The payout is written
// once the transaction has committed; a refusal of the policy rolls the
// transaction back and leaves the signed request usable.
func (s *Simulator) quoteEffect(ctx context.Context, tx storage.Tx, a *signedretry.Authorization, p quoteParams) (quoteExecution, error) {
	wal, err := tx.InternalAccounts().Get(ctx, p.SourceAccountID)
	if err != nil {
		return quoteExecution{}, err
	}
	if p.DestinationAccountID == "" {
		held, err := s.decidePayout(ctx, tx, a, &wal, p.DestinationUMAAddress, policy.DestinationUMA, p.Amount, p.Currency)
		if err != nil {
			return quoteExecution{}, err
		}
		if held != nil {
			return quoteExecution{}, quoteHeld(held)
		}
		return quoteExecution{signed: p}, nil
	}
	ext, err := tx.ExternalAccounts().Get(ctx, p.DestinationAccountID)
	if err != nil {
		return quoteExecution{}, err
	}
	held, err := s.decidePayout(ctx, tx, a, &wal, p.DestinationAccountID, "", p.Amount, p.Currency)
	if err != nil {
		return quoteExecution{}, err
	}
	if held != nil {
		return quoteExecution{}, quoteHeld(held)
	}
	return quoteExecution{signed: p, identifier: ext.Address}, nil
}

// quoteHeld is the refusal of a quote execution the payout policy would
// hold for approval: the sandbox holds transfers out only (a quote expires
// long before its approval would), so the execution is refused, 403
// PAYOUT_BLOCKED naming the holding rule, and its transaction, the held
// approval with it, rolls back.
func quoteHeld(held *storage.PayoutApproval) error {
	const reason = "the rule holds the payout for approval, which the sandbox does for transfers out only, not quote executions"
	return apierror.New(apierror.PayoutBlocked, "payout refused by rule %s: %s", held.Rule, reason).
		WithDetail("rule", held.Rule).WithDetail("reason", reason)
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
	r := &q.rec
	return quoteParams{QuoteID: r.ID, SourceAccountID: r.Source.AccountID, Amount: r.TotalSendingAmount, Currency: r.SendingCurrency,
		DestinationAccountID: r.Destination.AccountID, DestinationUMAAddress: r.Destination.UMAAddress,
		ReceivingAmount: r.TotalReceivingAmount, ReceivingCurrency: r.ReceivingCurrency, ExchangeRate: r.ExchangeRate, Fees: r.Fees}
}

// quoteExecution is what the retry of an execution decided: the signed
// parameters, and the identifier of the destination account when it is
// one.
type quoteExecution struct {
	signed     quoteParams
	identifier string
}

// gateQuote decides the payout gate for the signed parameters p of quote q
// inside tx, holding the destination account until tx ends: the account
// must still be the quote customer's, and the gate must allow the
// receiving amount in the receiving currency.
func (s *Simulator) gateQuote(ctx context.Context, tx storage.Tx, q *quote, p quoteParams) (*ownership.Decision, error) {
	if m := s.state.extMeta[p.DestinationAccountID]; m != nil && m.deleted {
		return nil, apierror.New(apierror.Conflict, "the destination external account %s was deleted", p.DestinationAccountID).
			WithDetail("field", "destination.accountId")
	}
	d, err := s.own.CheckPayoutIn(ctx, tx, ownership.Payout{AccountID: p.DestinationAccountID, Amount: p.ReceivingAmount,
		Currency: p.ReceivingCurrency})
	if err != nil {
		return nil, withField(err, "destination.accountId")
	}
	if d.Account.CustomerID != q.customerID {
		return nil, apierror.New(apierror.InvalidInput, "the destination external account belongs to another customer than the source").
			WithDetail("field", "destination.accountId")
	}
	return d, nil
}

// startPayout creates the transaction of an executed quote from its
// execution parameters p (for a signed execution, the signed ones) and
// schedules its timeline; identifier is the destination account's
// identifier, which selects the sandbox outcome.
func (st *state) startPayout(q *quote, p quoteParams, identifier, txID string, now time.Time, debit, refund []move) *transaction {
	r := &q.rec
	tx := &transaction{rec: Transaction{ID: txID, Type: Outgoing, CustomerID: q.customerID, QuoteID: p.QuoteID,
		Source:      Endpoint{AccountID: p.SourceAccountID, CustomerID: r.Source.CustomerID, Currency: p.Currency},
		Destination: Endpoint{AccountID: p.DestinationAccountID, UMAAddress: p.DestinationUMAAddress, Currency: p.ReceivingCurrency},
		SentAmount:  &Money{p.Amount, p.Currency}, ReceivedAmount: &Money{p.ReceivingAmount, p.ReceivingCurrency},
		ExchangeRate: p.ExchangeRate, CreatedAt: now, UpdatedAt: now}}
	if sc, ok := umaScenarios[p.DestinationUMAAddress]; ok && p.DestinationUMAAddress != "" {
		tx.steps = umaSteps(sc, now, debit, nil, refund)
	} else {
		tx.steps = payoutSteps(identifier, now, debit, refund)
	}
	r.TransactionID, r.Status, r.UpdatedAt = txID, QuoteProcessing, now
	st.schedule(tx, now)
	return tx
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
	err = s.locked(func(st *state, now time.Time) error {
		q := st.quotes[req.QuoteID]
		switch {
		case q == nil:
			return apierror.New(apierror.QuoteNotFound, "quote %q not found", req.QuoteID)
		case q.rec.Source.SourceType != SourceRealtimeFunding:
			return apierror.InvalidField("quoteId", nil, "the quote is funded from an account and has no real-time payment instructions; execute it instead")
		case req.CurrencyCode != q.rec.SendingCurrency:
			return apierror.New(apierror.InvalidCurrency, "the quote is funded in %s, not %q", q.rec.SendingCurrency, req.CurrencyCode).WithDetail("field", "currencyCode")
		case req.CurrencyAmount != 0 && req.CurrencyAmount != q.rec.TotalSendingAmount:
			return apierror.New(apierror.InvalidAmount, "the quote expects exactly %d %s", q.rec.TotalSendingAmount, q.rec.SendingCurrency).WithDetail("field", "currencyAmount")
		case q.rec.Status != QuotePending:
			return apierror.New(apierror.Conflict, "quote %s was already paid (status %s)", req.QuoteID, q.rec.Status)
		case !now.Before(q.rec.ExpiresAt):
			return apierror.New(apierror.Conflict, "quote %s expired at %s", req.QuoteID, q.rec.ExpiresAt.Format(time.RFC3339))
		}
		// The payout gate decides on the destination account, held in
		// the transaction, before the payout is written to the ledger
		// (the simulator's lock is held across both).
		p, identifier := q.params(), q.identifier
		if p.DestinationAccountID != "" {
			err := s.cfg.Store.Atomic(ctx, func(tx storage.Tx) error {
				d, err := s.gateQuote(ctx, tx, q, p)
				if err == nil {
					identifier = d.Account.Address
				}
				return err
			})
			if err != nil {
				return apierror.As(err)
			}
		}
		out = st.startPayout(q, p, identifier, txID, now, nil, nil).view()
		return nil
	})
	return out, err
}

package sandbox_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/sandbox"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/signedretry/stamper"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/idempotency"
	"github.com/walletgate/walletgate/walletauth/authclient"
)

// payer is a customer with a funded, logged-in wallet.
type payer struct {
	customer sandbox.Customer
	wallet   string
	key      *authclient.ClientKey
}

func (e *env) payer(usdb int64) payer {
	e.t.Helper()
	c, w := e.customer("Pay Er")
	e.do("POST", "/sandbox/internal-accounts/"+w+"/fund", map[string]any{"amount": usdb}).ok(e.t, 200, nil)
	return payer{c, w, e.login(w)}
}

// quote creates a SENDING-locked quote from p's wallet to dest.
func (e *env) quote(p payer, dest map[string]any, amount int64) sandbox.Quote {
	e.t.Helper()
	var q sandbox.Quote
	e.do("POST", "/quotes", map[string]any{"source": map[string]any{"accountId": p.wallet}, "destination": dest,
		"lockedCurrencySide": "SENDING", "lockedCurrencyAmount": amount}).ok(e.t, 201, &q)
	return q
}

func (e *env) execute(p payer, quoteID string, headers ...string) resp {
	e.t.Helper()
	return e.signed(p.key, "POST", "/quotes/"+quoteID+"/execute", nil, headers...)
}

func (e *env) getQuote(id string) sandbox.Quote {
	e.t.Helper()
	return get[sandbox.Quote](e, "/quotes/"+id)
}

func TestQuoteDestinationSuffixes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, tc := range []struct {
			suffix, status, reason string
			refunded               bool
		}{
			{"002", "FAILED", "QUOTE_EXECUTION_FAILED", true},
			{"003", "PROCESSING", "", false},
			{"004", "FAILED", "COUNTERPARTY_DELIVERY_FAILED", true},
			{"005", "COMPLETED", "", false},
			{"006", "FAILED", "USER_CANCELLED", true},
			{"007", "FAILED", "PAYOUT_AND_REFUND_FAILED", false},
			{"001", "COMPLETED", "", false},
		} {
			e := newBubbleEnv(t, sandbox.Config{})
			p := e.payer(100_000_000) // 100 USDB
			ext := e.external(p.customer.ID, usdAccount("5555555"+tc.suffix))
			q := e.quote(p, map[string]any{"accountId": ext.ID}, 10_000_000) // 10 USDB -> 10.00 USD
			if q.Status != "PENDING" || q.SendingCurrency != "USDB" || q.ReceivingCurrency != "USD" || q.TotalReceivingAmount != 1_000 ||
				q.ExchangeRate != 1 || len(q.PaymentInstructions) != 0 {
				t.Fatalf("%s: quote %+v", tc.suffix, q)
			}
			var got sandbox.Quote
			e.execute(p, q.ID).ok(t, 200, &got)
			tx := e.tx(got.TransactionID)
			wantBalance := int64(90_000_000)
			if tc.refunded {
				wantBalance = 100_000_000
			}
			if got.Status != tc.status || tx.Status != tc.status || tx.FailureReason != tc.reason || tx.QuoteID != q.ID ||
				e.balance(p.wallet, "USDB") != wantBalance || tx.ReceivedAmount.Amount != 1_000 {
				t.Errorf("%s: quote %s tx %+v balance %d", tc.suffix, got.Status, tx, e.balance(p.wallet, "USDB"))
			}
			switch tc.suffix {
			case "003": // completes after about 6 minutes
				time.Sleep(sandbox.LongPaymentAfter - time.Second)
				if s := e.tx(tx.ID).Status; s != "PROCESSING" {
					t.Errorf("003 early: %s", s)
				}
				time.Sleep(time.Second)
				if s, qs := e.tx(tx.ID).Status, e.getQuote(q.ID).Status; s != "COMPLETED" || qs != "COMPLETED" {
					t.Errorf("003 late: %s %s", s, qs)
				}
			case "005": // completes, then the receiving bank returns it
				time.Sleep(sandbox.ReturnedAfter)
				late := e.tx(tx.ID)
				if late.Status != "FAILED" || late.FailureReason != "PAYMENT_RETURNED" || e.balance(p.wallet, "USDB") != 100_000_000 ||
					e.getQuote(q.ID).Status != "FAILED" {
					t.Errorf("005 late: %+v balance %d", late, e.balance(p.wallet, "USDB"))
				}
			}
		}
	})
}

func TestQuoteToUMAAddresses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newBubbleEnv(t, sandbox.Config{})
		p := e.payer(1_000_000_000)
		for _, tc := range []struct {
			addr, currency, status, reason string
			received                       int64
		}{
			{sandbox.UMASuccessUSD, "USD", "COMPLETED", "", 1_000},
			{sandbox.UMASuccessEUR, "EUR", "COMPLETED", "", 920},
			{sandbox.UMASuccessMXN, "MXN", "COMPLETED", "", 17_500},
			{sandbox.UMALongPendingUSD, "USD", "PENDING", "", 1_000},
			{sandbox.UMAComplianceFailUSD, "USD", "FAILED", "COMPLIANCE_CHECK_FAILED", 1_000},
		} {
			before := e.balance(p.wallet, "USDB")
			q := e.quote(p, map[string]any{"umaAddress": tc.addr}, 10_000_000)
			if q.ReceivingCurrency != tc.currency || q.TotalReceivingAmount != tc.received || q.Destination.DestinationType != "UMA_ADDRESS" {
				t.Fatalf("%s: quote %+v", tc.addr, q)
			}
			var got sandbox.Quote
			e.execute(p, q.ID).ok(t, 200, &got)
			tx := e.tx(got.TransactionID)
			spent := before - e.balance(p.wallet, "USDB")
			if tx.Status != tc.status || tx.FailureReason != tc.reason || tx.Destination.UMAAddress != tc.addr ||
				(tc.status == "FAILED") != (spent == 0) {
				t.Errorf("%s: %+v spent %d", tc.addr, tx, spent)
			}
			if tc.addr == sandbox.UMALongPendingUSD {
				time.Sleep(sandbox.LongPendingUMAAfter)
				if s := e.tx(tx.ID).Status; s != "COMPLETED" {
					t.Errorf("long pending after a day: %s", s)
				}
				p.key = e.login(p.wallet) // the session expired meanwhile
			}
		}
		dest := func(addr string) map[string]any {
			return map[string]any{"source": map[string]any{"accountId": p.wallet}, "destination": map[string]any{"umaAddress": addr},
				"lockedCurrencySide": "SENDING", "lockedCurrencyAmount": 100}
		}
		e.do("POST", "/quotes", dest("not-an-address")).fails(t, 400, apierror.InvalidUMAAddress)
		e.do("POST", "/quotes", dest("$nobody@sandbox.uma.money")).fails(t, 404, apierror.UMANotFound)
		e.do("POST", "/quotes", dest("$bob@elsewhere.example")).fails(t, 404, apierror.UMANotFound)
		body := dest(sandbox.UMASuccessEUR)
		body["destination"].(map[string]any)["currency"] = "USD"
		e.do("POST", "/quotes", body).fails(t, 400, apierror.InvalidCurrency)
	})
}

func TestExecuteQuoteErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newBubbleEnv(t, sandbox.Config{})
		p := e.payer(5_000_000)
		ext := e.external(p.customer.ID, usdAccount("66666601"))
		e.do("POST", "/quotes/Quote:nope/execute", nil).fails(t, 404, apierror.QuoteNotFound)
		e.do("GET", "/quotes/Quote:nope", nil).fails(t, 404, apierror.QuoteNotFound)

		// More than the wallet holds.
		big := e.quote(p, map[string]any{"accountId": ext.ID}, 6_000_000)
		e.do("POST", "/quotes/"+big.ID+"/execute", nil).fails(t, 400, apierror.InvalidAmount)

		// A challenge must be signed by a session of the source wallet.
		q := e.quote(p, map[string]any{"accountId": ext.ID}, 1_000_000)
		ch := e.challenge("POST", "/quotes/"+q.ID+"/execute", nil)
		stranger, _ := authclient.NewClientKey()
		e.retry(stranger, ch, "POST", "/quotes/"+q.ID+"/execute", nil).fails(t, 401, apierror.WalletSignatureInvalid)
		if e.getQuote(q.ID).Status != "PENDING" || e.balance(p.wallet, "USDB") != 5_000_000 {
			t.Fatal("a refused retry changed the quote")
		}
		e.retry(p.key, ch, "POST", "/quotes/"+q.ID+"/execute", nil).ok(t, 200, nil)
		e.do("POST", "/quotes/"+q.ID+"/execute", nil).fails(t, 409, apierror.Conflict)
		e.retry(p.key, ch, "POST", "/quotes/"+q.ID+"/execute", nil).fails(t, 409, apierror.Conflict)

		// Expired quotes.
		old := e.quote(p, map[string]any{"accountId": ext.ID}, 1_000_000)
		time.Sleep(sandbox.DefaultQuoteTTL)
		if s := e.getQuote(old.ID).Status; s != "EXPIRED" {
			t.Fatalf("expired quote reads %s", s)
		}
		e.do("POST", "/quotes/"+old.ID+"/execute", nil).fails(t, 409, apierror.Conflict)

		// A challenge issued before the quote executed elsewhere.
		q2 := e.quote(p, map[string]any{"accountId": ext.ID}, 1_000_000)
		ch1 := e.challenge("POST", "/quotes/"+q2.ID+"/execute", nil)
		e.execute(p, q2.ID).ok(t, 200, nil)
		e.retry(p.key, ch1, "POST", "/quotes/"+q2.ID+"/execute", nil).fails(t, 409, apierror.Conflict)
		if got := e.balance(p.wallet, "USDB"); got != 3_000_000 {
			t.Fatalf("balance %d after two executions", got)
		}
	})
}

func TestExecuteQuoteIdempotencyKey(t *testing.T) {
	e := newEnv(t)
	p := e.payer(5_000_000)
	ext := e.external(p.customer.ID, usdAccount("66666602"))
	q := e.quote(p, map[string]any{"accountId": ext.ID}, 1_000_000)
	key := []string{"Idempotency-Key", "5b0d6a7e-5f38-4e0f-8b0b-0e7c0c0f2a10"}
	var first, again sandbox.Quote
	e.execute(p, q.ID, key...).ok(t, 200, &first)
	// The same key answers the first result, with or without a signature.
	e.do("POST", "/quotes/"+q.ID+"/execute", nil, key...).ok(t, 200, &again)
	if again.TransactionID != first.TransactionID || e.balance(p.wallet, "USDB") != 4_000_000 {
		t.Fatalf("replay %+v vs %+v", again, first)
	}
	// The key in upper case is the same key.
	var upper sandbox.Quote
	e.do("POST", "/quotes/"+q.ID+"/execute", nil, "Idempotency-Key", strings.ToUpper(key[1])).ok(t, 200, &upper)
	if upper.TransactionID != first.TransactionID {
		t.Fatalf("upper-case replay %+v vs %+v", upper, first)
	}
	// The key on another quote conflicts.
	q2 := e.quote(p, map[string]any{"accountId": ext.ID}, 1_000_000)
	err := e.do("POST", "/quotes/"+q2.ID+"/execute", nil, key...).fails(t, 409, apierror.Conflict)
	if !strings.Contains(err.Message, "different request") {
		t.Fatalf("conflict message %q", err.Message)
	}
	// The record is in the simulator's store, holding the 200 only.
	rerr := e.sim.Store().Atomic(t.Context(), func(tx storage.Tx) error {
		rec, err := tx.Idempotency().Get(t.Context(), "Platform:"+sandbox.DefaultClientID, key[1])
		if err == nil && (rec.State != storage.IdempotencyComplete || rec.Status != 200) {
			t.Fatalf("stored record %s %d, want COMPLETE 200", rec.State, rec.Status)
		}
		return err
	})
	if rerr != nil {
		t.Fatal(rerr)
	}
}

// TestExecuteQuoteIdempotencyKeyStricter: the key must be a UUID given once;
// a challenge (202) and a failed execution are not stored, so the key
// carries the signed retry and a repeat after a failure.
func TestExecuteQuoteIdempotencyKeyStricter(t *testing.T) {
	e := newEnv(t)
	p := e.payer(5_000_000)
	ext := e.external(p.customer.ID, usdAccount("66666602"))
	q := e.quote(p, map[string]any{"accountId": ext.ID}, 1_000_000)
	for _, bad := range []string{"key-1", "5b0d6a7e5f384e0f8b0b0e7c0c0f2a10", "{5b0d6a7e-5f38-4e0f-8b0b-0e7c0c0f2a10}"} {
		err := e.do("POST", "/quotes/"+q.ID+"/execute", nil, "Idempotency-Key", bad).fails(t, 400, apierror.InvalidInput)
		if err.Details["field"] != "Idempotency-Key" {
			t.Fatalf("%q: details %v do not name the header", bad, err.Details)
		}
	}
	// Given twice.
	req, rerr := http.NewRequest("POST", e.srv.URL+e.base+"/quotes/"+q.ID+"/execute", nil)
	if rerr != nil {
		t.Fatal(rerr)
	}
	req.SetBasicAuth(e.user, e.pass)
	req.Header.Add("Idempotency-Key", "5b0d6a7e-5f38-4e0f-8b0b-0e7c0c0f2a10")
	req.Header.Add("Idempotency-Key", "5b0d6a7e-5f38-4e0f-8b0b-0e7c0c0f2a11")
	res, rerr := http.DefaultClient.Do(req)
	if rerr != nil {
		t.Fatal(rerr)
	}
	var body bytes.Buffer
	_, _ = body.ReadFrom(res.Body)
	res.Body.Close()
	resp{res.StatusCode, res.Header, body.Bytes()}.fails(t, 400, apierror.InvalidInput)

	key := []string{"Idempotency-Key", "0e4c1a2b-3d4e-4f50-8a6b-7c8d9e0f1a2b"}
	// The first leg twice: two challenges, nothing stored.
	e.challenge("POST", "/quotes/"+q.ID+"/execute", nil, key...)
	ch := e.challenge("POST", "/quotes/"+q.ID+"/execute", nil, key...)
	// A failure releases the key: a wrong signature is 401, then the
	// right one executes under the same key.
	other := e.payer(1)
	if r := e.retry(other.key, ch, "POST", "/quotes/"+q.ID+"/execute", nil, key...); r.status/100 != 4 {
		t.Fatalf("retry signed by another wallet's session: %d %s", r.status, r.body)
	}
	var done sandbox.Quote
	e.execute(p, q.ID, key...).ok(t, 200, &done)
	if done.TransactionID == "" || e.balance(p.wallet, "USDB") != 4_000_000 {
		t.Fatalf("execution %+v", done)
	}
}

// TestExecuteQuoteIdempotencyKeyConcurrent: the same signed retry sent
// concurrently with one key executes once; the others answer 409 CONFLICT
// (in progress) or replay the 200.
func TestExecuteQuoteIdempotencyKeyConcurrent(t *testing.T) {
	e := newEnv(t)
	p := e.payer(5_000_000)
	ext := e.external(p.customer.ID, usdAccount("66666601"))
	q := e.quote(p, map[string]any{"accountId": ext.ID}, 1_000_000)
	key := []string{"Idempotency-Key", "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"}
	path := "/quotes/" + q.ID + "/execute"
	ch := e.challenge("POST", path, nil, key...)
	sig, err := p.key.Stamp(ch.PayloadToSign)
	if err != nil {
		t.Fatal(err)
	}
	const n = 16
	out := make([]resp, n)
	var wg sync.WaitGroup
	for i := range out {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = e.do("POST", path, nil, append([]string{stamper.HeaderSignature, sig,
				stamper.HeaderRequestID, ch.RequestID}, key...)...)
		}()
	}
	wg.Wait()
	txs := map[string]bool{}
	for _, r := range out {
		switch r.status {
		case 200:
			var got sandbox.Quote
			r.ok(t, 200, &got)
			txs[got.TransactionID] = true
		default:
			if err := r.fails(t, 409, apierror.Conflict); !strings.Contains(err.Message, "in progress") {
				t.Fatalf("409 %q, want in progress", err.Message)
			}
		}
	}
	if len(txs) != 1 || e.balance(p.wallet, "USDB") != 4_000_000 {
		t.Fatalf("%d transactions, balance %d; want one execution", len(txs), e.balance(p.wallet, "USDB"))
	}
}

func TestQuoteValidation(t *testing.T) {
	e := newEnv(t)
	p := e.payer(1)
	err := e.do("POST", "/quotes", map[string]any{"source": map[string]any{"sourceType": "CARD"},
		"destination": map[string]any{"destinationType": "ACCOUNT"}, "lockedCurrencySide": "BOTH"}).fails(t, 400, apierror.InvalidInput)
	if got := fields(err); !slices.Equal(got, []string{"source.sourceType", "destination.accountId", "lockedCurrencySide"}) {
		t.Fatalf("fields %v", got)
	}
	base := func(amount int64, cur string) map[string]any {
		return map[string]any{"source": map[string]any{"accountId": p.wallet, "currency": cur},
			"destination": map[string]any{"umaAddress": sandbox.UMASuccessUSD}, "lockedCurrencySide": "SENDING", "lockedCurrencyAmount": amount}
	}
	e.do("POST", "/quotes", base(0, "USDB")).fails(t, 400, apierror.InvalidAmount)
	e.do("POST", "/quotes", base(sandbox.MaxAmount+1, "USDB")).fails(t, 400, apierror.AmountOutOfRange)
	e.do("POST", "/quotes", base(1, "XYZ")).fails(t, 400, apierror.InvalidCurrency)
	e.do("POST", "/quotes", base(1, "USDB")).fails(t, 400, apierror.AmountOutOfRange) // 1 micro-USDB is less than a cent
	body := base(100, "USDB")
	body["source"] = map[string]any{"accountId": "InternalAccount:00000000-0000-4000-8000-000000000000"}
	e.do("POST", "/quotes", body).fails(t, 404, apierror.ReferenceNotFound)
	body["source"] = map[string]any{"customerId": "Customer:nobody", "currency": "USD"}
	e.do("POST", "/quotes", body).fails(t, 404, apierror.UserNotFound)
	body = base(10_000_000, "USDB")
	body["destination"] = map[string]any{"accountId": "ExternalAccount:00000000-0000-4000-8000-000000000000"}
	e.do("POST", "/quotes", body).fails(t, 404, apierror.ReferenceNotFound)
	// A RECEIVING-locked quote rounds the sending side up.
	body = base(1_001, "USDB")
	body["lockedCurrencySide"] = "RECEIVING"
	body["destination"] = map[string]any{"umaAddress": sandbox.UMASuccessEUR}
	var q sandbox.Quote
	e.do("POST", "/quotes", body).ok(t, 201, &q)
	if q.TotalReceivingAmount != 1_001 || q.TotalSendingAmount != 10_880_435 {
		t.Fatalf("receiving-locked %+v", q)
	}
	// The ownership threshold applies to quotes too.
	ext := e.external(p.customer.ID, evmWallet("0a1"))
	body = base(2_000_000_000, "USDB")
	body["destination"] = map[string]any{"accountId": ext.ID}
	e.do("POST", "/quotes", body).fails(t, 400, apierror.ExternalAccountVerificationRequired)
}

func TestRealtimeFundingAndSend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newBubbleEnv(t, sandbox.Config{})
		c, _ := e.customer("Real Time")
		ext := e.external(c.ID, map[string]any{"currency": "MXN", "accountInfo": map[string]any{"accountType": "MXN_ACCOUNT",
			"clabeNumber": "002010077777777003", "beneficiary": map[string]any{"beneficiaryType": "INDIVIDUAL", "fullName": "Ana Ruiz"}}})
		var q sandbox.Quote
		e.do("POST", "/quotes", map[string]any{"source": map[string]any{"customerId": c.ID, "currency": "USD"},
			"destination": map[string]any{"accountId": ext.ID}, "lockedCurrencySide": "SENDING", "lockedCurrencyAmount": 10_000}).ok(t, 201, &q)
		if q.Source.SourceType != "REALTIME_FUNDING" || len(q.PaymentInstructions) != 1 || q.TotalReceivingAmount != 175_000 {
			t.Fatalf("quote %+v", q)
		}
		e.do("POST", "/quotes/"+q.ID+"/execute", nil).fails(t, 409, apierror.Conflict)
		e.do("POST", "/sandbox/send", map[string]any{"quoteId": q.ID, "currencyCode": "EUR"}).fails(t, 400, apierror.InvalidCurrency)
		e.do("POST", "/sandbox/send", map[string]any{"quoteId": q.ID, "currencyCode": "USD", "currencyAmount": 9}).fails(t, 400, apierror.InvalidAmount)
		e.do("POST", "/sandbox/send", map[string]any{"quoteId": "Quote:nope", "currencyCode": "USD"}).fails(t, 404, apierror.QuoteNotFound)
		e.do("POST", "/sandbox/send", map[string]any{"currencyCode": "USD"}).fails(t, 400, apierror.InvalidInput)
		var tx sandbox.Transaction
		e.do("POST", "/sandbox/send", map[string]any{"quoteId": q.ID, "currencyCode": "USD"}).ok(t, 200, &tx)
		// The destination ends in 003: the long payment.
		if tx.Status != "PROCESSING" || tx.QuoteID != q.ID || tx.Source.CustomerID != c.ID {
			t.Fatalf("send %+v", tx)
		}
		time.Sleep(sandbox.LongPaymentAfter)
		if s := e.tx(tx.ID).Status; s != "COMPLETED" {
			t.Fatalf("after 6 minutes: %s", s)
		}
		e.do("POST", "/sandbox/send", map[string]any{"quoteId": q.ID, "currencyCode": "USD"}).fails(t, 409, apierror.Conflict)

		// Send needs a real-time quote; an expired one conflicts.
		p := e.payer(10_000_000)
		aq := e.quote(p, map[string]any{"umaAddress": sandbox.UMASuccessUSD}, 1_000_000)
		e.do("POST", "/sandbox/send", map[string]any{"quoteId": aq.ID, "currencyCode": "USDB"}).fails(t, 400, apierror.InvalidInput)
		var rq sandbox.Quote
		e.do("POST", "/quotes", map[string]any{"source": map[string]any{"customerId": c.ID, "currency": "USD"},
			"destination": map[string]any{"accountId": ext.ID}, "lockedCurrencySide": "SENDING", "lockedCurrencyAmount": 100}).ok(t, 201, &rq)
		time.Sleep(sandbox.DefaultQuoteTTL)
		e.do("POST", "/sandbox/send", map[string]any{"quoteId": rq.ID, "currencyCode": "USD"}).fails(t, 409, apierror.Conflict)
	})
}

// TestExecuteRetryKeepsRequestWhenRefused: a retry whose quote can no longer
// be paid is refused without consuming its Request-Id, so the same signed
// retry succeeds once the wallet is funded again.
func TestExecuteRetryKeepsRequestWhenRefused(t *testing.T) {
	e := newEnv(t)
	p := e.payer(5_000_000)
	ext := e.external(p.customer.ID, usdAccount("66666602"))
	q := e.quote(p, map[string]any{"accountId": ext.ID}, 1_000_000)
	ch := e.challenge("POST", "/quotes/"+q.ID+"/execute", nil)

	// Another payment drains the wallet between the challenge and the retry.
	drain := e.quote(p, map[string]any{"accountId": ext.ID}, 4_500_000)
	e.execute(p, drain.ID).ok(t, 200, nil)
	e.retry(p.key, ch, "POST", "/quotes/"+q.ID+"/execute", nil).fails(t, 400, apierror.InvalidAmount)
	if e.getQuote(q.ID).Status != "PENDING" {
		t.Fatal("a refused retry changed the quote")
	}

	e.do("POST", "/sandbox/internal-accounts/"+p.wallet+"/fund", map[string]any{"amount": 1_000_000}).ok(t, 200, nil)
	e.retry(p.key, ch, "POST", "/quotes/"+q.ID+"/execute", nil).ok(t, 200, nil)
	if got := e.balance(p.wallet, "USDB"); got != 500_000 {
		t.Fatalf("balance %d, want 500000 after both payments and the top-up", got)
	}
	e.retry(p.key, ch, "POST", "/quotes/"+q.ID+"/execute", nil).fails(t, 409, apierror.Conflict)
}

// TestExecuteBodyNoneOrEmptyObject: execute takes no body, and accepts an
// empty body or {}. Each spelling is its own body, as JSON canonicalization
// (RFC 8785) makes it: the challenge binds the SHA-256 of its canonical form
// (of zero bytes for an empty body, of "{}" for {}), the retry must repeat
// the first call's spelling, and under one Idempotency-Key the two are
// different requests.
func TestExecuteBodyNoneOrEmptyObject(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newBubbleEnv(t, sandbox.Config{})
		p := e.payer(10_000_000)
		ext := e.external(p.customer.ID, usdAccount("66666601"))
		bodySHA := func(ch signedretry.Challenge) string {
			var payload struct {
				BodySHA256 string `json:"bodySha256"`
			}
			if err := json.Unmarshal([]byte(ch.PayloadToSign), &payload); err != nil {
				t.Fatal(err)
			}
			return payload.BodySHA256
		}
		for _, tc := range []struct {
			name, key   string
			body, other any
			digest      string
		}{
			{"empty", "0b7a3c55-2f4e-4c1d-9a8b-000000000001", nil, "{}", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
			{"{}", "0b7a3c55-2f4e-4c1d-9a8b-000000000002", "{}", nil, "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"},
		} {
			q := e.quote(p, map[string]any{"accountId": ext.ID}, 1_000_000)
			path := "/quotes/" + q.ID + "/execute"
			ch := e.challenge("POST", path, tc.body)
			if got := bodySHA(ch); got != tc.digest {
				t.Fatalf("%s: bodySha256 %s, want %s", tc.name, got, tc.digest)
			}
			// The other spelling is another body: refused, nothing changes.
			e.retry(p.key, ch, "POST", path, tc.other).fails(t, 401, apierror.WalletSignatureBodyMismatch)
			if e.getQuote(q.ID).Status != "PENDING" {
				t.Fatalf("%s: a refused retry executed the quote", tc.name)
			}
			e.retry(p.key, ch, "POST", path, tc.body).ok(t, 200, nil)

			// Under one key, the first spelling's result replays and the
			// other spelling is another request.
			q2 := e.quote(p, map[string]any{"accountId": ext.ID}, 1_000_000)
			path2 := "/quotes/" + q2.ID + "/execute"
			e.signed(p.key, "POST", path2, tc.body, "Idempotency-Key", tc.key).ok(t, 200, nil)
			r := e.do("POST", path2, tc.body, "Idempotency-Key", tc.key)
			r.ok(t, 200, nil)
			if r.header.Get(idempotency.ReplayedHeader) != "true" {
				t.Fatalf("%s: the repeat was not a replay", tc.name)
			}
			e.do("POST", path2, tc.other, "Idempotency-Key", tc.key).fails(t, 409, apierror.Conflict)
		}
	})
}

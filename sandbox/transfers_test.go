package sandbox_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/sandbox"
	"github.com/walletgate/walletgate/signedretry"
)

func TestFund(t *testing.T) {
	e := newEnv(t)
	_, w := e.customer("Fun Ding")
	p := "/sandbox/internal-accounts/" + w + "/fund"
	var a sandbox.InternalAccount
	e.do("POST", p, map[string]any{"amount": 2_500_000}).ok(t, 200, &a)
	if a.Balance != (sandbox.Money{Amount: 2_500_000, Currency: "USDB"}) {
		t.Fatalf("funded %+v", a)
	}
	e.do("POST", p, map[string]any{"amount": 700, "currency": "USD"}).ok(t, 200, &a)
	if len(a.Balances) != 2 || a.Balances[1] != (sandbox.Money{Amount: 700, Currency: "USD"}) {
		t.Fatalf("balances %+v", a.Balances)
	}
	e.do("POST", p, map[string]any{"amount": 0}).fails(t, 400, apierror.InvalidAmount)
	e.do("POST", p, map[string]any{"amount": -5}).fails(t, 400, apierror.InvalidAmount)
	e.do("POST", p, map[string]any{"amount": sandbox.MaxAmount + 1}).fails(t, 400, apierror.AmountOutOfRange)
	e.do("POST", p, map[string]any{"amount": 1, "currency": "XYZ"}).fails(t, 400, apierror.InvalidCurrency)
	e.do("POST", p, `{"amount":1.5}`).fails(t, 400, apierror.InvalidInput)
	e.do("POST", "/sandbox/internal-accounts/InternalAccount:00000000-0000-4000-8000-000000000000/fund", map[string]any{"amount": 1}).
		fails(t, 404, apierror.ReferenceNotFound)
}

// transfer posts a transfer and returns the transaction.
func (e *env) transfer(in bool, ext, wallet string, amount int64, headers ...string) (sandbox.Transaction, resp) {
	path, body := "/transfer-out", map[string]any{"source": map[string]string{"accountId": wallet},
		"destination": map[string]string{"accountId": ext}, "amount": amount}
	if in {
		path, body = "/transfer-in", map[string]any{"source": map[string]string{"accountId": ext},
			"destination": map[string]string{"accountId": wallet}, "amount": amount}
	}
	r := e.do("POST", path, body, headers...)
	if !in && r.status == 202 {
		// Transfer-out is a signed retry: a session of the wallet stamps it.
		var ch signedretry.Challenge
		r.ok(e.t, 202, &ch)
		r = e.retry(e.walletKey(wallet), ch, "POST", path, body, headers...)
	}
	var tx sandbox.Transaction
	if r.status == 201 {
		r.ok(e.t, 201, &tx)
	}
	return tx, r
}

func (e *env) tx(id string) sandbox.Transaction {
	e.t.Helper()
	return get[sandbox.Transaction](e, "/transactions/"+id)
}

func TestTransferSuffixes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, tc := range []struct {
			suffix, status, reason string
		}{
			{"002", "FAILED", "INSUFFICIENT_FUNDS"},
			{"003", "FAILED", "ACCOUNT_CLOSED"},
			{"004", "FAILED", "BANK_REJECTED"},
			{"005", "PENDING", ""},
			{"001", "COMPLETED", ""},
			{"102", "COMPLETED", ""},
		} {
			for _, in := range []bool{true, false} {
				e := newBubbleEnv(t, sandbox.Config{})
				c, w := e.customer("Tra Nsfer")
				ext := e.external(c.ID, usdAccount("4444444"+tc.suffix))
				e.do("POST", "/sandbox/internal-accounts/"+w+"/fund", map[string]any{"amount": 10_000, "currency": "USD"}).ok(t, 200, nil)
				tx, r := e.transfer(in, ext.ID, w, 1_000)
				r.ok(t, 201, nil)
				want := int64(10_000)
				switch {
				case tc.status == "COMPLETED" && in:
					want = 11_000
				case tc.status == "COMPLETED", tc.status == "PENDING" && !in:
					want = 9_000
				}
				if tx.Status != tc.status || tx.FailureReason != tc.reason || e.balance(w, "USD") != want {
					t.Errorf("%s in=%v: %s %s, balance %d (want %d)", tc.suffix, in, tx.Status, tx.FailureReason, e.balance(w, "USD"), want)
				}
				wantType := "OUTGOING"
				if in {
					wantType = "INCOMING"
				}
				if tx.Type != wantType || tx.SentAmount.Amount != 1_000 || tx.CustomerID != c.ID {
					t.Errorf("%s: %+v", tc.suffix, tx)
				}
				if tc.suffix != "005" {
					continue
				}
				// The delayed failure: pending until 30 s have passed.
				time.Sleep(sandbox.DelayedFailureAfter - 1)
				if got := e.tx(tx.ID); got.Status != "PENDING" {
					t.Errorf("005 early: %+v", got)
				}
				time.Sleep(1)
				got := e.tx(tx.ID)
				if got.Status != "FAILED" || got.FailureReason != "TIMEOUT" || e.balance(w, "USD") != 10_000 {
					t.Errorf("005 in=%v late: %+v balance %d", in, got, e.balance(w, "USD"))
				}
			}
		}
	})
}

func TestTransferErrors(t *testing.T) {
	e := newEnv(t)
	c, w := e.customer("Err Ors")
	ext := e.external(c.ID, usdAccount("88888801"))
	// The balance is too low for a transfer-out.
	_, r := e.transfer(false, ext.ID, w, 1)
	r.fails(t, 400, apierror.InvalidAmount)
	_, r = e.transfer(true, ext.ID, w, 0)
	r.fails(t, 400, apierror.InvalidAmount)
	_, r = e.transfer(true, ext.ID, w, sandbox.MaxAmount+1)
	r.fails(t, 400, apierror.AmountOutOfRange)
	_, r = e.transfer(true, "bad", "worse", 1)
	if got := fields(r.fails(t, 400, apierror.InvalidInput)); len(got) != 2 {
		t.Fatalf("fields %v", got)
	}
	_, r = e.transfer(true, "ExternalAccount:00000000-0000-4000-8000-000000000000", w, 1)
	r.fails(t, 404, apierror.ReferenceNotFound)
	_, r = e.transfer(true, ext.ID, "InternalAccount:00000000-0000-4000-8000-000000000000", 1)
	r.fails(t, 404, apierror.ReferenceNotFound)
	_, otherWallet := e.customer("Someone Else")
	_, r = e.transfer(true, ext.ID, otherWallet, 1)
	r.fails(t, 400, apierror.InvalidInput)
	// An account in a currency outside the table cannot be registered, so
	// no transfer reaches one (TestExternalAccountCurrencyTable).
	f := e.do("POST", "/customers/external-accounts", map[string]any{"customerId": c.ID, "currency": "XYZ", "ownershipType": "THIRD_PARTY",
		"accountInfo": map[string]any{"accountType": "ETHEREUM_WALLET", "address": "0x9999999999999999999999999999999999999999", "vaspName": "Kraken"}}).
		fails(t, 400, apierror.InvalidInput)
	apierrortest.WantFields(t, f, apierror.InvalidInput, "currency")
	e.do("GET", "/transactions/Transaction:nope", nil).fails(t, 404, apierror.TransactionNotFound)
	e.do("POST", "/transfer-in", `{"amount":"ten"}`).fails(t, 400, apierror.InvalidInput)
}

func TestTransferOwnershipThreshold(t *testing.T) {
	e := newEnv(t)
	c, w := e.customer("Thr Eshold")
	ext := e.external(c.ID, evmWallet("001"))
	if ext.Status != "PENDING_OWNERSHIP_VERIFICATION" {
		t.Fatalf("status %s", ext.Status)
	}
	e.do("POST", "/sandbox/internal-accounts/"+w+"/fund", map[string]any{"amount": 5_000_000_000, "currency": "USDC"}).ok(t, 200, nil)
	// Below 1000 USDC the unverified wallet receives.
	tx, r := e.transfer(false, ext.ID, w, 999_999_999)
	r.ok(t, 201, nil)
	if tx.Status != "COMPLETED" {
		t.Fatalf("below threshold %+v", tx)
	}
	_, r = e.transfer(false, ext.ID, w, 1_000_000_000)
	if r.fails(t, 400, apierror.ExternalAccountVerificationRequired).Details["field"] != "destination.accountId" {
		t.Fatal("field")
	}
}

func TestTransferIdempotency(t *testing.T) {
	e := newEnv(t)
	c, w := e.customer("Idem Potent")
	ext := e.external(c.ID, usdAccount("12121201"))
	key := []string{"Idempotency-Key", "2f1c3a1e-8d4b-4b53-9a51-6f0f3c1f0a11"}
	first, r := e.transfer(true, ext.ID, w, 500, key...)
	r.ok(t, 201, nil)
	again, r := e.transfer(true, ext.ID, w, 500, key...)
	r.ok(t, 201, nil)
	if again.ID != first.ID || e.balance(w, "USD") != 500 {
		t.Fatalf("replay made a new transfer: %s %s balance %d", first.ID, again.ID, e.balance(w, "USD"))
	}
	_, r = e.transfer(true, ext.ID, w, 501, key...)
	r.fails(t, 409, apierror.Conflict)
	// Keys belong to the platform, not to a route: the key on another
	// route is another request.
	_, r = e.transfer(false, ext.ID, w, 500, key...)
	r.fails(t, 409, apierror.Conflict)
	out, r := e.transfer(false, ext.ID, w, 500, "Idempotency-Key", "2f1c3a1e-8d4b-4b53-9a51-6f0f3c1f0a12")
	r.ok(t, 201, nil)
	if out.ID == first.ID || e.balance(w, "USD") != 0 {
		t.Fatalf("transfer-out %+v", out)
	}
	_, r = e.transfer(true, ext.ID, w, 500, "Idempotency-Key", "transfer-1")
	if f := r.fails(t, 400, apierror.InvalidInput); f.Details["field"] != "Idempotency-Key" {
		t.Fatalf("details %v do not name the header", f.Details)
	}
}

package sandbox_test

import (
	"encoding/json"
	"testing"
	"testing/synctest"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/sandbox"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/signedretry/stamper"
	"github.com/walletgate/walletgate/walletauth/authclient"
)

// TestTransferOutSignedRetry: a transfer out of an embedded wallet is a
// signed retry stamped by a session of the wallet, binding the source,
// destination, amount and currency; every failure of the retry leaves the
// wallet untouched.
func TestTransferOutSignedRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newBubbleEnv(t, sandbox.Config{})
		c, w := e.customer("Sig Ned")
		key := e.login(w)
		e.do("POST", "/sandbox/internal-accounts/"+w+"/fund", map[string]any{"amount": 1_000, "currency": "USD"}).ok(t, 200, nil)
		ext := e.external(c.ID, usdAccount("61616101"))
		body := map[string]any{"source": map[string]string{"accountId": w}, "destination": map[string]string{"accountId": ext.ID}, "amount": 400}
		const path = "/transfer-out"

		ch := e.challenge("POST", path, body)
		var payload struct {
			Type       string         `json:"type"`
			AccountID  string         `json:"accountId"`
			Parameters map[string]any `json:"parameters"`
		}
		if err := json.Unmarshal([]byte(ch.PayloadToSign), &payload); err != nil {
			t.Fatal(err)
		}
		if payload.Type != sandbox.OpTransferOut || payload.AccountID != w || payload.Parameters["sourceAccountId"] != w ||
			payload.Parameters["destinationAccountId"] != ext.ID || payload.Parameters["amount"] != 400.0 || payload.Parameters["currency"] != "USD" {
			t.Fatalf("payload %+v", payload)
		}
		if e.balance(w, "USD") != 1_000 {
			t.Fatal("the first leg moved funds")
		}

		// Failures of the retry.
		stranger, _ := authclient.NewClientKey()
		e.retry(stranger, ch, "POST", path, body).fails(t, 401, apierror.WalletSignatureInvalid)
		_, other := e.customer("Oth Er")
		e.retry(e.login(other), ch, "POST", path, body).fails(t, 401, apierror.WalletSignatureInvalid)
		e.do("POST", path, body, stamper.HeaderRequestID, ch.RequestID).fails(t, 401, apierror.WalletSignatureMissing)
		e.do("POST", path, body, stamper.HeaderSignature, "abc").fails(t, 401, apierror.RequestIDMissing)
		e.do("POST", path, body, stamper.HeaderSignature, "!!", stamper.HeaderRequestID, ch.RequestID).fails(t, 401, apierror.WalletSignatureMalformed)
		more := map[string]any{"source": body["source"], "destination": body["destination"], "amount": 900}
		e.retry(key, ch, "POST", path, more).fails(t, 401, apierror.WalletSignatureBodyMismatch)
		if e.balance(w, "USD") != 1_000 {
			t.Fatal("a refused retry moved funds")
		}

		// The retry executes once.
		var tx sandbox.Transaction
		e.retry(key, ch, "POST", path, body).ok(t, 201, &tx)
		if tx.Type != sandbox.Outgoing || tx.SentAmount == nil || *tx.SentAmount != (sandbox.Money{Amount: 400, Currency: "USD"}) ||
			tx.Source.AccountID != w || tx.Destination.AccountID != ext.ID || e.balance(w, "USD") != 600 {
			t.Fatalf("transfer %+v balance %d", tx, e.balance(w, "USD"))
		}
		e.retry(key, ch, "POST", path, body).fails(t, 401, apierror.Unauthorized)
		if e.balance(w, "USD") != 600 {
			t.Fatal("a replay moved funds")
		}

		// The sandbox literal stands in for the stamp.
		ch = e.challenge("POST", path, body)
		e.do("POST", path, body, stamper.HeaderSignature, signedretry.SandboxSignature, stamper.HeaderRequestID, ch.RequestID).ok(t, 201, nil)
		if e.balance(w, "USD") != 200 {
			t.Fatalf("balance %d", e.balance(w, "USD"))
		}

		// A retry that would overdraw is refused (400) before its request is
		// consumed: after funding, the same retry executes.
		amount := func(n int64) map[string]any {
			return map[string]any{"source": body["source"], "destination": body["destination"], "amount": n}
		}
		ch = e.challenge("POST", path, amount(200))
		e.signed(key, "POST", path, amount(150)).ok(t, 201, nil)
		e.retry(key, ch, "POST", path, amount(200)).fails(t, 400, apierror.InvalidAmount)
		if e.balance(w, "USD") != 50 {
			t.Fatalf("balance %d", e.balance(w, "USD"))
		}
		e.do("POST", "/sandbox/internal-accounts/"+w+"/fund", map[string]any{"amount": 500, "currency": "USD"}).ok(t, 200, nil)
		e.retry(key, ch, "POST", path, amount(200)).ok(t, 201, nil)
		if e.balance(w, "USD") != 350 {
			t.Fatalf("balance %d", e.balance(w, "USD"))
		}

		// First-leg refusals answer no challenge.
		e.do("POST", path, amount(10_000)).fails(t, 400, apierror.InvalidAmount)
		e.do("POST", path, amount(0)).fails(t, 400, apierror.InvalidAmount)
		e.do("POST", path, map[string]any{"source": map[string]string{"accountId": "InternalAccount:00000000-0000-4000-8000-000000000000"},
			"destination": body["destination"], "amount": 1}).fails(t, 404, apierror.ReferenceNotFound)
		e.do("POST", path, map[string]any{"source": map[string]string{"accountId": "x"}, "destination": body["destination"], "amount": 1}).
			fails(t, 400, apierror.InvalidInput)

		// With an Idempotency-Key, the challenge leg is not remembered and a
		// repeat of the completed transfer returns it.
		idem := []string{"Idempotency-Key", "7b0c2b55-1d55-4a3e-8a55-0f6f7f6b1e01"}
		ch = e.challenge("POST", path, amount(100), idem...)
		var first, again sandbox.Transaction
		e.retry(key, ch, "POST", path, amount(100), idem...).ok(t, 201, &first)
		e.do("POST", path, amount(100), idem...).ok(t, 201, &again)
		if again.ID != first.ID || e.balance(w, "USD") != 250 {
			t.Fatalf("replay %s %s balance %d", first.ID, again.ID, e.balance(w, "USD"))
		}

		// An expired challenge.
		ch = e.challenge("POST", path, amount(100))
		time.Sleep(signedretry.DefaultTTL)
		e.retry(key, ch, "POST", path, amount(100)).fails(t, 401, apierror.Unauthorized)
		if e.balance(w, "USD") != 250 {
			t.Fatalf("balance %d", e.balance(w, "USD"))
		}
	})
}

package main

import (
	"net/http"
	"testing"

	"github.com/walletgate/walletgate/apierror"
)

const usdc = 1_000_000 // minor units of one USDC

// TestPayoutPolicy: the host's risk policy (PayoutRules) decides each
// signed payout in its transaction. A new destination takes at most 2,000
// USDC in its first payout; 5,000 USDC needs a passkey session; the day's
// 20,000 USDC per customer is a hard limit. Each refusal is 403 naming its
// rule, debits nothing and leaves the signed request usable.
func TestPayoutPolicy(t *testing.T) {
	e := newEnv(t, 4)
	c, key := e.customer("frank@example.com")
	e.fund(c.ID, 100_000*usdc)
	account, wk := e.wallet(c.ID)
	if err := e.prove(account, wk, false); err != nil {
		t.Fatal(err)
	}
	path := "/customers/" + c.ID + "/payouts"
	refused := func(amount int64, code apierror.Code, rule string) (body []byte, hdr map[string]string) {
		t.Helper()
		before := e.balance(c.ID)
		body, ch := e.firstLeg(c.ID, account, amount)
		hdr = retryHeaders(t, ch, key)
		err := wantAPIError(t, e.call(http.MethodPost, path, body, hdr), code)
		if err.Details["rule"] != rule {
			t.Fatalf("refused by %v, want %s: %v", err.Details["rule"], rule, err)
		}
		if e.balance(c.ID) != before {
			t.Fatal("a refused payout debited the ledger")
		}
		return body, hdr
	}
	paid := func(amount int64) {
		t.Helper()
		body, ch := e.firstLeg(c.ID, account, amount)
		want(t, e.call(http.MethodPost, path, body, retryHeaders(t, ch, key)), http.StatusOK, nil)
	}

	// The wallet was proven just now: its first payout is at most 2,000.
	refused(2_000*usdc, apierror.PayoutBlocked, "new-destination")
	paid(1_999 * usdc)
	// Paid once, it is no longer new; 5,000 wants a passkey session, and
	// the email session is refused.
	refused(5_000*usdc, apierror.StepUpRequired, "large-needs-passkey")
	for range 3 {
		paid(4_999 * usdc)
	}
	// 1,999 + 3×4,999 = 16,996 of the day's 20,000.
	body, hdr := refused(3_005*usdc, apierror.PayoutBlocked, "daily-limit")
	paid(3_004 * usdc)
	refused(1, apierror.PayoutBlocked, "daily-limit")
	if got := e.balance(c.ID); got != 80_000*usdc {
		t.Fatalf("balance %d, want 80000 USDC: the day's limit paid out", got)
	}
	// The refused request is still usable: it is refused again, not 401.
	wantAPIError(t, e.call(http.MethodPost, path, body, hdr), apierror.PayoutBlocked)
}

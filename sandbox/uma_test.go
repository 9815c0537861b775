package sandbox_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/sandbox"
)

func TestUMAReceive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newBubbleEnv(t, sandbox.Config{})
		c, w := e.customer("Rece Iver")
		receive := func(sender string, amount int64) resp {
			return e.do("POST", "/sandbox/uma/receive", map[string]any{"senderUmaAddress": sender,
				"receiverUmaAddress": c.UMAAddress, "receivingCurrencyCode": "USD", "receivingCurrencyAmount": amount})
		}
		for _, tc := range []struct {
			sender, status, reason, sentCur string
			credited                        int64
		}{
			{sandbox.UMASuccessUSD, "COMPLETED", "", "USD", 1_000},
			{sandbox.UMASuccessEUR, "COMPLETED", "", "EUR", 1_000},
			{sandbox.UMASuccessMXN, "COMPLETED", "", "MXN", 1_000},
			{sandbox.UMALongPendingUSD, "PENDING", "", "USD", 0},
			{sandbox.UMAComplianceFailUSD, "FAILED", "COMPLIANCE_CHECK_FAILED", "USD", 0},
			{"$friend@other.example", "COMPLETED", "", "USD", 1_000},
		} {
			before := e.balance(w, "USD")
			var tx sandbox.Transaction
			receive(tc.sender, 1_000).ok(t, 200, &tx)
			if tx.Status != tc.status || tx.FailureReason != tc.reason || tx.Type != "INCOMING" || tx.SentAmount.Currency != tc.sentCur ||
				tx.Destination.AccountID != w || e.balance(w, "USD")-before != tc.credited {
				t.Errorf("%s: %+v credited %d", tc.sender, tx, e.balance(w, "USD")-before)
			}
			if tc.sender == sandbox.UMALongPendingUSD {
				time.Sleep(sandbox.LongPendingUMAAfter)
				if got := e.tx(tx.ID); got.Status != "COMPLETED" || e.balance(w, "USD")-before != 1_000 {
					t.Errorf("long pending later: %+v", got)
				}
			}
		}
		if got := e.tx(e.mustReceive(t, c.ID).ID).SentAmount; got.Amount != 55 || got.Currency != "EUR" {
			t.Fatalf("EUR sender pays 0.92 per dollar, rounded up: %+v", got)
		}

		// Deposits go to the default UMA deposit account when there is one.
		ext := e.external(c.ID, accountBody(usdAccount("31313101")).withDefault())
		var tx sandbox.Transaction
		receive(sandbox.UMASuccessUSD, 500).ok(t, 200, &tx)
		if tx.Destination.AccountID != ext.ID {
			t.Fatalf("deposit went to %s", tx.Destination.AccountID)
		}

		// Errors.
		receive("not-uma", 1).fails(t, 400, apierror.InvalidUMAAddress)
		receive("$nobody@sandbox.uma.money", 1).fails(t, 404, apierror.UMANotFound)
		receive(sandbox.UMASuccessUSD, 0).fails(t, 400, apierror.InvalidAmount)
		e.do("POST", "/sandbox/uma/receive", map[string]any{"senderUmaAddress": sandbox.UMASuccessUSD,
			"receiverUmaAddress": "$ghost@sandbox.walletgate.dev", "receivingCurrencyCode": "USD", "receivingCurrencyAmount": 1}).
			fails(t, 404, apierror.UMANotFound)
		e.do("POST", "/sandbox/uma/receive", map[string]any{"senderUmaAddress": sandbox.UMASuccessUSD,
			"receiverUmaAddress": "ghost", "receivingCurrencyCode": "USD", "receivingCurrencyAmount": 1}).fails(t, 400, apierror.InvalidUMAAddress)
		e.do("POST", "/sandbox/uma/receive", map[string]any{"senderUmaAddress": sandbox.UMASuccessUSD,
			"receivingCurrencyCode": "USD", "receivingCurrencyAmount": 1}).fails(t, 400, apierror.InvalidInput)
		e.do("POST", "/sandbox/uma/receive", map[string]any{"senderUmaAddress": sandbox.UMASuccessUSD,
			"customerId": "Customer:nobody", "receivingCurrencyCode": "USD", "receivingCurrencyAmount": 1}).fails(t, 404, apierror.UserNotFound)
		other, _ := e.customer("Not Me")
		e.do("POST", "/sandbox/uma/receive", map[string]any{"senderUmaAddress": sandbox.UMASuccessUSD, "receiverUmaAddress": c.UMAAddress,
			"customerId": other.ID, "receivingCurrencyCode": "USD", "receivingCurrencyAmount": 1}).fails(t, 400, apierror.InvalidInput)
		e.do("POST", "/sandbox/uma/receive", map[string]any{"senderUmaAddress": sandbox.UMASuccessUSD, "customerId": c.ID,
			"receivingCurrencyCode": "QQQ", "receivingCurrencyAmount": 1}).fails(t, 400, apierror.InvalidCurrency)
	})
}

// mustReceive receives 0.59 USD from the EUR sandbox sender by customer id.
func (e *env) mustReceive(t *testing.T, customerID string) sandbox.Transaction {
	var tx sandbox.Transaction
	e.do("POST", "/sandbox/uma/receive", map[string]any{"senderUmaAddress": sandbox.UMASuccessEUR, "customerId": customerID,
		"receivingCurrencyCode": "USD", "receivingCurrencyAmount": 59}).ok(t, 200, &tx)
	return tx
}

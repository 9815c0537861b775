package main

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
)

const usdc = 1_000_000 // minor units of one USDC

// TestPayoutPolicy: the host's risk policy (PayoutRules) decides each
// signed payout in its transaction. A new destination receives at most
// 2,000 USDC in its first day, however many payouts it takes; 5,000 USDC
// needs a passkey session; the day's 20,000 USDC per customer is a hard
// limit. Each refusal is 403 naming its rule, debits nothing and leaves the
// signed request usable.
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

	// The wallet was proven just now: it receives at most 2,000 in its
	// first day, and a first payout does not end the cool-off (a dust
	// payout once did).
	paid(1_999 * usdc)
	refused(2*usdc, apierror.PayoutBlocked, "new-destination")
	paid(1 * usdc)
	refused(1, apierror.PayoutBlocked, "new-destination")
	// A day later the destination is no longer new; 5,000 wants a passkey
	// session, and the email session is refused.
	e.clock.Add(24 * time.Hour)
	key = e.login(c)
	refused(5_000*usdc, apierror.StepUpRequired, "large-needs-passkey")
	for range 4 {
		paid(4_999 * usdc)
	}
	// 4×4,999 = 19,996 of the day's 20,000 (yesterday's 2,000 left the
	// window).
	body, hdr := refused(5*usdc, apierror.PayoutBlocked, "daily-limit")
	paid(4 * usdc)
	refused(1, apierror.PayoutBlocked, "daily-limit")
	if got := e.balance(c.ID); got != 78_000*usdc {
		t.Fatalf("balance %d, want 78000 USDC", got)
	}
	// The refused request is still usable: it is refused again, not 401.
	wantAPIError(t, e.call(http.MethodPost, path, body, hdr), apierror.PayoutBlocked)
}

// TestPayoutHeldForTheRiskDesk: a payout the policy holds answers 202 with
// its approval and debits nothing, however many are held (a host that
// checked only the error once paid them all); the risk desk's approval
// executes it once, through the gate and the window as they are then; a
// refusal and the approval's expiry end it; a change of the wallet's
// credentials or email holds the next payouts from 1,000 USDC for a day.
func TestPayoutHeldForTheRiskDesk(t *testing.T) {
	e := newEnv(t, 4)
	c, key := e.customer("grete@example.com")
	e.fund(c.ID, 100_000*usdc)
	account, wk := e.wallet(c.ID)
	if err := e.prove(account, wk, false); err != nil {
		t.Fatal(err)
	}
	e.clock.Add(24 * time.Hour) // past the destination's cool-off
	key = e.login(c)
	path := "/customers/" + c.ID + "/payouts"
	hold := func(amount int64, rule string) PayoutApproval {
		t.Helper()
		body, ch := e.firstLeg(c.ID, account, amount)
		var ap PayoutApproval
		want(t, e.call(http.MethodPost, path, body, retryHeaders(t, ch, key)), http.StatusAccepted, &ap)
		if ap.State != storage.ApprovalWaiting || ap.Rule != rule || ap.Amount != amount || ap.AccountID != account {
			t.Fatalf("held %+v, want a WAITING approval of %d by %s", ap, amount, rule)
		}
		return ap
	}
	var held []PayoutApproval
	for range 5 {
		held = append(held, hold(10_000*usdc, "review"))
	}
	if e.balance(c.ID) != 100_000*usdc || e.payoutRows(c.ID) != 0 {
		t.Fatalf("five held payouts debited %d and wrote %d rows", 100_000*usdc-e.balance(c.ID), e.payoutRows(c.ID))
	}
	var got PayoutApproval
	want(t, e.call(http.MethodGet, "/customers/"+c.ID+"/payout-approvals/"+held[0].ID, nil, nil), http.StatusOK, &got)
	if got.ID != held[0].ID || got.State != storage.ApprovalWaiting {
		t.Fatalf("GET of a held payout: %+v", got)
	}
	e.srv.platforms[otherKey] = "Platform:other"
	wantAPIError(t, e.callAs(otherKey, http.MethodGet, "/customers/"+c.ID+"/payout-approvals/"+held[0].ID, nil, nil), apierror.ReferenceNotFound)

	desk := func(action, id string) *httptest.ResponseRecorder {
		return e.callAs(riskDeskKey, http.MethodPost, "/operator/payout-approvals/"+id+"/"+action, nil, nil)
	}
	// Only the risk desk's key reaches its routes, and its key reaches
	// nothing else.
	wantAPIError(t, e.call(http.MethodPost, "/operator/payout-approvals/"+held[0].ID+"/approve", nil, nil), apierror.Unauthorized)
	wantAPIError(t, e.callAs(riskDeskKey, http.MethodGet, "/customers/"+c.ID+"/payout-approvals/"+held[0].ID, nil, nil), apierror.Unauthorized)

	// The approval pays once; again it is 409 APPROVED.
	var paid Payout
	want(t, desk("approve", held[0].ID), http.StatusOK, &paid)
	if paid.ApprovalID != held[0].ID || paid.Amount != 10_000*usdc || e.balance(c.ID) != 90_000*usdc || e.payoutRows(c.ID) != 1 {
		t.Fatalf("approved payout %+v, balance %d, rows %d", paid, e.balance(c.ID), e.payoutRows(c.ID))
	}
	if e := wantAPIError(t, desk("approve", held[0].ID), apierror.Conflict); e.Details["state"] != storage.ApprovalApproved {
		t.Fatalf("a second approval: %v", e)
	}
	// A refusal ends one.
	want(t, desk("refuse", held[1].ID), http.StatusOK, &got)
	if got.State != storage.ApprovalRefused {
		t.Fatalf("refused: %+v", got)
	}
	wantAPIError(t, desk("approve", held[1].ID), apierror.Conflict)
	// The window fills: the next approval pays, the one after is refused
	// by the window and still waits.
	want(t, desk("approve", held[2].ID), http.StatusOK, &paid)
	if e := wantAPIError(t, desk("approve", held[3].ID), apierror.PayoutBlocked); e.Details["rule"] != "daily-limit" {
		t.Fatalf("an approval past the window: %v", e)
	}
	want(t, e.call(http.MethodGet, "/customers/"+c.ID+"/payout-approvals/"+held[3].ID, nil, nil), http.StatusOK, &got)
	if got.State != storage.ApprovalWaiting || e.balance(c.ID) != 80_000*usdc || e.payoutRows(c.ID) != 2 {
		t.Fatalf("after a refused approval: %+v, balance %d", got, e.balance(c.ID))
	}
	// Past its TTL a held payout is EXPIRED and no longer approved.
	e.clock.Add(24*time.Hour + time.Minute)
	if e := wantAPIError(t, desk("approve", held[4].ID), apierror.Conflict); e.Details["state"] != "EXPIRED" {
		t.Fatalf("an approval of an expired payout: %v", e)
	}
	wantAPIError(t, desk("approve", "PayoutApproval:00000000-0000-4000-8000-000000000000"), apierror.ReferenceNotFound)

	// A change of the wallet's email, signed by its session, holds the
	// next payouts from 1,000 USDC for a day, whatever the rule below.
	key = e.login(c)
	ctx := e.ctx()
	call := signedretry.Request{Method: http.MethodPatch, Path: "/customers/" + c.ID, Body: []byte(`{"email":"grete@new.example"}`)}
	_, ch, err := e.svc.Auth.UpdateEmail(ctx, c.ID, "grete@new.example", nil, call)
	if err != nil || ch == nil {
		t.Fatalf("email change, leg 1: %v", err)
	}
	sig, err := key.Stamp(ch.PayloadToSign)
	if err != nil {
		t.Fatal(err)
	}
	call.Signature, call.RequestID = sig, ch.RequestID
	if _, _, err := e.svc.Auth.UpdateEmail(ctx, c.ID, "", nil, call); err != nil {
		t.Fatalf("email change, leg 2: %v", err)
	}
	hold(1_000*usdc, "after-security-change")
	body, ch2 := e.firstLeg(c.ID, account, 999*usdc)
	want(t, e.call(http.MethodPost, path, body, retryHeaders(t, ch2, key)), http.StatusOK, nil)
}

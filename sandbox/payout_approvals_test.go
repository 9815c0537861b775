package sandbox_test

import (
	"encoding/json"
	"errors"
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
	"github.com/walletgate/walletgate/storage/memory"
	"github.com/walletgate/walletgate/walletauth"
	"github.com/walletgate/walletgate/walletauth/authclient"
)

// approvalFixture is a funded wallet, its EMAIL_OTP session and an
// external account paid from it.
type approvalFixture struct {
	e      *env
	wallet string
	otp    *authclient.ClientKey
	ext    sandbox.ExternalAccount
}

// fundUSD is the USD balance an approvalFixture starts with.
const fundUSD = 1_000_000

func newApprovalFixture(e *env, name, number string) *approvalFixture {
	e.t.Helper()
	c, w := e.customer(name)
	f := &approvalFixture{e: e, wallet: w, otp: e.login(w), ext: e.external(c.ID, usdAccount(number))}
	e.do("POST", "/sandbox/internal-accounts/"+w+"/fund", map[string]any{"amount": fundUSD, "currency": "USD"}).ok(e.t, 200, nil)
	return f
}

// body is a transfer-out body of amount from the wallet to the account.
func (f *approvalFixture) body(amount int64) map[string]any {
	return map[string]any{"source": map[string]string{"accountId": f.wallet}, "destination": map[string]string{"accountId": f.ext.ID},
		"amount": amount}
}

// hold makes a transfer out of ApprovalPayoutUSDCents signed by the OTP
// session and returns the PayoutApproval it answers with, checked.
func (f *approvalFixture) hold(headers ...string) sandbox.PayoutApproval {
	f.e.t.Helper()
	r := f.e.signed(f.otp, "POST", "/transfer-out", f.body(sandbox.ApprovalPayoutUSDCents), headers...)
	return f.held(r)
}

// held checks a 202 PayoutApproval answer of a held transfer out.
func (f *approvalFixture) held(r resp) sandbox.PayoutApproval {
	t := f.e.t
	t.Helper()
	var ap sandbox.PayoutApproval
	r.ok(t, 202, &ap)
	var raw map[string]any
	if err := json.Unmarshal(r.body, &raw); err != nil {
		t.Fatal(err)
	}
	if _, ok := raw["payloadToSign"]; ok {
		t.Fatalf("a held payout looks like a challenge: %s", r.body)
	}
	if !strings.HasPrefix(ap.ID, "PayoutApproval:") || ap.State != "WAITING" || ap.Rule != sandbox.PayoutRuleApproval ||
		ap.SourceAccountID != f.wallet || ap.DestinationAccountID != f.ext.ID || ap.Amount != sandbox.ApprovalPayoutUSDCents ||
		ap.Currency != "USD" || ap.RequiredApprovals != 1 || len(ap.Approvers) != 0 || ap.TransactionID != "" ||
		ap.ExpiresAt.Sub(ap.CreatedAt) != sandbox.ApprovalTTL {
		t.Fatalf("held payout %s", r.body)
	}
	if b := f.e.balance(f.wallet, "USD"); b != fundUSD {
		t.Fatalf("a held payout debited the wallet: balance %d", b)
	}
	return ap
}

// approvalPath is the signed approval route of ap.
func approvalPath(id string) string { return "/payout-approvals/" + id + "/approve" }

// state reads the approval's state over HTTP.
func (f *approvalFixture) state(id string) sandbox.PayoutApproval {
	f.e.t.Helper()
	return get[sandbox.PayoutApproval](f.e, "/payout-approvals/"+id)
}

// conflict asserts a 409 CONFLICT naming the approval's state.
func conflict(t *testing.T, r resp, state string) {
	t.Helper()
	if f := r.fails(t, 409, apierror.Conflict); f.Details["state"] != state {
		t.Fatalf("details %v, want state %s", f.Details, state)
	}
}

// TestPayoutApprovalBySecondCredential: a transfer out of exactly
// ApprovalPayoutUSDCents is held (202 PayoutApproval, nothing debited);
// the approval is a signed APPROVE_PAYOUT of the wallet naming the
// payout, which the credential that signed the payout may not give (403
// FORBIDDEN, the request stays usable) and a session of another
// credential (a passkey) gives: 200 Transaction, the wallet debited once,
// the approval APPROVED naming the transaction and the approver. Any
// further approval or refusal is 409 CONFLICT. On memory and PostgreSQL.
func TestPayoutApprovalBySecondCredential(t *testing.T) {
	t.Run("memory", func(t *testing.T) { payoutApprovalBySecondCredential(t, memory.New()) })
	if pg := payoutPostgres(t); pg != nil {
		t.Run("postgres", func(t *testing.T) { payoutApprovalBySecondCredential(t, pg) })
	}
}

func payoutApprovalBySecondCredential(t *testing.T, store storage.Store) {
	e := newEnvWith(t, sandbox.Config{Store: store})
	f := newApprovalFixture(e, "Appro Val", "81818101")
	// A passkey the payout's own EMAIL_OTP session enrolls is that
	// session's "second factor": it approves nothing until its
	// security-change period ends (the phished-session attack).
	pk, a := e.enrolPasskey(f.wallet, f.otp)
	early := f.hold()
	if r := e.signed(e.passkeySession(pk, a), "POST", approvalPath(early.ID), nil); !strings.Contains(string(r.body), "does not count as another credential") {
		t.Fatalf("an approval by a passkey the signer's session enrolled: %d %s", r.status, r.body)
	} else {
		r.fails(t, 403, apierror.Forbidden)
	}
	// A day later it is a credential of its own.
	e.advance(int64(walletauth.DefaultSecurityChangePeriod / time.Second))
	f.otp = e.login(f.wallet)
	ap := f.hold()
	if got := f.state(ap.ID); got.State != "WAITING" || got.ID != ap.ID {
		t.Fatalf("GET %+v", got)
	}

	path := approvalPath(ap.ID)
	ch := e.challenge("POST", path, nil)
	var payload struct {
		Type       string         `json:"type"`
		AccountID  string         `json:"accountId"`
		Parameters map[string]any `json:"parameters"`
	}
	if err := json.Unmarshal([]byte(ch.PayloadToSign), &payload); err != nil {
		t.Fatal(err)
	}
	p := payload.Parameters
	if payload.Type != sandbox.OpApprovePayout || payload.AccountID != f.wallet || p["approvalId"] != ap.ID ||
		p["sourceAccountId"] != f.wallet || p["destinationAccountId"] != f.ext.ID ||
		p["amount"] != float64(sandbox.ApprovalPayoutUSDCents) || p["currency"] != "USD" {
		t.Fatalf("payload %s", ch.PayloadToSign)
	}
	// The credential that signed the payout does not approve it, nor does
	// the sandbox literal (no credential), nor a session of another
	// wallet.
	e.retry(f.otp, ch, "POST", path, nil).fails(t, 403, apierror.Forbidden)
	e.do("POST", path, nil, stamper.HeaderSignature, signedretry.SandboxSignature,
		stamper.HeaderRequestID, ch.RequestID).fails(t, 403, apierror.Forbidden)
	_, other := e.customer("Oth Er")
	e.retry(e.login(other), ch, "POST", path, nil).fails(t, 401, apierror.WalletSignatureInvalid)
	if got := f.state(ap.ID); got.State != "WAITING" || len(got.Approvers) != 0 || e.balance(f.wallet, "USD") != fundUSD {
		t.Fatalf("after refusals: %+v, balance %d", got, e.balance(f.wallet, "USD"))
	}

	// A session of the settled passkey stamps the same request: the
	// payout is made.
	passkey := e.passkeySession(pk, a)
	var tx sandbox.Transaction
	e.retry(passkey, ch, "POST", path, nil).ok(t, 200, &tx)
	if tx.Type != sandbox.Outgoing || tx.Source.AccountID != f.wallet || tx.Destination.AccountID != f.ext.ID ||
		tx.SentAmount == nil || tx.SentAmount.Amount != sandbox.ApprovalPayoutUSDCents || tx.SentAmount.Currency != "USD" {
		t.Fatalf("transaction %+v", tx)
	}
	if b := e.balance(f.wallet, "USD"); b != fundUSD-sandbox.ApprovalPayoutUSDCents {
		t.Fatalf("balance %d after the approval", b)
	}
	got := f.state(ap.ID)
	if got.State != "APPROVED" || got.TransactionID != tx.ID || len(got.Approvers) != 1 ||
		!strings.HasPrefix(got.Approvers[0], "credential:") {
		t.Fatalf("approved %+v", got)
	}
	get[sandbox.Transaction](e, "/transactions/"+tx.ID)

	// Done: every further act is 409, and the request is consumed.
	conflict(t, e.do("POST", path, nil), "APPROVED")
	conflict(t, e.retry(passkey, ch, "POST", path, nil), "APPROVED")
	conflict(t, e.do("POST", "/sandbox"+path, nil), "APPROVED")
	conflict(t, e.do("POST", "/sandbox/payout-approvals/"+ap.ID+"/refuse", nil), "APPROVED")
	if b := e.balance(f.wallet, "USD"); b != fundUSD-sandbox.ApprovalPayoutUSDCents {
		t.Fatalf("balance %d", b)
	}
}

// TestPayoutApprovalNotFound: every approval route answers 404
// REFERENCE_NOT_FOUND for an unknown id and for one that is no approval
// id; the routes take the platform credentials.
func TestPayoutApprovalNotFound(t *testing.T) {
	e := newEnv(t)
	for _, id := range []string{"PayoutApproval:00000000-0000-4000-8000-000000000000", "nope", "InternalAccount:00000000-0000-4000-8000-000000000000"} {
		e.do("GET", "/payout-approvals/"+id, nil).fails(t, 404, apierror.ReferenceNotFound)
		e.do("POST", approvalPath(id), nil).fails(t, 404, apierror.ReferenceNotFound)
		e.do("POST", "/sandbox"+approvalPath(id), nil).fails(t, 404, apierror.ReferenceNotFound)
		e.do("POST", "/sandbox/payout-approvals/"+id+"/refuse", nil).fails(t, 404, apierror.ReferenceNotFound)
	}
	e.do("POST", "/sandbox"+approvalPath("nope"), "{").fails(t, 400, apierror.InvalidInput)
	e.user = "someone"
	e.do("GET", "/payout-approvals/nope", nil).fails(t, 401, apierror.Unauthorized)
}

// TestPayoutApprovalOperator: the operator routes act as
// SandboxRiskOperator: approving makes the payout at once (200
// Transaction, debited once); refusing ends a payout unpaid (200
// PayoutApproval REFUSED), which then cannot be approved (409).
func TestPayoutApprovalOperator(t *testing.T) {
	e := newEnv(t)
	f := newApprovalFixture(e, "Oper Ator", "81818201")
	ap := f.hold()
	var tx sandbox.Transaction
	e.do("POST", "/sandbox"+approvalPath(ap.ID), nil).ok(t, 200, &tx)
	if tx.SentAmount == nil || tx.SentAmount.Amount != sandbox.ApprovalPayoutUSDCents || e.balance(f.wallet, "USD") != fundUSD-sandbox.ApprovalPayoutUSDCents {
		t.Fatalf("transaction %+v, balance %d", tx, e.balance(f.wallet, "USD"))
	}
	got := f.state(ap.ID)
	if got.State != "APPROVED" || got.TransactionID != tx.ID || len(got.Approvers) != 1 || got.Approvers[0] != "operator:"+sandbox.SandboxRiskOperator {
		t.Fatalf("approved %+v", got)
	}
	conflict(t, e.do("POST", "/sandbox"+approvalPath(ap.ID), nil), "APPROVED")

	e.do("POST", "/sandbox/internal-accounts/"+f.wallet+"/fund", map[string]any{"amount": sandbox.ApprovalPayoutUSDCents, "currency": "USD"}).ok(t, 200, nil)
	second := f.hold()
	var refused sandbox.PayoutApproval
	e.do("POST", "/sandbox/payout-approvals/"+second.ID+"/refuse", nil).ok(t, 200, &refused)
	if refused.State != "REFUSED" || refused.ID != second.ID || len(refused.Approvers) != 1 || refused.TransactionID != "" {
		t.Fatalf("refused %+v", refused)
	}
	conflict(t, e.do("POST", "/sandbox"+approvalPath(second.ID), nil), "REFUSED")
	conflict(t, e.do("POST", approvalPath(second.ID), nil), "REFUSED")
	conflict(t, e.do("POST", "/sandbox/payout-approvals/"+second.ID+"/refuse", nil), "REFUSED")
	if f.state(second.ID).State != "REFUSED" || e.balance(f.wallet, "USD") != fundUSD {
		t.Fatalf("balance %d after a refusal", e.balance(f.wallet, "USD"))
	}
}

// TestPayoutApprovalExpires: a payout waits ApprovalTTL; from then it is
// EXPIRED and every approval or refusal is 409 CONFLICT, nothing paid. A
// second before, it still waits.
func TestPayoutApprovalExpires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newBubbleEnv(t, sandbox.Config{})
		f := newApprovalFixture(e, "Exp Ired", "81818301")
		ap := f.hold()
		time.Sleep(sandbox.ApprovalTTL - time.Second)
		if got := f.state(ap.ID); got.State != "WAITING" {
			t.Fatalf("a second before expiry: %+v", got)
		}
		ch := e.challenge("POST", approvalPath(ap.ID), nil)
		time.Sleep(time.Second)
		if got := f.state(ap.ID); got.State != "EXPIRED" {
			t.Fatalf("at expiry: %+v", got)
		}
		conflict(t, e.do("POST", approvalPath(ap.ID), nil), "EXPIRED")
		conflict(t, e.retry(e.login(f.wallet), ch, "POST", approvalPath(ap.ID), nil), "EXPIRED")
		conflict(t, e.do("POST", "/sandbox"+approvalPath(ap.ID), nil), "EXPIRED")
		conflict(t, e.do("POST", "/sandbox/payout-approvals/"+ap.ID+"/refuse", nil), "EXPIRED")
		if e.balance(f.wallet, "USD") != fundUSD {
			t.Fatal("an expired payout was paid")
		}
	})
}

// TestPayoutApprovalWindowFilled: the approval pays only if the payout
// still fits the rules: when the customer's daily window filled
// meanwhile, approving is 403 PAYOUT_BLOCKED naming daily-limit, the
// payout still waits and nothing is debited; a balance spent meanwhile is
// 400 INVALID_AMOUNT, as for a transfer out.
func TestPayoutApprovalWindowFilled(t *testing.T) {
	e := newEnv(t)
	f := newApprovalFixture(e, "Win Dow", "81818401")
	passkey := e.settledPasskey(f.wallet, f.otp)
	f.otp = e.login(f.wallet)
	ap := f.hold()
	const half = sandbox.DailyPayoutLimitUSD * 100 / 2
	e.do("POST", "/sandbox/internal-accounts/"+f.wallet+"/fund", map[string]any{"amount": 2 * half, "currency": "USD"}).ok(t, 200, nil)
	e.signed(f.otp, "POST", "/transfer-out", f.body(half)).ok(t, 201, nil)
	e.signed(f.otp, "POST", "/transfer-out", f.body(half)).ok(t, 201, nil)
	blocked(t, e.do("POST", "/sandbox"+approvalPath(ap.ID), nil), apierror.PayoutBlocked, sandbox.PayoutRuleDailyLimit)
	blocked(t, e.signed(passkey, "POST", approvalPath(ap.ID), nil), apierror.PayoutBlocked, sandbox.PayoutRuleDailyLimit)
	if got := f.state(ap.ID); got.State != "WAITING" || len(got.Approvers) != 0 || e.balance(f.wallet, "USD") != fundUSD {
		t.Fatalf("after the refusals: %+v, balance %d", got, e.balance(f.wallet, "USD"))
	}

	g := newApprovalFixture(e, "Bal Ance", "81818402")
	low := g.hold()
	g.e.signed(g.otp, "POST", "/transfer-out", g.body(fundUSD-100)).ok(t, 201, nil)
	e.do("POST", "/sandbox"+approvalPath(low.ID), nil).fails(t, 400, apierror.InvalidAmount)
	if g.state(low.ID).State != "WAITING" || e.balance(g.wallet, "USD") != 100 {
		t.Fatal("a refused approval changed something")
	}
}

// TestPayoutApprovalConcurrent: an operator's and a second credential's
// approval of one payout at once make it once: one answers 200
// Transaction, the other 409 CONFLICT, and the wallet is debited once.
func TestPayoutApprovalConcurrent(t *testing.T) {
	for range 5 {
		e := newEnv(t)
		f := newApprovalFixture(e, "Con Current", "81818501")
		passkey := e.settledPasskey(f.wallet, f.otp)
		f.otp = e.login(f.wallet)
		ap := f.hold()
		ch := e.challenge("POST", approvalPath(ap.ID), nil)
		sig, err := passkey.Stamp(ch.PayloadToSign)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var signed, operator resp
		wg.Go(func() {
			signed = e.do("POST", approvalPath(ap.ID), nil, stamper.HeaderSignature, sig, stamper.HeaderRequestID, ch.RequestID)
		})
		wg.Go(func() { operator = e.do("POST", "/sandbox"+approvalPath(ap.ID), nil) })
		wg.Wait()
		won, lost := signed, operator
		if operator.status == 200 {
			won, lost = operator, signed
		}
		var tx sandbox.Transaction
		won.ok(t, 200, &tx)
		conflict(t, lost, "APPROVED")
		if e.balance(f.wallet, "USD") != fundUSD-sandbox.ApprovalPayoutUSDCents || f.state(ap.ID).TransactionID != tx.ID {
			t.Fatalf("balance %d", e.balance(f.wallet, "USD"))
		}
	}
}

// TestPayoutApprovalIdempotencyKey: a held transfer out is the final
// result of its Idempotency-Key: a repeat, signed or not, gets the same
// PayoutApproval (replayed) and never holds a second payout.
func TestPayoutApprovalIdempotencyKey(t *testing.T) {
	e := newEnv(t)
	f := newApprovalFixture(e, "Key Held", "81818601")
	const key = "6f1c1e52-6a8b-4b53-9b7e-0d0c5c0b7a11"
	ap := f.hold("Idempotency-Key", key)
	// The first leg again, and a stamped retry of it: both replay.
	again := e.do("POST", "/transfer-out", f.body(sandbox.ApprovalPayoutUSDCents), "Idempotency-Key", key)
	if got := f.held(again); got.ID != ap.ID || again.header.Get(idempotency.ReplayedHeader) != "true" {
		t.Fatalf("repeat %+v, replayed %q", got, again.header.Get(idempotency.ReplayedHeader))
	}
	ch := e.challenge("POST", "/transfer-out", f.body(sandbox.ApprovalPayoutUSDCents))
	if got := f.held(e.retry(f.otp, ch, "POST", "/transfer-out", f.body(sandbox.ApprovalPayoutUSDCents), "Idempotency-Key", key)); got.ID != ap.ID {
		t.Fatalf("signed repeat %+v", got)
	}
	// Another body under the key is a conflict.
	e.do("POST", "/transfer-out", f.body(1), "Idempotency-Key", key).fails(t, 409, apierror.Conflict)
	// Approved meanwhile, the repeat replays the approval as held; GET
	// says what became of it.
	e.do("POST", "/sandbox"+approvalPath(ap.ID), nil).ok(t, 200, nil)
	var got sandbox.PayoutApproval
	e.do("POST", "/transfer-out", f.body(sandbox.ApprovalPayoutUSDCents), "Idempotency-Key", key).ok(t, 202, &got)
	if got.ID != ap.ID || got.State != "WAITING" || f.state(ap.ID).State != "APPROVED" {
		t.Fatalf("repeat %+v", got)
	}
	if e.balance(f.wallet, "USD") != fundUSD-sandbox.ApprovalPayoutUSDCents {
		t.Fatalf("balance %d", e.balance(f.wallet, "USD"))
	}
}

// TestPayoutApprovalQuoteRefused: a quote execution the policy would hold
// is refused (403 PAYOUT_BLOCKED naming approval-amount): the sandbox
// holds transfers out only. The quote stays PENDING and nothing moves.
func TestPayoutApprovalQuoteRefused(t *testing.T) {
	e := newEnv(t)
	c, w := e.customer("Quo Te")
	key := e.login(w)
	ext := e.external(c.ID, usdAccount("81818701"))
	pay := payer{c, w, key}
	q := e.quote(pay, map[string]any{"accountId": ext.ID}, sandbox.ApprovalPayoutUSDCents*10_000)
	e.do("POST", "/sandbox/internal-accounts/"+w+"/fund", map[string]any{"amount": q.TotalSendingAmount}).ok(t, 200, nil)
	blocked(t, e.execute(pay, q.ID), apierror.PayoutBlocked, sandbox.PayoutRuleApproval)
	if got := e.getQuote(q.ID); got.Status != sandbox.QuotePending || e.balance(w, "USDB") != q.TotalSendingAmount {
		t.Fatalf("quote %+v", got)
	}
}

// TestPayoutApprovalGoAPI: in Go, TransferOut answers a held payout with
// a *PayoutHeldError naming the approval, and the approval methods make
// or refuse it.
func TestPayoutApprovalGoAPI(t *testing.T) {
	e := newEnv(t)
	f := newApprovalFixture(e, "Go Held", "81818801")
	ctx := t.Context()
	req := sandbox.TransferRequest{Source: sandbox.AccountRef{AccountID: f.wallet}, Destination: sandbox.AccountRef{AccountID: f.ext.ID},
		Amount: sandbox.ApprovalPayoutUSDCents}
	_, ch, err := e.sim.TransferOut(ctx, req, signedretry.Request{})
	if err != nil || ch == nil {
		t.Fatal(ch, err)
	}
	tx, _, err := e.sim.TransferOut(ctx, req, stamped(f.otp, ch))
	var held *sandbox.PayoutHeldError
	if tx != nil || !errors.As(err, &held) || held.Approval.State != "WAITING" || !strings.Contains(err.Error(), held.Approval.ID) {
		t.Fatalf("TransferOut: %v, %v", tx, err)
	}
	got, err := e.sim.GetPayoutApproval(ctx, held.Approval.ID)
	if err != nil || got.ID != held.Approval.ID {
		t.Fatal(got, err)
	}
	tx, ap, err := e.sim.OperatorApprovePayout(ctx, got.ID)
	if err != nil || tx == nil || ap.State != "APPROVED" || ap.TransactionID != tx.ID {
		t.Fatal(tx, ap, err)
	}
	if _, err := e.sim.OperatorRefusePayout(ctx, got.ID); apierror.CodeOf(err) != apierror.Conflict {
		t.Fatal(err)
	}
}

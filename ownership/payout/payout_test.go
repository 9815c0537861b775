package payout_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/ownership/payout"
	"github.com/walletgate/walletgate/ownership/policy"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/memory"
	"github.com/walletgate/walletgate/walletauth"
)

// quoteExpired is the tests' host rule's refusal of an expired quote.
func quoteExpired(at time.Time) error {
	return apierror.New(apierror.Conflict, "the quote expired at %s", at.Format(time.RFC3339))
}

// TestNewNamesWhatIsMissing: New refuses a Config without each of its
// members and names every one missing.
func TestNewNamesWhatIsMissing(t *testing.T) {
	_, err := payout.New(payout.Config{})
	if err == nil {
		t.Fatal("New accepted an empty Config")
	}
	for _, member := range []string{"Store", "Gate", "Policy", "Wallets", "Clock"} {
		if !strings.Contains(err.Error(), "Config."+member) {
			t.Errorf("error %q does not name Config.%s", err, member)
		}
	}
	w := newWorld(t, memory.New(), nil, nil, testRules)
	_, err = payout.New(payout.Config{Store: w.store, Gate: w.gate, Policy: w.policy, Wallets: w.auth})
	if err == nil || err.Error() != "payout: Config.Clock is required" {
		t.Fatalf("New without a Clock: %v", err)
	}
}

// TestPaidAsSigned: an allowed payout is paid once, and Pay is handed
// exactly the parameters the wallet signed, whatever the retry's Go
// values; a retry whose body differs from the signed request is refused
// and pays nothing; the same signed retry again is refused.
func TestPaidAsSigned(t *testing.T) {
	each(t, func(t *testing.T, w *world) {
		c := w.customer()
		signed := orderOf(c, 250*usd)
		call := w.signed(c, signed)
		if w.pays.Load() != 0 || len(w.paid(c.wallet)) != 0 {
			t.Fatal("the first leg paid")
		}
		// The same signature over another body.
		forged := call
		forged.Body = payoutCall(orderOf(c, 9_000*usd)).Body
		_, err := w.retry(c, forged)
		apierrortest.Want(t, err, apierror.WalletSignatureBodyMismatch, "")
		if w.pays.Load() != 0 {
			t.Fatal("a retry with another body reached Pay")
		}
		// w.retry hands the operation other Go values than the signed
		// ones: Pay sees the signed order.
		out, err := w.retry(c, call)
		if err != nil || out.Paid == nil || out.Held != nil {
			t.Fatalf("retry: %+v, %v", out, err)
		}
		r := *out.Paid
		if r.Order != signed || r.Customer != c.id || r.ID != call.RequestID || r.SignedBy != c.email || r.Rule != "default" {
			t.Fatalf("paid %+v, want the signed %+v by %s", r, signed, c.email)
		}
		if got := w.paid(c.wallet); len(got) != 1 || got[0] != r {
			t.Fatalf("records %+v, want the one payout %+v", got, r)
		}
		if n := w.events(c.wallet, policy.EventDecided); n != 1 {
			t.Fatalf("%d policy events, want 1", n)
		}
		_, err = w.retry(c, call)
		apierrortest.Want(t, err, apierror.Unauthorized, "")
		if len(w.paid(c.wallet)) != 1 {
			t.Fatal("a replayed retry paid again")
		}
	})
}

// TestHeldPaysNothing: a payout the policy holds is Outcome.Held, with the
// approval of the signed payout; Pay never runs and nothing is recorded,
// however many are held.
func TestHeldPaysNothing(t *testing.T) {
	each(t, func(t *testing.T, w *world) {
		c := w.customer()
		for range 3 {
			call := w.signed(c, orderOf(c, reviewFrom))
			out, err := w.retry(c, call)
			if err != nil || out.Held == nil || out.Paid != nil {
				t.Fatalf("a payout of %d: %+v, %v; want it held", reviewFrom, out, err)
			}
			ap := out.Held
			if ap.Rule != "review" || ap.State != storage.ApprovalWaiting || ap.RequestID != call.RequestID || ap.RequestedBy != c.email ||
				ap.SourceID != c.wallet || ap.DestinationID != c.account || ap.Amount != reviewFrom || ap.Currency != "USD" || ap.CustomerID != c.id {
				t.Fatalf("held %+v", ap)
			}
			got, err := w.svc.Get(t.Context(), ap.ID)
			if err != nil || got.ID != ap.ID || got.State != storage.ApprovalWaiting {
				t.Fatalf("Get: %+v, %v", got, err)
			}
		}
		if w.pays.Load() != 0 || len(w.paid(c.wallet)) != 0 || w.events(c.wallet, policy.EventDecided) != 0 {
			t.Fatalf("held payouts reached Pay %d times", w.pays.Load())
		}
	})
}

// TestApprovedOnce: concurrent approvals of one held payout by the
// operator make it once: one approval pays, every other is 409 CONFLICT
// naming the state APPROVED, and one payout is recorded, of the held
// payout, signed by the credential that signed it. On PostgreSQL each
// approval runs in a host transaction of its own.
func TestApprovedOnce(t *testing.T) {
	each(t, func(t *testing.T, w *world) {
		c := w.customer()
		out, err := w.retry(c, w.signed(c, orderOf(c, 2*reviewFrom)))
		if err != nil || out.Held == nil {
			t.Fatalf("held: %+v, %v", out, err)
		}
		id := out.Held.ID
		const n = 8
		errs := make([]error, n)
		results := make([]payout.Approved[receipt], n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				errs[i] = w.inTx(func(ctx context.Context) error {
					var err error
					results[i], err = payout.Approve(ctx, w.svc, id, "desk", w.payApproved)
					return err
				})
			})
		}
		close(start)
		wg.Wait()
		apierrortest.OneWins(t, "concurrent approvals", errs, apierror.Conflict)
		for i, err := range errs {
			if err != nil {
				if e := apierrortest.Want(t, err, apierror.Conflict, ""); e.Details["state"] != storage.ApprovalApproved {
					t.Fatalf("a losing approval: %v", e)
				}
				continue
			}
			r := results[i]
			if r.Paid == nil || r.Approval.State != storage.ApprovalApproved || !slices.Equal(r.Approval.Approvers, []string{"operator:desk"}) {
				t.Fatalf("the winning approval: %+v", r)
			}
			want := receipt{ID: out.Held.RequestID, Order: orderOf(c, 2*reviewFrom), Customer: c.id, SignedBy: c.email, Rule: "review", Approval: id}
			if *r.Paid != want {
				t.Fatalf("paid %+v, want %+v", *r.Paid, want)
			}
		}
		if got := w.paid(c.wallet); len(got) != 1 {
			t.Fatalf("%d payouts recorded, want 1", len(got))
		}
		ap, err := w.svc.Get(t.Context(), id)
		if err != nil || ap.State != storage.ApprovalApproved {
			t.Fatalf("after the approvals: %+v, %v", ap, err)
		}
	})
}

// TestApprovalRefusedBeforeRecorded: an approval whose payout the chain
// now refuses (the destination no longer receives payouts) is refused
// before anything is recorded, with the gate's answer naming the
// destination; the payout still waits and is paid once the destination
// is active again. A refused payout is never paid; unknown and malformed
// ids are 404; the wrong operator is 403.
func TestApprovalRefusedBeforeRecorded(t *testing.T) {
	each(t, func(t *testing.T, w *world) {
		ctx := t.Context()
		c := w.customer()
		hold := func() string {
			t.Helper()
			out, err := w.retry(c, w.signed(c, orderOf(c, reviewFrom)))
			if err != nil || out.Held == nil {
				t.Fatalf("held: %+v, %v", out, err)
			}
			return out.Held.ID
		}
		id, refused := hold(), hold()
		if _, err := w.gate.SetStatus(ctx, c.account, storage.StatusUnderReview); err != nil {
			t.Fatal(err)
		}
		_, err := w.approve(id, "desk")
		if e := apierrortest.Want(t, err, apierror.Conflict, ""); e.Details["field"] != "destinationId" || e.Details["accountId"] != c.account {
			t.Fatalf("an approval to an account under review: %v %v", e, e.Details)
		}
		if ap, _ := w.svc.Get(ctx, id); ap.State != storage.ApprovalWaiting || len(ap.Approvers) != 0 || w.pays.Load() != 0 {
			t.Fatalf("after the refused approval: %+v, %d pays", ap, w.pays.Load())
		}
		if _, err := w.gate.SetStatus(ctx, c.account, storage.StatusActive); err != nil {
			t.Fatal(err)
		}
		_, err = w.approve(id, "someone")
		apierrortest.Want(t, err, apierror.Forbidden, "")
		done, err := w.approve(id, "desk")
		if err != nil || done.Paid == nil {
			t.Fatalf("approval: %+v, %v", done, err)
		}

		ap, err := w.svc.Refuse(ctx, refused, "desk")
		if err != nil || ap.State != storage.ApprovalRefused {
			t.Fatalf("refuse: %+v, %v", ap, err)
		}
		for _, act := range []func() error{
			func() error { _, err := w.approve(refused, "desk"); return err },
			func() error { _, err := w.svc.Refuse(ctx, refused, "desk"); return err },
		} {
			if e := apierrortest.Want(t, act(), apierror.Conflict, ""); e.Details["state"] != storage.ApprovalRefused {
				t.Fatalf("an act on a refused approval: %v", e)
			}
		}
		for _, bad := range []string{"PayoutApproval:00000000-0000-4000-8000-000000000000", "nope", c.wallet} {
			_, err := w.svc.Get(ctx, bad)
			apierrortest.Want(t, err, apierror.ReferenceNotFound, "")
			_, err = w.approve(bad, "desk")
			apierrortest.Want(t, err, apierror.ReferenceNotFound, "")
			_, err = w.svc.Refuse(ctx, bad, "desk")
			apierrortest.Want(t, err, apierror.ReferenceNotFound, "")
			_, err = payout.ApprovalOperation(ctx, w.svc, bad, signedretry.Request{}, w.payApproved)
			apierrortest.Want(t, err, apierror.ReferenceNotFound, "")
		}
		if got := w.paid(c.wallet); len(got) != 1 || got[0].Approval != id {
			t.Fatalf("records %+v, want the approved payout only", got)
		}
	})
}

// TestRefusalNamesItsRule: the policy's refusal on the retry is 403
// PAYOUT_BLOCKED naming the rule and why; it pays nothing and leaves the
// signed request usable: the same retry is refused again, not as used.
func TestRefusalNamesItsRule(t *testing.T) {
	each(t, func(t *testing.T, w *world) {
		c := w.customer()
		for range 3 { // the day's three payouts
			w.pay(c, orderOf(c, 10*usd))
		}
		call := w.signed(c, orderOf(c, 10*usd))
		for range 2 {
			_, err := w.retry(c, call)
			e := apierrortest.Want(t, err, apierror.PayoutBlocked, "the payout does not fit the window customer-day")
			if e.Details["rule"] != "daily-limit" || e.Details["window"] != "customer-day" {
				t.Fatalf("refusal %v", e.Details)
			}
		}
		if got := len(w.paid(c.wallet)); got != 3 || w.pays.Load() != 3 {
			t.Fatalf("%d payouts recorded, %d pays, want 3", got, w.pays.Load())
		}
	})
}

// TestForeignDestinationBeforeTheGate: another customer's account is 404
// REFERENCE_NOT_FOUND naming the destination field, as an unknown account
// is, and the gate is never asked about it: its state (here under review,
// which the gate would answer 409) is not revealed. No challenge is
// issued.
func TestForeignDestinationBeforeTheGate(t *testing.T) {
	each(t, func(t *testing.T, w *world) {
		a, b := w.customer(), w.customer()
		if _, err := w.gate.SetStatus(t.Context(), b.account, storage.StatusUnderReview); err != nil {
			t.Fatal(err)
		}
		w.guard.Take()
		answers := map[string]string{}
		for _, to := range []string{b.account, "ExternalAccount:00000000-0000-4000-8000-000000000000", "not-an-id"} {
			o := order{Wallet: a.wallet, To: to, Amount: 10 * usd, Currency: "USD"}
			_, ch, err := w.authorize(w.spec(a, o), payoutCall(o))
			e := apierrortest.Want(t, err, apierror.ReferenceNotFound, "")
			if ch != nil || e.Details["field"] != "to" {
				t.Fatalf("a payout to %s: challenge %v, details %v", to, ch, e.Details)
			}
			answers[to] = strings.ReplaceAll(e.Message, to, "<id>")
		}
		if answers[b.account] != answers["ExternalAccount:00000000-0000-4000-8000-000000000000"] {
			t.Fatalf("another customer's account answers %q, an unknown one %q", answers[b.account], answers["ExternalAccount:00000000-0000-4000-8000-000000000000"])
		}
		if asked := w.guard.Take(); slices.Contains(asked, b.account) {
			t.Fatalf("the gate was asked about another customer's account: %v", asked)
		}
		// The wallet's own account, under review, is the gate's to refuse.
		if _, err := w.gate.SetStatus(t.Context(), a.account, storage.StatusUnderReview); err != nil {
			t.Fatal(err)
		}
		o := orderOf(a, 10*usd)
		_, _, err := w.authorize(w.spec(a, o), payoutCall(o))
		if e := apierrortest.Want(t, err, apierror.Conflict, ""); e.Details["field"] != "to" {
			t.Fatalf("the gate's refusal: %v", e.Details)
		}
		if asked := w.guard.Take(); !slices.Contains(asked, a.account) {
			t.Fatalf("the gate was not asked about the wallet's own account: %v", asked)
		}
	})
}

// TestGateRefusalOnRetry: the gate refuses on the retry when the
// destination changed after the first leg (409 CONFLICT naming the
// destination); the request stays usable, and once the destination is
// active again the same signed retry pays once.
func TestGateRefusalOnRetry(t *testing.T) {
	each(t, func(t *testing.T, w *world) {
		ctx := t.Context()
		c := w.customer()
		call := w.signed(c, orderOf(c, 10*usd))
		if _, err := w.gate.SetStatus(ctx, c.account, storage.StatusUnderReview); err != nil {
			t.Fatal(err)
		}
		_, err := w.retry(c, call)
		if e := apierrortest.Want(t, err, apierror.Conflict, ""); e.Details["field"] != "to" || e.Details["status"] != string(storage.StatusUnderReview) {
			t.Fatalf("the gate's refusal on the retry: %v", e.Details)
		}
		if w.pays.Load() != 0 {
			t.Fatal("a refused retry reached Pay")
		}
		if _, err := w.gate.SetStatus(ctx, c.account, storage.StatusActive); err != nil {
			t.Fatal(err)
		}
		out, err := w.retry(c, call)
		if err != nil || out.Paid == nil {
			t.Fatalf("the retry once active: %+v, %v", out, err)
		}
		if len(w.paid(c.wallet)) != 1 {
			t.Fatal("the payout was not recorded once")
		}
	})
}

// TestConvertingPayoutNeverHeld: a converting payout (Received set) that
// a rule would hold is 403 PAYOUT_BLOCKED naming the rule; nothing of it
// is stored (no approval, no event, no payout), and the signed request
// stays usable. The gate decides on what the destination receives.
func TestConvertingPayoutNeverHeld(t *testing.T) {
	each(t, func(t *testing.T, w *world) {
		c := w.customer()
		o := orderOf(c, reviewFrom)
		o.Receives = reviewFrom - 15*usd
		call := w.signed(c, o)
		for range 2 {
			_, err := w.retry(c, call)
			e := apierrortest.Want(t, err, apierror.PayoutBlocked, "")
			if e.Details["rule"] != "review" || !strings.Contains(e.Reason(), "converting payout is never held") {
				t.Fatalf("refusal %v", e.Details)
			}
		}
		if w.events(c.wallet, policy.EventApprovalRequested) != 0 || w.pays.Load() != 0 || len(w.paid(c.wallet)) != 0 {
			t.Fatal("a refused converting payout left an approval or a payout")
		}
		// Above the gate's maximum in what it receives, a conversion is
		// the gate's to refuse, on the first leg.
		o = orderOf(c, 10*usd)
		o.Receives = 1_000_001 * usd
		_, _, err := w.authorize(w.spec(c, o), payoutCall(o))
		if e := apierrortest.Want(t, err, apierror.TransactionSizeLimitExceeded, ""); e.Details["field"] != "to" {
			t.Fatalf("the gate's refusal: %v", e.Details)
		}
		o.Receives = 9 * usd
		if r := w.pay(c, o); r.Order != o {
			t.Fatalf("paid %+v", r)
		}
	})
}

// TestRetryDecidedAtItsTime: the host's rule runs on the retry at the
// time the retry was decided (signedretry.Authorization.Now): a quote
// that expired after the first leg is refused with the host's error,
// which leaves the request usable (until it expires itself).
func TestRetryDecidedAtItsTime(t *testing.T) {
	each(t, func(t *testing.T, w *world) {
		c := w.customer()
		until := w.clock.Now().Add(time.Minute)
		o := orderOf(c, 10*usd)
		o.Until = &until
		call := w.signed(c, o)
		w.clock.Add(time.Minute)
		for range 2 {
			_, err := w.retry(c, call)
			apierrortest.Want(t, err, apierror.Conflict, "")
		}
		if w.pays.Load() != 0 {
			t.Fatal("an expired quote reached Pay")
		}
		// The first leg refuses it too, before a signature is asked.
		_, ch, err := w.authorize(w.spec(c, o), payoutCall(o))
		if ch != nil {
			t.Fatal("a challenge for an expired quote")
		}
		apierrortest.Want(t, err, apierror.Conflict, "")
	})
}

// TestSignedApproval: a wallet's signed approval (OpApprove) names the
// approval and its payout; the credential that signed the payout may not
// give it (403, the request stays usable), another credential of the
// wallet, independent of it, does: the payout is made once, and the
// approval again is 409.
func TestSignedApproval(t *testing.T) {
	each(t, func(t *testing.T, w *world) {
		ctx := t.Context()
		c := w.customer()
		sms := w.addSMS(c)
		// The SMS_OTP credential the email session enrolled answers to it
		// until the security-change period ends.
		w.clock.Add(walletauth.DefaultSecurityChangePeriod)
		c.key = w.login(c.email)
		smsKey := w.login(sms)
		out, err := w.retry(c, w.signed(c, orderOf(c, reviewFrom)))
		if err != nil || out.Held == nil {
			t.Fatalf("held: %+v, %v", out, err)
		}
		id := out.Held.ID
		call := signedretry.Request{Method: "POST", Path: "/payout-approvals/" + id + "/approve", Body: []byte(`{}`)}
		approve := func(call signedretry.Request) (payout.Approved[receipt], *signedretry.Challenge, error) {
			var (
				done payout.Approved[receipt]
				ch   *signedretry.Challenge
			)
			err := w.inTx(func(ctx context.Context) error {
				op, err := payout.ApprovalOperation(ctx, w.svc, id, call, w.payApproved)
				if err != nil {
					return err
				}
				done, _, ch, err = walletauth.Authorize(ctx, w.auth, op, call)
				return err
			})
			return done, ch, err
		}
		_, ch, err := approve(call)
		if err != nil || ch == nil {
			t.Fatalf("first leg: %v", err)
		}
		if !strings.Contains(ch.PayloadToSign, `"approvalId":"`+id+`"`) || !strings.Contains(ch.PayloadToSign, `"destinationAccountId":"`+c.account+`"`) ||
			!strings.Contains(ch.PayloadToSign, `"type":"`+payout.OpApprove+`"`) {
			t.Fatalf("payload %s", ch.PayloadToSign)
		}
		own := call
		stamp(t, &own, ch, c.key)
		_, _, err = approve(own)
		apierrortest.Want(t, err, apierror.Forbidden, "")
		if ap, _ := w.svc.Get(ctx, id); ap.State != storage.ApprovalWaiting || w.pays.Load() != 0 {
			t.Fatalf("after the signer's own approval: %+v", ap)
		}
		other := call
		stamp(t, &other, ch, smsKey)
		done, _, err := approve(other)
		if err != nil || done.Paid == nil || done.Approval.State != storage.ApprovalApproved ||
			!slices.Equal(done.Approval.Approvers, []string{"credential:" + sms}) {
			t.Fatalf("the second credential's approval: %+v, %v", done, err)
		}
		if r := *done.Paid; r.SignedBy != c.email || r.Approval != id || r.Order != orderOf(c, reviewFrom) {
			t.Fatalf("paid %+v", r)
		}
		_, _, err = approve(other)
		if e := apierrortest.Want(t, err, apierror.Conflict, ""); e.Details["state"] != storage.ApprovalApproved {
			t.Fatalf("the approval again: %v", e)
		}
		if len(w.paid(c.wallet)) != 1 {
			t.Fatal("the approved payout was not recorded once")
		}
	})
}

// TestHostRollsBack: on PostgreSQL, a payout whose host transaction the
// host rolls back after the operation leaves nothing, its consumed request
// included: the same signed retry pays afterwards.
func TestHostRollsBack(t *testing.T) {
	each(t, func(t *testing.T, w *world) {
		if w.pg == nil {
			t.Skip("a host transaction is PostgreSQL's")
		}
		c := w.customer()
		call := w.signed(c, orderOf(c, 10*usd))
		rollback := errors.New("the host's own write failed")
		err := w.inTx(func(ctx context.Context) error {
			spec := w.spec(c, order{})
			out, _, _, err := walletauth.Authorize(ctx, w.auth, payout.Operation(w.svc, spec, call), call)
			if err != nil || out.Paid == nil {
				t.Errorf("inside the host's transaction: %+v, %v", out, err)
			}
			return rollback
		})
		if !errors.Is(err, rollback) || len(w.paid(c.wallet)) != 0 {
			t.Fatalf("a rolled back payout: %v, %d records", err, len(w.paid(c.wallet)))
		}
		if out, err := w.retry(c, call); err != nil || out.Paid == nil {
			t.Fatalf("the signed retry after the rollback: %+v, %v", out, err)
		}
	})
}

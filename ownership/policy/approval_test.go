package policy_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/ownership/policy"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/memory"
	"github.com/walletgate/walletgate/storage/postgres"
	"github.com/walletgate/walletgate/storage/postgres/pgtest"
)

// approvalRules hold payouts from 1000.00 USD for one approval (two from
// 5000.00) by another credential of the wallet or the risk desk, for a day,
// within a daily window of 8000.00.
const approvalRules = `{"referenceCurrency": "USD",
	"windows": [{"name": "day", "scope": "CUSTOMER", "period": "24h", "maxAmount": 800000}],
	"rules": [
		{"name": "daily-limit", "match": {"exceedsWindows": ["day"]}, "action": "BLOCK"},
		{"name": "two-approvals", "match": {"minAmount": 500000}, "action": "REQUIRE_APPROVAL",
			"approval": {"count": 2, "secondCredential": true, "operators": ["risk@ops.example"], "ttl": "24h"}},
		{"name": "one-approval", "match": {"minAmount": 100000}, "action": "REQUIRE_APPROVAL",
			"approval": {"count": 1, "secondCredential": true, "operators": ["risk@ops.example"], "ttl": "24h"}},
		{"name": "default", "match": {}, "action": "ALLOW"}]}`

// held decides a payout that waits for approval and returns its approval.
func (w *world) held(t *testing.T, p *policy.Policy, amount int64, dest string, now time.Time) *storage.PayoutApproval {
	t.Helper()
	before := w.executed.Load()
	out, err := w.pay(t, p, w.email, dest, amount, "USD", now, true)
	if err != nil || out.Held == nil || out.Executed != nil || out.Held.State != storage.ApprovalWaiting {
		t.Fatalf("outcome %+v, %v; want a payout held for approval", out, err)
	}
	if w.executed.Load() != before {
		t.Fatal("a held payout reached the host's Execute")
	}
	return out.Held
}

// approve runs p.Approve in its own transaction.
func (w *world) approve(t *testing.T, p *policy.Policy, id string, by policy.Approver) (*policy.Allowed, *storage.PayoutApproval, error) {
	t.Helper()
	ctx := context.Background()
	var d *policy.Allowed
	var ap *storage.PayoutApproval
	err := w.store.Atomic(ctx, func(tx storage.Tx) error {
		var err error
		d, ap, err = p.Approve(ctx, tx, id, by, w.execute)
		return err
	})
	return d, ap, err
}

func (w *world) signedBy(s signer, now time.Time) policy.Approver {
	return policy.Approver{Authorization: &signedretry.Authorization{RequestID: "Request:approve", AccountID: w.wallet,
		SessionID: s.session, CredentialID: s.cred, Now: now}}
}

func (w *world) usages(t *testing.T) int {
	t.Helper()
	n := 0
	err := w.store.Atomic(context.Background(), func(tx storage.Tx) error {
		u, err := tx.PayoutUsage().Hold(context.Background(), w.cust, time.Time{})
		n = len(u)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestApprovals: a held payout counts nothing until its last approval,
// which executes it once; who may approve, twice, after a refusal or an
// expiry, and a window that filled meanwhile.
func TestApprovals(t *testing.T) {
	p := newPolicy(t, approvalRules)
	w := newWorld(t, memory.New())
	dest := w.destination(t, "USD_ACCOUNT", t0.Add(-48*time.Hour))
	risk := policy.Approver{Operator: "risk@ops.example"}

	ap := w.held(t, p, 100_000, dest, t0)
	if ap.Rule != "one-approval" || ap.Required != 1 || ap.RequestedBy != w.email.cred || w.usages(t) != 0 {
		t.Fatalf("held %+v with %d usages", ap, w.usages(t))
	}
	// The credential that signed the payout cannot approve it, nor a
	// session of another wallet, nor an operator the rule does not name.
	_, _, err := w.approve(t, p, ap.ID, w.signedBy(w.email, t0))
	apierrortest.Want(t, err, apierror.Forbidden, "")
	other := w.signedBy(w.passkey, t0)
	other.Authorization.AccountID = newID(t, "InternalAccount")
	_, _, err = w.approve(t, p, ap.ID, other)
	apierrortest.Want(t, err, apierror.Forbidden, "")
	_, _, err = w.approve(t, p, ap.ID, policy.Approver{Operator: "someone@ops.example"})
	apierrortest.Want(t, err, apierror.Forbidden, "")
	_, _, err = w.approve(t, p, ap.ID, policy.Approver{})
	apierrortest.Want(t, err, apierror.InternalError, "")
	_, _, err = w.approve(t, p, "PayoutApproval:00000000-0000-4000-8000-000000000000", risk)
	apierrortest.Want(t, err, apierror.ReferenceNotFound, "")
	_, _, err = w.approve(t, p, "nope", risk)
	apierrortest.WantFields(t, err, apierror.InvalidInput, "approvalId")

	// The passkey of the same wallet approves: the payout executes, once.
	d, done, err := w.approve(t, p, ap.ID, w.signedBy(w.passkey, t0.Add(time.Minute)))
	if err != nil || d == nil || d.Rule != "one-approval" || done.State != storage.ApprovalApproved ||
		len(done.Approvers) != 1 || done.Approvers[0] != "credential:"+w.passkey.cred || w.usages(t) != 1 {
		t.Fatalf("approve: %+v %+v %v, %d usages", d, done, err, w.usages(t))
	}
	_, _, err = w.approve(t, p, ap.ID, risk)
	if e := apierrortest.Want(t, err, apierror.Conflict, ""); e.Details["state"] != storage.ApprovalApproved {
		t.Fatalf("details %v", e.Details)
	}

	// Held while the window has room; approved below once it has not.
	full := w.held(t, p, 300_000, dest, t0)

	// Two approvals: the first records, the same approver again is 409,
	// the second executes.
	two := w.held(t, p, 500_000, dest, t0)
	d, rec, err := w.approve(t, p, two.ID, risk)
	if err != nil || d != nil || rec.State != storage.ApprovalWaiting || len(rec.Approvers) != 1 {
		t.Fatalf("first of two approvals: %+v %+v %v", d, rec, err)
	}
	_, _, err = w.approve(t, p, two.ID, risk)
	apierrortest.Want(t, err, apierror.Conflict, "")
	d, _, err = w.approve(t, p, two.ID, w.signedBy(w.passkey, t0))
	if err != nil || d == nil || w.usages(t) != 2 {
		t.Fatalf("second of two approvals: %+v %v", d, err)
	}

	// A refusal ends it.
	refused := w.held(t, p, 100_000, dest, t0)
	err = w.store.Atomic(context.Background(), func(tx storage.Tx) error {
		ap, err := p.Refuse(context.Background(), tx, refused.ID, risk)
		if err == nil && ap.State != storage.ApprovalRefused {
			t.Errorf("refused approval is %s", ap.State)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = w.approve(t, p, refused.ID, w.signedBy(w.passkey, t0))
	apierrortest.Want(t, err, apierror.Conflict, "")

	// An expired one cannot be approved.
	late := w.held(t, p, 100_000, dest, t0)
	_, _, err = w.approve(t, p, late.ID, w.signedBy(w.passkey, t0.Add(24*time.Hour)))
	if e := apierrortest.Want(t, err, apierror.Conflict, ""); e.Details["state"] != policy.StateExpired {
		t.Fatalf("details %v", e.Details)
	}
	if policy.StateOf(late, t0.Add(24*time.Hour)) != policy.StateExpired || policy.StateOf(late, t0) != storage.ApprovalWaiting {
		t.Fatal("StateOf")
	}

	// 6000.00 of the day's 8000.00 are used: the 3000.00 held before no
	// longer fits when approved; the approval stays as it was.
	_, _, err = w.approve(t, p, full.ID, w.signedBy(w.passkey, t0))
	wantRefusal(t, err, apierror.PayoutBlocked, "daily-limit")
	_, _, err = w.approve(t, p, full.ID, risk)
	wantRefusal(t, err, apierror.PayoutBlocked, "daily-limit")
	if w.usages(t) != 2 {
		t.Fatalf("%d usages, want 2", w.usages(t))
	}
}

// raceApprovals: every worker of every store approves one held payout at
// once, each as another operator; exactly one executes it.
func raceApprovals(t *testing.T, stores []storage.Store, workers int) {
	rules := strings.Replace(approvalRules, `"operators": ["risk@ops.example"]`, `"operators": ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p"]`, 2)
	p := newPolicy(t, rules)
	w := newWorld(t, stores[0])
	dest := w.destination(t, "USD_ACCOUNT", t0.Add(-48*time.Hour))
	ap := w.held(t, p, 100_000, dest, t0)
	ctx := context.Background()
	var mu sync.Mutex
	executed, conflicts := 0, 0
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range min(len(stores)*workers, 16) {
		s := stores[i%len(stores)]
		wg.Go(func() {
			<-start
			for {
				var d *policy.Allowed
				err := s.Atomic(ctx, func(tx storage.Tx) error {
					var err error
					d, _, err = p.Approve(ctx, tx, ap.ID, policy.Approver{Operator: string(rune('a' + i))}, w.execute)
					return err
				})
				if postgres.Rerunnable(err) {
					continue
				}
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil && d != nil:
					executed++
				case apierror.CodeOf(err) == apierror.Conflict:
					conflicts++
				default:
					t.Errorf("approver %d: %+v %v", i, d, err)
				}
				return
			}
		})
	}
	close(start)
	wg.Wait()
	if executed != 1 || w.usages(t) != 1 {
		t.Fatalf("%d approvals executed the payout (%d usages, %d conflicts), want 1", executed, w.usages(t), conflicts)
	}
}

func TestApprovalRaceMemory(t *testing.T) {
	raceApprovals(t, []storage.Store{memory.New()}, 16)
}

func TestApprovalRacePostgres(t *testing.T) {
	replicas := pgtest.Replicas(t, 4, 4, postgres.Config{})
	stores := make([]storage.Store, len(replicas))
	for i, r := range replicas {
		stores[i] = r
	}
	raceApprovals(t, stores, 4)
}

// TestNewRefusesApprovalRules: an approval rule that names no approver, an
// approval on another action, an impossible count.
func TestNewRefusesApprovalRules(t *testing.T) {
	catchAll := `{"name": "default", "match": {}, "action": "ALLOW"}`
	for _, tc := range []struct{ name, rule, want string }{
		{"no approval", `{"name": "a", "match": {"minAmount": 1}, "action": "REQUIRE_APPROVAL"}`, "set approval"},
		{"no approver", `{"name": "a", "match": {"minAmount": 1}, "action": "REQUIRE_APPROVAL", "approval": {"count": 1, "ttl": "1h"}}`, "names no approver"},
		{"count 0", `{"name": "a", "match": {"minAmount": 1}, "action": "REQUIRE_APPROVAL", "approval": {"count": 0, "operators": ["x"], "ttl": "1h"}}`, "count 0"},
		{"count above operators", `{"name": "a", "match": {"minAmount": 1}, "action": "REQUIRE_APPROVAL", "approval": {"count": 2, "operators": ["x"], "ttl": "1h"}}`, "more than its 1 approvers"},
		{"ttl", `{"name": "a", "match": {"minAmount": 1}, "action": "REQUIRE_APPROVAL", "approval": {"count": 1, "operators": ["x"], "ttl": "1s"}}`, "ttl 1s"},
		{"bad operator", `{"name": "a", "match": {"minAmount": 1}, "action": "REQUIRE_APPROVAL", "approval": {"count": 1, "operators": ["a b"], "ttl": "1h"}}`, `"a b"`},
		{"approval on allow", `{"name": "a", "match": {"minAmount": 1}, "action": "ALLOW", "approval": {"count": 1, "operators": ["x"], "ttl": "1h"}}`, "only for action"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := policy.Parse([]byte(`{"referenceCurrency": "USD", "rules": [` + tc.rule + `,` + catchAll + `]}`))
			if err != nil {
				t.Fatal(err)
			}
			_, err = policy.New(policy.Config{Rules: r})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

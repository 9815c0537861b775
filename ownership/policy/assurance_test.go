package policy_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/ownership/policy"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/memory"
)

// enrolled adds a credential of typ to the world's wallet, created at
// created with enrolment e, and a session of it authenticated at
// authenticated.
func (w *world) enrolled(t *testing.T, typ storage.CredentialType, e storage.Enrolment, created, authenticated time.Time) signer {
	t.Helper()
	ctx := context.Background()
	s := signer{newID(t, "AuthMethod"), newID(t, "Session")}
	err := w.store.Atomic(ctx, func(tx storage.Tx) error {
		c := storage.Credential{ID: s.cred, AccountID: w.wallet, Type: typ, Nickname: "n", Enrolment: e, CreatedAt: created, UpdatedAt: created}
		switch typ {
		case storage.Passkey:
			c.WebAuthn = &storage.WebAuthnCredential{CredentialID: []byte(s.cred), PublicKey: []byte{1}}
		case storage.OAuth:
			c.OAuth = &storage.OAuthIdentity{Issuer: "https://idp.example", Audience: "a", Subject: s.cred}
		}
		if err := tx.Credentials().Create(ctx, &c); err != nil {
			return err
		}
		return tx.Sessions().Create(ctx, &storage.Session{ID: s.session, AccountID: w.wallet, CredentialID: s.cred,
			PublicKey: []byte{2}, CreatedAt: authenticated, AuthenticatedAt: authenticated, ExpiresAt: authenticated.Add(48 * time.Hour)})
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// by is the enrolment of a credential by the session of s, carrying
// assurance until a day after t0.
func by(s signer, assurance storage.CredentialType) storage.Enrolment {
	return storage.Enrolment{SessionID: s.session, CredentialID: s.cred, Origin: s.cred, Assurance: assurance, SettlesAt: t0.Add(24 * time.Hour)}
}

// TestStepUpJudgesAssurance: a step-up naming PASSKEY is met by a passkey
// only when it carries a passkey's assurance. One enrolled by an
// EMAIL_OTP session carries EMAIL_OTP's until its security-change period
// ends (the phished-session attack: enroll a "second factor", meet the
// step-up at once); one enrolled by a passkey session carries its own at
// once. The sandbox literal meets no step-up, even with a passkey session
// of the wallet active.
func TestStepUpJudgesAssurance(t *testing.T) {
	p := newPolicy(t, testRules)
	w := newWorld(t, memory.New())
	dest := w.destination(t, "USD_ACCOUNT", t0.Add(-48*time.Hour))
	weak := w.enrolled(t, storage.Passkey, by(w.email, storage.EmailOTP), t0, t0)
	strong := w.enrolled(t, storage.Passkey, by(w.passkey, storage.Passkey), t0, t0)

	_, err := w.pay(t, p, weak, dest, 50_000, "USD", t0, true)
	e := wantRefusal(t, err, apierror.StepUpRequired, "large-needs-passkey")
	if r, _ := e.Details["reason"].(string); !strings.Contains(r, "enrolled by a session of EMAIL_OTP") {
		t.Fatalf("reason %q does not say the passkey carries EMAIL_OTP assurance", r)
	}
	// The sandbox literal stands in for a key, never for a credential.
	_, err = w.decide(t, p, policy.Payout{CustomerID: w.cust, SourceID: w.wallet, DestinationID: dest, Amount: 50_000, Currency: "USD",
		Authorization: &signedretry.Authorization{RequestID: newID(t, "Request"), AccountID: w.wallet, SessionID: strong.session,
			CredentialID: strong.cred, Sandbox: true, Now: t0}}, true)
	wantRefusal(t, err, apierror.StepUpRequired, "large-needs-passkey")
	out, err := w.pay(t, p, strong, dest, 50_000, "USD", t0, true)
	wantRule(t, out, err, "large-needs-passkey")

	// Past its period the passkey carries its own assurance (a session
	// authenticated then, for the rule's 15 minutes).
	settled := w.enrolled(t, storage.Passkey, by(w.email, storage.EmailOTP), t0, t0.Add(24*time.Hour))
	out, err = w.pay(t, p, settled, dest, 50_000, "USD", t0.Add(24*time.Hour), true)
	wantRule(t, out, err, "large-needs-passkey")

	// A step-up that takes EMAIL_OTP too is met by the weak passkey, as
	// the EMAIL_OTP it counts as.
	either := newPolicy(t, `{"referenceCurrency": "USD", "rules": [
		{"name": "either", "match": {"minAmount": 1}, "action": "ALLOW", "require": {"credentialTypes": ["EMAIL_OTP", "PASSKEY"]}},
		{"name": "default", "match": {}, "action": "ALLOW"}]}`)
	out, err = w.pay(t, either, weak, dest, 1, "USD", t0, true)
	wantRule(t, out, err, "either")

}

// TestStepUpFreshnessIsAuthentication: maxSessionAge judges when the
// session's ceremony took place, which a refresh keeps, not when the
// session was created: a session refreshed a minute ago from an assertion
// 42 minutes old does not meet a 15-minute step-up.
func TestStepUpFreshnessIsAuthentication(t *testing.T) {
	p := newPolicy(t, testRules)
	w := newWorld(t, memory.New())
	dest := w.destination(t, "USD_ACCOUNT", t0.Add(-48*time.Hour))
	refreshed := signer{w.passkey.cred, newID(t, "Session")}
	ctx := context.Background()
	if err := w.store.Atomic(ctx, func(tx storage.Tx) error {
		return tx.Sessions().Create(ctx, &storage.Session{ID: refreshed.session, AccountID: w.wallet, CredentialID: w.passkey.cred,
			PublicKey: []byte{3}, CreatedAt: t0.Add(-time.Minute), AuthenticatedAt: t0.Add(-42 * time.Minute), ExpiresAt: t0.Add(time.Hour)})
	}); err != nil {
		t.Fatal(err)
	}
	_, err := w.pay(t, p, refreshed, dest, 50_000, "USD", t0, true)
	e := wantRefusal(t, err, apierror.StepUpRequired, "large-needs-passkey")
	if r, _ := e.Details["reason"].(string); !strings.Contains(r, "authenticated 42m0s ago") {
		t.Fatalf("reason %q", r)
	}
	out, err := w.pay(t, p, refreshed, dest, 50_000, "USD", t0.Add(-28*time.Minute), true)
	wantRule(t, out, err, "large-needs-passkey")
}

// TestApprovalByAnIndependentCredential: a held payout is approved by
// another credential of the wallet only when that credential is
// independent of the one that signed the payout: not enrolled by a
// weaker session within its period (the phished EMAIL_OTP session that
// registers its own passkey), not enrolled by the signer or its enroller
// within the period, and the signer still exists.
func TestApprovalByAnIndependentCredential(t *testing.T) {
	p := newPolicy(t, approvalRules)
	w := newWorld(t, memory.New())
	dest := w.destination(t, "USD_ACCOUNT", t0.Add(-48*time.Hour))
	heldBy := func(s signer, now time.Time) *storage.PayoutApproval {
		t.Helper()
		out, err := w.pay(t, p, s, dest, 100_000, "USD", now, true)
		if err != nil || out.Held == nil {
			t.Fatalf("outcome %+v, %v; want held", out, err)
		}
		return out.Held
	}
	forbidden := func(ap *storage.PayoutApproval, s signer, now time.Time, want string) {
		t.Helper()
		_, _, err := w.approve(t, p, ap.ID, w.signedBy(s, now))
		e := apierrortest.Want(t, err, apierror.Forbidden, "")
		if !strings.Contains(e.Message, want) {
			t.Fatalf("refusal %q does not say %q", e.Message, want)
		}
	}

	// The attacker's passkey, enrolled by the phished EMAIL_OTP session,
	// approves nothing of that session's until its period ends.
	attacker := w.enrolled(t, storage.Passkey, by(w.email, storage.EmailOTP), t0, t0)
	ap := heldBy(w.email, t0)
	forbidden(ap, attacker, t0, "does not count as another credential until 2026-09-02T12:00:00Z")
	// A credential of its own type enrolled by the passkey session carries
	// its assurance at once, but answers to the passkey: it does not
	// approve the passkey's payout, nor the passkey its payout.
	child := w.enrolled(t, storage.Passkey, by(w.passkey, storage.Passkey), t0, t0)
	ofPasskey := heldBy(w.passkey, t0)
	forbidden(ofPasskey, child, t0, "count as one until")
	ofChild := heldBy(child, t0)
	forbidden(ofChild, w.passkey, t0, "count as one until")
	// The owner's own credentials are independent of each other.
	if d, _, err := w.approve(t, p, ofChild.ID, w.signedBy(w.email, t0)); err != nil || d == nil {
		t.Fatalf("the EMAIL_OTP approving the child passkey's payout: %+v, %v", d, err)
	}
	// Past the period the attacker's passkey is a credential of its own.
	later := t0.Add(24 * time.Hour)
	late := heldBy(w.email, later)
	if d, _, err := w.approve(t, p, late.ID, w.signedBy(attacker, later)); err != nil || d == nil {
		t.Fatalf("approval by the passkey past its period: %+v, %v", d, err)
	}

	// A payout whose signing credential was revoked since it was held has
	// no credential to be independent of: an operator decides it.
	gone := w.enrolled(t, storage.OAuth, storage.Enrolment{}, t0.Add(-time.Hour), t0)
	orphan := heldBy(gone, t0)
	ctx := context.Background()
	if err := w.store.Atomic(ctx, func(tx storage.Tx) error { return tx.Credentials().Delete(ctx, gone.cred) }); err != nil {
		t.Fatal(err)
	}
	forbidden(orphan, w.passkey, t0, "was revoked since")
	if d, _, err := w.approve(t, p, orphan.ID, policy.Approver{Operator: "risk@ops.example"}); err != nil || d == nil {
		t.Fatalf("operator approval of the orphan: %+v, %v", d, err)
	}

	// The sandbox literal approves nothing.
	lit := w.signedBy(w.passkey, t0)
	lit.Authorization.Sandbox = true
	_, _, err := w.approve(t, p, ap.ID, lit)
	apierrortest.Want(t, err, apierror.Forbidden, "")
}

// TestSecurityChangeRule: securityChangeWithin matches payouts from a
// wallet whose credentials changed recently, and fails closed for a source
// that is no wallet.
func TestSecurityChangeRule(t *testing.T) {
	p := newPolicy(t, `{"referenceCurrency": "USD", "rules": [
		{"name": "after-change", "match": {"securityChangeWithin": "24h"}, "action": "BLOCK"},
		{"name": "default", "match": {}, "action": "ALLOW"}]}`)
	w := newWorld(t, memory.New())
	dest := w.destination(t, "USD_ACCOUNT", t0.Add(-48*time.Hour))
	out, err := w.pay(t, p, w.email, dest, 1, "USD", t0, true)
	wantRule(t, out, err, "default") // never changed since its creation
	ctx := context.Background()
	if err := w.store.Atomic(ctx, func(tx storage.Tx) error {
		a, err := tx.InternalAccounts().Lock(ctx, w.wallet)
		if err != nil {
			return err
		}
		a.SecurityChangedAt = t0.Add(-time.Hour)
		return tx.InternalAccounts().Update(ctx, &a)
	}); err != nil {
		t.Fatal(err)
	}
	_, err = w.pay(t, p, w.email, dest, 1, "USD", t0, true)
	e := wantRefusal(t, err, apierror.PayoutBlocked, "after-change")
	if r, _ := e.Details["reason"].(string); !strings.Contains(r, "credentials changed at 2026-09-01T11:00:00Z") {
		t.Fatalf("reason %q", r)
	}
	out, err = w.pay(t, p, w.email, dest, 1, "USD", t0.Add(23*time.Hour), true)
	wantRule(t, out, err, "default")
	// A source the store has no wallet for is treated as changed.
	_, err = w.decide(t, p, policy.Payout{CustomerID: w.cust, SourceID: newID(t, "InternalAccount"), DestinationID: dest, Amount: 1,
		Currency: "USD", Authorization: &signedretry.Authorization{RequestID: newID(t, "Request"), Now: t0}}, true)
	wantRefusal(t, err, apierror.PayoutBlocked, "after-change")
}

// TestOutcomesAreDistinct: the host's Execute runs for an allowed payout
// only, once; a held payout is Outcome.Held and a refused one an error,
// and neither reaches Execute. A host that checks only the error cannot
// pay what the policy held.
func TestOutcomesAreDistinct(t *testing.T) {
	p := newPolicy(t, approvalRules)
	w := newWorld(t, memory.New())
	dest := w.destination(t, "USD_ACCOUNT", t0.Add(-48*time.Hour))
	out, err := w.pay(t, p, w.email, dest, 1, "USD", t0, true)
	wantRule(t, out, err, "default")
	if w.executed.Load() != 1 {
		t.Fatalf("%d executions after an allowed payout, want 1", w.executed.Load())
	}
	for range 5 {
		out, err := w.pay(t, p, w.email, dest, 500_000, "USD", t0, true)
		if err != nil || out.Held == nil || out.Executed != nil {
			t.Fatalf("outcome %+v, %v; want held", out, err)
		}
	}
	_, err = w.pay(t, p, w.email, dest, 799_999+1, "USD", t0, true)
	wantRefusal(t, err, apierror.PayoutBlocked, "daily-limit")
	if w.executed.Load() != 1 || w.usages(t) != 1 {
		t.Fatalf("%d executions and %d usages after five holds and a refusal, want 1 and 1", w.executed.Load(), w.usages(t))
	}
}

// TestCoolOffBoundsItsPeriod: a new destination's cool-off lasts its
// whole period whatever was paid meanwhile (a dust payout does not end
// it), and with newDestinationMaxAmount it bounds what the destination
// receives in the period.
func TestCoolOffBoundsItsPeriod(t *testing.T) {
	p := newPolicy(t, `{"referenceCurrency": "USD", "rules": [
		{"name": "cool-off", "match": {"newDestinationWithin": "24h", "minAmount": 200000}, "action": "BLOCK"},
		{"name": "default", "match": {}, "action": "ALLOW"}]}`)
	w := newWorld(t, memory.New())
	fresh := w.destination(t, "ETHEREUM_WALLET", t0.Add(-time.Minute))
	out, err := w.pay(t, p, w.email, fresh, 1, "USD", t0, true)
	wantRule(t, out, err, "default")
	for i := range 3 {
		_, err := w.pay(t, p, w.email, fresh, 499_900, "USD", t0.Add(time.Duration(i)*time.Second), true)
		wantRefusal(t, err, apierror.PayoutBlocked, "cool-off")
	}
	out, err = w.pay(t, p, w.email, fresh, 499_900, "USD", t0.Add(24*time.Hour), true)
	wantRule(t, out, err, "default")

	capped := newPolicy(t, `{"referenceCurrency": "USD", "rules": [
		{"name": "cool-off", "match": {"newDestinationWithin": "24h", "newDestinationMaxAmount": 1000000}, "action": "BLOCK"},
		{"name": "default", "match": {}, "action": "ALLOW"}]}`)
	other := w.destination(t, "USD_ACCOUNT", t0)
	for _, step := range []struct {
		amount int64
		rule   string
	}{{499_900, "default"}, {499_900, "default"}, {300, "cool-off"}, {200, "default"}, {1, "cool-off"}} {
		out, err := w.pay(t, capped, w.email, other, step.amount, "USD", t0.Add(time.Hour), true)
		if step.rule == "cool-off" {
			e := wantRefusal(t, err, apierror.PayoutBlocked, "cool-off")
			if r, _ := e.Details["reason"].(string); !strings.Contains(r, "more than 1000000") {
				t.Fatalf("reason %q", r)
			}
			continue
		}
		wantRule(t, out, err, step.rule)
	}
}

// floorRates values JPY at a hundredth of a US cent, rounded down, as a
// careless host would: the policy counts a positive payout at one minor
// unit at least.
type floorRates struct{}

func (floorRates) ToReference(_ context.Context, currency string, amount int64) (int64, error) {
	if currency != "JPY" {
		return 0, fmt.Errorf("no rate for %s", currency)
	}
	return amount / 100, nil
}

// TestWindowsRoundUp: a payout worth less than a minor unit of the
// reference currency still takes room in a window.
func TestWindowsRoundUp(t *testing.T) {
	r, err := policy.Parse([]byte(`{"referenceCurrency": "USD",
		"windows": [{"name": "day", "scope": "CUSTOMER", "period": "24h", "maxAmount": 3}],
		"rules": [{"name": "daily-limit", "match": {"exceedsWindows": ["day"]}, "action": "BLOCK"},
			{"name": "default", "match": {}, "action": "ALLOW"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.New(policy.Config{Rules: r, Rates: floorRates{}})
	if err != nil {
		t.Fatal(err)
	}
	w := newWorld(t, memory.New())
	dest := w.destination(t, "USD_ACCOUNT", t0.Add(-48*time.Hour))
	for range 3 {
		out, err := w.pay(t, p, w.email, dest, 99, "JPY", t0, true)
		wantRule(t, out, err, "default")
	}
	_, err = w.pay(t, p, w.email, dest, 99, "JPY", t0, true)
	wantRefusal(t, err, apierror.PayoutBlocked, "daily-limit")
}

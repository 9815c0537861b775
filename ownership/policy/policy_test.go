package policy_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/ownership/policy"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/memory"
)

var t0 = time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)

// testRules: a daily limit of 1000.00 USD and 5 payouts per customer, a
// weekly 3000.00 USD per source, a day's cool-off for new destinations
// from 100.00 USD, a passkey signed within 15 minutes from 500.00 USD.
const testRules = `{
	"referenceCurrency": "USD",
	"windows": [
		{"name": "customer-24h", "scope": "CUSTOMER", "period": "24h", "maxAmount": 100000, "maxCount": 5},
		{"name": "source-7d", "scope": "SOURCE", "period": "168h", "maxAmount": 300000}
	],
	"rules": [
		{"name": "daily-limit", "match": {"exceedsWindows": ["customer-24h", "source-7d"]}, "action": "BLOCK"},
		{"name": "cool-off", "match": {"newDestinationWithin": "24h", "minAmount": 10000}, "action": "BLOCK"},
		{"name": "large-needs-passkey", "match": {"minAmount": 50000}, "action": "ALLOW",
			"require": {"credentialTypes": ["PASSKEY"], "maxSessionAge": "15m"}},
		{"name": "no-eur-wallets", "match": {"currencies": ["EUR"], "destinationTypes": ["ETHEREUM_WALLET"]}, "action": "BLOCK"},
		{"name": "default", "match": {}, "action": "ALLOW"}
	]
}`

// rates converts EUR at 1.10 USD and knows nothing else.
type rates struct{}

func (rates) ToReference(_ context.Context, currency string, amount int64) (int64, error) {
	if currency == "EUR" {
		return amount * 110 / 100, nil
	}
	return 0, fmt.Errorf("no rate for %s", currency)
}

func newPolicy(t testing.TB, raw string) *policy.Policy {
	t.Helper()
	r, err := policy.Parse([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.New(policy.Config{Rules: r, Rates: rates{}, Clock: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// world is a customer with a wallet, an EMAIL_OTP and a PASSKEY credential
// with a session each, and destinations registered at given times. executed
// counts the payouts the policy handed to the host's Execute.
type world struct {
	store    storage.Store
	cust     string
	wallet   string
	email    signer
	passkey  signer
	executed atomic.Int64
}

type signer struct{ cred, session string }

func newWorld(t testing.TB, store storage.Store) *world {
	t.Helper()
	ctx := context.Background()
	w := &world{store: store, cust: newID(t, "Customer"), wallet: newID(t, "InternalAccount")}
	w.email = signer{newID(t, "AuthMethod"), newID(t, "Session")}
	w.passkey = signer{newID(t, "AuthMethod"), newID(t, "Session")}
	err := store.Atomic(ctx, func(tx storage.Tx) error {
		if err := tx.InternalAccounts().Create(ctx, &storage.InternalAccount{ID: w.wallet, CustomerID: w.cust,
			Email: "ada@example.com", CreatedAt: t0, UpdatedAt: t0}); err != nil {
			return err
		}
		for _, c := range []struct {
			s   signer
			typ storage.CredentialType
		}{{w.email, storage.EmailOTP}, {w.passkey, storage.Passkey}} {
			cred := storage.Credential{ID: c.s.cred, AccountID: w.wallet, Type: c.typ, Nickname: "n", CreatedAt: t0, UpdatedAt: t0}
			if c.typ == storage.EmailOTP {
				cred.Email = "ada@example.com"
			} else {
				cred.WebAuthn = &storage.WebAuthnCredential{CredentialID: []byte(c.s.cred), PublicKey: []byte{1}}
			}
			if err := tx.Credentials().Create(ctx, &cred); err != nil {
				return err
			}
			// Sessions open an hour before t0, so a 15-minute step-up needs
			// a fresh one.
			if err := tx.Sessions().Create(ctx, &storage.Session{ID: c.s.session, AccountID: w.wallet, CredentialID: c.s.cred,
				PublicKey: []byte{2}, CreatedAt: t0.Add(-time.Hour), ExpiresAt: t0.Add(24 * time.Hour)}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// destination registers an external account of the customer, last changed
// at changed.
func (w *world) destination(t testing.TB, typ string, changed time.Time) string {
	t.Helper()
	a := storage.ExternalAccount{ID: newID(t, "ExternalAccount"), CustomerID: w.cust, Status: storage.StatusActive,
		OwnershipType: "FIRST_PARTY", Currency: "USD", AccountType: typ, Address: "0x52908400098527886E0F7030069857D2E4169EE7",
		CreatedAt: changed, UpdatedAt: changed}
	if err := w.store.Atomic(context.Background(), func(tx storage.Tx) error { return tx.ExternalAccounts().Create(context.Background(), &a) }); err != nil {
		t.Fatal(err)
	}
	return a.ID
}

func newID(t testing.TB, prefix string) string {
	t.Helper()
	id, err := storage.NewID(nil, prefix)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// execute is the host's Execute of the tests: it counts the payouts it
// is handed, in the transaction (a rolled-back one is counted too).
func (w *world) execute(_ context.Context, _ storage.Tx, a *policy.Allowed) error {
	if a == nil || a.Payout.Amount <= 0 {
		return errors.New("execute: no payout")
	}
	w.executed.Add(1)
	return nil
}

// pay decides a payout of amount in currency to dest, signed by s at now,
// in a transaction that commits when the policy allows it and when commit
// is true.
func (w *world) pay(t testing.TB, p *policy.Policy, s signer, dest string, amount int64, currency string, now time.Time, commit bool) (policy.Outcome, error) {
	t.Helper()
	a := &signedretry.Authorization{RequestID: newID(t, "Request"), Type: "PAYOUT", AccountID: w.wallet,
		SessionID: s.session, CredentialID: s.cred, Now: now}
	return w.decide(t, p, policy.Payout{CustomerID: w.cust, SourceID: w.wallet, DestinationID: dest,
		Amount: amount, Currency: currency, Authorization: a}, commit)
}

// decide runs p.Decide on pay with the world's execute, in a transaction
// that commits when the policy allows it and when commit is true.
func (w *world) decide(t testing.TB, p *policy.Policy, pay policy.Payout, commit bool) (policy.Outcome, error) {
	t.Helper()
	ctx := context.Background()
	var out policy.Outcome
	errRollback := errors.New("rolled back by the host")
	err := w.store.Atomic(ctx, func(tx storage.Tx) error {
		var err error
		out, err = p.Decide(ctx, tx, pay, w.execute)
		if err == nil && !commit {
			return errRollback
		}
		return err
	})
	if errors.Is(err, errRollback) {
		return out, nil
	}
	return out, err
}

// wantRule fails unless out is a payout rule allowed and the host's
// Execute made.
func wantRule(t *testing.T, out policy.Outcome, err error, rule string) {
	t.Helper()
	if err != nil || out.Executed == nil || out.Held != nil || out.Executed.Rule != rule {
		t.Fatalf("outcome %+v, %v; want executed, allowed by %s", out, err, rule)
	}
}

func wantRefusal(t *testing.T, err error, code apierror.Code, rule string) *apierror.Error {
	t.Helper()
	e := apierrortest.Want(t, err, code, "")
	if e.Details["rule"] != rule {
		t.Fatalf("refused by %v, want %s: %v", e.Details["rule"], rule, e)
	}
	return e
}

// TestDecide walks the rules of testRules one by one.
func TestDecide(t *testing.T) {
	p := newPolicy(t, testRules)
	w := newWorld(t, memory.New())
	old := w.destination(t, "USD_ACCOUNT", t0.Add(-48*time.Hour))
	fresh := w.destination(t, "ETHEREUM_WALLET", t0.Add(-time.Hour))
	now := t0

	// The default rule allows a small payout.
	d, err := w.pay(t, p, w.email, old, 10_000, "USD", now, true)
	wantRule(t, d, err, "default")

	// A large payout wants a passkey session of at most 15 minutes.
	_, err = w.pay(t, p, w.email, old, 50_000, "USD", now, true)
	e := wantRefusal(t, err, apierror.StepUpRequired, "large-needs-passkey")
	if fmt.Sprint(e.Details["credentialTypes"]) != "[PASSKEY]" || e.Details["maxSessionAgeSeconds"] != int64(900) {
		t.Fatalf("step-up details %v", e.Details)
	}
	_, err = w.pay(t, p, w.passkey, old, 50_000, "USD", now, true)
	wantRefusal(t, err, apierror.StepUpRequired, "large-needs-passkey") // an hour-old session
	d, err = w.pay(t, p, w.passkey, old, 50_000, "USD", t0.Add(-50*time.Minute), true)
	wantRule(t, d, err, "large-needs-passkey")

	// The destination registered an hour ago is in its cool-off from
	// 100.00 USD; below that it is paid, and its first payout does not end
	// the cool-off, which lasts its whole day.
	_, err = w.pay(t, p, w.email, fresh, 10_000, "USD", now, true)
	wantRefusal(t, err, apierror.PayoutBlocked, "cool-off")
	d, err = w.pay(t, p, w.email, fresh, 9_999, "USD", now, true)
	wantRule(t, d, err, "default")
	_, err = w.pay(t, p, w.email, fresh, 10_000, "USD", now, true)
	wantRefusal(t, err, apierror.PayoutBlocked, "cool-off")
	d, err = w.pay(t, p, w.email, old, 10_000, "USD", now, true)
	wantRule(t, d, err, "default")

	// EUR is converted (9000 EUR cents are 9900 USD cents) and EUR to a
	// wallet is blocked by its own rule; a currency without a rate is
	// refused.
	_, err = w.pay(t, p, w.email, fresh, 9_000, "EUR", now, true)
	wantRefusal(t, err, apierror.PayoutBlocked, "no-eur-wallets")
	_, err = w.pay(t, p, w.email, old, 100, "GBP", now, true)
	if e := apierrortest.Want(t, err, apierror.InvalidCurrency, ""); e.Details["field"] != "currency" {
		t.Fatalf("details %v do not name currency", e.Details)
	}

	// The day's window holds 100000: 10000+50000+9999+10000 are used, so
	// 20002 does not fit and 20001 does; then the count of 5 is reached.
	_, err = w.pay(t, p, w.email, old, 20_002, "USD", now, true)
	e = wantRefusal(t, err, apierror.PayoutBlocked, "daily-limit")
	if e.Details["window"] != "customer-24h" || e.Details["availableAt"] != t0.Add(-50*time.Minute+24*time.Hour).Format(time.RFC3339) {
		t.Fatalf("window refusal details %v: the 50000 signed 50 minutes before t0 leaves the window first", e.Details)
	}
	d, err = w.pay(t, p, w.email, old, 20_001, "USD", now, true)
	wantRule(t, d, err, "default")
	_, err = w.pay(t, p, w.email, old, 1, "USD", now, true)
	e = wantRefusal(t, err, apierror.PayoutBlocked, "daily-limit")
	if want := t0.Add(-50 * time.Minute).Add(24 * time.Hour).Format(time.RFC3339); e.Details["availableAt"] != want {
		t.Fatalf("count refusal available at %v, want %s", e.Details["availableAt"], want)
	}
	// A day later the window has room again.
	d, err = w.pay(t, p, w.email, old, 1, "USD", t0.Add(24*time.Hour), true)
	wantRule(t, d, err, "default")

	// Allowed payouts wrote one event each, with the rule and no secret.
	events, err := w.store.(*memory.Store).Events(context.Background(), w.wallet)
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 6 {
		t.Fatalf("%d events, want one per allowed payout (6)", len(events))
	}
	var env struct {
		Type string
		Data map[string]any
	}
	if err := json.Unmarshal(events[1].Payload, &env); err != nil {
		t.Fatal(err)
	}
	if env.Type != policy.EventDecided || env.Data["rule"] != "large-needs-passkey" || env.Data["credentialId"] != w.passkey.cred ||
		env.Data["referenceAmount"] != float64(50_000) {
		t.Fatalf("event %s", events[1].Payload)
	}
}

// TestRolledBackPayoutUsesNothing: a payout the host rolls back (its
// debit failed, say) counts in no window and writes no event.
func TestRolledBackPayoutUsesNothing(t *testing.T) {
	p := newPolicy(t, testRules)
	w := newWorld(t, memory.New())
	dest := w.destination(t, "USD_ACCOUNT", t0.Add(-48*time.Hour))
	for range 10 {
		if _, err := w.pay(t, p, w.email, dest, 40_000, "USD", t0, false); err != nil {
			t.Fatal(err)
		}
	}
	d, err := w.pay(t, p, w.email, dest, 40_000, "USD", t0, true)
	wantRule(t, d, err, "default")
	events, _ := w.store.(*memory.Store).Events(context.Background(), w.wallet)
	if len(events) != 1 {
		t.Fatalf("%d events, want the committed payout's only", len(events))
	}
}

// TestSourceWindow: a window of ScopeSource counts one source only.
func TestSourceWindow(t *testing.T) {
	p := newPolicy(t, `{"referenceCurrency": "USD",
		"windows": [{"name": "per-wallet", "scope": "SOURCE", "period": "1h", "maxCount": 1}],
		"rules": [{"name": "one-per-wallet", "match": {"exceedsWindows": ["per-wallet"]}, "action": "BLOCK"},
			{"name": "default", "match": {}, "action": "ALLOW"}]}`)
	w := newWorld(t, memory.New())
	dest := w.destination(t, "USD_ACCOUNT", t0.Add(-48*time.Hour))
	d, err := w.pay(t, p, w.email, dest, 1, "USD", t0, true)
	wantRule(t, d, err, "default")
	_, err = w.pay(t, p, w.email, dest, 1, "USD", t0, true)
	wantRefusal(t, err, apierror.PayoutBlocked, "one-per-wallet")
	// Another wallet of the same customer has its own window.
	other := &world{store: w.store, cust: w.cust, wallet: newID(t, "InternalAccount"), email: w.email, passkey: w.passkey}
	d, err = other.pay(t, p, w.email, dest, 1, "USD", t0, true)
	wantRule(t, d, err, "default")
}

// TestDecideRefusesMalformedPayouts: every member is checked, and a
// payout without its authorization is the host's bug (500).
func TestDecideRefusesMalformedPayouts(t *testing.T) {
	p := newPolicy(t, testRules)
	w := newWorld(t, memory.New())
	ctx := context.Background()
	err := w.store.Atomic(ctx, func(tx storage.Tx) error {
		_, err := p.Decide(ctx, tx, policy.Payout{Authorization: &signedretry.Authorization{}, Amount: -1, Currency: "usd"}, w.execute)
		return err
	})
	apierrortest.WantFields(t, err, apierror.InvalidInput, "id", "customerId", "sourceId", "destinationId", "amount", "currency")
	err = w.store.Atomic(ctx, func(tx storage.Tx) error {
		_, err := p.Decide(ctx, tx, policy.Payout{CustomerID: w.cust, SourceID: w.wallet, DestinationID: "x", Amount: 1, Currency: "USD"}, w.execute)
		return err
	})
	apierrortest.Want(t, err, apierror.InternalError, "")
	// Without the host's Execute no payout could be made: 500.
	err = w.store.Atomic(ctx, func(tx storage.Tx) error {
		_, err := p.Decide(ctx, tx, policy.Payout{CustomerID: w.cust, SourceID: w.wallet, DestinationID: "x", Amount: 1, Currency: "USD",
			Authorization: &signedretry.Authorization{RequestID: "Request:x", Now: t0}}, nil)
		return err
	})
	apierrortest.Want(t, err, apierror.InternalError, "")
	_, err = w.pay(t, p, w.email, newID(t, "ExternalAccount"), 1, "USD", t0, true)
	if e := apierrortest.Want(t, err, apierror.ReferenceNotFound, ""); e.Details["field"] != "destinationId" {
		t.Fatalf("details %v do not name destinationId", e.Details)
	}
}

// TestNewRefusesRules: every rule set New refuses, with the check named.
func TestNewRefusesRules(t *testing.T) {
	base := func(rules string) string {
		return `{"referenceCurrency": "USD", "windows": [{"name": "w", "scope": "CUSTOMER", "period": "24h", "maxAmount": 1}], "rules": [` + rules + `]}`
	}
	catchAll := `{"name": "default", "match": {}, "action": "ALLOW"}`
	for _, tc := range []struct{ name, raw, want string }{
		{"no catch-all", base(`{"name": "a", "match": {"minAmount": 1}, "action": "ALLOW"}`), "is not a catch-all"},
		{"no rules", base(``), "no rules"},
		{"catch-all first", base(catchAll + `,` + `{"name": "b", "match": {"minAmount": 1}, "action": "BLOCK"}`), "make it the last"},
		{"unknown action", base(`{"name": "a", "match": {}, "action": "APPROVE"}`), `action "APPROVE"`},
		{"lower-case action", base(`{"name": "a", "match": {}, "action": "allow"}`), `action "allow"`},
		{"unknown window", base(`{"name": "a", "match": {"exceedsWindows": ["nope"]}, "action": "BLOCK"},` + catchAll), `"nope", which is not a window`},
		{"duplicate rule", base(`{"name": "default", "match": {"minAmount": 1}, "action": "BLOCK"},` + catchAll), "earlier rule"},
		{"step-up on a block", base(`{"name": "a", "match": {"minAmount": 1}, "action": "BLOCK", "require": {"credentialTypes": ["PASSKEY"]}},` + catchAll), "no step-up"},
		{"unknown credential", base(`{"name": "a", "match": {}, "action": "ALLOW", "require": {"credentialTypes": ["PASSWORD"]}}`), `"PASSWORD"`},
		{"empty step-up", base(`{"name": "a", "match": {}, "action": "ALLOW", "require": {}}`), "asks nothing"},
		{"unknown account type", base(`{"name": "a", "match": {"destinationTypes": ["ethereum_wallet"]}, "action": "BLOCK"},` + catchAll), "not an account type"},
		{"bad currency", base(`{"name": "a", "match": {"currencies": ["usd"]}, "action": "BLOCK"},` + catchAll), "not a currency code"},
		{"negative amount", base(`{"name": "a", "match": {"minAmount": -1}, "action": "BLOCK"},` + catchAll), "negative"},
		{"bad name", base(`{"name": "a b", "match": {}, "action": "ALLOW"}`), "is not 1 to 64"},
		{"reference currency", `{"referenceCurrency": "usd", "rules": [` + catchAll + `]}`, "referenceCurrency"},
		{"window bounds nothing", `{"referenceCurrency": "USD", "windows": [{"name": "w", "scope": "CUSTOMER", "period": "24h"}], "rules": [` + catchAll + `]}`, "bounds nothing"},
		{"window scope", `{"referenceCurrency": "USD", "windows": [{"name": "w", "scope": "WALLET", "period": "24h", "maxCount": 1}], "rules": [` + catchAll + `]}`, `scope "WALLET"`},
		{"window period", `{"referenceCurrency": "USD", "windows": [{"name": "w", "scope": "CUSTOMER", "period": "1s", "maxCount": 1}], "rules": [` + catchAll + `]}`, "period 1s"},
		{"cap without a cool-off", base(`{"name": "a", "match": {"newDestinationMaxAmount": 1}, "action": "BLOCK"},` + catchAll), "needs newDestinationWithin"},
		{"negative cap", base(`{"name": "a", "match": {"newDestinationWithin": "1h", "newDestinationMaxAmount": -1}, "action": "BLOCK"},` + catchAll), "newDestinationMaxAmount is negative"},
		{"security change period", base(`{"name": "a", "match": {"securityChangeWithin": "1s"}, "action": "BLOCK"},` + catchAll), "securityChangeWithin 1s"},
		{"duplicate window", `{"referenceCurrency": "USD", "windows": [{"name": "w", "scope": "CUSTOMER", "period": "1h", "maxCount": 1}, {"name": "w", "scope": "SOURCE", "period": "1h", "maxCount": 1}], "rules": [` + catchAll + `]}`, "earlier window"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := policy.Parse([]byte(tc.raw))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			_, err = policy.New(policy.Config{Rules: r})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestParseIsStrict: the JSON of a policy is read one way: unknown and
// case-variant members, duplicates and numbers for durations are errors.
func TestParseIsStrict(t *testing.T) {
	for _, raw := range []string{
		`{"referenceCurrency": "USD", "rules": [], "extra": 1}`,
		`{"referenceCurrency": "USD", "rules": [{"name": "a", "match": {"minAmount": 1, "maxAmount": 2}, "action": "ALLOW"}]}`,
		`{"ReferenceCurrency": "USD", "rules": []}`,
		`{"referenceCurrency": "USD", "referenceCurrency": "EUR", "rules": []}`,
		`{"referenceCurrency": "USD", "windows": [{"name": "w", "scope": "CUSTOMER", "period": 86400, "maxCount": 1}], "rules": []}`,
		`{"referenceCurrency": "USD", "rules": []} {}`,
		`[]`,
	} {
		if _, err := policy.Parse([]byte(raw)); err == nil {
			t.Errorf("Parse(%s) accepted it", raw)
		}
	}
}

// TestRulesAreCopied: a host's later change to its Rules does not reach
// the policy.
func TestRulesAreCopied(t *testing.T) {
	limit := int64(1)
	r := policy.Rules{ReferenceCurrency: "USD",
		Windows: []policy.Window{{Name: "w", Scope: policy.ScopeCustomer, Period: policy.Duration(time.Hour), MaxCount: &limit}},
		Rules: []policy.Rule{{Name: "limit", Match: policy.Match{ExceedsWindows: []string{"w"}}, Action: policy.Block},
			{Name: "default", Action: policy.Allow}}}
	p, err := policy.New(policy.Config{Rules: r})
	if err != nil {
		t.Fatal(err)
	}
	limit = 100
	w := newWorld(t, memory.New())
	dest := w.destination(t, "USD_ACCOUNT", t0.Add(-48*time.Hour))
	if _, err := w.pay(t, p, w.email, dest, 1, "USD", t0, true); err != nil {
		t.Fatal(err)
	}
	_, err = w.pay(t, p, w.email, dest, 1, "USD", t0, true)
	wantRefusal(t, err, apierror.PayoutBlocked, "limit")
}

// FuzzParse: no input makes Parse or New panic, and what New accepts
// marshals back to rules New accepts again.
func FuzzParse(f *testing.F) {
	f.Add([]byte(testRules))
	f.Add([]byte(`{"referenceCurrency": "USD", "rules": [{"name": "default", "match": {}, "action": "ALLOW"}]}`))
	f.Add([]byte(`{"referenceCurrency": "USD", "windows": [{"name": "w", "scope": "SOURCE", "period": "1h", "maxCount": 0}], "rules": [{"name": "default", "match": {"exceedsWindows": ["w"]}, "action": "BLOCK"}]}`))
	f.Add([]byte(`{"referenceCurrency": "USD", "rules": [{"name": "cool", "match": {"newDestinationWithin": "24h", "newDestinationMaxAmount": 200000}, "action": "BLOCK"},
		{"name": "changed", "match": {"securityChangeWithin": "24h"}, "action": "REQUIRE_APPROVAL", "approval": {"count": 1, "operators": ["risk"], "ttl": "24h"}},
		{"name": "default", "match": {}, "action": "ALLOW"}]}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		r, err := policy.Parse(raw)
		if err != nil {
			return
		}
		if _, err := policy.New(policy.Config{Rules: r}); err != nil {
			return
		}
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		again, err := policy.Parse(b)
		if err != nil {
			t.Fatalf("Parse of %s: %v", b, err)
		}
		if _, err := policy.New(policy.Config{Rules: again}); err != nil {
			t.Fatalf("New of %s: %v", b, err)
		}
	})
}

// TestUMADestination: a payout to a UMA address counts in the windows like
// any other, and a cool-off treats the address, which has no registration,
// as new for the cool-off's period after its first payout.
func TestUMADestination(t *testing.T) {
	p := newPolicy(t, testRules)
	w := newWorld(t, memory.New())
	payUMA := func(amount int64, dest string, now time.Time) (policy.Outcome, error) {
		return w.decide(t, p, policy.Payout{CustomerID: w.cust, SourceID: w.wallet, DestinationID: dest,
			DestinationType: policy.DestinationUMA, Amount: amount, Currency: "USD",
			Authorization: &signedretry.Authorization{RequestID: newID(t, "Request"), AccountID: w.wallet,
				SessionID: w.email.session, CredentialID: w.email.cred, Now: now}}, true)
	}
	_, err := payUMA(10_000, "$alice@uma.example", t0)
	wantRefusal(t, err, apierror.PayoutBlocked, "cool-off")
	d, err := payUMA(9_999, "$alice@uma.example", t0)
	wantRule(t, d, err, "default")
	// Paid within the cool-off, it is still new until a day after that
	// first payout.
	_, err = payUMA(40_000, "$alice@uma.example", t0.Add(23*time.Hour))
	wantRefusal(t, err, apierror.PayoutBlocked, "cool-off")
	later := t0.Add(24 * time.Hour)
	d, err = payUMA(40_000, "$alice@uma.example", later)
	wantRule(t, d, err, "default")
	d, err = payUMA(9_999, "$bob@uma.example", later)
	wantRule(t, d, err, "default")
	// 49999 of the day's 100000 are used: 50002 does not fit.
	_, err = payUMA(50_002, "$alice@uma.example", later)
	wantRefusal(t, err, apierror.PayoutBlocked, "daily-limit")
	_, err = payUMA(1, "alice@uma.example", later)
	apierrortest.WantFields(t, err, apierror.InvalidInput, "destinationId")
	_, err = w.decide(t, p, policy.Payout{CustomerID: w.cust, SourceID: w.wallet, DestinationID: "x", DestinationType: "IBAN",
		Amount: 1, Currency: "USD", Authorization: &signedretry.Authorization{RequestID: "Request:x", Now: t0}}, true)
	apierrortest.WantFields(t, err, apierror.InvalidInput, "destinationType")
}

package sandbox_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/ownership/policy"
	"github.com/walletgate/walletgate/sandbox"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/signedretry/stamper"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/memory"
	"github.com/walletgate/walletgate/walletauth"
	"github.com/walletgate/walletgate/walletauth/authclient"
)

// TestDefaultPayoutRulesMatchConstants: DefaultPayoutRules parses, is a
// valid policy, and holds the documented values: the customer-day window
// of DailyPayoutLimitUSD in USD cents, the step-up at exactly
// StepUpPayoutUSDCents (PASSKEY, StepUpMaxSessionAge) and the cool-off at
// exactly NewDestinationPayoutUSDCents, the approval at exactly
// ApprovalPayoutUSDCents (one approval, a second credential or
// SandboxRiskOperator, ApprovalTTL), each rule named by its constant.
func TestDefaultPayoutRulesMatchConstants(t *testing.T) {
	r, err := policy.Parse([]byte(sandbox.DefaultPayoutRules))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := policy.New(policy.Config{Rules: r}); err != nil {
		t.Fatal(err)
	}
	if r.ReferenceCurrency != "USD" || len(r.Windows) != 1 {
		t.Fatalf("rules %+v", r)
	}
	w := r.Windows[0]
	if w.Name != sandbox.PayoutWindowCustomerDay || w.Scope != policy.ScopeCustomer || time.Duration(w.Period) != 24*time.Hour ||
		w.MaxAmount == nil || *w.MaxAmount != sandbox.DailyPayoutLimitUSD*100 || w.MaxCount != nil {
		t.Fatalf("window %+v", w)
	}
	byName := map[string]policy.Rule{}
	for _, rule := range r.Rules {
		byName[rule.Name] = rule
	}
	if d := byName[sandbox.PayoutRuleDailyLimit]; d.Action != policy.Block || len(d.Match.ExceedsWindows) != 1 || d.Match.ExceedsWindows[0] != w.Name ||
		r.Rules[0].Name != d.Name {
		t.Fatalf("daily limit %+v", d)
	}
	s := byName[sandbox.PayoutRuleStepUp]
	if s.Action != policy.Allow || s.Match.MinAmount == nil || *s.Match.MinAmount != sandbox.StepUpPayoutUSDCents || s.Require == nil ||
		len(s.Require.CredentialTypes) != 1 || s.Require.CredentialTypes[0] != "PASSKEY" || s.Require.MaxSessionAge == nil ||
		time.Duration(*s.Require.MaxSessionAge) != sandbox.StepUpMaxSessionAge {
		t.Fatalf("step-up %+v", s)
	}
	n := byName[sandbox.PayoutRuleNewDestination]
	if n.Action != policy.Block || n.Match.MinAmount == nil || *n.Match.MinAmount != sandbox.NewDestinationPayoutUSDCents ||
		n.Match.NewDestinationWithin == nil || time.Duration(*n.Match.NewDestinationWithin) != 24*time.Hour {
		t.Fatalf("new destination %+v", n)
	}
	a := byName[sandbox.PayoutRuleApproval]
	if a.Action != policy.RequireApproval || a.Match.MinAmount == nil || *a.Match.MinAmount != sandbox.ApprovalPayoutUSDCents ||
		a.Require != nil || a.Approval == nil || a.Approval.Count != 1 || !a.Approval.SecondCredential ||
		len(a.Approval.Operators) != 1 || a.Approval.Operators[0] != sandbox.SandboxRiskOperator ||
		time.Duration(a.Approval.TTL) != sandbox.ApprovalTTL {
		t.Fatalf("approval %+v", a)
	}
	// Each magic rule is reached by its exact amount only: the rule just
	// before it allows every larger amount.
	for i, rule := range r.Rules {
		if rule.Name != s.Name && rule.Name != n.Name && rule.Name != a.Name {
			continue
		}
		prev := r.Rules[i-1]
		if prev.Action != policy.Allow || prev.Require != nil || prev.Match.MinAmount == nil || *prev.Match.MinAmount != *rule.Match.MinAmount+1 {
			t.Fatalf("rule before %s: %+v", rule.Name, prev)
		}
	}
}

// blocked asserts a 403 refusal of the payout policy naming rule, and
// returns its details.
func blocked(t *testing.T, r resp, code apierror.Code, rule string) map[string]any {
	t.Helper()
	f := r.fails(t, 403, code)
	if f.Details["rule"] != rule || f.Details["reason"] == "" || !strings.Contains(f.Message, rule) {
		t.Fatalf("refusal %+v, want rule %s", f, rule)
	}
	return f.Details
}

// TestPayoutDailyLimit: the default rules let a customer pay out
// DailyPayoutLimitUSD in a day and refuse the next payout, transfer-out or
// quote execution, with 403 PAYOUT_BLOCKED naming the daily-limit rule,
// the customer-day window and when the window will have room; the refused
// retries debit nothing and count nothing, so once the oldest payout has
// left the window exactly the room it frees is paid.
func TestPayoutDailyLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newBubbleEnv(t, sandbox.Config{})
		c, w := e.customer("Dai Ly")
		ext := e.external(c.ID, usdAccount("71717101"))
		const half = sandbox.DailyPayoutLimitUSD * 100 / 2 // USD cents, the single-transaction maximum
		fund := func(amount int64, cur string) {
			e.do("POST", "/sandbox/internal-accounts/"+w+"/fund", map[string]any{"amount": amount, "currency": cur}).ok(t, 200, nil)
		}
		fund(2*half+100, "USD")
		out := func(key *authclient.ClientKey, amount int64) resp {
			return e.signed(key, "POST", "/transfer-out", map[string]any{"source": map[string]string{"accountId": w},
				"destination": map[string]string{"accountId": ext.ID}, "amount": amount})
		}
		first := time.Now().UTC()
		out(e.login(w), half).ok(t, 201, nil)
		time.Sleep(time.Hour)
		key := e.login(w) // the first session has expired
		out(key, half).ok(t, 201, nil)

		// The window is full: one more cent is refused on the retry.
		want := first.Add(24 * time.Hour).Format(time.RFC3339)
		d := blocked(t, out(key, 1), apierror.PayoutBlocked, sandbox.PayoutRuleDailyLimit)
		if d["window"] != sandbox.PayoutWindowCustomerDay || d["availableAt"] != want {
			t.Fatalf("details %v, want window %s available at %s", d, sandbox.PayoutWindowCustomerDay, want)
		}
		// A quote execution counts in the same window.
		fund(1_000_000, "USDB")
		q := e.quote(payer{c, w, key}, map[string]any{"accountId": ext.ID}, 1_000_000)
		d = blocked(t, e.execute(payer{c, w, key}, q.ID), apierror.PayoutBlocked, sandbox.PayoutRuleDailyLimit)
		if d["availableAt"] != want {
			t.Fatalf("details %v", d)
		}
		if got := e.getQuote(q.ID); got.Status != sandbox.QuotePending || got.TransactionID != "" {
			t.Fatalf("refused quote %+v", got)
		}
		// So does a quote paid to a UMA address, which is no external
		// account.
		uq := e.quote(payer{c, w, key}, map[string]any{"umaAddress": sandbox.UMASuccessUSD}, 1_000_000)
		blocked(t, e.execute(payer{c, w, key}, uq.ID), apierror.PayoutBlocked, sandbox.PayoutRuleDailyLimit)
		if e.balance(w, "USD") != 100 || e.balance(w, "USDB") != 1_000_000 {
			t.Fatalf("balances USD %d USDB %d after refusals", e.balance(w, "USD"), e.balance(w, "USDB"))
		}

		// A second before the first payout leaves the window it is still
		// full; at availableAt the first payout's room is free again, and
		// the refusals took none of it.
		time.Sleep(time.Until(first.Add(24*time.Hour)) - time.Second)
		key = e.login(w)
		blocked(t, out(key, 1), apierror.PayoutBlocked, sandbox.PayoutRuleDailyLimit)
		time.Sleep(time.Second)
		fund(half, "USD")
		out(key, half).ok(t, 201, nil)
		d = blocked(t, out(key, 1), apierror.PayoutBlocked, sandbox.PayoutRuleDailyLimit)
		if d["availableAt"] != first.Add(25*time.Hour).Format(time.RFC3339) {
			t.Fatalf("details %v", d)
		}
		if e.balance(w, "USD") != 100 {
			t.Fatalf("balance %d", e.balance(w, "USD"))
		}
		// Another customer has a window of its own.
		p := e.payer(1_000_000)
		pext := e.external(p.customer.ID, usdAccount("71717102"))
		e.execute(p, e.quote(p, map[string]any{"accountId": pext.ID}, 1_000_000).ID).ok(t, 200, nil)
	})
}

// burstRules allow one payout per source every two minutes, named
// "burst-limit", in USDB.
func burstRules() *policy.Rules {
	one := int64(1)
	return &policy.Rules{ReferenceCurrency: "USDB",
		Windows: []policy.Window{{Name: "burst", Scope: policy.ScopeSource, Period: policy.Duration(2 * time.Minute), MaxCount: &one}},
		Rules: []policy.Rule{{Name: "burst-limit", Match: policy.Match{ExceedsWindows: []string{"burst"}}, Action: policy.Block},
			{Name: "rest", Action: policy.Allow}}}
}

// TestPayoutRulesConfigured: Config.PayoutRules replaces the default rules
// (here: one payout per wallet every two minutes, valued in USDB from USD
// at the sandbox's rates), and a retry the policy refuses leaves its
// signed request usable: the same stamped retry pays once the window has
// room, and nothing was debited before.
func TestPayoutRulesConfigured(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newBubbleEnv(t, sandbox.Config{PayoutRules: burstRules()})
		p := e.payer(10_000_000)
		ext := e.external(p.customer.ID, usdAccount("72727201"))
		e.do("POST", "/sandbox/internal-accounts/"+p.wallet+"/fund", map[string]any{"amount": 1_000, "currency": "USD"}).ok(t, 200, nil)
		body := map[string]any{"source": map[string]string{"accountId": p.wallet}, "destination": map[string]string{"accountId": ext.ID}, "amount": 400}
		start := time.Now().UTC()
		e.signed(p.key, "POST", "/transfer-out", body).ok(t, 201, nil)

		// A quote execution from the same wallet within two minutes.
		q := e.quote(p, map[string]any{"accountId": ext.ID}, 1_000_000)
		path := "/quotes/" + q.ID + "/execute"
		ch := e.challenge("POST", path, nil)
		d := blocked(t, e.retry(p.key, ch, "POST", path, nil), apierror.PayoutBlocked, "burst-limit")
		if d["window"] != "burst" || d["availableAt"] != start.Add(2*time.Minute).Format(time.RFC3339) {
			t.Fatalf("details %v", d)
		}
		if e.balance(p.wallet, "USDB") != 10_000_000 || e.getQuote(q.ID).Status != sandbox.QuotePending {
			t.Fatal("a refused execution moved funds")
		}
		// The default rules are not in force: the step-up amount is paid
		// with an EMAIL_OTP session once the window has room.
		time.Sleep(2 * time.Minute)
		var done sandbox.Quote
		e.retry(p.key, ch, "POST", path, nil).ok(t, 200, &done)
		if done.TransactionID == "" || e.balance(p.wallet, "USDB") != 9_000_000 {
			t.Fatalf("executed %+v, balance %d", done, e.balance(p.wallet, "USDB"))
		}
		time.Sleep(2 * time.Minute)
		body["amount"] = sandbox.StepUpPayoutUSDCents
		e.do("POST", "/sandbox/internal-accounts/"+p.wallet+"/fund", map[string]any{"amount": sandbox.StepUpPayoutUSDCents, "currency": "USD"}).ok(t, 200, nil)
		e.signed(p.key, "POST", "/transfer-out", body).ok(t, 201, nil)
	})
}

// TestPayoutRulesRefusedAtNew: New refuses rules that do not validate and
// rules counting in a currency the sandbox cannot value payouts in.
func TestPayoutRulesRefusedAtNew(t *testing.T) {
	noCatchAll := burstRules()
	noCatchAll.Rules = noCatchAll.Rules[:1]
	foreign := burstRules()
	foreign.ReferenceCurrency = "XYZ"
	for name, r := range map[string]*policy.Rules{"no catch-all": noCatchAll, "foreign currency": foreign} {
		sim, err := sandbox.New(sandbox.Config{PayoutRules: r})
		if err == nil {
			sim.Close()
			t.Fatalf("%s: New accepted the rules", name)
		}
		if !strings.Contains(err.Error(), "Config.PayoutRules") {
			t.Fatalf("%s: %v", name, err)
		}
	}
}

// TestPayoutMagicAmounts: under the default rules a payout worth exactly
// StepUpPayoutUSDCents needs a PASSKEY session carrying a passkey's
// assurance (403 STEP_UP_REQUIRED otherwise, naming what it wants: a
// passkey the OTP session enrolled carries EMAIL_OTP's until its
// security-change period ends), one worth exactly
// NewDestinationPayoutUSDCents is refused to a destination registered
// within 24 hours, however much it was paid meanwhile, and a cent more or
// less is paid. Nothing refused is debited. The sandbox's clock, moved
// over POST /sandbox/clock/advance, reaches both ends.
func TestPayoutMagicAmounts(t *testing.T) {
	e := newEnv(t)
	c, w := e.customer("Mag Ic")
	otp := e.login(w)
	e.do("POST", "/sandbox/internal-accounts/"+w+"/fund", map[string]any{"amount": 1_000_000, "currency": "USD"}).ok(t, 200, nil)
	ext := e.external(c.ID, usdAccount("73737301"))
	out := func(key *authclient.ClientKey, amount int64) resp {
		return e.signed(key, "POST", "/transfer-out", map[string]any{"source": map[string]string{"accountId": w},
			"destination": map[string]string{"accountId": ext.ID}, "amount": amount})
	}
	d := blocked(t, out(otp, sandbox.NewDestinationPayoutUSDCents), apierror.PayoutBlocked, sandbox.PayoutRuleNewDestination)
	if _, ok := d["availableAt"]; ok {
		t.Fatalf("a cool-off names no window: %v", d)
	}
	stepUp := map[string]any{"source": map[string]string{"accountId": w}, "destination": map[string]string{"accountId": ext.ID},
		"amount": sandbox.StepUpPayoutUSDCents}
	stepUpCh := e.challenge("POST", "/transfer-out", stepUp)
	d = blocked(t, e.retry(otp, stepUpCh, "POST", "/transfer-out", stepUp), apierror.StepUpRequired, sandbox.PayoutRuleStepUp)
	if types, _ := d["credentialTypes"].([]any); len(types) != 1 || types[0] != "PASSKEY" || d["maxSessionAgeSeconds"] != sandbox.StepUpMaxSessionAge.Seconds() {
		t.Fatalf("details %v", d)
	}
	// A passkey the OTP session enrolls does not meet the step-up yet, and
	// the sandbox literal meets none, even with that passkey's session
	// active.
	pk, a := e.enrolPasskey(w, otp)
	weak := e.passkeySession(pk, a)
	blocked(t, e.retry(weak, stepUpCh, "POST", "/transfer-out", stepUp), apierror.StepUpRequired, sandbox.PayoutRuleStepUp)
	ch := e.challenge("POST", "/transfer-out", stepUp)
	blocked(t, e.do("POST", "/transfer-out", stepUp,
		stamper.HeaderSignature, signedretry.SandboxSignature, stamper.HeaderRequestID, ch.RequestID), apierror.StepUpRequired, sandbox.PayoutRuleStepUp)
	if e.balance(w, "USD") != 1_000_000 {
		t.Fatalf("balance %d after refusals", e.balance(w, "USD"))
	}
	for _, n := range []int64{sandbox.NewDestinationPayoutUSDCents - 1, sandbox.NewDestinationPayoutUSDCents + 1,
		sandbox.StepUpPayoutUSDCents - 1, sandbox.StepUpPayoutUSDCents + 1} {
		out(otp, n).ok(t, 201, nil)
	}
	// Paid meanwhile, the destination is still new until its day is over.
	blocked(t, out(otp, sandbox.NewDestinationPayoutUSDCents), apierror.PayoutBlocked, sandbox.PayoutRuleNewDestination)
	e.advance(int64(24 * time.Hour / time.Second))
	otp = e.login(w)
	out(otp, sandbox.NewDestinationPayoutUSDCents).ok(t, 201, nil)
	// Past its period the passkey carries a passkey's assurance: a fresh
	// session of it meets the step-up.
	passkey := e.passkeySession(pk, a)
	out(passkey, sandbox.StepUpPayoutUSDCents).ok(t, 201, nil)
	// The magic value is the amount's value: 777.77 USDB by a quote.
	q := e.quote(payer{c, w, otp}, map[string]any{"accountId": ext.ID}, sandbox.StepUpPayoutUSDCents*10_000)
	e.do("POST", "/sandbox/internal-accounts/"+w+"/fund", map[string]any{"amount": q.TotalSendingAmount}).ok(t, 200, nil)
	blocked(t, e.execute(payer{c, w, otp}, q.ID), apierror.StepUpRequired, sandbox.PayoutRuleStepUp)
}

// enrolPasskey registers a PASSKEY credential on the wallet, signed by
// the session key, and returns it with its authenticator.
func (e *env) enrolPasskey(wallet string, session *authclient.ClientKey) (walletauth.AuthMethod, *authenticator) {
	e.t.Helper()
	a := newAuthenticator(e.t)
	var rc struct{ Challenge string }
	e.do("POST", "/sandbox/passkeys/registration-challenge", map[string]string{"accountId": wallet}).ok(e.t, 201, &rc)
	var m walletauth.AuthMethod
	e.signed(session, "POST", "/auth/credentials", map[string]any{"type": "PASSKEY", "accountId": wallet, "nickname": "Key",
		"challenge": rc.Challenge, "attestation": a.attest(e.t, rc.Challenge, wallet)}).ok(e.t, 201, &m)
	return m, a
}

// passkeySession logs in with the passkey m and returns the session's key.
func (e *env) passkeySession(m walletauth.AuthMethod, a *authenticator) *authclient.ClientKey {
	e.t.Helper()
	client, err := authclient.NewClientKey()
	if err != nil {
		e.t.Fatal(err)
	}
	var ch walletauth.ChallengeResponse
	e.do("POST", "/auth/credentials/"+m.ID+"/challenge", map[string]string{"clientPublicKey": client.PublicKeyHex()}).ok(e.t, 200, &ch)
	var sess walletauth.AuthSession
	e.do("POST", "/auth/credentials/"+m.ID+"/verify", map[string]any{"type": "PASSKEY", "assertion": a.assert(e.t, ch.Challenge)},
		"Request-Id", ch.RequestID).ok(e.t, 200, &sess)
	key, err := client.OpenSessionKey(sess.EncryptedSessionSigningKey)
	if err != nil {
		e.t.Fatal(err)
	}
	return key
}

// settledPasskey enrolls a passkey with the wallet's session, moves the
// clock past its security-change period and logs in with it: a passkey
// the owner added a day ago, worth a passkey. The wallet's earlier
// sessions have expired by then.
func (e *env) settledPasskey(wallet string, session *authclient.ClientKey) *authclient.ClientKey {
	e.t.Helper()
	m, a := e.enrolPasskey(wallet, session)
	e.advance(int64(walletauth.DefaultSecurityChangePeriod / time.Second))
	return e.passkeySession(m, a)
}

// rollbackStore fails, once armed, the first transaction that recorded a
// payout in the policy's windows, after everything in it succeeded: the
// payout is rolled back as if its commit had failed.
type rollbackStore struct {
	storage.Store
	armed atomic.Bool
}

var errCommit = errors.New("injected commit failure")

func (s *rollbackStore) Atomic(ctx context.Context, fn func(storage.Tx) error) error {
	return s.Store.Atomic(ctx, func(tx storage.Tx) error {
		var recorded bool
		if err := fn(recordingTx{tx, &recorded}); err != nil {
			return err
		}
		if recorded && s.armed.CompareAndSwap(true, false) {
			return errCommit
		}
		return nil
	})
}

type recordingTx struct {
	storage.Tx
	recorded *bool
}

func (t recordingTx) PayoutUsage() storage.PayoutUsages {
	return recordingUsages{t.Tx.PayoutUsage(), t.recorded}
}

type recordingUsages struct {
	storage.PayoutUsages
	recorded *bool
}

func (u recordingUsages) Record(ctx context.Context, r *storage.PayoutUsage) error {
	err := u.PayoutUsages.Record(ctx, r)
	*u.recorded = err == nil
	return err
}

// TestPayoutRolledBackCountsNothing: a payout the policy allowed whose
// transaction then rolls back (its commit fails) answers 500, debits
// nothing and counts in no window: the same signed retry is then paid,
// and it is the one payout the window holds. On memory and PostgreSQL.
func TestPayoutRolledBackCountsNothing(t *testing.T) {
	t.Run("memory", func(t *testing.T) { payoutRolledBackCountsNothing(t, memory.New()) })
	if pg := payoutPostgres(t); pg != nil {
		t.Run("postgres", func(t *testing.T) { payoutRolledBackCountsNothing(t, pg) })
	}
}

func payoutRolledBackCountsNothing(t *testing.T, inner storage.Store) {
	store := &rollbackStore{Store: inner}
	e := newEnvWith(t, sandbox.Config{Store: store, PayoutRules: burstRules()})
	p := e.payer(10_000_000)
	ext := e.external(p.customer.ID, usdAccount("74747401"))
	q := e.quote(p, map[string]any{"accountId": ext.ID}, 1_000_000)
	path := "/quotes/" + q.ID + "/execute"
	ch := e.challenge("POST", path, nil)
	store.armed.Store(true)
	e.retry(p.key, ch, "POST", path, nil).fails(t, 500, apierror.InternalError)
	if store.armed.Load() || e.balance(p.wallet, "USDB") != 10_000_000 || e.getQuote(q.ID).Status != sandbox.QuotePending {
		t.Fatal("the rolled-back execution moved funds")
	}
	e.retry(p.key, ch, "POST", path, nil).ok(t, 200, nil)
	if e.balance(p.wallet, "USDB") != 9_000_000 {
		t.Fatalf("balance %d", e.balance(p.wallet, "USDB"))
	}
	q = e.quote(p, map[string]any{"accountId": ext.ID}, 1_000_000)
	blocked(t, e.execute(p, q.ID), apierror.PayoutBlocked, "burst-limit")
}

// TestREADMEPayoutRules: the README's "Payout policy" shows
// DefaultPayoutRules as they are.
func TestREADMEPayoutRules(t *testing.T) {
	raw, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), "```json\n"+sandbox.DefaultPayoutRules+"\n```") {
		t.Fatal("README.md does not show sandbox.DefaultPayoutRules in a json block")
	}
}

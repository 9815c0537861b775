package walletauth_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/memory"
	"github.com/walletgate/walletgate/storage/storagetest"
	"github.com/walletgate/walletgate/walletauth"
	"github.com/walletgate/walletgate/walletauth/authclient"
)

// outbox is a Sender that keeps what it was asked to send.
type outbox struct {
	mu   sync.Mutex
	sent []walletauth.Message
	err  error
}

func (o *outbox) Send(_ context.Context, m walletauth.Message) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err != nil {
		return o.err
	}
	o.sent = append(o.sent, m)
	return nil
}

func (o *outbox) last(t testing.TB) walletauth.Message {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.sent) == 0 {
		t.Fatal("no code was sent")
	}
	return o.sent[len(o.sent)-1]
}

type env struct {
	svc *walletauth.Service
	// cfg is the configuration svc was made from, for more services on
	// the same store (see with).
	cfg    walletauth.Config
	store  storage.Store
	clock  *storagetest.Clock
	outbox *outbox
	wallet *storage.InternalAccount
	email  *walletauth.AuthMethod
}

func newEnv(t testing.TB, mod func(*walletauth.Config)) *env {
	t.Helper()
	return newEnvOn(t, memory.New(), mod)
}

// newEnvOn is newEnv on the given store.
func newEnvOn(t testing.TB, store storage.Store, mod func(*walletauth.Config)) *env {
	t.Helper()
	ctx := t.Context()
	e := &env{store: store, clock: storagetest.NewClock(time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)), outbox: &outbox{}}
	cfg := walletauth.Config{Store: e.store, Sender: e.outbox, Clock: e.clock.Now, OrganizationID: "org-test",
		Keys: walletauth.Keys{SigningKey: testSigningKey, Sealer: testKeyring(t, "test-1"), CodeMACKey: testCodeMACKey}}
	if mod != nil {
		mod(&cfg)
	}
	e.cfg = cfg
	var err error
	if e.svc, err = walletauth.New(cfg); err != nil {
		t.Fatal(err)
	}
	e.wallet, e.email, err = e.svc.CreateWallet(ctx, walletauth.NewWallet{CustomerID: "Customer:1", Email: " Ada@Example.com ", Phone: "+14155550123"})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func call(method, path, body string) signedretry.Request {
	return signedretry.Request{Method: method, Path: path, Body: []byte(body)}
}

func signed(t testing.TB, c signedretry.Request, ch *signedretry.Challenge, k *authclient.ClientKey) signedretry.Request {
	t.Helper()
	if ch == nil {
		t.Fatal("no challenge to sign")
	}
	sig, err := k.Stamp(ch.PayloadToSign)
	if err != nil {
		t.Fatal(err)
	}
	c.Signature, c.RequestID = sig, ch.RequestID
	return c
}

func newKey(t testing.TB) *authclient.ClientKey {
	t.Helper()
	k, err := authclient.NewClientKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// login runs the whole one-time-code login of a credential and returns the
// session and its key.
func (e *env) login(t testing.TB, credID string, typ storage.CredentialType) (*walletauth.AuthSession, *authclient.ClientKey) {
	t.Helper()
	ctx := t.Context()
	m, err := e.svc.Challenge(ctx, credID, walletauth.ChallengeRequest{})
	if err != nil {
		t.Fatal(err)
	}
	key := newKey(t)
	code := walletauth.SandboxOTPCode
	if len(e.outbox.sent) > 0 {
		code = e.outbox.last(t).Code
	}
	bundle, err := key.SealOTP(m.OTPEncryptionTargetBundle, e.svc.SigningPublicKey(), code, nil)
	if err != nil {
		t.Fatal(err)
	}
	return e.verify(t, credID, typ, bundle, key)
}

func (e *env) verify(t testing.TB, credID string, typ storage.CredentialType, bundle string, key *authclient.ClientKey) (*walletauth.AuthSession, *authclient.ClientKey) {
	t.Helper()
	ctx := t.Context()
	body := `{"type":"` + string(typ) + `","encryptedOtpBundle":` + quote(bundle) + `}`
	req := walletauth.VerifyRequest{Type: typ, EncryptedOTPBundle: bundle}
	c := call("POST", "/auth/credentials/"+credID+"/verify", body)
	sess, ch, err := e.svc.Verify(ctx, credID, req, c)
	if err != nil {
		t.Fatalf("leg 1: %v", err)
	}
	if sess != nil || ch == nil || ch.Type != string(typ) {
		t.Fatalf("leg 1 answered %+v %+v, want a challenge", sess, ch)
	}
	sess, ch, err = e.svc.Verify(ctx, credID, req, signed(t, c, ch, key))
	if err != nil {
		t.Fatalf("leg 2: %v", err)
	}
	if ch != nil || sess == nil {
		t.Fatal("leg 2 did not answer a session")
	}
	return sess, key
}

func quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

func TestNewRequiresStoreAndSender(t *testing.T) {
	if _, err := walletauth.New(walletauth.Config{}); err == nil {
		t.Error("New without a store succeeded")
	}
	if _, err := walletauth.New(walletauth.Config{Store: memory.New()}); err == nil {
		t.Error("New without a sender outside sandbox succeeded")
	}
	if _, err := walletauth.New(walletauth.Config{Store: memory.New(), Sandbox: true, Keys: ephemeralKeys(t)}); err != nil {
		t.Errorf("sandbox without a sender: %v", err)
	}
}

func TestCreateWallet(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t, nil)
	if e.wallet.Email != "ada@example.com" || e.email.Type != storage.EmailOTP || e.email.Nickname != "ada@example.com" ||
		e.email.AccountID != e.wallet.ID || !storage.ValidID(e.email.ID, "AuthMethod") {
		t.Fatalf("wallet %+v credential %+v", e.wallet, e.email)
	}
	list, err := e.svc.ListCredentials(ctx, e.wallet.ID)
	if err != nil || len(list) != 1 || list[0].ID != e.email.ID {
		t.Fatalf("ListCredentials = %+v, %v", list, err)
	}
	_, _, err = e.svc.CreateWallet(ctx, walletauth.NewWallet{CustomerID: "Customer:2", Email: "not-an-email", Phone: "555"})
	if fe := apierrortest.Want(t, err, apierror.InvalidInput, "").FieldErrors(); len(fe) != 2 {
		t.Fatalf("field errors %+v", fe)
	}
	none, err := e.svc.ListCredentials(ctx, "InternalAccount:00000000-0000-4000-8000-000000000000")
	if err != nil || len(none) != 0 {
		t.Fatalf("unknown account: %v %v", none, err)
	}
	_, err = e.svc.ListCredentials(ctx, "Customer:1")
	apierrortest.Want(t, err, apierror.InvalidInput, "")
}

func TestOTPLogin(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t, nil)
	sess, key := e.login(t, e.email.ID, storage.EmailOTP)
	msg := e.outbox.last(t)
	if msg.Channel != storage.EmailOTP || msg.To != "ada@example.com" || len(msg.Code) != 6 || msg.CredentialID != e.email.ID ||
		!msg.ExpiresAt.Equal(e.clock.Now().Add(walletauth.DefaultOTPTTL)) {
		t.Fatalf("sent %+v", msg)
	}
	if !storage.ValidID(sess.ID, "Session") || sess.AccountID != e.wallet.ID || sess.Type != storage.EmailOTP ||
		sess.Nickname != "ada@example.com" || sess.EncryptedSessionSigningKey != "" ||
		!sess.ExpiresAt.Equal(e.clock.Now().Add(walletauth.DefaultSessionTTL)) {
		t.Fatalf("session %+v", sess)
	}
	// The session key is the client's key: it signs the account's retries.
	list, _ := e.svc.ListSessions(ctx, e.wallet.ID)
	if len(list) != 1 || list[0].ID != sess.ID || list[0].EncryptedSessionSigningKey != "" {
		t.Fatalf("ListSessions = %+v", list)
	}
	c := call("DELETE", "/auth/sessions/"+sess.ID, "")
	ch, err := e.svc.RevokeSession(ctx, sess.ID, c)
	if err != nil || ch == nil || ch.Type != "EMAIL_OTP" {
		t.Fatalf("revoke leg 1: %+v %v", ch, err)
	}
	if _, err := e.svc.RevokeSession(ctx, sess.ID, signed(t, c, ch, key)); err != nil {
		t.Fatalf("revoke signed by the OTP session key: %v", err)
	}
}

func TestOTPFailures(t *testing.T) {
	ctx := t.Context()
	setup := func(t *testing.T) (*env, *authclient.ClientKey, string) {
		e := newEnv(t, func(c *walletauth.Config) { c.OTP.MaxAttempts = 3 })
		m, err := e.svc.Challenge(ctx, e.email.ID, walletauth.ChallengeRequest{})
		if err != nil {
			t.Fatal(err)
		}
		return e, newKey(t), m.OTPEncryptionTargetBundle
	}
	leg1 := func(e *env, key *authclient.ClientKey, bundle, code string) error {
		sealed, err := key.SealOTP(bundle, e.svc.SigningPublicKey(), code, nil)
		if err != nil {
			return err
		}
		_, _, err = e.svc.Verify(ctx, e.email.ID, walletauth.VerifyRequest{Type: storage.EmailOTP, EncryptedOTPBundle: sealed},
			call("POST", "/v", `{"b":1}`))
		return err
	}
	wrong := func(code string) string {
		if code == "000001" {
			return "000002"
		}
		return "000001"
	}

	t.Run("wrong code, then the code dies", func(t *testing.T) {
		e, key, bundle := setup(t)
		code := e.outbox.last(t).Code
		for range 3 {
			apierrortest.Want(t, leg1(e, key, bundle, wrong(code)), apierror.Unauthorized, "Invalid OTP code")
		}
		apierrortest.Want(t, leg1(e, key, bundle, code), apierror.Unauthorized, "too many failed attempts; request a new code")
		// A new code works.
		m, err := e.svc.Challenge(ctx, e.email.ID, walletauth.ChallengeRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if err := leg1(e, key, m.OTPEncryptionTargetBundle, e.outbox.last(t).Code); err != nil {
			t.Fatalf("new code: %v", err)
		}
	})
	t.Run("expired", func(t *testing.T) {
		e, key, bundle := setup(t)
		e.clock.Add(walletauth.DefaultOTPTTL)
		apierrortest.Want(t, leg1(e, key, bundle, e.outbox.last(t).Code), apierror.Unauthorized, "OTP expired")
	})
	t.Run("used twice", func(t *testing.T) {
		e, key, bundle := setup(t)
		code := e.outbox.last(t).Code
		if err := leg1(e, key, bundle, code); err != nil {
			t.Fatal(err)
		}
		apierrortest.Want(t, leg1(e, key, bundle, code), apierror.Unauthorized, "OTP already used")
	})
	t.Run("superseded bundle", func(t *testing.T) {
		e, key, bundle := setup(t)
		if _, err := e.svc.Challenge(ctx, e.email.ID, walletauth.ChallengeRequest{}); err != nil {
			t.Fatal(err)
		}
		// Sealed to the first issuance's target: counts as a failed attempt.
		apierrortest.Want(t, leg1(e, key, bundle, e.outbox.last(t).Code), apierror.Unauthorized,
			"encryptedOtpBundle was not sealed to this challenge's target key")
	})
	t.Run("no pending code", func(t *testing.T) {
		e := newEnv(t, nil)
		_, _, err := e.svc.Verify(ctx, e.email.ID, walletauth.VerifyRequest{Type: storage.EmailOTP, EncryptedOTPBundle: "{}"}, call("POST", "/v", "{}"))
		apierrortest.Want(t, err, apierror.Unauthorized, "no pending OTP for this credential")
	})
	t.Run("malformed bundle", func(t *testing.T) {
		e, _, _ := setup(t)
		_, _, err := e.svc.Verify(ctx, e.email.ID, walletauth.VerifyRequest{Type: storage.EmailOTP, EncryptedOTPBundle: "not json"}, call("POST", "/v", "{}"))
		apierrortest.Want(t, err, apierror.InvalidInput, "")
	})
	t.Run("type mismatch", func(t *testing.T) {
		e, _, _ := setup(t)
		_, _, err := e.svc.Verify(ctx, e.email.ID, walletauth.VerifyRequest{Type: storage.SMSOTP, EncryptedOTPBundle: "{}"}, call("POST", "/v", "{}"))
		apierrortest.Want(t, err, apierror.InvalidInput, "")
		_, _, err = e.svc.Verify(ctx, e.email.ID, walletauth.VerifyRequest{Type: "PIN"}, call("POST", "/v", "{}"))
		apierrortest.Want(t, err, apierror.InvalidInput, "")
	})
	t.Run("unknown credential", func(t *testing.T) {
		e := newEnv(t, nil)
		_, _, err := e.svc.Verify(ctx, "AuthMethod:x", walletauth.VerifyRequest{Type: storage.EmailOTP}, call("POST", "/v", "{}"))
		apierrortest.Want(t, err, apierror.ReferenceNotFound, "")
		_, err = e.svc.Challenge(ctx, "AuthMethod:x", walletauth.ChallengeRequest{})
		apierrortest.Want(t, err, apierror.ReferenceNotFound, "")
	})
	t.Run("leg 2 signed by another key", func(t *testing.T) {
		e, key, bundle := setup(t)
		sealed, _ := key.SealOTP(bundle, nil, e.outbox.last(t).Code, nil)
		req := walletauth.VerifyRequest{Type: storage.EmailOTP, EncryptedOTPBundle: sealed}
		c := call("POST", "/v", `{"b":1}`)
		_, ch, err := e.svc.Verify(ctx, e.email.ID, req, c)
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = e.svc.Verify(ctx, e.email.ID, req, signed(t, c, ch, newKey(t)))
		apierrortest.Want(t, err, apierror.WalletSignatureInvalid, "")
		// The right key still completes it afterwards.
		if _, _, err := e.svc.Verify(ctx, e.email.ID, req, signed(t, c, ch, key)); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("sender failure", func(t *testing.T) {
		e := newEnv(t, nil)
		e.outbox.err = errors.New("smtp: 550 mailbox unavailable")
		_, err := e.svc.Challenge(ctx, e.email.ID, walletauth.ChallengeRequest{})
		apierrortest.Want(t, err, apierror.InternalError, "")
	})
}

func TestOTPRateLimit(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t, func(c *walletauth.Config) { c.OTP.ReissueLimit, c.OTP.ReissueWindow = 2, time.Minute })
	for range 2 {
		if _, err := e.svc.Challenge(ctx, e.email.ID, walletauth.ChallengeRequest{}); err != nil {
			t.Fatal(err)
		}
	}
	e.clock.Add(20 * time.Second)
	_, err := e.svc.Challenge(ctx, e.email.ID, walletauth.ChallengeRequest{})
	if ae := apierrortest.Want(t, err, apierror.RateLimited, ""); ae.RetryAfterSeconds() != 40 {
		t.Fatalf("Retry-After %d, want 40", ae.RetryAfterSeconds())
	}
	e.clock.Add(40 * time.Second)
	if _, err := e.svc.Challenge(ctx, e.email.ID, walletauth.ChallengeRequest{}); err != nil {
		t.Fatalf("after the window: %v", err)
	}
}

func TestOTPConfig(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t, func(c *walletauth.Config) { c.OTP.Length, c.OTP.Alphabet = 20, "ABC" })
	if _, err := e.svc.Challenge(ctx, e.email.ID, walletauth.ChallengeRequest{}); err != nil {
		t.Fatal(err)
	}
	code := e.outbox.last(t).Code
	if len(code) != 12 || strings.Trim(code, "ABC") != "" {
		t.Fatalf("code %q, want 12 characters of ABC", code)
	}
}

func TestSandboxOTP(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t, func(c *walletauth.Config) { c.Sandbox, c.Sender = true, nil })
	m, err := e.svc.Challenge(ctx, e.email.ID, walletauth.ChallengeRequest{})
	if err != nil {
		t.Fatal(err)
	}
	key := newKey(t)
	bad, _ := key.SealOTP(m.OTPEncryptionTargetBundle, e.svc.SigningPublicKey(), "123456", nil)
	_, _, err = e.svc.Verify(ctx, e.email.ID, walletauth.VerifyRequest{Type: storage.EmailOTP, EncryptedOTPBundle: bad}, call("POST", "/v", "{}"))
	apierrortest.Want(t, err, apierror.Unauthorized, "Invalid OTP code")
	good, _ := key.SealOTP(m.OTPEncryptionTargetBundle, e.svc.SigningPublicKey(), "000000", nil)
	e.verify(t, e.email.ID, storage.EmailOTP, good, key)
	if len(e.outbox.sent) != 0 {
		t.Fatal("sandbox delivered a code")
	}
}

// TestOTPAttemptBudget spends a credential's budget of compared codes
// across issuances: every compared code spends one (wrong ones and the
// right one of a login), verifications that compare nothing spend none, the
// first verification past the budget is 429 RATE_LIMITED with Retry-After
// until the window ends and compares nothing (the right code fails too),
// and once the window ends codes are compared again.
func TestOTPAttemptBudget(t *testing.T) {
	ctx := t.Context()
	const budget = 9
	e := newEnv(t, func(c *walletauth.Config) {
		c.OTP.AttemptBudget, c.OTP.AttemptBudgetWindow, c.OTP.MaxAttempts, c.OTP.ReissueLimit = budget, time.Hour, 3, 100
	})
	key := newKey(t)
	var bundle string
	issue := func() {
		t.Helper()
		m, err := e.svc.Challenge(ctx, e.email.ID, walletauth.ChallengeRequest{})
		if err != nil {
			t.Fatal(err)
		}
		bundle = m.OTPEncryptionTargetBundle
	}
	guess := func(code string) error {
		sealed, err := key.SealOTP(bundle, e.svc.SigningPublicKey(), code, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = e.svc.Verify(ctx, e.email.ID, walletauth.VerifyRequest{Type: storage.EmailOTP, EncryptedOTPBundle: sealed},
			call("POST", "/auth/credentials/"+e.email.ID+"/verify", `{"type":"EMAIL_OTP"}`))
		return err
	}
	start := e.clock.Now()
	// A login spends one.
	issue()
	if err := guess(e.outbox.last(t).Code); err != nil {
		t.Fatal(err)
	}
	// Two issuances locked by wrong codes spend six; their further
	// attempts compare nothing and spend nothing.
	for range 2 {
		issue()
		code := e.outbox.last(t).Code
		for range 3 {
			apierrortest.Want(t, guess(otherCode(code)), apierror.Unauthorized, "Invalid OTP code")
		}
		apierrortest.Want(t, guess(code), apierror.Unauthorized, tooManyAttempts)
	}
	e.clock.Add(10 * time.Minute)
	issue()
	code := e.outbox.last(t).Code
	for range budget - 7 {
		apierrortest.Want(t, guess(otherCode(code)), apierror.Unauthorized, "Invalid OTP code")
	}
	// The budget is spent: the right code of a live issuance is refused
	// without being compared.
	err := guess(code)
	if !isAPIError(err, http.StatusTooManyRequests, apierror.RateLimited, "") {
		t.Fatalf("past the budget: %v, want 429 RATE_LIMITED", err)
	}
	if got, want := apierror.As(err).RetryAfter, start.Add(time.Hour).Sub(e.clock.Now()); got != want {
		t.Fatalf("Retry-After %v, want %v (the end of the window)", got, want)
	}
	if got := apierror.As(err).RetryAfterSeconds(); got != 50*60 {
		t.Fatalf("Retry-After header %d s, want %d", got, 50*60)
	}
	e.clock.Add(50*time.Minute - time.Second)
	issue()
	code = e.outbox.last(t).Code
	if err := guess(code); !isAPIError(err, http.StatusTooManyRequests, apierror.RateLimited, "") || apierror.As(err).RetryAfterSeconds() != 1 {
		t.Fatalf("a second before the window ends: %v, want 429 RATE_LIMITED with Retry-After 1", err)
	}
	e.clock.Add(time.Second)
	if err := guess(code); err != nil {
		t.Fatalf("the right code once the window ended: %v", err)
	}
}

// TestOTPAttemptBudgetDefaults checks the bound the defaults give, as the
// documentation of OTPConfig.AttemptBudget states it: an attacker who
// compares every code the budget allows on both OTP credentials of an
// account for a day logs in with probability at most 1e-4.
func TestOTPAttemptBudgetDefaults(t *testing.T) {
	codes := 1.0
	for range walletauth.DefaultOTPLength {
		codes *= 10
	}
	if walletauth.DefaultOTPAttemptBudgetWindow < 24*time.Hour {
		t.Fatalf("the default window %v is shorter than a day", walletauth.DefaultOTPAttemptBudgetWindow)
	}
	// Two OTP credentials, two windows met by any day.
	compared := 2 * 2 * walletauth.DefaultOTPAttemptBudget
	p := float64(compared) / (codes - walletauth.DefaultOTPMaxAttempts + 1)
	if p > 1e-4 {
		t.Fatalf("a day's guessing succeeds with probability up to %.3g, want at most 1e-4", p)
	}
	t.Logf("%d codes compared per account per day at most: success probability at most %.3g", compared, p)
}

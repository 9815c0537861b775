package walletauth_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/signedretry/stamper"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/storagetest"
	"github.com/walletgate/walletgate/walletauth"
	"github.com/walletgate/walletgate/walletauth/authclient"
	"github.com/walletgate/walletgate/walletauth/oidc"
)

// admitAll is a guard that lets every caller act on every wallet.
func admitAll(context.Context, storage.InternalAccount) error { return nil }

// guarded gives a test service the guard admitAll, as a handler needs one.
func guarded(c *walletauth.Config) { c.Guard = admitAll }

// handler serves svc's routes; svc must have a guard.
func handler(t testing.TB, svc *walletauth.Service) http.Handler {
	t.Helper()
	h, err := svc.Handler()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// with returns another service on e's store, configured as e's but with
// the guard g: a replica of the host whose tenant guard is g.
func (e *env) with(t testing.TB, g walletauth.WalletGuard) *walletauth.Service {
	t.Helper()
	cfg := e.cfg
	cfg.Guard = g
	svc, err := walletauth.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// principalKey is the context key of the calling platform, as a host's
// authentication middleware would set it.
type principalKey struct{}

// serve sends one request to h and returns the recorded answer.
func serve(h http.Handler, method, path, body string, headers map[string]string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	r = r.WithContext(context.WithValue(r.Context(), principalKey{}, "platform-test"))
	for k, v := range headers {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// answerError decodes an error answer; its status must be its code's.
func answerError(t testing.TB, w *httptest.ResponseRecorder) *apierror.Error {
	t.Helper()
	var e apierror.Error
	if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil {
		t.Fatalf("%d %s is no error body: %v", w.Code, w.Body, err)
	}
	if w.Code != e.Status() {
		t.Fatalf("status %d, body says %d", w.Code, e.Status())
	}
	return &e
}

// tenant is the wallet of another customer, logged in over EMAIL_OTP.
type tenant struct {
	wallet *storage.InternalAccount
	email  *walletauth.AuthMethod
	sess   *walletauth.AuthSession
	key    *authclient.ClientKey
}

func (e *env) tenant(t testing.TB, customer, email string) tenant {
	t.Helper()
	w, m, err := e.svc.CreateWallet(t.Context(), walletauth.NewWallet{CustomerID: customer, Email: email})
	if err != nil {
		t.Fatal(err)
	}
	sess, key := e.login(t, m.ID, storage.EmailOTP)
	return tenant{wallet: w, email: m, sess: sess, key: key}
}

type guardRoute struct{ name, method, path, body string }

// routes is a request on every route of the handler, each naming b's
// wallet, its EMAIL_OTP credential or its session; verify sends verifyBody.
func (b tenant) routes(verifyBody string) []guardRoute {
	return []guardRoute{
		{"add credential", "POST", "/auth/credentials", `{"type":"SMS_OTP","accountId":"` + b.wallet.ID + `"}`},
		{"list credentials", "GET", "/auth/credentials?accountId=" + b.wallet.ID, ""},
		{"revoke credential", "DELETE", "/auth/credentials/" + b.email.ID, ""},
		{"challenge", "POST", "/auth/credentials/" + b.email.ID + "/challenge", ""},
		{"verify", "POST", "/auth/credentials/" + b.email.ID + "/verify", verifyBody},
		{"list sessions", "GET", "/auth/sessions?accountId=" + b.wallet.ID, ""},
		{"revoke session", "DELETE", "/auth/sessions/" + b.sess.ID, ""},
		{"refresh session", "POST", "/auth/sessions/" + b.sess.ID + "/refresh", `{"clientPublicKey":"` + b.key.PublicKeyHex() + `"}`},
	}
}

func TestHandlerRequiresGuard(t *testing.T) {
	e := newEnv(t, nil)
	h, err := e.svc.Handler()
	if err == nil || h != nil || !strings.Contains(err.Error(), "Config.Guard is required") {
		t.Fatalf("a handler without a guard: %v, %v", h, err)
	}
	if _, err := e.with(t, admitAll).Handler(); err != nil {
		t.Fatalf("a handler with a guard: %v", err)
	}
}

// TestHandlerGuardSeesWallet: every route asks the service's guard once,
// before it acts, with the request's context and the wallet its id names
// (the body's or query's accountId, the wallet of the credential or of the
// session in the path), on both legs of a signed operation.
func TestHandlerGuardSeesWallet(t *testing.T) {
	e := newEnv(t, nil)
	b := e.tenant(t, "Customer:2", "bo@example.com")
	var asked []storage.InternalAccount
	h := handler(t, e.with(t, func(ctx context.Context, w storage.InternalAccount) error {
		if ctx.Value(principalKey{}) != "platform-test" {
			return errors.New("the guard did not get the request's context")
		}
		asked = append(asked, w)
		return nil
	}))
	check := func(name string, w *httptest.ResponseRecorder) {
		t.Helper()
		if len(asked) != 1 || asked[0].ID != b.wallet.ID || asked[0].CustomerID != "Customer:2" {
			t.Fatalf("%s (%d %s): the guard was asked %+v, want once with %s", name, w.Code, w.Body, asked, b.wallet.ID)
		}
		asked = nil
	}
	var refresh guardRoute
	for _, rt := range b.routes(`{"type":"EMAIL_OTP","encryptedOtpBundle":"{}"}`) {
		check(rt.name, serve(h, rt.method, rt.path, rt.body, nil))
		if rt.name == "refresh session" {
			refresh = rt
		}
	}
	// A signed operation asks on both legs.
	w := serve(h, refresh.method, refresh.path, refresh.body, nil)
	check("refresh leg 1", w)
	var ch signedretry.Challenge
	if err := json.Unmarshal(w.Body.Bytes(), &ch); err != nil || w.Code != http.StatusAccepted {
		t.Fatalf("refresh leg 1: %d %s", w.Code, w.Body)
	}
	sig, err := b.key.Stamp(ch.PayloadToSign)
	if err != nil {
		t.Fatal(err)
	}
	w = serve(h, refresh.method, refresh.path, refresh.body, map[string]string{stamper.HeaderSignature: sig, stamper.HeaderRequestID: ch.RequestID})
	if w.Code != http.StatusCreated {
		t.Fatalf("refresh leg 2: %d %s", w.Code, w.Body)
	}
	check("refresh leg 2", w)

	// An id that names nothing is 404 before the guard is asked; an
	// accountId that is no wallet id is 400.
	for _, path := range []string{"/auth/credentials?accountId=InternalAccount:00000000-0000-4000-8000-000000000000",
		"/auth/sessions?accountId=InternalAccount:00000000-0000-4000-8000-000000000000"} {
		apierrortest.Want(t, answerError(t, serve(h, "GET", path, "", nil)), apierror.ReferenceNotFound, "")
	}
	for _, rt := range []guardRoute{
		{"unknown credential", "POST", "/auth/credentials/AuthMethod:00000000-0000-4000-8000-000000000000/challenge", ""},
		{"unknown session", "DELETE", "/auth/sessions/Session:00000000-0000-4000-8000-000000000000", ""},
	} {
		apierrortest.Want(t, answerError(t, serve(h, rt.method, rt.path, rt.body, nil)), apierror.ReferenceNotFound, "")
	}
	apierrortest.WantFields(t, answerError(t, serve(h, "GET", "/auth/sessions?accountId=x", "", nil)), apierror.InvalidInput, "accountId")
	apierrortest.WantFields(t, answerError(t, serve(h, "POST", "/auth/credentials", `{"type":"SMS_OTP","accountId":"x"}`, nil)), apierror.InvalidInput, "accountId")
	if len(asked) != 0 {
		t.Fatalf("the guard was asked about ids that name no wallet: %+v", asked)
	}
}

// TestHandlerGuardRefuses: a guard that refuses another platform's wallet
// blocks every route, on every id kind, before anything is written. A plain
// refusal answers exactly what an unknown id answers (404
// REFERENCE_NOT_FOUND, the same message); an *apierror.Error is written as
// it is. Afterwards the wallet's owner finds no code mailed, no attempt or
// budget spent and no challenge stored: with an attempt budget of 2 (one
// spent by the login) and room for one live challenge, the owner's right
// code still answers 202, and with a re-issue limit of 3 (two codes
// issued) a third code is issued.
func TestHandlerGuardRefuses(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t, func(c *walletauth.Config) {
		c.MaxPendingChallenges = 1
		c.OTP.MaxAttempts = 2
		c.OTP.AttemptBudget = 2
		c.OTP.ReissueLimit = 3
	})
	b := e.tenant(t, "Customer:2", "bo@example.com")
	m, err := e.svc.Challenge(ctx, b.email.ID, walletauth.ChallengeRequest{})
	if err != nil {
		t.Fatal(err)
	}
	code := e.outbox.last(t).Code
	wrong, err := newKey(t).SealOTP(m.OTPEncryptionTargetBundle, e.svc.SigningPublicKey(), otherCode(code), nil)
	if err != nil {
		t.Fatal(err)
	}
	verifyBody := `{"type":"EMAIL_OTP","encryptedOtpBundle":` + quote(wrong) + `}`
	sent, issuance, events := len(e.outbox.sent), e.storedIssuance(t, b.email.ID), e.walletEvents(t, b.wallet.ID)

	// Two replicas of the host on the store of e, each with its guard.
	ownPlatform := func(_ context.Context, w storage.InternalAccount) error {
		if w.CustomerID != "Customer:1" {
			return fmt.Errorf("wallet %s belongs to another platform", w.ID)
		}
		return nil
	}
	refuse := handler(t, e.with(t, ownPlatform))
	forbid := handler(t, e.with(t, func(context.Context, storage.InternalAccount) error {
		return fmt.Errorf("host: %w", apierror.New(apierror.Forbidden, "not this platform's wallet"))
	}))
	unknown := strings.NewReplacer(b.wallet.ID, "InternalAccount:00000000-0000-4000-8000-000000000000",
		b.email.ID, "AuthMethod:00000000-0000-4000-8000-000000000000", b.sess.ID, "Session:00000000-0000-4000-8000-000000000000")
	known := strings.NewReplacer("InternalAccount:00000000-0000-4000-8000-000000000000", b.wallet.ID,
		"AuthMethod:00000000-0000-4000-8000-000000000000", b.email.ID, "Session:00000000-0000-4000-8000-000000000000", b.sess.ID)
	for _, rt := range b.routes(verifyBody) {
		for range 3 { // more than the attempts and the budget allow
			got := apierrortest.Want(t, answerError(t, serve(refuse, rt.method, rt.path, rt.body, nil)), apierror.ReferenceNotFound, "")
			none := apierrortest.Want(t, answerError(t, serve(refuse, rt.method, unknown.Replace(rt.path), unknown.Replace(rt.body), nil)), apierror.ReferenceNotFound, "")
			if got.Message != known.Replace(none.Message) {
				t.Fatalf("%s: a refusal says %q, an unknown id %q", rt.name, got.Message, none.Message)
			}
			apierrortest.Want(t, answerError(t, serve(forbid, rt.method, rt.path, rt.body, nil)), apierror.Forbidden, "")
		}
	}

	if len(e.outbox.sent) != sent {
		t.Fatalf("refused requests mailed %d codes", len(e.outbox.sent)-sent)
	}
	if got := e.storedIssuance(t, b.email.ID); got.ID != issuance.ID || got.Attempts != issuance.Attempts {
		t.Fatalf("refused requests touched the issuance: %+v, was %+v", got, issuance)
	}
	if got := e.walletEvents(t, b.wallet.ID); len(got) != len(events) {
		t.Fatalf("refused requests wrote %d events", len(got)-len(events))
	}
	creds, err := e.svc.ListCredentials(ctx, b.wallet.ID)
	if err != nil || len(creds) != 1 {
		t.Fatalf("credentials after the refusals: %+v, %v", creds, err)
	}
	sessions, err := e.svc.ListSessions(ctx, b.wallet.ID)
	if err != nil || len(sessions) != 1 || sessions[0].ID != b.sess.ID {
		t.Fatalf("sessions after the refusals: %+v, %v", sessions, err)
	}
	right, err := newKey(t).SealOTP(m.OTPEncryptionTargetBundle, e.svc.SigningPublicKey(), code, nil)
	if err != nil {
		t.Fatal(err)
	}
	w := serve(handler(t, e.with(t, admitAll)), "POST", "/auth/credentials/"+b.email.ID+"/verify",
		`{"type":"EMAIL_OTP","encryptedOtpBundle":`+quote(right)+`}`, nil)
	if w.Code != http.StatusAccepted {
		t.Fatalf("the owner's right code after the refusals: %d %s", w.Code, w.Body)
	}
	if _, err := e.svc.Challenge(ctx, b.email.ID, walletauth.ChallengeRequest{}); err != nil {
		t.Fatalf("a third code after the refused challenges: %v", err)
	}
}

// walletEvents returns the outbox events of a wallet.
func (e *env) walletEvents(t testing.TB, walletID string) []storage.Event {
	t.Helper()
	return storagetest.Events(t, e.store, walletID)
}

// TestGuardDirect: a host that calls the Service methods itself (its own
// HTTP stack, gRPC, a job) gets the same guard as the handler. Every
// operation on a wallet asks Config.Guard once per call, once per leg of a
// signed operation, about the wallet it acts on; a refusal writes nothing
// (no code sent, no event, the retry's request left unconsumed: the same
// stamp succeeds once the guard admits it) and answers as the call's
// unknown id does; an *apierror.Error is answered as it is; an id that
// names nothing is 404 before the guard is asked.
func TestGuardDirect(t *testing.T) {
	ctx := t.Context()
	g := &storagetest.Guard{}
	sec := secrets{}
	e, p := federatedEnvWith(t, func(c *walletauth.Config) { c.Guard, c.WalletSecrets = g.Wallet, sec })
	w := e.wallet.ID
	sec[w] = testMnemonic
	refused := errors.New("the wallet of another tenant")

	askedOnce := func(name, wallet string) {
		t.Helper()
		if got := g.Take(); !slices.Equal(got, []string{wallet}) {
			t.Fatalf("%s: the guard was asked about %v, want once about %s", name, got, wallet)
		}
	}
	askedOnce("CreateWallet", w)
	// refuse runs op with the guard refusing and checks its answer is want
	// (code and message) and that it sent no code and wrote no event.
	refuse := func(name string, want *apierror.Error, op func() error) {
		t.Helper()
		sent, events := len(e.outbox.sent), len(e.walletEvents(t, w))
		g.Set(refused)
		err := op()
		g.Set(nil)
		got := apierrortest.Want(t, err, want.Code, "")
		if got.Message != want.Message {
			t.Fatalf("%s refused: %q, want %q", name, got.Message, want.Message)
		}
		if len(e.outbox.sent) != sent || len(e.walletEvents(t, w)) != events {
			t.Fatalf("%s refused: %d codes sent, %d events written", name, len(e.outbox.sent)-sent, len(e.walletEvents(t, w))-events)
		}
		if len(g.Take()) != 1 {
			t.Fatalf("%s refused: the guard was not asked once", name)
		}
	}
	admit := func(name string, op func() error) {
		t.Helper()
		if err := op(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		askedOnce(name, w)
	}
	unknown := func(what, id string) *apierror.Error {
		return apierror.New(apierror.ReferenceNotFound, "%s %s not found", what, id)
	}
	// signedOp runs both legs of a signed operation (leg calls it), each
	// refused first and then admitted; the refused retry leaves its
	// request for the same stamp.
	signedOp := func(name string, want *apierror.Error, c signedretry.Request, key *authclient.ClientKey,
		leg func(signedretry.Request) (*signedretry.Challenge, error)) {
		t.Helper()
		refuse(name+" leg 1", want, func() error { _, err := leg(c); return err })
		var ch *signedretry.Challenge
		admit(name+" leg 1", func() (err error) { ch, err = leg(c); return err })
		if ch == nil {
			t.Fatalf("%s leg 1 answered no challenge", name)
		}
		retry := signed(t, c, ch, key)
		refuse(name+" leg 2", want, func() error { _, err := leg(retry); return err })
		admit(name+" leg 2", func() error { _, err := leg(retry); return err })
	}

	// Reads.
	refuse("Wallet", unknown("internal account", w), func() error { _, err := e.svc.Wallet(ctx, w); return err })
	admit("Wallet", func() error { _, err := e.svc.Wallet(ctx, w); return err })
	g.Set(refused)
	if ws, err := e.svc.Wallets(ctx, "Customer:1"); err != nil || len(ws) != 0 {
		t.Fatalf("Wallets refused: %+v, %v; want the wallet left out", ws, err)
	}
	askedOnce("Wallets refused", w)
	g.Set(nil)
	if ws, err := e.svc.Wallets(ctx, "Customer:1"); err != nil || len(ws) != 1 || ws[0].ID != w {
		t.Fatalf("Wallets: %+v, %v", ws, err)
	}
	askedOnce("Wallets", w)
	refuse("ListCredentials", unknown("internal account", w), func() error { _, err := e.svc.ListCredentials(ctx, w); return err })
	admit("ListCredentials", func() error { _, err := e.svc.ListCredentials(ctx, w); return err })
	refuse("ListSessions", unknown("internal account", w), func() error { _, err := e.svc.ListSessions(ctx, w); return err })
	admit("ListSessions", func() error { _, err := e.svc.ListSessions(ctx, w); return err })

	// An OTP login: the challenge, then both legs of the verification.
	email := e.email.ID
	var m *walletauth.ChallengeResponse
	admit("Challenge", func() (err error) { m, err = e.svc.Challenge(ctx, email, walletauth.ChallengeRequest{}); return err })
	issuance := e.storedIssuance(t, email)
	refuse("Challenge", unknown("credential", email), func() error {
		_, err := e.svc.Challenge(ctx, email, walletauth.ChallengeRequest{})
		return err
	})
	key := newKey(t)
	bundle, err := key.SealOTP(m.OTPEncryptionTargetBundle, e.svc.SigningPublicKey(), e.outbox.last(t).Code, nil)
	if err != nil {
		t.Fatal(err)
	}
	otpReq := walletauth.VerifyRequest{Type: storage.EmailOTP, EncryptedOTPBundle: bundle}
	otpCall := call("POST", "/auth/credentials/"+email+"/verify", `{"type":"EMAIL_OTP","encryptedOtpBundle":`+quote(bundle)+`}`)
	refuse("Verify EMAIL_OTP leg 1", unknown("credential", email), func() error {
		_, _, err := e.svc.Verify(ctx, email, otpReq, otpCall)
		return err
	})
	if got := e.storedIssuance(t, email); got.ID != issuance.ID || got.Attempts != issuance.Attempts || !got.ConsumedAt.IsZero() {
		t.Fatalf("refused calls touched the issuance: %+v, was %+v", got, issuance)
	}
	var ch *signedretry.Challenge
	admit("Verify EMAIL_OTP leg 1", func() (err error) { _, ch, err = e.svc.Verify(ctx, email, otpReq, otpCall); return err })
	// A retry that fails before its effect (a stamp of another key) is
	// checked again: the guard is asked there, once, and its refusal is
	// the answer.
	stranger := signed(t, otpCall, ch, newKey(t))
	refuse("Verify EMAIL_OTP, a bad stamp", unknown("credential", email), func() error {
		_, _, err := e.svc.Verify(ctx, email, otpReq, stranger)
		return err
	})
	_, _, err = e.svc.Verify(ctx, email, otpReq, stranger)
	apierrortest.Want(t, err, apierror.WalletSignatureInvalid, "")
	askedOnce("Verify EMAIL_OTP, a bad stamp", w)
	retry := signed(t, otpCall, ch, key)
	refuse("Verify EMAIL_OTP leg 2", unknown("credential", email), func() error {
		_, _, err := e.svc.Verify(ctx, email, otpReq, retry)
		return err
	})
	var sess *walletauth.AuthSession
	admit("Verify EMAIL_OTP leg 2", func() (err error) { sess, _, err = e.svc.Verify(ctx, email, otpReq, retry); return err })

	// Signed operations, both legs.
	var sms *walletauth.AuthMethod
	signedOp("AddCredential", unknown("internal account", w), call("POST", "/auth/credentials", `{"type":"SMS_OTP"}`), key,
		func(c signedretry.Request) (*signedretry.Challenge, error) {
			m, ch, err := e.svc.AddCredential(ctx, walletauth.AddCredentialRequest{Type: storage.SMSOTP, AccountID: w}, c)
			if m != nil {
				sms = m
			}
			return ch, err
		})
	signedOp("RevokeCredential", unknown("credential", sms.ID), call("DELETE", "/auth/credentials/"+sms.ID, ""), key,
		func(c signedretry.Request) (*signedretry.Challenge, error) {
			return e.svc.RevokeCredential(ctx, sms.ID, c)
		})
	client := newKey(t)
	var refreshed *walletauth.AuthSession
	signedOp("RefreshSession", unknown("active session", sess.ID),
		call("POST", "/auth/sessions/"+sess.ID+"/refresh", `{"clientPublicKey":"`+client.PublicKeyHex()+`"}`), key,
		func(c signedretry.Request) (*signedretry.Challenge, error) {
			s, ch, err := e.svc.RefreshSession(ctx, sess.ID, walletauth.RefreshRequest{ClientPublicKey: client.PublicKeyHex()}, c)
			if s != nil {
				refreshed = s
			}
			return ch, err
		})
	signedOp("RevokeSession", unknown("active session", refreshed.ID), call("DELETE", "/auth/sessions/"+refreshed.ID, ""), key,
		func(c signedretry.Request) (*signedretry.Challenge, error) {
			return e.svc.RevokeSession(ctx, refreshed.ID, c)
		})
	signedOp("ExportWallet", unknown("internal account", w),
		call("POST", "/internal-accounts/"+w+"/export", `{"clientPublicKey":"`+client.PublicKeyHex()+`"}`), key,
		func(c signedretry.Request) (*signedretry.Challenge, error) {
			_, ch, err := e.svc.ExportWallet(ctx, w, walletauth.ExportRequest{ClientPublicKey: client.PublicKeyHex()}, c)
			return ch, err
		})
	on := true
	signedOp("UpdateWalletPrivacy", unknown("internal account", w), call("PATCH", "/internal-accounts/"+w, `{"privateEnabled":true}`), key,
		func(c signedretry.Request) (*signedretry.Challenge, error) {
			_, ch, err := e.svc.UpdateWalletPrivacy(ctx, w, walletauth.PrivacyRequest{PrivateEnabled: &on}, c, nil)
			return ch, err
		})
	pay := walletauth.HostOperation[map[string]int, struct{}]{Type: "PAY", AccountID: w, Parameters: map[string]int{"amount": 5}}
	signedOp("Authorize", unknown("internal account", w), call("POST", "/pay", `{"amount":5}`), key,
		func(c signedretry.Request) (*signedretry.Challenge, error) {
			_, _, ch, err := walletauth.Authorize(ctx, e.svc, pay, c)
			return ch, err
		})
	signedOp("UpdateEmail", apierror.New(apierror.UserNotFound, "customer Customer:1 has no embedded wallet"),
		call("PATCH", "/customers/Customer:1", `{"email":"ada@new.example.com"}`), key,
		func(c signedretry.Request) (*signedretry.Challenge, error) {
			_, ch, err := e.svc.UpdateEmail(ctx, "Customer:1", "ada@new.example.com", nil, c)
			return ch, err
		})

	// A passkey: its registration challenge, its login challenge and
	// verification.
	refuse("PasskeyRegistrationChallenge", unknown("internal account", w), func() error {
		_, err := e.svc.PasskeyRegistrationChallenge(ctx, w)
		return err
	})
	pk, a := e.addPasskey(t, key)
	if got := g.Take(); !slices.Equal(got, []string{w, w, w}) {
		t.Fatalf("a passkey's registration asked the guard about %v, want three times (challenge, both legs)", got)
	}
	refuse("Challenge PASSKEY", unknown("credential", pk.ID), func() error { _, err := e.passkeyChallenge(t, pk); return err })
	var cr *walletauth.ChallengeResponse
	admit("Challenge PASSKEY", func() (err error) { cr, err = e.passkeyChallenge(t, pk); return err })
	refuse("Verify PASSKEY", unknown("credential", pk.ID), func() error { _, err := e.passkeyLogin(t, pk, a, cr); return err })
	admit("Verify PASSKEY", func() error { _, err := e.passkeyLogin(t, pk, a, cr); return err })

	// An OAUTH credential and its verification.
	now := e.clock.Now()
	claims := func(extra map[string]any) map[string]any {
		c := map[string]any{"iss": "https://idp.example.com", "aud": "client-1", "sub": "user-7", "iat": now.Unix(), "exp": now.Unix() + 3600}
		for k, v := range extra {
			c[k] = v
		}
		return c
	}
	oreq := walletauth.AddCredentialRequest{Type: storage.OAuth, AccountID: w, OIDCToken: p.token(t, claims(nil))}
	oc := call("POST", "/auth/credentials", `{"type":"OAUTH"}`)
	_, ch, err = e.svc.AddCredential(ctx, oreq, oc)
	if err != nil {
		t.Fatal(err)
	}
	oa, _, err := e.svc.AddCredential(ctx, oreq, signed(t, oc, ch, key))
	if err != nil {
		t.Fatal(err)
	}
	g.Take()
	oaClient := newKey(t)
	verifyOAuth := func() error {
		_, _, err := e.svc.Verify(ctx, oa.ID, walletauth.VerifyRequest{Type: storage.OAuth, ClientPublicKey: oaClient.PublicKeyHex(),
			OIDCToken: p.token(t, claims(map[string]any{"nonce": oidc.NonceFor(oaClient.PublicKeyHex())}))}, signedretry.Request{})
		return err
	}
	refuse("Verify OAUTH", unknown("credential", oa.ID), verifyOAuth)
	admit("Verify OAUTH", verifyOAuth)

	// A new wallet: a plain refusal is 403, there being no id to be
	// unknown, and stores nothing.
	newWallet := walletauth.NewWallet{CustomerID: "Customer:7", Email: "gus@example.com"}
	g.Set(refused)
	_, _, err = e.svc.CreateWallet(ctx, newWallet)
	apierrortest.Want(t, err, apierror.Forbidden, "")
	g.Set(nil)
	g.Take()
	if ws, err := e.with(t, nil).Wallets(ctx, "Customer:7"); err != nil || len(ws) != 0 {
		t.Fatalf("a refused CreateWallet stored %+v, %v", ws, err)
	}
	created, _, err := e.svc.CreateWallet(ctx, newWallet)
	if err != nil {
		t.Fatal(err)
	}
	askedOnce("CreateWallet", created.ID)

	// An *apierror.Error is answered as it is.
	g.Set(fmt.Errorf("host: %w", apierror.New(apierror.Forbidden, "not this platform's wallet")))
	_, err = e.svc.Challenge(ctx, email, walletauth.ChallengeRequest{})
	wantMessage(t, apierrortest.Want(t, err, apierror.Forbidden, ""), "not this platform's wallet")
	_, err = e.svc.Wallets(ctx, "Customer:1")
	wantMessage(t, apierrortest.Want(t, err, apierror.Forbidden, ""), "not this platform's wallet")
	g.Set(nil)
	g.Take()

	// Ids that name nothing are 404 before the guard is asked.
	none := "InternalAccount:00000000-0000-4000-8000-000000000000"
	for name, op := range map[string]func() error{
		"Wallet":          func() error { _, err := e.svc.Wallet(ctx, none); return err },
		"ListCredentials": func() error { _, err := e.svc.ListCredentials(ctx, none); return err },
		"ListSessions":    func() error { _, err := e.svc.ListSessions(ctx, none); return err },
		"Challenge": func() error {
			_, err := e.svc.Challenge(ctx, "AuthMethod:00000000-0000-4000-8000-000000000000", walletauth.ChallengeRequest{})
			return err
		},
		"RevokeSession": func() error {
			_, err := e.svc.RevokeSession(ctx, "Session:00000000-0000-4000-8000-000000000000", call("DELETE", "/x", ""))
			return err
		},
	} {
		apierrortest.Want(t, op(), apierror.ReferenceNotFound, "")
		if got := g.Take(); len(got) != 0 {
			t.Fatalf("%s of an unknown id asked the guard about %v", name, got)
		}
	}
}

// wantMessage fails t unless e says msg.
func wantMessage(t testing.TB, e *apierror.Error, msg string) {
	t.Helper()
	if e.Message != msg {
		t.Fatalf("%s %q, want %q", e.Code, e.Message, msg)
	}
}

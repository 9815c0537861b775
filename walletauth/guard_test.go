package walletauth_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/storagetest"
	"github.com/walletgate/walletgate/walletauth"
)

// handler serves svc's routes behind a guard that lets every request act.
func handler(t testing.TB, svc *walletauth.Service) http.Handler {
	t.Helper()
	h, err := svc.Handler(walletauth.HandlerConfig{Guard: func(*http.Request, storage.InternalAccount) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// serve sends one request to h and returns the recorded answer.
func serve(h http.Handler, method, path, body string, headers map[string]string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, strings.NewReader(body))
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
	key    *walletauth.ClientKey
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
	h, err := e.svc.Handler(walletauth.HandlerConfig{})
	if err == nil || h != nil || !strings.Contains(err.Error(), "HandlerConfig.Guard is required") {
		t.Fatalf("a handler without a guard: %v, %v", h, err)
	}
}

// TestHandlerGuardSeesWallet: every route asks the guard once, before it
// acts, with the wallet its id names (the body's or query's accountId, the
// wallet of the credential or of the session in the path), on both legs of
// a signed operation.
func TestHandlerGuardSeesWallet(t *testing.T) {
	e := newEnv(t, nil)
	b := e.tenant(t, "Customer:2", "bo@example.com")
	var asked []storage.InternalAccount
	h, err := e.svc.Handler(walletauth.HandlerConfig{Guard: func(r *http.Request, w storage.InternalAccount) error {
		if r == nil {
			return errors.New("no request")
		}
		asked = append(asked, w)
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
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
	w = serve(h, refresh.method, refresh.path, refresh.body, map[string]string{signedretry.HeaderSignature: sig, signedretry.HeaderRequestID: ch.RequestID})
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
// code still answers 202.
func TestHandlerGuardRefuses(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t, func(c *walletauth.Config) {
		c.MaxPendingChallenges = 1
		c.OTP.MaxAttempts = 2
		c.OTP.AttemptBudget = 2
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

	ownPlatform := func(_ *http.Request, w storage.InternalAccount) error {
		if w.CustomerID != "Customer:1" {
			return fmt.Errorf("wallet %s belongs to another platform", w.ID)
		}
		return nil
	}
	refuse, err := e.svc.Handler(walletauth.HandlerConfig{Guard: ownPlatform})
	if err != nil {
		t.Fatal(err)
	}
	forbid, err := e.svc.Handler(walletauth.HandlerConfig{Guard: func(*http.Request, storage.InternalAccount) error {
		return fmt.Errorf("host: %w", apierror.New(apierror.Forbidden, "not this platform's wallet"))
	}})
	if err != nil {
		t.Fatal(err)
	}
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
	w := serve(handler(t, e.svc), "POST", "/auth/credentials/"+b.email.ID+"/verify",
		`{"type":"EMAIL_OTP","encryptedOtpBundle":`+quote(right)+`}`, nil)
	if w.Code != http.StatusAccepted {
		t.Fatalf("the owner's right code after the refusals: %d %s", w.Code, w.Body)
	}
}

// walletEvents returns the outbox events of a wallet.
func (e *env) walletEvents(t testing.TB, walletID string) []storage.Event {
	t.Helper()
	return storagetest.Events(t, e.store, walletID)
}

package walletauth_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/descope/virtualwebauthn"
	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwk"
	"github.com/lestrrat-go/jwx/v2/jws"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/walletauth"
	"github.com/walletgate/walletgate/walletauth/authclient"
	"github.com/walletgate/walletgate/walletauth/oidc"
	"github.com/walletgate/walletgate/walletauth/passkey"
)

const (
	rpID   = "wallet.example.com"
	origin = "https://wallet.example.com"
)

// authenticator is a virtual passkey on a software authenticator.
type authenticator struct {
	rp   virtualwebauthn.RelyingParty
	auth virtualwebauthn.Authenticator
	cred virtualwebauthn.Credential
}

func newAuthenticator(t testing.TB) *authenticator {
	t.Helper()
	// virtualwebauthn encodes coordinates without leading zeros; draw keys
	// whose coordinates are full length.
	for {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		if len(k.X.Bytes()) != 32 || len(k.Y.Bytes()) != 32 {
			continue
		}
		der, _ := x509.MarshalPKCS8PrivateKey(k)
		return &authenticator{rp: virtualwebauthn.RelyingParty{ID: rpID, Name: "Wallet", Origin: origin},
			auth: virtualwebauthn.NewAuthenticator(), cred: virtualwebauthn.NewCredentialWithImportedKey(virtualwebauthn.KeyTypeEC2, der)}
	}
}

func (a *authenticator) attest(t testing.TB, challenge, accountID string) *passkey.Attestation {
	raw, _ := base64.RawURLEncoding.DecodeString(challenge)
	resp := virtualwebauthn.CreateAttestationResponse(a.rp, a.auth, a.cred, virtualwebauthn.AttestationOptions{
		Challenge: raw, RelyingPartyID: rpID, RelyingPartyName: "Wallet", UserID: accountID, UserName: "ada"})
	var r struct {
		RawID    string `json:"rawId"`
		Response struct{ ClientDataJSON, AttestationObject string }
	}
	if err := json.Unmarshal([]byte(resp), &r); err != nil {
		t.Fatal(err)
	}
	return &passkey.Attestation{CredentialID: r.RawID, ClientDataJSON: r.Response.ClientDataJSON, AttestationObject: r.Response.AttestationObject}
}

func (a *authenticator) assert(t testing.TB, challengeHex string) *passkey.Assertion {
	resp := virtualwebauthn.CreateAssertionResponse(a.rp, a.auth, a.cred, virtualwebauthn.AssertionOptions{
		Challenge: []byte(challengeHex), RelyingPartyID: rpID, AllowCredentials: []string{base64.RawURLEncoding.EncodeToString(a.cred.ID)}})
	var r struct {
		RawID    string `json:"rawId"`
		Response struct{ ClientDataJSON, AuthenticatorData, Signature, UserHandle string }
	}
	if err := json.Unmarshal([]byte(resp), &r); err != nil {
		t.Fatal(err)
	}
	return &passkey.Assertion{CredentialID: r.RawID, ClientDataJSON: r.Response.ClientDataJSON,
		AuthenticatorData: r.Response.AuthenticatorData, Signature: r.Response.Signature, UserHandle: r.Response.UserHandle}
}

// idp is an OpenID provider: a JWKS over TLS and a signing key.
type idp struct {
	srv *httptest.Server
	key *ecdsa.PrivateKey
}

func newIDP(t testing.TB) *idp {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	pub, err := jwk.FromRaw(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	_ = pub.Set(jwk.KeyIDKey, "k1")
	_ = pub.Set(jwk.AlgorithmKey, jwa.ES256)
	_ = pub.Set(jwk.KeyUsageKey, "sig")
	set := jwk.NewSet()
	_ = set.AddKey(pub)
	body, _ := json.Marshal(set)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return &idp{srv: srv, key: key}
}

func (p *idp) token(t testing.TB, claims map[string]any) string {
	t.Helper()
	payload, _ := json.Marshal(claims)
	hdrs := jws.NewHeaders()
	_ = hdrs.Set(jws.KeyIDKey, "k1")
	_ = hdrs.Set(jws.TypeKey, "JWT")
	out, err := jws.Sign(payload, jws.WithKey(jwa.ES256, p.key, jws.WithProtectedHeaders(hdrs)))
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func federatedEnv(t *testing.T) (*env, *idp) {
	t.Helper()
	return federatedEnvWith(t, nil)
}

// federatedEnvWith is federatedEnv with mod applied to the configuration
// last.
func federatedEnvWith(t *testing.T, mod func(*walletauth.Config)) (*env, *idp) {
	t.Helper()
	p := newIDP(t)
	var e *env
	e = newEnv(t, func(c *walletauth.Config) {
		pk, err := passkey.New(passkey.Config{RelyingParty: passkey.RelyingParty{ID: rpID, Name: "Wallet", Origins: []string{origin}}})
		if err != nil {
			t.Fatal(err)
		}
		v, err := oidc.New(context.Background(), oidc.Config{HTTPClient: p.srv.Client(), Clock: func() time.Time { return e.clock.Now() },
			Issuers: []oidc.Issuer{{ID: "https://idp.example.com", Audiences: []string{"client-1"}, JWKSURL: p.srv.URL + "/jwks"}}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(v.Close)
		c.Passkeys, c.OIDC = pk, v
		if mod != nil {
			mod(c)
		}
	})
	return e, p
}

func TestPasskey(t *testing.T) {
	ctx := t.Context()
	e, _ := federatedEnv(t)
	_, key := e.login(t, e.email.ID, storage.EmailOTP)
	a := newAuthenticator(t)

	rc, err := e.svc.PasskeyRegistrationChallenge(ctx, e.wallet.ID)
	if err != nil {
		t.Fatal(err)
	}
	req := walletauth.AddCredentialRequest{Type: storage.Passkey, AccountID: e.wallet.ID, Nickname: " iPhone ",
		Challenge: rc.Challenge, Attestation: a.attest(t, rc.Challenge, e.wallet.ID)}
	body, _ := json.Marshal(req)
	c := call("POST", "/auth/credentials", string(body))
	_, ch, err := e.svc.AddCredential(ctx, req, c)
	if err != nil || ch == nil || ch.Type != "PASSKEY" {
		t.Fatalf("add leg 1: %+v %v", ch, err)
	}
	pk, _, err := e.svc.AddCredential(ctx, req, signed(t, c, ch, key))
	if err != nil {
		t.Fatalf("add leg 2: %v", err)
	}
	if pk.Type != storage.Passkey || pk.Nickname != "iPhone" || pk.CredentialID != base64.RawURLEncoding.EncodeToString(a.cred.ID) {
		t.Fatalf("passkey %+v", pk)
	}

	// The same passkey again: 400 PASSKEY_CREDENTIAL_ALREADY_EXISTS.
	rc2, _ := e.svc.PasskeyRegistrationChallenge(ctx, e.wallet.ID)
	again := req
	again.Challenge, again.Attestation = rc2.Challenge, a.attest(t, rc2.Challenge, e.wallet.ID)
	_, _, err = e.svc.AddCredential(ctx, again, call("POST", "/auth/credentials", `{"again":1}`))
	apierrortest.Want(t, err, apierror.PasskeyCredentialAlreadyExists, "")

	login := func(t *testing.T) (*walletauth.ChallengeResponse, *authclient.ClientKey) {
		client := newKey(t)
		cr, err := e.svc.Challenge(ctx, pk.ID, walletauth.ChallengeRequest{ClientPublicKey: client.PublicKeyHex()})
		if err != nil {
			t.Fatal(err)
		}
		if len(cr.Challenge) != 64 || !storage.ValidID(cr.RequestID, "Request") || cr.CredentialID != pk.CredentialID || cr.ExpiresAt == nil {
			t.Fatalf("passkey challenge %+v", cr)
		}
		return cr, client
	}
	verify := func(cr *walletauth.ChallengeResponse, as *passkey.Assertion, requestID string) (*walletauth.AuthSession, error) {
		s, _, err := e.svc.Verify(ctx, pk.ID, walletauth.VerifyRequest{Type: storage.Passkey, Assertion: as},
			signedretry.Request{Method: "POST", Path: "/auth/credentials/" + pk.ID + "/verify", RequestID: requestID})
		return s, err
	}

	cr, client := login(t)
	as := a.assert(t, cr.Challenge)
	sess, err := verify(cr, as, cr.RequestID)
	if err != nil {
		t.Fatal(err)
	}
	sessionKey, err := client.OpenSessionKey(sess.EncryptedSessionSigningKey)
	if err != nil || sess.Type != storage.Passkey {
		t.Fatalf("session %+v: %v", sess, err)
	}
	// The sealed key signs for the account.
	rc3 := call("DELETE", "/auth/sessions/"+sess.ID, "")
	rch, _ := e.svc.RevokeSession(ctx, sess.ID, rc3)
	if _, err := e.svc.RevokeSession(ctx, sess.ID, signed(t, rc3, rch, sessionKey)); err != nil {
		t.Fatalf("revoke with the passkey session key: %v", err)
	}

	_, err = verify(cr, as, cr.RequestID)
	apierrortest.Want(t, err, apierror.Unauthorized, "request id already used")
	_, err = verify(cr, as, "")
	apierrortest.Want(t, err, apierror.RequestIDMissing, "")
	_, err = verify(cr, as, "Request:00000000-0000-4000-8000-000000000000")
	apierrortest.Want(t, err, apierror.Unauthorized, "unknown request id")

	t.Run("replayed assertion on a fresh challenge", func(t *testing.T) {
		cr2, _ := login(t)
		_, err := verify(cr2, as, cr2.RequestID)
		apierrortest.Want(t, err, apierror.Unauthorized, "")
		// The failure did not burn the challenge.
		if _, err := verify(cr2, a.assert(t, cr2.Challenge), cr2.RequestID); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("expired challenge", func(t *testing.T) {
		cr2, _ := login(t)
		e.clock.Add(signedretry.DefaultTTL)
		_, err := verify(cr2, a.assert(t, cr2.Challenge), cr2.RequestID)
		apierrortest.Want(t, err, apierror.Unauthorized, "request id expired")
	})
	t.Run("a request id of another credential", func(t *testing.T) {
		cr2, _ := login(t)
		// A credential of another type: the type mismatch answers first.
		_, _, err := e.svc.Verify(ctx, e.email.ID, walletauth.VerifyRequest{Type: storage.Passkey, Assertion: a.assert(t, cr2.Challenge)},
			signedretry.Request{RequestID: cr2.RequestID})
		apierrortest.Want(t, err, apierror.InvalidInput, "")
		// Another passkey.
		a2 := newAuthenticator(t)
		rc, _ := e.svc.PasskeyRegistrationChallenge(ctx, e.wallet.ID)
		req2 := walletauth.AddCredentialRequest{Type: storage.Passkey, AccountID: e.wallet.ID, Nickname: "second",
			Challenge: rc.Challenge, Attestation: a2.attest(t, rc.Challenge, e.wallet.ID)}
		c2 := call("POST", "/auth/credentials", `{"second":1}`)
		_, ch2, err := e.svc.AddCredential(ctx, req2, c2)
		if err != nil {
			t.Fatal(err)
		}
		pk2, _, err := e.svc.AddCredential(ctx, req2, signed(t, c2, ch2, key))
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = e.svc.Verify(ctx, pk2.ID, walletauth.VerifyRequest{Type: storage.Passkey, Assertion: a2.assert(t, cr2.Challenge)},
			signedretry.Request{RequestID: cr2.RequestID})
		apierrortest.Want(t, err, apierror.Unauthorized, "request id was issued for another credential")
	})
	t.Run("bad client key", func(t *testing.T) {
		_, err := e.svc.Challenge(ctx, pk.ID, walletauth.ChallengeRequest{ClientPublicKey: "04abc"})
		apierrortest.Want(t, err, apierror.InvalidInput, "")
	})
	t.Run("live login challenges are bounded, never refused", func(t *testing.T) {
		// See TestPasskeyChallengeSuperseded for which ones are kept.
		client := newKey(t)
		for n := range 2*walletauth.DefaultMaxPasskeyChallenges + 1 {
			if _, err := e.svc.Challenge(ctx, pk.ID, walletauth.ChallengeRequest{ClientPublicKey: client.PublicKeyHex()}); err != nil {
				t.Fatalf("after %d live challenges: %v, want the oldest superseded", n, err)
			}
		}
	})
	t.Run("registration challenge errors", func(t *testing.T) {
		_, err := e.svc.PasskeyRegistrationChallenge(ctx, "InternalAccount:00000000-0000-4000-8000-000000000000")
		apierrortest.Want(t, err, apierror.ReferenceNotFound, "")
		_, err = e.svc.PasskeyRegistrationChallenge(ctx, "x")
		apierrortest.Want(t, err, apierror.InvalidInput, "")
		bad := req
		bad.Attestation = nil
		_, _, err = e.svc.AddCredential(ctx, bad, call("POST", "/auth/credentials", `{}`))
		apierrortest.Want(t, err, apierror.InvalidInput, "")
	})
}

func TestOAuth(t *testing.T) {
	ctx := t.Context()
	e, p := federatedEnv(t)
	_, key := e.login(t, e.email.ID, storage.EmailOTP)
	claims := func(mod map[string]any) map[string]any {
		c := map[string]any{"iss": "https://idp.example.com", "aud": "client-1", "sub": "user-7", "email": "ada@idp.example",
			"iat": e.clock.Now().Unix(), "exp": e.clock.Now().Add(time.Hour).Unix()}
		for k, v := range mod {
			c[k] = v
		}
		return c
	}
	req := walletauth.AddCredentialRequest{Type: storage.OAuth, AccountID: e.wallet.ID, OIDCToken: p.token(t, claims(nil))}
	c := call("POST", "/auth/credentials", `{"type":"OAUTH"}`)
	_, ch, err := e.svc.AddCredential(ctx, req, c)
	if err != nil {
		t.Fatal(err)
	}
	m, _, err := e.svc.AddCredential(ctx, req, signed(t, c, ch, key))
	if err != nil || m.Type != storage.OAuth || m.Nickname != "ada@idp.example" {
		t.Fatalf("add OAUTH: %+v %v", m, err)
	}
	_, _, err = e.svc.AddCredential(ctx, req, call("POST", "/auth/credentials", `{"n":2}`))
	apierrortest.Want(t, err, apierror.Conflict, "")

	client := newKey(t)
	verify := func(token string) (*walletauth.AuthSession, error) {
		s, _, err := e.svc.Verify(ctx, m.ID, walletauth.VerifyRequest{Type: storage.OAuth, OIDCToken: token, ClientPublicKey: client.PublicKeyHex()}, signedretry.Request{})
		return s, err
	}
	sess, err := verify(p.token(t, claims(map[string]any{"nonce": oidc.NonceFor(client.PublicKeyHex())})))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.OpenSessionKey(sess.EncryptedSessionSigningKey); err != nil {
		t.Fatalf("opening the session key: %v", err)
	}
	_, err = verify(p.token(t, claims(map[string]any{"nonce": "00"})))
	apierrortest.Want(t, err, apierror.Unauthorized, "")
	_, err = verify(p.token(t, claims(map[string]any{"sub": "user-8", "nonce": oidc.NonceFor(client.PublicKeyHex())})))
	apierrortest.Want(t, err, apierror.Unauthorized, "")
	_, err = verify("not-a-jwt")
	apierrortest.Want(t, err, apierror.InvalidInput, "")
	_, _, err = e.svc.Verify(ctx, m.ID, walletauth.VerifyRequest{Type: storage.OAuth}, signedretry.Request{})
	if fe := apierrortest.Want(t, err, apierror.InvalidInput, "").FieldErrors(); len(fe) != 2 {
		t.Fatalf("field errors %+v", fe)
	}
	_, err = e.svc.Challenge(ctx, m.ID, walletauth.ChallengeRequest{})
	apierrortest.Want(t, err, apierror.InvalidInput, "")
	_, _, err = e.svc.Verify(ctx, e.email.ID, walletauth.VerifyRequest{Type: storage.OAuth, OIDCToken: "a.b.c", ClientPublicKey: client.PublicKeyHex()}, signedretry.Request{})
	apierrortest.Want(t, err, apierror.InvalidInput, "")
}

func TestFederatedTypesDisabled(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t, nil)
	_, _, err := e.svc.AddCredential(ctx, walletauth.AddCredentialRequest{Type: storage.OAuth, AccountID: e.wallet.ID, OIDCToken: "x"}, call("POST", "/", "{}"))
	apierrortest.Want(t, err, apierror.InvalidInput, "")
	_, _, err = e.svc.AddCredential(ctx, walletauth.AddCredentialRequest{Type: storage.Passkey, AccountID: e.wallet.ID}, call("POST", "/", "{}"))
	apierrortest.Want(t, err, apierror.InvalidInput, "")
	_, err = e.svc.PasskeyRegistrationChallenge(ctx, e.wallet.ID)
	apierrortest.Want(t, err, apierror.InvalidInput, "")
}

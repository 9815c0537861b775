package walletauth_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/signedretry/stamper"
	"github.com/walletgate/walletgate/storage/postgres"
	"github.com/walletgate/walletgate/storage/postgres/pgtest"
	"github.com/walletgate/walletgate/walletauth"
	"github.com/walletgate/walletgate/walletauth/authclient"
	"github.com/walletgate/walletgate/walletauth/oidc"
	"github.com/walletgate/walletgate/walletauth/passkey"
)

// TestRoundTripsPostgres pins the PostgreSQL round trips of the signed
// flows (statements already prepared on the pool's one connection), as
// documented in the package, and the statements they send: a count that
// creeps up fails.
func TestRoundTripsPostgres(t *testing.T) {
	ctx := t.Context()
	// WALLETGATE_TRACE_FLIGHTS=1 logs the statements of the counted run of
	// each flow, with the flight each travelled in.
	trace := os.Getenv("WALLETGATE_TRACE_FLIGHTS") != ""
	pool, f := pgtest.FlightPool(t, pgtest.DSN(t), 1)
	store := pgtest.Store(t, pool, postgres.Config{})
	sec := secrets{}
	idp := newIDP(t)
	var e *env
	e = newEnvOn(t, store, func(c *walletauth.Config) {
		pk, err := passkey.New(passkey.Config{RelyingParty: passkey.RelyingParty{ID: rpID, Name: "Wallet", Origins: []string{origin}}})
		if err != nil {
			t.Fatal(err)
		}
		v, err := oidc.New(context.Background(), oidc.Config{HTTPClient: idp.srv.Client(), Clock: func() time.Time { return e.clock.Now() },
			Issuers: []oidc.Issuer{{ID: "https://idp.example.com", Audiences: []string{"client-1"}, JWKSURL: idp.srv.URL + "/jwks"}}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(v.Close)
		c.WalletSecrets, c.Passkeys, c.OIDC = sec, pk, v
	})
	sec[e.wallet.ID] = testMnemonic

	// Each flow runs twice before it is counted, to prepare its statements.
	var key *authclient.ClientKey
	// Each login moves the clock past the window of re-issued codes.
	login := func() { e.clock.Add(time.Hour); _, key = e.login(t, e.email.ID, "EMAIL_OTP") }
	privacy := func() {
		if key == nil {
			login()
			f.Take()
		}
		on := true
		c := call("PATCH", "/internal-accounts/"+e.wallet.ID, `{"privateEnabled":true}`)
		_, ch, err := e.svc.UpdateWalletPrivacy(ctx, e.wallet.ID, walletauth.PrivacyRequest{PrivateEnabled: &on}, c, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := e.svc.UpdateWalletPrivacy(ctx, e.wallet.ID, walletauth.PrivacyRequest{PrivateEnabled: &on}, signed(t, c, ch, key), nil); err != nil {
			t.Fatal(err)
		}
	}
	revokeSession := func() {
		e.clock.Add(time.Hour)
		s, k := e.login(t, e.email.ID, "EMAIL_OTP")
		f.Take() // the login is counted on its own
		rc := call(http.MethodDelete, "/auth/sessions/"+s.ID, "")
		ch, err := e.svc.RevokeSession(ctx, s.ID, rc)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.RevokeSession(ctx, s.ID, signed(t, rc, ch, k)); err != nil {
			t.Fatal(err)
		}
	}
	refreshSession := func() {
		e.clock.Add(time.Hour)
		s, k := e.login(t, e.email.ID, "EMAIL_OTP")
		f.Take() // the login is counted on its own
		client := newKey(t)
		req := walletauth.RefreshRequest{ClientPublicKey: client.PublicKeyHex()}
		rc := call("POST", "/auth/sessions/"+s.ID+"/refresh", `{"clientPublicKey":"`+client.PublicKeyHex()+`"}`)
		_, ch, err := e.svc.RefreshSession(ctx, s.ID, req, rc)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := e.svc.RefreshSession(ctx, s.ID, req, signed(t, rc, ch, k)); err != nil {
			t.Fatal(err)
		}
	}
	// fresh logs in on its own, uncounted, for a flow that a new session signs.
	fresh := func() *authclient.ClientKey {
		e.clock.Add(time.Hour)
		_, k := e.login(t, e.email.ID, "EMAIL_OTP")
		f.Take() // the login is counted on its own
		return k
	}
	exportWallet := func() {
		k := fresh()
		client := newKey(t)
		req := walletauth.ExportRequest{ClientPublicKey: client.PublicKeyHex()}
		rc := call("POST", "/internal-accounts/"+e.wallet.ID+"/export", `{"clientPublicKey":"`+client.PublicKeyHex()+`"}`)
		_, ch, err := e.svc.ExportWallet(ctx, e.wallet.ID, req, rc)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := e.svc.ExportWallet(ctx, e.wallet.ID, req, signed(t, rc, ch, k)); err != nil {
			t.Fatal(err)
		}
	}
	// A second credential is added and revoked in turn, each uncounted
	// when it only prepares the other.
	var added *walletauth.AuthMethod
	var addCredential, addPasskey, addOAuth, revokeCredential func()
	addOAuth = func() {
		if added != nil {
			revokeCredential()
		}
		k := fresh()
		now := e.clock.Now()
		token := idp.token(t, map[string]any{"iss": "https://idp.example.com", "aud": "client-1", "sub": "user-7",
			"email": "ada@idp.example", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()})
		req := walletauth.AddCredentialRequest{Type: "OAUTH", AccountID: e.wallet.ID, OIDCToken: token}
		rc := call("POST", "/auth/credentials", `{"type":"OAUTH"}`)
		_, ch, err := e.svc.AddCredential(ctx, req, rc)
		if err != nil {
			t.Fatal(err)
		}
		if added, _, err = e.svc.AddCredential(ctx, req, signed(t, rc, ch, k)); err != nil {
			t.Fatal(err)
		}
	}
	addPasskey = func() {
		if added != nil {
			revokeCredential()
		}
		k := fresh()
		rch, err := e.svc.PasskeyRegistrationChallenge(ctx, e.wallet.ID)
		if err != nil {
			t.Fatal(err)
		}
		att := newAuthenticator(t).attest(t, rch.Challenge, e.wallet.ID)
		f.Take() // the registration challenge is counted on its own
		req := walletauth.AddCredentialRequest{Type: "PASSKEY", AccountID: e.wallet.ID, Nickname: "iPhone", Challenge: rch.Challenge, Attestation: att}
		body, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		rc := call("POST", "/auth/credentials", string(body))
		_, ch, err := e.svc.AddCredential(ctx, req, rc)
		if err != nil {
			t.Fatal(err)
		}
		if added, _, err = e.svc.AddCredential(ctx, req, signed(t, rc, ch, k)); err != nil {
			t.Fatal(err)
		}
	}
	addCredential = func() {
		if added != nil {
			revokeCredential()
		}
		k := fresh()
		req := walletauth.AddCredentialRequest{Type: "SMS_OTP", AccountID: e.wallet.ID}
		rc := call("POST", "/auth/credentials", `{"type":"SMS_OTP","accountId":"`+e.wallet.ID+`"}`)
		_, ch, err := e.svc.AddCredential(ctx, req, rc)
		if err != nil {
			t.Fatal(err)
		}
		if added, _, err = e.svc.AddCredential(ctx, req, signed(t, rc, ch, k)); err != nil {
			t.Fatal(err)
		}
	}
	revokeCredential = func() {
		if added == nil {
			addCredential()
		}
		k := fresh()
		rc := call(http.MethodDelete, "/auth/credentials/"+added.ID, "")
		ch, err := e.svc.RevokeCredential(ctx, added.ID, rc)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.RevokeCredential(ctx, added.ID, signed(t, rc, ch, k)); err != nil {
			t.Fatal(err)
		}
		added = nil
	}
	// Each email change moves the wallet to a new address.
	var changes int
	updateEmail := func() {
		k := fresh()
		changes++
		email := fmt.Sprintf("ada-%d@example.com", changes)
		rc := call("PATCH", "/customers/Customer:1", `{"email":"`+email+`"}`)
		_, ch, err := e.svc.UpdateEmail(ctx, "Customer:1", email, nil, rc)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := e.svc.UpdateEmail(ctx, "Customer:1", email, nil, signed(t, rc, ch, k)); err != nil {
			t.Fatal(err)
		}
	}
	authorize := func() {
		k := fresh()
		op := walletauth.HostOperation[map[string]int, struct{}]{Type: "PAY", AccountID: e.wallet.ID, Parameters: map[string]int{"amount": 5}}
		rc := call("POST", "/pay", `{"amount":5}`)
		_, _, ch, err := walletauth.Authorize(ctx, e.svc, op, rc)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, _, err := walletauth.Authorize(ctx, e.svc, op, signed(t, rc, ch, k)); err != nil {
			t.Fatal(err)
		}
	}
	// Over HTTP, through the handler of a replica with a tenant guard,
	// which each operation asks on the wallet it reads or locks anyway.
	h := handler(t, e.with(t, admitAll))
	challengeHTTP := func() string {
		e.clock.Add(time.Hour)
		rec := serve(h, http.MethodPost, "/auth/credentials/"+e.email.ID+"/challenge", `{}`, nil)
		var m walletauth.ChallengeResponse
		if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil || rec.Code != http.StatusOK {
			t.Fatalf("challenge over HTTP: %d %s", rec.Code, rec.Body)
		}
		return m.OTPEncryptionTargetBundle
	}
	loginHTTP := func() {
		bundle := challengeHTTP()
		k := newKey(t)
		sealed, err := k.SealOTP(bundle, e.svc.SigningPublicKey(), e.outbox.last(t).Code, nil)
		if err != nil {
			t.Fatal(err)
		}
		path, body := "/auth/credentials/"+e.email.ID+"/verify", `{"type":"EMAIL_OTP","encryptedOtpBundle":`+quote(sealed)+`}`
		rec := serve(h, http.MethodPost, path, body, nil)
		var ch signedretry.Challenge
		if err := json.Unmarshal(rec.Body.Bytes(), &ch); err != nil || rec.Code != http.StatusAccepted {
			t.Fatalf("verify leg 1 over HTTP: %d %s", rec.Code, rec.Body)
		}
		sig, err := k.Stamp(ch.PayloadToSign)
		if err != nil {
			t.Fatal(err)
		}
		rec = serve(h, http.MethodPost, path, body, map[string]string{stamper.HeaderSignature: sig, stamper.HeaderRequestID: ch.RequestID})
		if rec.Code != http.StatusOK {
			t.Fatalf("verify leg 2 over HTTP: %d %s", rec.Code, rec.Body)
		}
	}
	for _, c := range []struct {
		name  string
		max   int // round trips
		stmts int // statements, BEGIN and COMMIT aside
		run   func()
	}{
		// challenge (2), verify (2), its signed retry (4: a bound key has no
		// signer lock to carry the consumption, which is read back so that
		// its lock is granted before the expiry is decided); the attempt's
		// lock reads the credential's wallet ahead, in its round trip: one
		// statement more
		{"OTPLogin", 8, 16, login},
		{"WalletPrivacy", 5, 8, privacy},
		{"RevokeSession", 7, 11, revokeSession},
		{"RefreshSession", 7, 13, refreshSession},
		{"ExportWallet", 5, 8, exportWallet},
		// A change of a wallet's credentials marks the wallet and writes
		// its security notice, both sent with the COMMIT: two statements
		// more, no round trip (the email change's mark is its update).
		{"AddCredential", 10, 16, addCredential},
		{"AddPasskey", 12, 19, addPasskey},
		{"AddOAuth", 9, 15, addOAuth},
		{"RevokeCredential", 12, 18, revokeCredential},
		{"UpdateEmail", 16, 23, updateEmail},
		// its audit event travels with the COMMIT: one statement more
		{"Authorize", 5, 9, authorize},
		// With the guard: the challenge locks the credential and reads its
		// wallet ahead in one round trip, the issuance goes with the
		// COMMIT (2, one statement more than a read of the credential);
		// the login's legs read the wallet from what their locks read, so
		// the guard costs no round trip (8 as OTPLogin, 10 at most). Last,
		// as they move the clock past the sessions of the flows above.
		{"ChallengeOverHTTP", 2, 4, func() { challengeHTTP() }},
		{"OTPLoginOverHTTP", 10, 17, loginHTTP},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.run()
			c.run()
			f.Take()
			c.run()
			got, stmts, log := f.Take()
			if trace {
				for _, l := range log {
					t.Log(l)
				}
			}
			t.Logf("%s: %d round trips, %d statements", c.name, got, stmts)
			if got > c.max {
				t.Errorf("%s: %d round trips, want at most %d", c.name, got, c.max)
			}
			if stmts > c.stmts {
				t.Errorf("%s: %d statements, want at most %d", c.name, stmts, c.stmts)
			}
		})
	}
}

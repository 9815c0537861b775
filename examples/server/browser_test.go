package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/chromedp/cdproto/webauthn"
	"github.com/chromedp/chromedp"

	"github.com/walletgate/walletgate/examples/client"
	"github.com/walletgate/walletgate/sandbox"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/walletauth"
	"github.com/walletgate/walletgate/walletauth/authclient"
	"github.com/walletgate/walletgate/walletauth/passkey"
)

const chromiumPath = "/usr/bin/chromium"

// browserScript runs in a page of the server's origin: it answers the
// server's challenges with navigator.credentials, as a client's web page
// does, and returns the JSON the platform backend relays.
const browserScript = `
function b64url(bytes) {
  return btoa(String.fromCharCode(...new Uint8Array(bytes))).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}
function fromB64url(s) {
  s = s.replace(/-/g, "+").replace(/_/g, "/");
  return Uint8Array.from(atob(s + "===".slice((s.length + 3) % 4)), c => c.charCodeAt(0));
}
async function register(rpId, accountId, challenge) {
  const cred = await navigator.credentials.create({publicKey: {
    rp: {id: rpId, name: "walletgate sandbox"},
    user: {id: new TextEncoder().encode(accountId), name: accountId, displayName: "Ada"},
    challenge: fromB64url(challenge),
    pubKeyCredParams: [{type: "public-key", alg: -7}, {type: "public-key", alg: -257}],
    authenticatorSelection: {residentKey: "required", userVerification: "required"},
    attestation: "none"}});
  return JSON.stringify({credentialId: b64url(cred.rawId), clientDataJson: b64url(cred.response.clientDataJSON),
    attestationObject: b64url(cred.response.attestationObject), transports: cred.response.getTransports()});
}
async function assert(rpId, credentialId, challengeHex) {
  const cred = await navigator.credentials.get({publicKey: {rpId, challenge: new TextEncoder().encode(challengeHex),
    allowCredentials: [{type: "public-key", id: fromB64url(credentialId)}], userVerification: "required"}});
  const r = cred.response;
  return JSON.stringify({credentialId: b64url(cred.rawId), clientDataJson: b64url(r.clientDataJSON),
    authenticatorData: b64url(r.authenticatorData), signature: b64url(r.signature),
    userHandle: r.userHandle ? b64url(r.userHandle) : undefined});
}`

// TestChromiumPasskeyAgainstServer adds a passkey to a wallet of
// examples/server and logs in with it, the ceremonies answered by Chromium's
// virtual authenticator from a page of the server's origin, and the
// add-credential retry signed with the session key of an EMAIL_OTP login.
func TestChromiumPasskeyAgainstServer(t *testing.T) {
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Skipf("Chromium is not installed at %s (apt-get install -y chromium; .ci/run does); skipping the browser passkey test", chromiumPath)
	}
	srv := start(t)
	u, err := url.Parse(srv.base)
	if err != nil {
		t.Fatal(err)
	}
	origin := "http://" + sandbox.DefaultRPID + ":" + u.Port() // the server's default -origin
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := clientOf(t, srv)

	var cust sandbox.Customer
	if _, err := c.Do(ctx, "POST", "/customers", map[string]any{"customerType": "INDIVIDUAL", "fullName": "Ada Lovelace",
		"email": "ada.browser@example.com", "birthDate": "1990-12-10", "nationality": "GB"}, nil, &cust); err != nil {
		t.Fatal(err)
	}
	var wallets struct{ Data []sandbox.InternalAccount }
	if _, err := c.Do(ctx, "GET", "/internal-accounts?customerId="+cust.ID, nil, nil, &wallets); err != nil {
		t.Fatal(err)
	}
	wallet := wallets.Data[0].ID
	var creds struct{ Data []walletauth.AuthMethod }
	if _, err := c.Do(ctx, "GET", "/auth/credentials?accountId="+wallet, nil, nil, &creds); err != nil {
		t.Fatal(err)
	}
	_, sessionKey, err := c.LoginOTP(ctx, wallet, creds.Data[0].ID, storage.EmailOTP, walletauth.SandboxOTPCode)
	if err != nil {
		t.Fatal(err)
	}

	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(chromiumPath),
		chromedp.Flag("headless", true), chromedp.Flag("no-sandbox", true), chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true), chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.UserDataDir(t.TempDir()))
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(allocCtx)
	defer cancelBrowser()
	// Any page of the origin will do: WebAuthn binds the ceremony to it.
	if _, err := chromedp.Run(bctx, chromedp.Navigate(origin+"/.well-known/walletgate-passkey-test")); err != nil {
		t.Fatalf("navigate: %v", err)
	}
	off := false
	if _, err := chromedp.Call(bctx, webauthn.Enable, webauthn.EnableParams{EnableUI: &off}); err != nil {
		t.Fatalf("WebAuthn.enable: %v", err)
	}
	// AutomaticPresenceSimulation and IsUserVerified have no omitempty: left
	// unset, every ceremony waits for a touch.
	if _, err := chromedp.Call(bctx, webauthn.AddVirtualAuthenticator, webauthn.AddVirtualAuthenticatorParams{Options: &webauthn.VirtualAuthenticatorOptions{
		Protocol: webauthn.AuthenticatorProtocolCtap2, Ctap2version: webauthn.Ctap2versionCtap21,
		Transport: webauthn.AuthenticatorTransportInternal, HasResidentKey: true, HasUserVerification: true,
		IsUserVerified: true, AutomaticPresenceSimulation: true}}); err != nil {
		t.Fatalf("WebAuthn.addVirtualAuthenticator: %v", err)
	}
	if _, err := chromedp.Run(bctx, chromedp.Evaluate[bool](browserScript+";true", chromedp.EvalAwaitPromise)); err != nil {
		t.Fatalf("script: %v", err)
	}
	call := func(expr string, out any) {
		t.Helper()
		js, err := chromedp.Run(bctx, chromedp.Evaluate[string](expr, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		if err := json.Unmarshal([]byte(js), out); err != nil {
			t.Fatalf("%s returned %q: %v", expr, js, err)
		}
	}

	// Registration: the platform's challenge, Chromium's attestation, the
	// session key's signature on the retry.
	var rc struct{ Challenge, RPID string }
	if _, err := c.Do(ctx, "POST", "/sandbox/passkeys/registration-challenge", map[string]string{"accountId": wallet}, nil, &rc); err != nil {
		t.Fatal(err)
	}
	var att passkey.Attestation
	call(fmt.Sprintf("register(%q, %q, %q)", rc.RPID, wallet, rc.Challenge), &att)
	// The client checks the payload adds exactly the passkey Chromium
	// attested before the session key stamps it.
	want, err := client.PasskeyAddParams(&att, "Chromium", rc.Challenge)
	if err != nil {
		t.Fatal(err)
	}
	cred, err := c.AddCredential(ctx, walletauth.AddCredentialRequest{Type: storage.Passkey, AccountID: wallet,
		Nickname: "Chromium", Challenge: rc.Challenge, Attestation: &att}, want, sessionKey)
	if err != nil {
		t.Fatalf("add passkey: %v", err)
	}
	if cred.Type != storage.Passkey || cred.CredentialID != att.CredentialID {
		t.Fatalf("added %+v, want the PASSKEY %s", cred, att.CredentialID)
	}

	// Login, twice: the counter Chromium keeps must rise, and each session
	// key opens only with the device key it was sealed to.
	for i := range 2 {
		device, err := authclient.NewClientKey()
		if err != nil {
			t.Fatal(err)
		}
		var ch walletauth.ChallengeResponse
		if _, err := c.Do(ctx, "POST", "/auth/credentials/"+cred.ID+"/challenge", map[string]string{"clientPublicKey": device.PublicKeyHex()}, nil, &ch); err != nil {
			t.Fatal(err)
		}
		var as passkey.Assertion
		call(fmt.Sprintf("assert(%q, %q, %q)", rc.RPID, att.CredentialID, ch.Challenge), &as)
		var sess walletauth.AuthSession
		if _, err := c.Do(ctx, "POST", "/auth/credentials/"+cred.ID+"/verify", map[string]any{"type": "PASSKEY", "assertion": as},
			map[string]string{"Request-Id": ch.RequestID}, &sess); err != nil {
			t.Fatalf("passkey login %d: %v", i+1, err)
		}
		if _, err := device.OpenSessionKey(sess.EncryptedSessionSigningKey); err != nil {
			t.Fatalf("login %d: the session key does not open with the device key: %v", i+1, err)
		}
	}
}

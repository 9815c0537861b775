package sandbox_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/accounts"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/mr-tron/base58"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/ownership"
	"github.com/walletgate/walletgate/sandbox"
	"github.com/walletgate/walletgate/walletauth"
	"github.com/walletgate/walletgate/walletauth/authclient"
	"github.com/walletgate/walletgate/walletauth/oidc"
)

func TestOwnershipOverHTTP(t *testing.T) {
	e := newEnv(t)
	cust, _ := e.customer("Ada Lovelace")
	key, _ := crypto.HexToECDSA("4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318")
	addr := crypto.PubkeyToAddress(key.PublicKey).Hex()
	a := e.external(cust.ID, map[string]any{"currency": "USDC", "ownershipType": "FIRST_PARTY",
		"accountInfo": map[string]any{"accountType": "ETHEREUM_WALLET", "address": addr}})
	if a.Status != "PENDING_OWNERSHIP_VERIFICATION" {
		t.Fatalf("new self-custody wallet is %s", a.Status)
	}
	path := "/customers/external-accounts/" + a.ID
	e.do("POST", path+"/verify", map[string]string{"signature": "0x00"}).fails(t, 409, apierror.Conflict)
	e.do("POST", path+"/challenge", map[string]string{"method": "PIGEON"}).fails(t, 400, apierror.InvalidInput)
	e.do("POST", path+"/challenge", "").fails(t, 400, apierror.InvalidInput)

	var c ownership.Challenge
	e.do("POST", path+"/challenge", map[string]string{"method": "WALLET_SIGNATURE"}).ok(t, 201, &c)
	if !strings.Contains(c.MessageToSign, "Address: "+addr) {
		t.Fatalf("message %q", c.MessageToSign)
	}
	// A wrong signature: 400 and UNVERIFIED.
	bad, _ := crypto.Sign(accounts.TextHash([]byte("something else")), key)
	bad[64] += 27
	e.do("POST", path+"/verify", map[string]string{"signature": "0x" + hex.EncodeToString(bad)}).fails(t, 400, apierror.InvalidInput)
	var got sandbox.ExternalAccount
	e.do("GET", path, nil).ok(t, 200, &got)
	if got.Status != "UNVERIFIED" {
		t.Fatalf("status after a bad signature: %s", got.Status)
	}
	// A new challenge, signed properly: ACTIVE.
	e.do("POST", path+"/challenge", map[string]string{"method": "WALLET_SIGNATURE"}).ok(t, 201, &c)
	sig, _ := crypto.Sign(accounts.TextHash([]byte(c.MessageToSign)), key)
	sig[64] += 27
	e.do("POST", path+"/verify", map[string]string{"signature": "0x" + hex.EncodeToString(sig)}).ok(t, 200, &got)
	if got.Status != "ACTIVE" || got.ID != a.ID {
		t.Fatalf("verified account %+v", got)
	}
	e.do("POST", path+"/challenge", map[string]string{"method": "WALLET_SIGNATURE"}).fails(t, 409, apierror.Conflict)

	// The platform tree does not see customer accounts.
	e.do("POST", "/platform/external-accounts/"+a.ID+"/challenge", map[string]string{"method": "WALLET_SIGNATURE"}).
		fails(t, 404, apierror.ReferenceNotFound)
	e.do("POST", "/customers/external-accounts/ExternalAccount:00000000-0000-4000-8000-000000000000/challenge",
		map[string]string{"method": "WALLET_SIGNATURE"}).fails(t, 404, apierror.ReferenceNotFound)

	// Solana.
	sol := ed25519.NewKeyFromSeed(make([]byte, 32))
	sa := e.external(cust.ID, map[string]any{"currency": "USDC", "ownershipType": "FIRST_PARTY",
		"accountInfo": map[string]any{"accountType": "SOLANA_WALLET", "address": base58.Encode(sol.Public().(ed25519.PublicKey))}})
	e.do("POST", "/customers/external-accounts/"+sa.ID+"/challenge", map[string]string{"method": "WALLET_SIGNATURE"}).ok(t, 201, &c)
	e.do("POST", "/customers/external-accounts/"+sa.ID+"/verify",
		map[string]string{"signature": base58.Encode(ed25519.Sign(sol, []byte(c.MessageToSign)))}).ok(t, 200, &got)
	if got.Status != "ACTIVE" {
		t.Fatalf("solana account %s", got.Status)
	}

	// A custodial wallet is not eligible; a deleted account is not found.
	custodial := e.external(cust.ID, map[string]any{"currency": "USDC", "ownershipType": "FIRST_PARTY",
		"accountInfo": map[string]any{"accountType": "ETHEREUM_WALLET", "address": "0x" + strings.Repeat("b", 40), "vaspName": "Coinbase"}})
	e.do("POST", "/customers/external-accounts/"+custodial.ID+"/challenge", map[string]string{"method": "WALLET_SIGNATURE"}).
		fails(t, 409, apierror.Conflict)
	gone := e.external(cust.ID, evmWallet("0fff"))
	e.do("DELETE", "/customers/external-accounts/"+gone.ID, nil).ok(t, 204, nil)
	e.do("POST", "/customers/external-accounts/"+gone.ID+"/challenge", map[string]string{"method": "WALLET_SIGNATURE"}).
		fails(t, 404, apierror.ReferenceNotFound)
}

func TestLivenessOverHTTP(t *testing.T) {
	e := newEnv(t)
	cust, _ := e.customer("Grace Hopper")
	a := e.external(cust.ID, evmWallet("1234"))
	path := "/customers/external-accounts/" + a.ID
	var c ownership.Challenge
	e.do("POST", path+"/challenge", map[string]string{"method": "LIVENESS"}).ok(t, 201, &c)
	if c.VerificationLink != sandbox.LivenessLinkPrefix+a.ID || c.MessageToSign != "" {
		t.Fatalf("liveness challenge %+v", c)
	}
	e.do("POST", path+"/verify", map[string]string{"signature": "0x00"}).fails(t, 409, apierror.Conflict)
	e.do("POST", "/sandbox/external-accounts/"+a.ID+"/liveness", map[string]any{}).fails(t, 400, apierror.InvalidInput)
	var got sandbox.ExternalAccount
	e.do("POST", "/sandbox/external-accounts/"+a.ID+"/liveness", map[string]any{"passed": true}).ok(t, 200, &got)
	if got.Status != "ACTIVE" {
		t.Fatalf("after liveness: %s", got.Status)
	}
	e.do("POST", "/sandbox/external-accounts/"+a.ID+"/liveness", map[string]any{"passed": true}).fails(t, 409, apierror.Conflict)
}

// dummyToken is a sandbox ID token: real header and claims, a dummy
// signature segment.
func dummyToken(claims map[string]any) string {
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	return enc(map[string]string{"alg": "RS256", "kid": "sandbox", "typ": "JWT"}) + "." + enc(claims) + ".c2lnbmF0dXJl"
}

func TestOAuthAndPasskeyOverHTTP(t *testing.T) {
	e := newEnv(t)
	_, wallet := e.customer("Alan Turing")
	session := e.login(wallet)
	claims := func(extra map[string]any) map[string]any {
		c := map[string]any{"iss": "https://accounts.google.com", "aud": sandbox.DefaultOIDCAudience, "sub": "1234567890",
			"email": "alan@example.com", "iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix()}
		for k, v := range extra {
			c[k] = v
		}
		return c
	}
	var m walletauth.AuthMethod
	e.signed(session, "POST", "/auth/credentials", map[string]any{"type": "OAUTH", "accountId": wallet,
		"oidcToken": dummyToken(claims(nil))}).ok(t, 201, &m)
	if m.Type != "OAUTH" || m.Nickname != "alan@example.com" {
		t.Fatalf("OAUTH credential %+v", m)
	}
	client, _ := authclient.NewClientKey()
	var sess walletauth.AuthSession
	e.do("POST", "/auth/credentials/"+m.ID+"/verify", map[string]any{"type": "OAUTH", "clientPublicKey": client.PublicKeyHex(),
		"oidcToken": dummyToken(claims(map[string]any{"nonce": oidc.NonceFor(client.PublicKeyHex())}))}).ok(t, 200, &sess)
	if _, err := client.OpenSessionKey(sess.EncryptedSessionSigningKey); err != nil {
		t.Fatalf("session key: %v", err)
	}
	e.do("POST", "/auth/credentials/"+m.ID+"/verify", map[string]any{"type": "OAUTH", "clientPublicKey": client.PublicKeyHex(),
		"oidcToken": "sandbox-valid-oidc-token"}).fails(t, 400, apierror.InvalidInput)
	stale := claims(map[string]any{"nonce": oidc.NonceFor(client.PublicKeyHex()), "iat": time.Now().Add(-2 * time.Minute).Unix()})
	r := e.do("POST", "/auth/credentials/"+m.ID+"/verify", map[string]any{"type": "OAUTH", "clientPublicKey": client.PublicKeyHex(),
		"oidcToken": dummyToken(stale)})
	if ae := r.fails(t, 401, apierror.Unauthorized); ae.Reason() == "" {
		t.Fatal("no reason for a stale token")
	}

	// The association files are served at the root, without credentials.
	res, err := http.Get(e.srv.URL + "/.well-known/webauthn")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(body), `"http://localhost"`) {
		t.Fatalf("/.well-known/webauthn: %d %s", res.StatusCode, body)
	}
	if e.sim.Passkeys() == nil || e.sim.Ownership() == nil {
		t.Fatal("services not exposed")
	}
	e.sim.Close()
}

func TestPasskeyOverHTTP(t *testing.T) {
	e := newEnv(t)
	_, wallet := e.customer("Katherine Johnson")
	session := e.login(wallet)
	a := newAuthenticator(t)

	var rc struct{ Challenge, RpID string }
	e.do("POST", "/sandbox/passkeys/registration-challenge", map[string]string{"accountId": wallet}).ok(t, 201, &rc)
	if rc.RpID != sandbox.DefaultRPID || rc.Challenge == "" {
		t.Fatalf("registration challenge %+v", rc)
	}
	e.do("POST", "/sandbox/passkeys/registration-challenge", map[string]string{"accountId": "nope"}).fails(t, 400, apierror.InvalidInput)
	var m walletauth.AuthMethod
	e.signed(session, "POST", "/auth/credentials", map[string]any{"type": "PASSKEY", "accountId": wallet, "nickname": "Laptop",
		"challenge": rc.Challenge, "attestation": a.attest(t, rc.Challenge, wallet)}).ok(t, 201, &m)

	login := func(sig string) (resp, *authclient.ClientKey) {
		client, _ := authclient.NewClientKey()
		var ch walletauth.ChallengeResponse
		e.do("POST", "/auth/credentials/"+m.ID+"/challenge", map[string]string{"clientPublicKey": client.PublicKeyHex()}).ok(t, 200, &ch)
		as := a.assert(t, ch.Challenge)
		if sig != "" {
			as.Signature = sig
		}
		return e.do("POST", "/auth/credentials/"+m.ID+"/verify", map[string]any{"type": "PASSKEY", "assertion": as},
			"Request-Id", ch.RequestID), client
	}
	r, client := login("")
	var sess walletauth.AuthSession
	r.ok(t, 200, &sess)
	if _, err := client.OpenSessionKey(sess.EncryptedSessionSigningKey); err != nil {
		t.Fatal(err)
	}
	// The legacy literal skips WebAuthn in the sandbox.
	r, _ = login("sandbox-valid-passkey-signature")
	r.ok(t, 200, nil)
	r, _ = login(base64.RawURLEncoding.EncodeToString([]byte("forged")))
	r.fails(t, 401, apierror.Unauthorized)
}

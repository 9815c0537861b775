package sandbox_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/descope/virtualwebauthn"

	"github.com/walletgate/walletgate/sandbox"
	"github.com/walletgate/walletgate/walletauth/passkey"
)

// authenticator is a software passkey for the sandbox's default relying
// party (localhost).
type authenticator struct {
	rp   virtualwebauthn.RelyingParty
	auth virtualwebauthn.Authenticator
	cred virtualwebauthn.Credential
}

func newAuthenticator(t testing.TB) *authenticator {
	t.Helper()
	for {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		// virtualwebauthn drops leading zero bytes of coordinates.
		if len(k.X.Bytes()) != 32 || len(k.Y.Bytes()) != 32 {
			continue
		}
		der, _ := x509.MarshalPKCS8PrivateKey(k)
		return &authenticator{rp: virtualwebauthn.RelyingParty{ID: sandbox.DefaultRPID, Name: "sandbox", Origin: "http://localhost"},
			auth: virtualwebauthn.NewAuthenticator(), cred: virtualwebauthn.NewCredentialWithImportedKey(virtualwebauthn.KeyTypeEC2, der)}
	}
}

func (a *authenticator) attest(t testing.TB, challenge, accountID string) passkey.Attestation {
	raw, _ := base64.RawURLEncoding.DecodeString(challenge)
	resp := virtualwebauthn.CreateAttestationResponse(a.rp, a.auth, a.cred, virtualwebauthn.AttestationOptions{
		Challenge: raw, RelyingPartyID: a.rp.ID, RelyingPartyName: a.rp.Name, UserID: accountID, UserName: "user"})
	var r struct {
		RawID    string `json:"rawId"`
		Response struct{ ClientDataJSON, AttestationObject string }
	}
	if err := json.Unmarshal([]byte(resp), &r); err != nil {
		t.Fatal(err)
	}
	return passkey.Attestation{CredentialID: r.RawID, ClientDataJSON: r.Response.ClientDataJSON, AttestationObject: r.Response.AttestationObject}
}

func (a *authenticator) assert(t testing.TB, challengeHex string) passkey.Assertion {
	resp := virtualwebauthn.CreateAssertionResponse(a.rp, a.auth, a.cred, virtualwebauthn.AssertionOptions{
		Challenge: []byte(challengeHex), RelyingPartyID: a.rp.ID, AllowCredentials: []string{base64.RawURLEncoding.EncodeToString(a.cred.ID)}})
	var r struct {
		RawID    string `json:"rawId"`
		Response struct{ ClientDataJSON, AuthenticatorData, Signature, UserHandle string }
	}
	if err := json.Unmarshal([]byte(resp), &r); err != nil {
		t.Fatal(err)
	}
	return passkey.Assertion{CredentialID: r.RawID, ClientDataJSON: r.Response.ClientDataJSON,
		AuthenticatorData: r.Response.AuthenticatorData, Signature: r.Response.Signature, UserHandle: r.Response.UserHandle}
}

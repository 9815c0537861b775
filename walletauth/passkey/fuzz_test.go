package passkey_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"testing"

	"github.com/descope/virtualwebauthn"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/walletauth/passkey"
)

// fixture is a deterministic ES256 credential registered with a verifier
// whose randomness is fixed, so fuzz inputs found in one run mean the same in
// the next.
type fixture struct {
	v      *passkey.Verifier
	key    *ecdsa.PrivateKey
	auth   virtualwebauthn.Authenticator
	cred   virtualwebauthn.Credential
	stored *storage.WebAuthnCredential
	// challenge is the registration challenge every fresh store issues first.
	challenge string
	att       passkey.Attestation
	// assertion is a valid assertion for assertionChallenge.
	assertionChallenge string
	assertion          passkey.Assertion
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	f := &fixture{}
	f.v = newVerifier(t, nil, func(c *passkey.Config) { c.Rand = fixedRand{} })
	d := bytes.Repeat([]byte{0x42}, 32)
	for ; ; d[31]++ {
		k, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), d)
		if err != nil {
			t.Fatal(err)
		}
		if len(k.X.Bytes()) == 32 && len(k.Y.Bytes()) == 32 {
			f.key = k
			break
		}
	}
	der, err := x509.MarshalPKCS8PrivateKey(f.key)
	if err != nil {
		t.Fatal(err)
	}
	f.cred = virtualwebauthn.NewCredentialWithImportedKey(virtualwebauthn.KeyTypeEC2, der)
	f.cred.ID = bytes.Repeat([]byte{0xc1}, 32)
	f.auth = virtualwebauthn.Authenticator{Options: virtualwebauthn.AuthenticatorOptions{BackupEligible: true}}
	s := newStore()
	f.challenge = issue(t, f.v, s, account1, t0).Challenge
	f.att = virtualAttestation(t, virtualRP, f.auth, f.cred, f.challenge, account1)
	reg, err := register(f.v, s, passkey.RegistrationRequest{AccountID: account1, Nickname: "Key", Challenge: f.challenge, Attestation: f.att}, t0)
	if err != nil {
		t.Fatal(err)
	}
	f.stored = reg.Credential
	f.assertionChallenge = challengeFor(f.v, "Request:1")
	f.cred.Counter = 1
	f.assertion = virtualAssertion(t, virtualRP, f.auth, f.cred, f.assertionChallenge)
	return f
}

type fixedRand struct{}

func (fixedRand) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 0x5a
	}
	return len(p), nil
}

// typed fails unless err is nil or an *apierror.Error with one of codes.
func typed(t *testing.T, err error, codes ...apierror.Code) {
	t.Helper()
	if err == nil {
		return
	}
	var e *apierror.Error
	if !errors.As(err, &e) {
		t.Fatalf("untyped error %v", err)
	}
	for _, c := range codes {
		if e.Code == c {
			return
		}
	}
	t.Fatalf("unexpected code: %v", err)
}

func FuzzVerifyRegistration(f *testing.F) {
	fx := newFixture(f)
	ed := newEdAuthenticator(f)
	none := ed.attest(fx.challenge)
	f.Add(fx.challenge, "Key", fx.att.CredentialID, fx.att.ClientDataJSON, fx.att.AttestationObject)
	f.Add(fx.challenge, "Ed", none.CredentialID, none.ClientDataJSON, none.AttestationObject)
	f.Add(fx.challenge, "", "", "", "")
	f.Add("AAAA", "Key\x00", "=", "e30", "oA")
	f.Add(fx.challenge, "k", fx.att.CredentialID, base64.RawURLEncoding.EncodeToString([]byte(`{"type":"webauthn.create","challenge":"`+fx.challenge+`","origin":"`+testOrigin+`","tokenBinding":{"status":"x"}}`)), fx.att.AttestationObject)
	f.Fuzz(func(t *testing.T, challenge, nickname, credentialID, clientData, object string) {
		s := newStore()
		issue(t, fx.v, s, account1, t0)
		reg, err := register(fx.v, s, passkey.RegistrationRequest{AccountID: account1, Nickname: nickname, Challenge: challenge,
			Attestation: passkey.Attestation{CredentialID: credentialID, ClientDataJSON: clientData, AttestationObject: object}}, t0)
		typed(t, err, apierror.InvalidInput, apierror.Unauthorized)
		if err == nil && (reg.Credential == nil || len(reg.Credential.CredentialID) == 0 || len(reg.Credential.PublicKey) == 0) {
			t.Fatalf("accepted registration without a credential: %+v", reg)
		}
	})
}

func FuzzVerifyAssertion(f *testing.F) {
	fx := newFixture(f)
	a := fx.assertion
	f.Add(a.CredentialID, a.ClientDataJSON, a.AuthenticatorData, a.Signature, a.UserHandle)
	f.Add(a.CredentialID, a.ClientDataJSON, a.AuthenticatorData, passkey.SandboxSignature, "")
	f.Add("", "", "", "", "")
	f.Add(a.CredentialID, "bnVsbA", "AA", "AA", "AA")
	f.Add(a.CredentialID, a.ClientDataJSON, a.AuthenticatorData+"QQ", a.Signature, "====")
	f.Fuzz(func(t *testing.T, credentialID, clientData, authData, sig, userHandle string) {
		in := passkey.Assertion{CredentialID: credentialID, ClientDataJSON: clientData, AuthenticatorData: authData, Signature: sig, UserHandle: userHandle}
		got, err := fx.v.VerifyAssertion(fx.stored, fx.assertionChallenge, in)
		typed(t, err, apierror.InvalidInput, apierror.Unauthorized)
		if err == nil && (got.SignCount < fx.stored.SignCount || !bytes.Equal(got.CredentialID, fx.stored.CredentialID)) {
			t.Fatalf("accepted assertion with a lower counter or for another id: %+v", got)
		}
	})
}

// The fixture's registration and assertion verify, so the seeds above reach
// the deepest paths.
func TestFixtureVerifies(t *testing.T) {
	fx := newFixture(t)
	if _, err := fx.v.VerifyAssertion(fx.stored, fx.assertionChallenge, fx.assertion); err != nil {
		t.Fatal(err)
	}
}

package passkey_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/descope/virtualwebauthn"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/walletauth/passkey"
)

const clientKey = "0394e549a4b4f2fa8e4b3c4d2f0e1a6b7c8d9e0f1a2b3c4d5e6f708192a3b4c5d6"

// enrolled registers a virtualwebauthn credential and returns what an
// authentication needs.
type enrolled struct {
	v      *passkey.Verifier
	s      storage.Store
	auth   virtualwebauthn.Authenticator
	cred   virtualwebauthn.Credential
	stored *storage.WebAuthnCredential
}

func enroll(t *testing.T, v *passkey.Verifier, kt virtualwebauthn.KeyType, opts virtualwebauthn.AuthenticatorOptions) *enrolled {
	t.Helper()
	e := &enrolled{v: v, s: newStore(), auth: virtualwebauthn.NewAuthenticatorWithOptions(opts), cred: newCredential(t, kt)}
	rc := issue(t, v, e.s, account1, t0)
	reg, err := register(v, e.s, passkey.RegistrationRequest{AccountID: account1, Nickname: "Key", Challenge: rc.Challenge,
		Attestation: virtualAttestation(t, virtualRP, e.auth, e.cred, rc.Challenge, account1)}, t0)
	if err != nil {
		t.Fatalf("registration: %v", err)
	}
	store(t, e.s, reg)
	e.stored = reg.Credential
	return e
}

func challengeFor(v *passkey.Verifier, requestID string) string {
	return v.AssertionChallenge(clientKey, "AuthMethod:7d0c0a53-8c3e-4a8e-9a51-5a7a2f7f0c11", requestID)
}

func TestAssertionSucceeds(t *testing.T) {
	for _, kt := range []virtualwebauthn.KeyType{virtualwebauthn.KeyTypeEC2, virtualwebauthn.KeyTypeRSA} {
		t.Run(string(kt), func(t *testing.T) {
			e := enroll(t, newVerifier(t, nil), kt, virtualwebauthn.AuthenticatorOptions{BackupEligible: true, UserHandle: []byte(account1)})
			stored := e.stored
			for i, counter := range []uint32{1, 2, 10} {
				e.cred.Counter = counter
				ch := challengeFor(e.v, "Request:0000000"+string(rune('0'+i))+"-0000-4000-8000-000000000000")
				got, err := e.v.VerifyAssertion(stored, ch, virtualAssertion(t, virtualRP, e.auth, e.cred, ch))
				if err != nil {
					t.Fatalf("assertion %d: %v", i, err)
				}
				if got.SignCount != counter || got.CloneWarning || !got.UserPresent || !got.UserVerified || !got.BackupEligible || got.BackupState {
					t.Fatalf("updated credential %+v", got)
				}
				if got == stored || stored.SignCount == counter {
					t.Fatal("VerifyAssertion modified the stored record")
				}
				stored = got
			}
		})
	}
	t.Run("EdDSA", func(t *testing.T) {
		v, s := newVerifier(t, nil), newStore()
		a := newEdAuthenticator(t)
		rc := issue(t, v, s, account1, t0)
		reg, err := register(v, s, passkey.RegistrationRequest{AccountID: account1, Nickname: "Ed", Challenge: rc.Challenge, Attestation: a.attest(rc.Challenge)}, t0)
		if err != nil {
			t.Fatal(err)
		}
		a.counter = 3
		ch := challengeFor(v, "Request:1")
		got, err := v.VerifyAssertion(reg.Credential, ch, a.assert(ch))
		if err != nil || got.SignCount != 3 {
			t.Fatalf("EdDSA assertion: %v %+v", err, got)
		}
	})
	t.Run("synced passkey that never counts", func(t *testing.T) {
		e := enroll(t, newVerifier(t, nil), virtualwebauthn.KeyTypeEC2, virtualwebauthn.AuthenticatorOptions{})
		ch := challengeFor(e.v, "Request:1")
		stored := e.stored
		for range 3 {
			got, err := e.v.VerifyAssertion(stored, ch, virtualAssertion(t, virtualRP, e.auth, e.cred, ch))
			if err != nil || got.SignCount != 0 || got.CloneWarning {
				t.Fatalf("zero counter: %v %+v", err, got)
			}
			stored = got
		}
	})
}

func TestAssertionChecks(t *testing.T) {
	v := newVerifier(t, nil)
	ch := challengeFor(v, "Request:1")
	cases := []struct {
		name   string
		v      *passkey.Verifier
		rp     virtualwebauthn.RelyingParty
		opts   virtualwebauthn.AuthenticatorOptions
		signed string // the challenge the authenticator signs
		reason string
	}{
		{"wrong origin", v, virtualwebauthn.RelyingParty{ID: testRPID, Origin: "https://evil.example"}, virtualwebauthn.AuthenticatorOptions{}, ch, passkey.ReasonOriginNotAllowed},
		{"http origin", v, virtualwebauthn.RelyingParty{ID: testRPID, Origin: "http://wallet.example.com"}, virtualwebauthn.AuthenticatorOptions{}, ch, passkey.ReasonOriginNotAllowed},
		{"wrong RP id", v, virtualwebauthn.RelyingParty{ID: "example.com", Origin: testOrigin}, virtualwebauthn.AuthenticatorOptions{}, ch, passkey.ReasonRPIDMismatch},
		{"no user presence", v, virtualRP, virtualwebauthn.AuthenticatorOptions{UserNotPresent: true}, ch, passkey.ReasonUserNotPresent},
		{"UV required but absent", newVerifier(t, func(rp *passkey.RelyingParty) { rp.RequireUserVerification = true }), virtualRP, virtualwebauthn.AuthenticatorOptions{UserNotVerified: true}, ch, passkey.ReasonUserNotVerified},
		{"challenge mismatch", v, virtualRP, virtualwebauthn.AuthenticatorOptions{}, challengeFor(v, "Request:2"), passkey.ReasonChallengeMismatch},
		{"challenge for another key", v, virtualRP, virtualwebauthn.AuthenticatorOptions{}, v.AssertionChallenge("02"+clientKey[2:], "AuthMethod:7d0c0a53-8c3e-4a8e-9a51-5a7a2f7f0c11", "Request:1"), passkey.ReasonChallengeMismatch},
		{"backup eligibility appeared", v, virtualRP, virtualwebauthn.AuthenticatorOptions{BackupEligible: true}, ch, passkey.ReasonBackupEligibilityChanged},
		{"backup state without eligibility", v, virtualRP, virtualwebauthn.AuthenticatorOptions{BackupState: true}, ch, passkey.ReasonBackupFlags},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := enroll(t, tc.v, virtualwebauthn.KeyTypeEC2, virtualwebauthn.AuthenticatorOptions{})
			e.cred.Counter = 1
			_, err := tc.v.VerifyAssertion(e.stored, ch, virtualAssertion(t, tc.rp, virtualwebauthn.NewAuthenticatorWithOptions(tc.opts), e.cred, tc.signed))
			apierrortest.Want(t, err, apierror.Unauthorized, tc.reason)
		})
	}

	ed := func(t *testing.T, change func(*edAuthenticator), reason string) {
		s := newStore()
		a := newEdAuthenticator(t)
		rc := issue(t, v, s, account1, t0)
		reg, err := register(v, s, passkey.RegistrationRequest{AccountID: account1, Nickname: "Ed", Challenge: rc.Challenge, Attestation: a.attest(rc.Challenge)}, t0)
		if err != nil {
			t.Fatal(err)
		}
		change(a)
		_, err = v.VerifyAssertion(reg.Credential, ch, a.assert(ch))
		apierrortest.Want(t, err, apierror.Unauthorized, reason)
	}
	t.Run("type webauthn.create", func(t *testing.T) {
		ed(t, func(a *edAuthenticator) { a.typ = "webauthn.create" }, passkey.ReasonClientDataType)
	})
	t.Run("cross origin", func(t *testing.T) {
		ed(t, func(a *edAuthenticator) { a.crossOrigin = true }, passkey.ReasonCrossOrigin)
	})
	t.Run("signature by another key", func(t *testing.T) {
		ed(t, func(a *edAuthenticator) { a.key = newEdAuthenticator(t).key }, passkey.ReasonSignatureInvalid)
	})
}

func TestAssertionCounter(t *testing.T) {
	e := enroll(t, newVerifier(t, nil), virtualwebauthn.KeyTypeEC2, virtualwebauthn.AuthenticatorOptions{})
	ch := challengeFor(e.v, "Request:1")
	e.cred.Counter = 5
	first := virtualAssertion(t, virtualRP, e.auth, e.cred, ch)
	stored, err := e.v.VerifyAssertion(e.stored, ch, first)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("replayed assertion", func(t *testing.T) {
		_, err := e.v.VerifyAssertion(stored, ch, first)
		apierrortest.Want(t, err, apierror.Unauthorized, passkey.ReasonCounterNotIncreased)
		if d := apierror.As(err).Details; d["storedCounter"] != uint32(5) || d["receivedCounter"] != uint32(5) {
			t.Errorf("details %v", d)
		}
	})
	e.cred.Counter = 3
	older := virtualAssertion(t, virtualRP, e.auth, e.cred, ch)
	t.Run("counter regression", func(t *testing.T) {
		_, err := e.v.VerifyAssertion(stored, ch, older)
		apierrortest.Want(t, err, apierror.Unauthorized, passkey.ReasonCounterNotIncreased)
	})
	e.cred.Counter = 0
	reset := virtualAssertion(t, virtualRP, e.auth, e.cred, ch)
	t.Run("counter back to zero", func(t *testing.T) {
		_, err := e.v.VerifyAssertion(stored, ch, reset)
		apierrortest.Want(t, err, apierror.Unauthorized, passkey.ReasonCounterNotIncreased)
	})
	t.Run("regression allowed", func(t *testing.T) {
		lenient := newVerifier(t, func(rp *passkey.RelyingParty) { rp.AllowCounterRegression = true })
		got, err := lenient.VerifyAssertion(stored, ch, older)
		if err != nil || !got.CloneWarning || got.SignCount != 5 {
			t.Fatalf("lenient regression: %v %+v", err, got)
		}
		e.cred.Counter = 6
		got, err = lenient.VerifyAssertion(got, ch, virtualAssertion(t, virtualRP, e.auth, e.cred, ch))
		if err != nil || !got.CloneWarning || got.SignCount != 6 {
			t.Fatalf("clone warning is sticky and the counter advances: %v %+v", err, got)
		}
	})
}

func TestAssertionCredentialBinding(t *testing.T) {
	a := enroll(t, newVerifier(t, nil), virtualwebauthn.KeyTypeEC2, virtualwebauthn.AuthenticatorOptions{})
	b := enroll(t, a.v, virtualwebauthn.KeyTypeEC2, virtualwebauthn.AuthenticatorOptions{})
	ch := challengeFor(a.v, "Request:1")
	b.cred.Counter = 1
	fromB := virtualAssertion(t, virtualRP, b.auth, b.cred, ch)

	t.Run("another credential's assertion", func(t *testing.T) {
		_, err := a.v.VerifyAssertion(a.stored, ch, fromB)
		apierrortest.Want(t, err, apierror.Unauthorized, passkey.ReasonCredentialIDMismatch)
	})
	t.Run("another credential's signature under this id", func(t *testing.T) {
		forged := fromB
		forged.CredentialID = base64.RawURLEncoding.EncodeToString(a.cred.ID)
		_, err := a.v.VerifyAssertion(a.stored, ch, forged)
		apierrortest.Want(t, err, apierror.Unauthorized, passkey.ReasonSignatureInvalid)
	})
	t.Run("unknown credential", func(t *testing.T) {
		stranger := newCredential(t, virtualwebauthn.KeyTypeEC2)
		asr := virtualAssertion(t, virtualRP, a.auth, stranger, ch)
		err := a.s.Atomic(context.Background(), func(tx storage.Tx) error {
			_, err := tx.Credentials().FindByWebAuthnID(context.Background(), "", mustB64(t, asr.CredentialID))
			return err
		})
		if !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("lookup of an unregistered id: %v", err)
		}
		_, err = a.v.VerifyAssertion(nil, ch, asr)
		apierrortest.Want(t, err, apierror.Unauthorized, passkey.ReasonUnknownCredential)
		_, err = a.v.VerifyAssertion(a.stored, ch, asr)
		apierrortest.Want(t, err, apierror.Unauthorized, passkey.ReasonCredentialIDMismatch)
	})
	t.Run("tampered signature", func(t *testing.T) {
		a.cred.Counter = 1
		asr := virtualAssertion(t, virtualRP, a.auth, a.cred, ch)
		sig := mustB64(t, asr.Signature)
		sig[len(sig)-1] ^= 1
		asr.Signature = base64.RawURLEncoding.EncodeToString(sig)
		_, err := a.v.VerifyAssertion(a.stored, ch, asr)
		apierrortest.Want(t, err, apierror.Unauthorized, passkey.ReasonSignatureInvalid)
	})
	t.Run("tampered authenticator data", func(t *testing.T) {
		a.cred.Counter = 1
		asr := virtualAssertion(t, virtualRP, a.auth, a.cred, ch)
		ad := mustB64(t, asr.AuthenticatorData)
		ad[36] = 99 // counter
		asr.AuthenticatorData = base64.RawURLEncoding.EncodeToString(ad)
		_, err := a.v.VerifyAssertion(a.stored, ch, asr)
		apierrortest.Want(t, err, apierror.Unauthorized, passkey.ReasonSignatureInvalid)
	})
}

func TestAssertionMalformedInput(t *testing.T) {
	e := enroll(t, newVerifier(t, nil), virtualwebauthn.KeyTypeEC2, virtualwebauthn.AuthenticatorOptions{})
	ch := challengeFor(e.v, "Request:1")
	e.cred.Counter = 1
	good := virtualAssertion(t, virtualRP, e.auth, e.cred, ch)

	_, err := e.v.VerifyAssertion(e.stored, ch, passkey.Assertion{ClientDataJSON: "a/b", AuthenticatorData: "\r\n", Signature: "x", UserHandle: "===="})
	wantFields(t, err, "assertion.credentialId", "assertion.clientDataJson", "assertion.authenticatorData", "assertion.signature", "assertion.userHandle")

	bad := good
	bad.ClientDataJSON = base64.RawURLEncoding.EncodeToString([]byte("null"))
	_, err = e.v.VerifyAssertion(e.stored, ch, bad)
	wantFields(t, err, "assertion.clientDataJson")

	bad = good
	bad.AuthenticatorData = base64.RawURLEncoding.EncodeToString([]byte("short"))
	_, err = e.v.VerifyAssertion(e.stored, ch, bad)
	wantFields(t, err, "assertion.authenticatorData")

	bad = good
	bad.UserHandle = base64.RawURLEncoding.EncodeToString(bytes.Repeat([]byte{1}, 65))
	_, err = e.v.VerifyAssertion(e.stored, ch, bad)
	wantFields(t, err, "assertion.userHandle")

	for _, expected := range []string{"", "ABCDEF", ch[:63] + "G", base64.RawURLEncoding.EncodeToString([]byte(ch))} {
		_, err = e.v.VerifyAssertion(e.stored, expected, good)
		apierrortest.Want(t, err, apierror.InternalError, "")
	}

	// Padded base64url is accepted.
	padded := good
	padded.Signature = base64.URLEncoding.EncodeToString(mustB64(t, good.Signature))
	if _, err := e.v.VerifyAssertion(e.stored, ch, padded); err != nil {
		t.Fatalf("padded signature: %v", err)
	}
}

func TestSandboxSignature(t *testing.T) {
	e := enroll(t, newVerifier(t, nil), virtualwebauthn.KeyTypeEC2, virtualwebauthn.AuthenticatorOptions{})
	ch := challengeFor(e.v, "Request:1")
	magic := passkey.Assertion{CredentialID: base64.RawURLEncoding.EncodeToString(e.cred.ID), Signature: passkey.SandboxSignature}

	// Outside sandbox mode the literal is just a signature, and not even
	// canonical base64url.
	_, err := e.v.VerifyAssertion(e.stored, ch, magic)
	wantFields(t, err, "assertion.clientDataJson", "assertion.authenticatorData", "assertion.signature")

	e.cred.Counter = 1
	real := virtualAssertion(t, virtualRP, e.auth, e.cred, ch)
	real.Signature = passkey.SandboxSignature
	_, err = e.v.VerifyAssertion(e.stored, ch, real)
	wantFields(t, err, "assertion.signature")

	sandbox := newVerifier(t, nil, func(c *passkey.Config) { c.Sandbox = true })
	got, err := sandbox.VerifyAssertion(e.stored, ch, magic)
	if err != nil || got.SignCount != e.stored.SignCount || !bytes.Equal(got.CredentialID, e.stored.CredentialID) {
		t.Fatalf("sandbox literal: %v %+v", err, got)
	}
	other := magic
	other.CredentialID = base64.RawURLEncoding.EncodeToString([]byte("someone else"))
	_, err = sandbox.VerifyAssertion(e.stored, ch, other)
	apierrortest.Want(t, err, apierror.Unauthorized, passkey.ReasonCredentialIDMismatch)
	_, err = sandbox.VerifyAssertion(nil, ch, magic)
	apierrortest.Want(t, err, apierror.Unauthorized, passkey.ReasonUnknownCredential)

	// Any other signature still gets the full verification in sandbox mode.
	forged := real
	forged.Signature = base64.RawURLEncoding.EncodeToString([]byte("sandbox-valid-passkey-signature!"))
	_, err = sandbox.VerifyAssertion(e.stored, ch, forged)
	apierrortest.Want(t, err, apierror.Unauthorized, passkey.ReasonSignatureInvalid)
}

func TestAssertionChallenge(t *testing.T) {
	v := newVerifier(t, nil)
	payload := v.AssertionPayload(clientKey, "AuthMethod:7d0c0a53-8c3e-4a8e-9a51-5a7a2f7f0c11", "Request:9b2f1f4e-2a7c-4c55-b1a6-0f5f6c1b3e21")
	want := `{"type":"PASSKEY_SESSION","rpId":"wallet.example.com","requestId":"Request:9b2f1f4e-2a7c-4c55-b1a6-0f5f6c1b3e21",` +
		`"credentialId":"AuthMethod:7d0c0a53-8c3e-4a8e-9a51-5a7a2f7f0c11","clientPublicKey":"` + clientKey + `"}`
	if string(payload) != want {
		t.Fatalf("payload\n got %s\nwant %s", payload, want)
	}
	ch := v.AssertionChallenge(clientKey, "AuthMethod:7d0c0a53-8c3e-4a8e-9a51-5a7a2f7f0c11", "Request:9b2f1f4e-2a7c-4c55-b1a6-0f5f6c1b3e21")
	if sum := sha256.Sum256([]byte(want)); ch != hex.EncodeToString(sum[:]) {
		t.Fatalf("challenge %q", ch)
	}
	seen := map[string]bool{ch: true}
	for _, other := range []string{
		v.AssertionChallenge("02"+clientKey[2:], "AuthMethod:7d0c0a53-8c3e-4a8e-9a51-5a7a2f7f0c11", "Request:9b2f1f4e-2a7c-4c55-b1a6-0f5f6c1b3e21"),
		v.AssertionChallenge(clientKey, "AuthMethod:other", "Request:9b2f1f4e-2a7c-4c55-b1a6-0f5f6c1b3e21"),
		v.AssertionChallenge(clientKey, "AuthMethod:7d0c0a53-8c3e-4a8e-9a51-5a7a2f7f0c11", "Request:other"),
		newVerifier(t, func(rp *passkey.RelyingParty) { rp.ID = "example.com"; rp.Origins = []string{"https://example.com"} }).
			AssertionChallenge(clientKey, "AuthMethod:7d0c0a53-8c3e-4a8e-9a51-5a7a2f7f0c11", "Request:9b2f1f4e-2a7c-4c55-b1a6-0f5f6c1b3e21"),
	} {
		if seen[other] {
			t.Fatal("two different bindings gave the same challenge")
		}
		seen[other] = true
	}
}

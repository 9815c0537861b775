package passkey_test

import (
	"crypto/ecdsa"
	"crypto/sha256"
	"testing"
)

// BenchmarkVerifyAssertion is the full assertion verification of an ES256
// passkey: decoding, client data and authenticator data checks, go-webauthn's
// COSE key parsing and signature verification, counter and flags.
func BenchmarkVerifyAssertion(b *testing.B) {
	fx := newFixture(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := fx.v.VerifyAssertion(fx.stored, fx.assertionChallenge, fx.assertion); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRawES256 is the primitive VerifyAssertion wraps: ECDSA P-256
// verification of the same signature over authenticatorData ||
// SHA-256(clientDataJSON).
func BenchmarkRawES256(b *testing.B) {
	fx := newFixture(b)
	authData := mustB64(b, fx.assertion.AuthenticatorData)
	clientData := mustB64(b, fx.assertion.ClientDataJSON)
	sig := mustB64(b, fx.assertion.Signature)
	b.ReportAllocs()
	for b.Loop() {
		cdh := sha256.Sum256(clientData)
		digest := sha256.Sum256(append(authData[:len(authData):len(authData)], cdh[:]...))
		if !ecdsa.VerifyASN1(&fx.key.PublicKey, digest[:], sig) {
			b.Fatal("signature does not verify")
		}
	}
}

package webhooksig_test

import (
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/walletgate/walletgate/apierror/webhooksig"
)

// benchBody is a ~1 KiB envelope, the size of a STATUS_UPDATED event.
var benchBody = []byte(`{"id":"` + testID + `","type":"EXTERNAL_ACCOUNT.STATUS_UPDATED","timestamp":"2026-11-23T12:00:00Z","data":{"memo":"` + strings.Repeat("x", 900) + `"}}`)

// BenchmarkSign measures Signer.Sign: SHA-256, ECDSA and the header. Compare
// BenchmarkSignASN1Raw.
func BenchmarkSign(b *testing.B) {
	s := testSigner(b)
	for b.Loop() {
		if _, err := s.Sign(benchBody); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSignASN1Raw is the primitive Sign wraps: ecdsa.SignASN1 on the
// digest of the same body.
func BenchmarkSignASN1Raw(b *testing.B) {
	key := testKey(b)
	digest := sha256.Sum256(benchBody)
	for b.Loop() {
		if _, err := ecdsa.SignASN1(rand.Reader, key, digest[:]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifyBytes measures Verifier.VerifyBytes: the strict header,
// SHA-256, ECDSA, the strict envelope and freshness. Compare
// BenchmarkVerifyASN1Raw.
func BenchmarkVerifyBytes(b *testing.B) {
	v := testVerifier(b, webhooksig.VerifierConfig{})
	h := sign(b, benchBody)
	for b.Loop() {
		if _, err := v.VerifyBytes(h, benchBody, t0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifyASN1Raw is the primitive VerifyBytes wraps: ecdsa.VerifyASN1
// of the same signature on the precomputed digest.
func BenchmarkVerifyASN1Raw(b *testing.B) {
	key := testKey(b)
	h := sign(b, benchBody)
	der, err := base64.StdEncoding.DecodeString(strings.TrimSuffix(strings.TrimPrefix(h, `{"version":1,"signature":"`), `"}`))
	if err != nil {
		b.Fatal(err)
	}
	digest := sha256.Sum256(benchBody)
	for b.Loop() {
		if !ecdsa.VerifyASN1(&key.PublicKey, digest[:], der) {
			b.Fatal("invalid")
		}
	}
}

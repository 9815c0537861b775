package signedretry_test

import (
	"crypto/ecdsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"math"
	"testing"

	"github.com/walletgate/walletgate/signedretry"
)

// BenchmarkComplete measures the server side of a signed retry on the memory
// store: header parsing, request lookup, body canonicalization, signature
// verification, signer check against the sessions and consumption. Challenges
// and stamps are made before the timer starts.
func BenchmarkComplete(b *testing.B) {
	ctx := b.Context()
	f := newFixture(b, false)
	// Every challenge is live when the timer starts.
	f.mgr = newManager(b, signedretry.Config{Store: f.store, Clock: f.clock.Now, MaxPending: math.MaxInt})
	retries := make([]signedretry.Request, b.N)
	for i := range retries {
		c := f.issue(b, signedretry.Signer{Rule: signedretry.AnySession})
		retries[i] = retry(c, stamp(b, f.keyB, c.PayloadToSign))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := f.mgr.Complete(ctx, retries[i], opType, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCompleteRawVerify is the primitive Complete wraps: SHA-256 of the
// same payload and ecdsa.VerifyASN1 of the same signature.
func BenchmarkCompleteRawVerify(b *testing.B) {
	f := newFixture(b, false)
	c := f.issue(b, signedretry.Signer{Rule: signedretry.AnySession})
	raw, _ := base64.RawURLEncoding.DecodeString(stamp(b, f.keyB, c.PayloadToSign))
	var wire struct{ Signature string }
	_ = json.Unmarshal(raw, &wire)
	sig, _ := hex.DecodeString(wire.Signature)
	payload := []byte(c.PayloadToSign)
	pub := &f.keyB.PublicKey
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		h := sha256.Sum256(payload)
		if !ecdsa.VerifyASN1(pub, h[:], sig) {
			b.Fatal("signature does not verify")
		}
	}
}

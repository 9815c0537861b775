package secret_test

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"testing"
)

// The benchmarks seal and open what walletauth stores: a 32-byte P-256
// scalar bound to an issuance and a credential id. The Raw benchmarks run
// the primitive a Keyring wraps (AES-256-GCM with a random nonce, key
// schedule done once) on the same input, so the overhead is a ratio.

var (
	benchPlain = bytes.Repeat([]byte{7}, 32)
	benchAAD   = []byte("walletgate/otp-target-key/v1\x00OTP:0f8e3a52-6b1e-4d7a-9c3f-2b8a1d5e7c90\x00AuthMethod:5c2d9e1f-8a7b-4c3d-b2e1-0f9a8b7c6d5e")
)

func BenchmarkKeyringSeal(b *testing.B) {
	r := keyring(b, fixedKey(b, "2026-01", 1))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Seal(benchPlain, benchAAD); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkKeyringOpen(b *testing.B) {
	r := keyring(b, fixedKey(b, "2026-01", 1))
	sealed, _ := r.Seal(benchPlain, benchAAD)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Open(sealed, benchAAD); err != nil {
			b.Fatal(err)
		}
	}
}

func rawAEAD(b *testing.B) cipher.AEAD {
	block, err := aes.NewCipher(bytes.Repeat([]byte{1}, 32))
	if err != nil {
		b.Fatal(err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		b.Fatal(err)
	}
	return aead
}

// BenchmarkRawAESGCMSeal draws a nonce from crypto/rand and seals, as
// Keyring.Seal does underneath.
func BenchmarkRawAESGCMSeal(b *testing.B) {
	aead := rawAEAD(b)
	b.ReportAllocs()
	for b.Loop() {
		out := make([]byte, 12, 12+len(benchPlain)+16)
		_, _ = rand.Read(out)
		_ = aead.Seal(out, out, benchPlain, benchAAD)
	}
}

func BenchmarkRawAESGCMOpen(b *testing.B) {
	aead := rawAEAD(b)
	nonce := make([]byte, 12)
	ct := aead.Seal(nil, nonce, benchPlain, benchAAD)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := aead.Open(nil, nonce, ct, benchAAD); err != nil {
			b.Fatal(err)
		}
	}
}

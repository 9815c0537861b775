package envelope

import (
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/cloudflare/circl/hpke"
	"github.com/cloudflare/circl/kem"
)

// Each benchmark of this package's API sits beside one of the raw primitive
// it wraps, on the same input, so the overhead reads as a ratio.

func rawReceiverKey(b *testing.B, label string) kem.PrivateKey {
	b.Helper()
	sk, err := hpke.KEM_P256_HKDF_SHA256.Scheme().UnmarshalBinaryPrivateKey(testECDH(b, label).Bytes())
	if err != nil {
		b.Fatal(err)
	}
	return sk
}

// benchCiphertext seals a code to the bench target key and returns the key
// with the decoded encapsulated key, ciphertext and additional data: the
// inputs of the raw opens.
func benchCiphertext(b *testing.B) (target *ecdh.PrivateKey, enc, ct, ad []byte) {
	target = testECDH(b, "bench/target")
	bundle, err := SealOTP(target.PublicKey(), "123456", compressedHex(b, testKey(b, "bench/session")), nil)
	if err != nil {
		b.Fatal(err)
	}
	var msg clientMessage
	if err := json.Unmarshal([]byte(bundle), &msg); err != nil {
		b.Fatal(err)
	}
	enc, _ = hex.DecodeString(msg.EncappedPublic)
	ct, _ = hex.DecodeString(msg.Ciphertext)
	return target, enc, ct, aad(enc, target.PublicKey().Bytes())
}

func BenchmarkOpenOTP(b *testing.B) {
	target := testECDH(b, "bench/target")
	bundle, err := SealOTP(target.PublicKey(), "123456", compressedHex(b, testKey(b, "bench/session")), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := OpenOTP(target.Bytes(), bundle); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRawHPKEOpen opens the ciphertext of BenchmarkOpenOTP with circl
// directly: receiver setup (decapsulation and key schedule) and AEAD open,
// with the key already loaded and the hex already decoded.
func BenchmarkRawHPKEOpen(b *testing.B) {
	_, enc, ct, ad := benchCiphertext(b)
	skR := rawReceiverKey(b, "bench/target")
	s := hpke.NewSuite(hpke.KEM_P256_HKDF_SHA256, hpke.KDF_HKDF_SHA256, hpke.AEAD_AES256GCM)
	info := []byte(HPKEInfo)
	b.ReportAllocs()
	for b.Loop() {
		r, err := s.NewReceiver(skR, info)
		if err != nil {
			b.Fatal(err)
		}
		o, err := r.Setup(enc)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := o.Open(ct, ad); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRawHPKEOpenFromScalar is BenchmarkRawHPKEOpen from OpenOTP's
// own input, the 32-byte target scalar: the circl key is loaded from it on
// every call (one fixed-base scalar multiplication for the public key the
// KEM context needs), as a server holding one target key per issuance must.
func BenchmarkRawHPKEOpenFromScalar(b *testing.B) {
	target, enc, ct, ad := benchCiphertext(b)
	scalar := target.Bytes()
	scheme := hpke.KEM_P256_HKDF_SHA256.Scheme()
	s := hpke.NewSuite(hpke.KEM_P256_HKDF_SHA256, hpke.KDF_HKDF_SHA256, hpke.AEAD_AES256GCM)
	info := []byte(HPKEInfo)
	b.ReportAllocs()
	for b.Loop() {
		skR, err := scheme.UnmarshalBinaryPrivateKey(scalar)
		if err != nil {
			b.Fatal(err)
		}
		r, err := s.NewReceiver(skR, info)
		if err != nil {
			b.Fatal(err)
		}
		o, err := r.Setup(enc)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := o.Open(ct, ad); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSealSessionKey(b *testing.B) {
	client := compressedHex(b, testKey(b, "bench/client"))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := SealSessionKey(client, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRawHPKESeal seals a 32-byte plaintext to the same client key
// with circl directly (ephemeral key, key schedule, AEAD seal), key loaded.
func BenchmarkRawHPKESeal(b *testing.B) {
	client := testECDH(b, "bench/client").PublicKey()
	pkR, err := hpke.KEM_P256_HKDF_SHA256.Scheme().UnmarshalBinaryPublicKey(client.Bytes())
	if err != nil {
		b.Fatal(err)
	}
	s := hpke.NewSuite(hpke.KEM_P256_HKDF_SHA256, hpke.KDF_HKDF_SHA256, hpke.AEAD_AES256GCM)
	info, pt, pkRm := []byte(HPKEInfo), make([]byte, 32), client.Bytes()
	b.ReportAllocs()
	for b.Loop() {
		snd, err := s.NewSender(pkR, info)
		if err != nil {
			b.Fatal(err)
		}
		enc, sealer, err := snd.Setup(nil)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := sealer.Seal(pt, aad(enc, pkRm)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkOpenSessionKey(b *testing.B) {
	client := testECDH(b, "bench/client")
	essk, _, err := SealSessionKey(hex.EncodeToString(client.PublicKey().Bytes()), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := OpenSessionKey(client, essk); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRawHPKEOpenSessionKey opens the payload of BenchmarkOpenSessionKey
// with circl directly, the encapsulated key already decompressed.
func BenchmarkRawHPKEOpenSessionKey(b *testing.B) {
	client := testECDH(b, "bench/client")
	essk, _, err := SealSessionKey(hex.EncodeToString(client.PublicKey().Bytes()), nil)
	if err != nil {
		b.Fatal(err)
	}
	payload, _ := base58CheckDecode(essk)
	enc, _ := decompressPoint(payload[:33])
	ct := payload[33:]
	ad := aad(enc, client.PublicKey().Bytes())
	skR := rawReceiverKey(b, "bench/client")
	s := hpke.NewSuite(hpke.KEM_P256_HKDF_SHA256, hpke.KDF_HKDF_SHA256, hpke.AEAD_AES256GCM)
	info := []byte(HPKEInfo)
	b.ReportAllocs()
	for b.Loop() {
		r, _ := s.NewReceiver(skR, info)
		o, err := r.Setup(enc)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := o.Open(ct, ad); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRawOpenSessionKeyFromInput is BenchmarkRawHPKEOpenSessionKey
// from OpenSessionKey's own input and to its output, with only the primitives
// that cannot be skipped: loading the circl key from the *ecdh.PrivateKey
// (circl has no constructor that reuses its public key), decompressing the
// 33-byte encapsulated key, the HPKE open, and turning the 32-byte plaintext
// into an *ecdsa.PrivateKey (a fixed-base scalar multiplication). It leaves
// out base58check and every format check OpenSessionKey makes.
func BenchmarkRawOpenSessionKeyFromInput(b *testing.B) {
	client := testECDH(b, "bench/client")
	essk, _, err := SealSessionKey(hex.EncodeToString(client.PublicKey().Bytes()), nil)
	if err != nil {
		b.Fatal(err)
	}
	payload, _ := base58CheckDecode(essk)
	compressed, ct := payload[:33], payload[33:]
	pkRm := client.PublicKey().Bytes()
	scheme := hpke.KEM_P256_HKDF_SHA256.Scheme()
	s := hpke.NewSuite(hpke.KEM_P256_HKDF_SHA256, hpke.KDF_HKDF_SHA256, hpke.AEAD_AES256GCM)
	info := []byte(HPKEInfo)
	b.ReportAllocs()
	for b.Loop() {
		skR, err := scheme.UnmarshalBinaryPrivateKey(client.Bytes())
		if err != nil {
			b.Fatal(err)
		}
		x, y := elliptic.UnmarshalCompressed(elliptic.P256(), compressed)
		if x == nil {
			b.Fatal("not a point")
		}
		enc := make([]byte, 65)
		enc[0] = 4
		x.FillBytes(enc[1:33])
		y.FillBytes(enc[33:])
		r, _ := s.NewReceiver(skR, info)
		o, err := r.Setup(enc)
		if err != nil {
			b.Fatal(err)
		}
		pt, err := o.Open(ct, aad(enc, pkRm))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), pt); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseTargetBundle(b *testing.B) {
	signer := testKey(b, "bench/signer")
	bundle, _, err := NewTargetBundle(signer, "org", "user", nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseTargetBundle(bundle, &signer.PublicKey); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRawECDSAVerify verifies the signature of BenchmarkParseTargetBundle
// with crypto/ecdsa directly, the data and signature already decoded.
func BenchmarkRawECDSAVerify(b *testing.B) {
	signer := testKey(b, "bench/signer")
	bundle, _, err := NewTargetBundle(signer, "org", "user", nil)
	if err != nil {
		b.Fatal(err)
	}
	var env signedEnvelope
	_ = json.Unmarshal([]byte(bundle), &env)
	data, _ := hex.DecodeString(env.Data)
	sig, _ := hex.DecodeString(env.DataSignature)
	b.ReportAllocs()
	for b.Loop() {
		digest := sha256.Sum256(data)
		if !ecdsa.VerifyASN1(&signer.PublicKey, digest[:], sig) {
			b.Fatal("does not verify")
		}
	}
}

package envelope

import (
	"bytes"
	"crypto/ecdh"
	"testing"

	"github.com/cloudflare/circl/hpke"
	"github.com/walletgate/walletgate/apierror"
)

func TestSealOpenRoundTrip(t *testing.T) {
	recipient := testECDH(t, "hpke/recipient")
	for _, pt := range [][]byte{nil, []byte("x"), bytes.Repeat([]byte{7}, 1000)} {
		enc, ct, err := Seal(recipient.PublicKey(), pt, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(enc) != uncompressedKeyLen || enc[0] != 4 {
			t.Fatalf("enc is %d bytes with prefix %x, want 65-byte uncompressed", len(enc), enc[0])
		}
		if len(ct) != len(pt)+tagLen {
			t.Fatalf("ciphertext is %d bytes, want %d", len(ct), len(pt)+tagLen)
		}
		got, err := Open(recipient, enc, ct)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, pt) {
			t.Fatalf("opened %q, want %q", got, pt)
		}
	}
}

func TestSealIsDeterministicForASeededReader(t *testing.T) {
	recipient := testECDH(t, "hpke/recipient").PublicKey()
	enc1, ct1, err := Seal(recipient, []byte("same"), seeded("hpke/det"))
	if err != nil {
		t.Fatal(err)
	}
	enc2, ct2, _ := Seal(recipient, []byte("same"), seeded("hpke/det"))
	enc3, _, _ := Seal(recipient, []byte("same"), seeded("hpke/other"))
	if !bytes.Equal(enc1, enc2) || !bytes.Equal(ct1, ct2) {
		t.Fatal("same seed gave different ciphertexts")
	}
	if bytes.Equal(enc1, enc3) {
		t.Fatal("different seeds gave the same ephemeral key")
	}
}

// TestProfileIsRFC9180WithAAD pins the profile against circl used directly:
// base mode, info "turnkey_hpke", AAD = enc || pkR; the same ciphertext
// without the AAD or with another info does not open.
func TestProfileIsRFC9180WithAAD(t *testing.T) {
	recipient := testECDH(t, "hpke/recipient")
	enc, ct, err := Seal(recipient.PublicKey(), []byte("profile"), seeded("hpke/profile"))
	if err != nil {
		t.Fatal(err)
	}
	s := hpke.NewSuite(hpke.KEM_P256_HKDF_SHA256, hpke.KDF_HKDF_SHA256, hpke.AEAD_AES256GCM)
	skR, err := hpke.KEM_P256_HKDF_SHA256.Scheme().UnmarshalBinaryPrivateKey(recipient.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	openWith := func(info string, aad []byte) error {
		r, err := s.NewReceiver(skR, []byte(info))
		if err != nil {
			return err
		}
		o, err := r.Setup(enc)
		if err != nil {
			return err
		}
		_, err = o.Open(ct, aad)
		return err
	}
	full := append(append([]byte{}, enc...), recipient.PublicKey().Bytes()...)
	if err := openWith("turnkey_hpke", full); err != nil {
		t.Fatalf("raw circl with the profile: %v", err)
	}
	if openWith("turnkey_hpke", nil) == nil {
		t.Fatal("opened without the AAD")
	}
	if openWith("other", full) == nil {
		t.Fatal("opened with another info")
	}
}

func TestOpenErrors(t *testing.T) {
	recipient := testECDH(t, "hpke/recipient")
	enc, ct, err := Seal(recipient.PublicKey(), []byte("payload"), nil)
	if err != nil {
		t.Fatal(err)
	}
	other := testECDH(t, "hpke/other")
	notOnCurve := append([]byte{}, enc...)
	notOnCurve[64] ^= 1
	tampered := append([]byte{}, ct...)
	tampered[0] ^= 1
	cases := []struct {
		name   string
		key    *ecdh.PrivateKey
		enc    []byte
		ct     []byte
		code   apierror.Code
		field  string
		reason string
	}{
		{"nil key", nil, enc, ct, apierror.InternalError, "", ""},
		{"X25519 key", mustX25519(t), enc, ct, apierror.InternalError, "", ""},
		{"enc compressed", recipient, compressPoint(enc), ct, apierror.InvalidInput, "encappedPublic", "encappedPublic must be a 65-byte uncompressed P-256 point"},
		{"enc not on curve", recipient, notOnCurve, ct, apierror.InvalidInput, "encappedPublic", "encappedPublic is not a point on P-256"},
		{"ciphertext short", recipient, enc, ct[:15], apierror.InvalidInput, "ciphertext", "ciphertext is shorter than the 16-byte AES-GCM tag"},
		{"other key", other, enc, ct, apierror.Unauthorized, "", "ciphertext does not decrypt under the recipient key"},
		{"tampered", recipient, enc, tampered, apierror.Unauthorized, "", "ciphertext does not decrypt under the recipient key"},
		{"tag only", recipient, enc, ct[len(ct)-tagLen:], apierror.Unauthorized, "", "ciphertext does not decrypt under the recipient key"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Open(c.key, c.enc, c.ct)
			wantErr(t, err, c.code, c.field, c.reason)
		})
	}
}

func TestSealErrors(t *testing.T) {
	_, _, err := Seal(nil, []byte("x"), nil)
	wantErr(t, err, apierror.InternalError, "", "")
	_, _, err = Seal(mustX25519(t).PublicKey(), []byte("x"), nil)
	wantErr(t, err, apierror.InternalError, "", "")
	_, _, err = Seal(testECDH(t, "hpke/recipient").PublicKey(), []byte("x"), failingReader{})
	wantErr(t, err, apierror.InternalError, "", "")
}

func mustX25519(t testing.TB) *ecdh.PrivateKey {
	t.Helper()
	k, err := ecdh.X25519().NewPrivateKey(bytes.Repeat([]byte{9}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

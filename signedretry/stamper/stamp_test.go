package stamper_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/signedretry/stamper"
)

// TestNewStampLayout: the header is unpadded base64url of the compact JSON
// object @turnkey/api-key-stamper writes, with the compressed key, the
// scheme and a lowercase DER signature over SHA-256 of the payload.
func TestNewStampLayout(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	payload := []byte(`{"type":"REVOKE_SESSION","memo":"naïve ☕"}`)
	header, err := stamper.NewStamp(key, payload)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(header)
	if err != nil || strings.ContainsAny(header, "=+/") {
		t.Fatalf("header %q is not unpadded base64url: %v", header, err)
	}
	var w struct{ PublicKey, Scheme, Signature string }
	if err := json.Unmarshal(raw, &w); err != nil {
		t.Fatal(err)
	}
	pub, err := stamper.CompressedHex(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"publicKey":"` + pub + `","scheme":"` + stamper.SchemeP256 + `","signature":"` + w.Signature + `"}`
	if string(raw) != want {
		t.Fatalf("stamp JSON %s, want %s", raw, want)
	}
	if w.Signature != strings.ToLower(w.Signature) {
		t.Fatal("signature hex is not lowercase")
	}
	der, _ := hex.DecodeString(w.Signature)
	digest := sha256.Sum256(payload)
	if !ecdsa.VerifyASN1(&key.PublicKey, digest[:], der) {
		t.Fatal("signature does not verify over SHA-256 of the payload")
	}
}

func TestNewStampRejectsKeysNotP256(t *testing.T) {
	_, err := stamper.NewStamp(nil, []byte("x"))
	apierrortest.Want(t, err, apierror.InvalidInput, "")
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	_, err = stamper.NewStamp(p384, []byte("x"))
	apierrortest.Want(t, err, apierror.InvalidInput, "")
}

func TestCompressedHex(t *testing.T) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	c, err := stamper.CompressedHex(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	if want := hex.EncodeToString(elliptic.MarshalCompressed(elliptic.P256(), key.X, key.Y)); c != want {
		t.Fatalf("CompressedHex = %s, want %s", c, want)
	}
	_, err = stamper.CompressedHex(nil)
	apierrortest.Want(t, err, apierror.InvalidInput, "")
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	_, err = stamper.CompressedHex(&p384.PublicKey)
	apierrortest.Want(t, err, apierror.InvalidInput, "")
}

package authclient_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/walletgate/walletgate/walletauth/authclient"
)

// TestClientKeyStamp: a stamp names the key's PublicKeyHex and its signature
// verifies over SHA-256 of the payload exactly as given.
func TestClientKeyStamp(t *testing.T) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k := authclient.ClientKeyFrom(priv)
	if k.PrivateKey() != priv {
		t.Fatal("ClientKeyFrom does not hold the key it wraps")
	}
	if want := hex.EncodeToString(elliptic.MarshalCompressed(elliptic.P256(), priv.X, priv.Y)); k.PublicKeyHex() != want {
		t.Fatalf("PublicKeyHex = %s, want %s", k.PublicKeyHex(), want)
	}
	const payload = `{"type":"REVOKE_SESSION"}`
	header, err := k.Stamp(payload)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := base64.RawURLEncoding.DecodeString(header)
	if err != nil {
		t.Fatal(err)
	}
	var s struct{ PublicKey, Scheme, Signature string }
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	sig, _ := hex.DecodeString(s.Signature)
	digest := sha256.Sum256([]byte(payload))
	if s.PublicKey != k.PublicKeyHex() || !ecdsa.VerifyASN1(&priv.PublicKey, digest[:], sig) {
		t.Fatalf("stamp %s is not this key's signature over the payload", raw)
	}
}

func TestOpenSessionKeyRefusesGarbage(t *testing.T) {
	k, err := authclient.NewClientKey()
	if err != nil {
		t.Fatal(err)
	}
	if s, err := k.OpenSessionKey("not a sealed key"); err == nil || s != nil {
		t.Fatalf("OpenSessionKey of garbage: %v, %v", s, err)
	}
}

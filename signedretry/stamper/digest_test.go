package stamper_test

import (
	"crypto/sha256"
	"testing"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/signedretry/stamper"
)

func TestBodyDigest(t *testing.T) {
	a, err := stamper.BodyDigest([]byte(`{"b": 1, "a": "x"}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := sha256.Sum256([]byte(`{"a":"x","b":1}`)); a != want {
		t.Fatalf("BodyDigest = %x, want %x", a, want)
	}
	b, _ := stamper.BodyDigest([]byte("{\"a\":\"\\u0078\",\"b\":1.0}"))
	if a != b {
		t.Fatal("same value, different digests")
	}
	c, _ := stamper.BodyDigest([]byte(`{"a":"x","b":2}`))
	if a == c {
		t.Fatal("different values, same digest")
	}
	d, err := stamper.BodyDigest(nil)
	if err != nil || d != sha256.Sum256(nil) {
		t.Fatalf("BodyDigest(nil) = %x, %v", d, err)
	}
}

// TestBodyDigestRejects checks that the digest refuses what the decoder
// refuses: duplicate names and names that differ only in case.
func TestBodyDigestRejects(t *testing.T) {
	for _, body := range []string{
		`{"a":1,"a":2}`,
		`{"clientPublicKey":"U","ClientPublicKey":"A"}`,
		`{"x":{"k":1,"\u212a":2}}`,
		`{"a":`,
	} {
		_, err := stamper.BodyDigest([]byte(body))
		e := apierrortest.Want(t, err, apierror.InvalidInput, "")
		if e.Status() != 400 {
			t.Fatalf("%s: status %d", body, e.Status())
		}
	}
}

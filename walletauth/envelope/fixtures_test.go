package envelope

import (
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	mrand "math/rand/v2"
	"testing"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/signedretry/stamper"
)

// seeded returns a deterministic byte stream named by label.
func seeded(label string) io.Reader {
	return mrand.NewChaCha8(sha256.Sum256([]byte(label)))
}

// failingReader fails every read.
type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("entropy source down") }

// constReader returns the same byte forever.
type constReader byte

func (c constReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(c)
	}
	return len(p), nil
}

// testKey returns a deterministic P-256 key named by label.
func testKey(t testing.TB, label string) *ecdsa.PrivateKey {
	t.Helper()
	k, err := generateKey(seeded(label))
	if err != nil {
		t.Fatalf("generateKey(%q): %v", label, err)
	}
	return k
}

// testECDH returns testKey(label) as an ECDH key.
func testECDH(t testing.TB, label string) *ecdh.PrivateKey {
	t.Helper()
	k, err := testKey(t, label).ECDH()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// compressedHex returns the compressed hex of k's public key.
func compressedHex(t testing.TB, k *ecdsa.PrivateKey) string {
	t.Helper()
	s, err := stamper.CompressedHex(&k.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// uncompressedHex returns the uncompressed hex of k's public key.
func uncompressedHex(t testing.TB, k *ecdsa.PrivateKey) string {
	t.Helper()
	b, err := k.PublicKey.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// wantErr checks that err is an *apierror.Error with the code, that a 400
// names field in details.errors (when field is not empty), and that
// details.reason equals reason (when reason is not empty).
func wantErr(t testing.TB, err error, code apierror.Code, field, reason string) {
	t.Helper()
	ae := apierrortest.Want(t, err, code, reason)
	if field != "" {
		fe := ae.FieldErrors()
		if len(fe) != 1 || fe[0].Field != field {
			t.Fatalf("details.errors = %+v, want one error for field %q", fe, field)
		}
	}
}

// checkTyped fails unless err is nil or an *apierror.Error that is not 500,
// the property every parser keeps on any input.
func checkTyped(t testing.TB, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var ae *apierror.Error
	if !errors.As(err, &ae) {
		t.Fatalf("untyped error %v (%T)", err, err)
	}
	if c := apierror.CodeOf(err); c != apierror.InvalidInput && c != apierror.Unauthorized {
		t.Fatalf("outside input gave %s: %v", c, err)
	}
	if ae.Reason() == "" {
		t.Fatalf("error without details.reason: %v", err)
	}
}

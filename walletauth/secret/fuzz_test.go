package secret_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/walletgate/walletgate/walletauth/secret"
)

// FuzzOpen feeds arbitrary bytes to the sealed-value parser (KeyID) and to
// Keyring.Open. Neither panics; every rejection is one of the package's
// errors; Open and KeyID agree on what is well formed; and a value that
// opens stops opening when its last byte or its AAD changes. The seeds (here
// and in testdata/fuzz/FuzzOpen) include values the keyring sealed, so the
// accepting path is covered.
func FuzzOpen(f *testing.F) {
	k1, k2 := fixedKey(f, "k1", 1), fixedKey(f, "k-2.b_c", 2)
	r := keyring(f, k2, k1)
	old := keyring(f, k1)
	for _, c := range []struct {
		r       *secret.Keyring
		pt, aad string
	}{{old, "scalar", "OTP:1"}, {r, "", ""}, {r, "a longer plaintext of a private key scalar", "OTP:2\x00AuthMethod:2"}} {
		s, err := c.r.Seal([]byte(c.pt), []byte(c.aad))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(s, []byte(c.aad))
		f.Add(s, []byte(c.aad+"x"))
		f.Add(s[:len(s)-1], []byte(c.aad))
	}
	f.Add([]byte{}, []byte{})
	f.Add([]byte{1}, []byte{})
	f.Add([]byte{1, 0}, []byte{})
	f.Add(append([]byte{1, 2, 'k', '1'}, make([]byte, 28)...), []byte{})
	f.Add(append([]byte{1, 64}, bytes.Repeat([]byte{'a'}, 64)...), []byte{})
	f.Add(bytes.Repeat([]byte{0xff}, 40), []byte("OTP:1"))
	f.Fuzz(func(t *testing.T, sealed, aad []byte) {
		id, kerr := secret.KeyID(sealed)
		if kerr != nil && !errors.Is(kerr, secret.ErrMalformed) {
			t.Fatalf("KeyID error %v is not ErrMalformed", kerr)
		}
		if kerr == nil {
			if len(id) == 0 || len(id) > secret.MaxKeyIDLen || len(sealed) < 2+len(id)+28 ||
				sealed[0] != secret.FormatVersion || string(sealed[2:2+len(id)]) != id {
				t.Fatalf("KeyID accepted %x as id %q", sealed, id)
			}
			if _, err := secret.NewKey(id, make([]byte, secret.KeySize)); err != nil {
				t.Fatalf("KeyID accepted id %q that NewKey refuses: %v", id, err)
			}
		}
		_, err := r.Open(sealed, aad)
		switch {
		case err == nil:
			if kerr != nil {
				t.Fatalf("Open accepted what KeyID refused: %v", kerr)
			}
			flipped := bytes.Clone(sealed)
			flipped[len(flipped)-1] ^= 1
			if _, err := r.Open(flipped, aad); !errors.Is(err, secret.ErrNotAuthentic) {
				t.Fatalf("opened %x, and with its last byte flipped: %v", sealed, err)
			}
			if _, err := r.Open(sealed, append(bytes.Clone(aad), 0)); !errors.Is(err, secret.ErrNotAuthentic) {
				t.Fatalf("opened %x with aad %q, and with another aad: %v", sealed, aad, err)
			}
		case errors.Is(err, secret.ErrMalformed):
			if kerr == nil {
				t.Fatalf("Open says malformed, KeyID accepted: %v", err)
			}
		case errors.Is(err, secret.ErrUnknownKey), errors.Is(err, secret.ErrNotAuthentic):
			if kerr != nil {
				t.Fatalf("Open parsed what KeyID refused: %v / %v", err, kerr)
			}
		default:
			t.Fatalf("untyped error %v", err)
		}
	})
}

package secret_test

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/walletgate/walletgate/walletauth/secret"
)

// fixedKey returns a key whose secret is 32 copies of b.
func fixedKey(t testing.TB, id string, b byte) secret.Key {
	t.Helper()
	k, err := secret.NewKey(id, bytes.Repeat([]byte{b}, secret.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func keyring(t testing.TB, current secret.Key, older ...secret.Key) *secret.Keyring {
	t.Helper()
	r, err := secret.NewKeyring(current, older...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestSealOpen(t *testing.T) {
	r := keyring(t, fixedKey(t, "k1", 1))
	pt := []byte("a 32-byte P-256 scalar goes here")
	aad := []byte("OTP:1")
	sealed, err := r.Seal(pt, aad)
	if err != nil {
		t.Fatal(err)
	}
	if want := len(pt) + 2 + len("k1") + 12 + 16; len(sealed) != want {
		t.Fatalf("sealed is %d bytes, want %d", len(sealed), want)
	}
	if bytes.Contains(sealed, pt) {
		t.Fatal("the sealed value contains the plaintext")
	}
	if sealed[0] != secret.FormatVersion || sealed[1] != 2 || string(sealed[2:4]) != "k1" {
		t.Fatalf("header % x", sealed[:4])
	}
	got, err := r.Open(sealed, aad)
	if err != nil || !bytes.Equal(got, pt) {
		t.Fatalf("Open: %q, %v", got, err)
	}
	again, _ := r.Seal(pt, aad)
	if bytes.Equal(again, sealed) {
		t.Fatal("two seals of one plaintext are equal: the nonce repeated")
	}
	empty, err := r.Seal(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := r.Open(empty, nil); err != nil || len(got) != 0 {
		t.Fatalf("empty plaintext: %q, %v", got, err)
	}
}

// TestOpenBindsAAD: a value sealed for one record does not open for another.
func TestOpenBindsAAD(t *testing.T) {
	r := keyring(t, fixedKey(t, "k1", 1))
	sealed, _ := r.Seal([]byte("key of issuance 1"), []byte("OTP:1"))
	for _, aad := range [][]byte{[]byte("OTP:2"), nil, []byte("OTP:1\x00"), []byte("OTP:")} {
		if _, err := r.Open(sealed, aad); !errors.Is(err, secret.ErrNotAuthentic) {
			t.Errorf("Open with aad %q: %v, want ErrNotAuthentic", aad, err)
		}
	}
}

// TestOpenRejectsTampering flips every bit of a sealed value in turn and
// truncates it at every length: Open fails each time with a typed error.
func TestOpenRejectsTampering(t *testing.T) {
	r := keyring(t, fixedKey(t, "k1", 1))
	sealed, _ := r.Seal([]byte("secret"), []byte("aad"))
	for i := range sealed {
		for bit := range 8 {
			b := bytes.Clone(sealed)
			b[i] ^= 1 << bit
			_, err := r.Open(b, []byte("aad"))
			if !errors.Is(err, secret.ErrMalformed) && !errors.Is(err, secret.ErrUnknownKey) && !errors.Is(err, secret.ErrNotAuthentic) {
				t.Fatalf("byte %d bit %d flipped: %v", i, bit, err)
			}
			if i >= 4 && !errors.Is(err, secret.ErrNotAuthentic) {
				t.Fatalf("byte %d (nonce, ciphertext or tag) flipped: %v, want ErrNotAuthentic", i, err)
			}
		}
	}
	for n := range len(sealed) {
		if _, err := r.Open(sealed[:n], []byte("aad")); err == nil {
			t.Fatalf("a value truncated to %d bytes opened", n)
		}
	}
	if _, err := r.Open(append(bytes.Clone(sealed), 0), []byte("aad")); !errors.Is(err, secret.ErrNotAuthentic) {
		t.Fatalf("a value with a byte appended: %v", err)
	}
}

func TestOpenMalformed(t *testing.T) {
	r := keyring(t, fixedKey(t, "k1", 1))
	body := make([]byte, 28)
	for name, b := range map[string][]byte{
		"empty":         nil,
		"one byte":      {1},
		"version 0":     append([]byte{0, 2, 'k', '1'}, body...),
		"version 2":     append([]byte{2, 2, 'k', '1'}, body...),
		"id length 0":   append([]byte{1, 0}, body...),
		"id length 65":  append(append([]byte{1, 65}, bytes.Repeat([]byte{'a'}, 65)...), body...),
		"id past end":   {1, 9, 'k', '1'},
		"id with space": append([]byte{1, 2, 'k', ' '}, body...),
		"short body":    append([]byte{1, 2, 'k', '1'}, body[:27]...),
		"a raw scalar":  bytes.Repeat([]byte{7}, 32),
	} {
		if _, err := r.Open(b, nil); !errors.Is(err, secret.ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", name, err)
		}
		if _, err := secret.KeyID(b); !errors.Is(err, secret.ErrMalformed) {
			t.Errorf("KeyID of %s: %v, want ErrMalformed", name, err)
		}
	}
}

// TestWrongKey: a value sealed under a key id the keyring lacks is
// ErrUnknownKey; under a key of the same id but another secret it does not
// authenticate.
func TestWrongKey(t *testing.T) {
	sealed, _ := keyring(t, fixedKey(t, "k1", 1)).Seal([]byte("x"), nil)
	if _, err := keyring(t, fixedKey(t, "k2", 2)).Open(sealed, nil); !errors.Is(err, secret.ErrUnknownKey) || !strings.Contains(err.Error(), `"k1"`) {
		t.Fatalf("unknown key id: %v", err)
	}
	if _, err := keyring(t, fixedKey(t, "k1", 9)).Open(sealed, nil); !errors.Is(err, secret.ErrNotAuthentic) {
		t.Fatalf("same id, other secret: %v", err)
	}
	// Renaming the key in the header does not help either.
	r := keyring(t, fixedKey(t, "k1", 1), fixedKey(t, "k0", 1))
	renamed := bytes.Clone(sealed)
	renamed[3] = '0'
	if _, err := r.Open(renamed, nil); !errors.Is(err, secret.ErrNotAuthentic) {
		t.Fatalf("key id rewritten to another id with the same secret: %v", err)
	}
}

// TestRotation: seal under k1, rotate to k2; k1's values still open, new
// values name k2, and a keyring without k2 cannot open them.
func TestRotation(t *testing.T) {
	k1, k2 := fixedKey(t, "2026-01", 1), fixedKey(t, "2026-02", 2)
	r := keyring(t, k1)
	old, _ := r.Seal([]byte("old"), []byte("a"))
	if r.CurrentKeyID() != "2026-01" {
		t.Fatalf("current %q", r.CurrentKeyID())
	}
	if err := r.Rotate(k2); err != nil {
		t.Fatal(err)
	}
	if r.CurrentKeyID() != "2026-02" {
		t.Fatalf("current after rotation %q", r.CurrentKeyID())
	}
	if got, err := r.Open(old, []byte("a")); err != nil || string(got) != "old" {
		t.Fatalf("a value of the old key after rotation: %q, %v", got, err)
	}
	nu, _ := r.Seal([]byte("new"), []byte("a"))
	if id, err := secret.KeyID(nu); err != nil || id != "2026-02" {
		t.Fatalf("a new value names %q (%v), want 2026-02", id, err)
	}
	if id, _ := secret.KeyID(old); id != "2026-01" {
		t.Fatalf("the old value names %q", id)
	}
	if _, err := keyring(t, k1).Open(nu, []byte("a")); !errors.Is(err, secret.ErrUnknownKey) {
		t.Fatalf("a keyring of k1 only opened k2's value: %v", err)
	}
	// A restarted process configured with k2 current and k1 older opens both.
	restarted := keyring(t, k2, k1)
	for _, v := range [][]byte{old, nu} {
		if _, err := restarted.Open(v, []byte("a")); err != nil {
			t.Fatal(err)
		}
	}
	// Rotating back to a held key makes it current; the same id with another
	// secret is refused and changes nothing.
	if err := r.Rotate(k1); err != nil || r.CurrentKeyID() != "2026-01" {
		t.Fatalf("rotate back: %v, current %q", err, r.CurrentKeyID())
	}
	if err := r.Rotate(fixedKey(t, "2026-02", 3)); err == nil {
		t.Fatal("rotating to a held id with another secret succeeded")
	}
	if r.CurrentKeyID() != "2026-01" {
		t.Fatalf("a refused rotation changed the current key to %q", r.CurrentKeyID())
	}
	if _, err := r.Open(nu, []byte("a")); err != nil {
		t.Fatalf("a refused rotation lost a key: %v", err)
	}
}

// TestRotateConcurrently seals and opens while another goroutine rotates;
// run with -race.
func TestRotateConcurrently(t *testing.T) {
	r := keyring(t, fixedKey(t, "k0", 0))
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				aad := []byte(fmt.Sprint(g, i))
				s, err := r.Seal([]byte("x"), aad)
				if err != nil {
					t.Error(err)
					return
				}
				if _, err := r.Open(s, aad); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for i := 1; i <= 20; i++ {
		if err := r.Rotate(fixedKey(t, fmt.Sprint("k", i), byte(i))); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
}

func TestKeys(t *testing.T) {
	if _, err := secret.NewKeyring(secret.Key{}); err == nil {
		t.Fatal("NewKeyring of the zero Key succeeded")
	}
	if _, err := secret.NewKeyring(fixedKey(t, "a", 1), fixedKey(t, "a", 2)); err == nil {
		t.Fatal("NewKeyring with one id and two secrets succeeded")
	}
	if _, err := secret.NewKeyring(fixedKey(t, "a", 1), fixedKey(t, "a", 1)); err != nil {
		t.Fatalf("NewKeyring with a key repeated: %v", err)
	}
	for _, id := range []string{"", strings.Repeat("a", 65), "a b", "a:b", "é", "a\x00"} {
		if _, err := secret.NewKey(id, make([]byte, 32)); err == nil {
			t.Errorf("NewKey with id %q succeeded", id)
		}
	}
	for _, n := range []int{0, 16, 31, 33, 64} {
		if _, err := secret.NewKey("a", make([]byte, n)); err == nil {
			t.Errorf("NewKey with a %d-byte secret succeeded", n)
		}
	}
	sec := bytes.Repeat([]byte{0xfb}, 32)
	k, _ := secret.NewKey("Key-1.v_2", sec)
	sec[0] = 0 // NewKey copied it
	for _, s := range []string{k.Encode(), "Key-1.v_2:" + base64.RawURLEncoding.EncodeToString(bytes.Repeat([]byte{0xfb}, 32)),
		" Key-1.v_2:" + base64.RawStdEncoding.EncodeToString(bytes.Repeat([]byte{0xfb}, 32)) + "\n"} {
		p, err := secret.ParseKey(s)
		if err != nil || p.ID() != "Key-1.v_2" || p.Encode() != k.Encode() {
			t.Fatalf("ParseKey(%q): %v, %v", s, p, err)
		}
	}
	for _, s := range []string{"", "nocolon", ":" + base64.StdEncoding.EncodeToString(sec), "a:!!!", "a:" + base64.StdEncoding.EncodeToString(sec[:31])} {
		if _, err := secret.ParseKey(s); err == nil {
			t.Errorf("ParseKey(%q) succeeded", s)
		}
	}
	g1, err := secret.GenerateKey(nil, "g")
	if err != nil {
		t.Fatal(err)
	}
	g2, _ := secret.GenerateKey(nil, "g")
	if g1.Encode() == g2.Encode() {
		t.Fatal("two generated keys are equal")
	}
	if _, err := secret.GenerateKey(strings.NewReader("short"), "g"); err == nil {
		t.Fatal("GenerateKey from a short reader succeeded")
	}
	if _, err := secret.GenerateKey(nil, "bad id"); err == nil {
		t.Fatal("GenerateKey with a bad id succeeded")
	}
}

// TestKeyDoesNotPrintSecret: no fmt verb, and no JSON encoding, writes the
// secret of a Key.
func TestKeyDoesNotPrintSecret(t *testing.T) {
	sec := bytes.Repeat([]byte{0xab}, 32)
	k, _ := secret.NewKey("k1", sec)
	js, _ := json.Marshal(k)
	outs := []string{string(js)}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%x", "%X", "%d", "%q", "%o"} {
		outs = append(outs, fmt.Sprintf(verb, k), fmt.Sprintf(verb, &k), fmt.Sprintf(verb, []secret.Key{k}))
	}
	for _, out := range outs {
		lower := strings.ToLower(out)
		if strings.Contains(lower, "abab") || strings.Contains(out, "171") || strings.Contains(out, "253") ||
			strings.Contains(out, base64.StdEncoding.EncodeToString(sec)[:8]) || strings.Contains(lower, hex.EncodeToString(sec[:2])) {
			t.Errorf("formatted key %q shows the secret", out)
		}
	}
}

func TestZeroKeyring(t *testing.T) {
	var r secret.Keyring
	if _, err := r.Seal([]byte("x"), nil); err == nil {
		t.Fatal("the zero Keyring sealed")
	}
	if _, err := r.Open([]byte{1}, nil); err == nil {
		t.Fatal("the zero Keyring opened")
	}
	if r.CurrentKeyID() != "" {
		t.Fatal("the zero Keyring has a current key")
	}
	if err := r.Rotate(fixedKey(t, "k", 1)); err != nil {
		t.Fatalf("Rotate on the zero Keyring: %v", err)
	}
	s, err := r.Seal([]byte("x"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Open(s, nil); err != nil {
		t.Fatal(err)
	}
}

// TestNilKeyring: a nil *Keyring (what a failed NewKeyring returns) fails
// every call instead of panicking.
func TestNilKeyring(t *testing.T) {
	var r *secret.Keyring
	if _, err := r.Seal([]byte("x"), nil); err == nil {
		t.Fatal("a nil Keyring sealed")
	}
	if _, err := r.Open([]byte{1}, nil); err == nil {
		t.Fatal("a nil Keyring opened")
	}
	if r.CurrentKeyID() != "" {
		t.Fatal("a nil Keyring has a current key")
	}
}

var _ secret.Sealer = (*secret.Keyring)(nil)

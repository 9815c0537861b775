package envelope

import (
	"crypto/elliptic"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/walletgate/walletgate/apierror"
)

func TestParsePublicKeyHexBothEncodings(t *testing.T) {
	k := testKey(t, "keys/a")
	comp, unc := compressedHex(t, k), uncompressedHex(t, k)
	if len(comp) != 66 || len(unc) != 130 {
		t.Fatalf("lengths %d and %d", len(comp), len(unc))
	}
	for _, s := range []string{comp, unc, strings.ToUpper(comp), strings.ToUpper(unc)} {
		pub, problem := parsePublicKeyHex(s)
		if problem != "" {
			t.Fatalf("%s: %s", s, problem)
		}
		if !pub.Equal(&k.PublicKey) {
			t.Fatalf("%s parsed to another point", s)
		}
	}
	// Both parities of Y decompress correctly.
	for i := range 8 {
		k := testKey(t, "keys/parity/"+string(rune('a'+i)))
		pub, problem := parsePublicKeyHex(compressedHex(t, k))
		if problem != "" || !pub.Equal(&k.PublicKey) {
			t.Fatalf("key %d: %s", i, problem)
		}
	}
}

func TestParsePublicKeyHexErrors(t *testing.T) {
	k := testKey(t, "keys/a")
	comp, unc := compressedHex(t, k), uncompressedHex(t, k)
	const (
		length   = "must be 66 (compressed) or 130 (uncompressed) hex characters"
		hexErr   = "is not hex"
		notPoint = "is not a point on P-256"
	)
	cases := map[string]struct{ in, reason string }{
		"empty":                     {"", "is required"},
		"short":                     {comp[:64], length},
		"0x prefix":                 {"0x" + comp[:64], hexErr},
		"not hex":                   {"zz" + comp[2:], hexErr},
		"compressed bad prefix":     {"05" + comp[2:], notPoint},
		"compressed with 04":        {"04" + comp[2:], notPoint},
		"uncompressed with 02":      {"02" + unc[2:], notPoint},
		"uncompressed off curve":    {unc[:128] + flipHex(unc[128:]), notPoint},
		"compressed x not on curve": {"02" + noPointX(t), notPoint},
		"compressed x >= p":         {"02" + strings.Repeat("ff", 32), notPoint},
		"all zero uncompressed":     {"04" + strings.Repeat("00", 64), notPoint},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if pub, problem := parsePublicKeyHex(c.in); pub != nil || problem != c.reason {
				t.Fatalf("parsePublicKeyHex(%q) = %v, %q; want %q", c.in, pub, problem, c.reason)
			}
		})
	}
}

func TestGenerateKey(t *testing.T) {
	a, b := testKey(t, "keys/det"), testKey(t, "keys/det")
	if !a.Equal(b) {
		t.Fatal("same seed gave different keys")
	}
	if a.Equal(testKey(t, "keys/other")) {
		t.Fatal("different seeds gave the same key")
	}
	// 0xff.. is above the group order and 0x00.. is zero: both are rejected
	// every time, so sampling gives up with an internal error.
	for _, r := range []constReader{0xff, 0x00} {
		_, err := generateKey(r)
		wantErr(t, err, apierror.InternalError, "", "")
	}
	_, err := generateKey(failingReader{})
	wantErr(t, err, apierror.InternalError, "", "")
	if _, err := generateKey(nil); err != nil {
		t.Fatal(err)
	}
}

// noPointX returns hex of an X coordinate with no point on P-256.
func noPointX(t testing.TB) string {
	t.Helper()
	for i := 1; i < 1000; i++ {
		b := make([]byte, 33)
		b[0] = 2
		b[32] = byte(i)
		b[31] = byte(i >> 8)
		if x, _ := elliptic.UnmarshalCompressed(elliptic.P256(), b); x == nil {
			return hex.EncodeToString(b[1:])
		}
	}
	t.Fatal("no X without a point found")
	return ""
}

// flipHex changes the last hex digit of s.
func flipHex(s string) string {
	last := s[len(s)-1]
	if last == '0' {
		return s[:len(s)-1] + "1"
	}
	return s[:len(s)-1] + "0"
}

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

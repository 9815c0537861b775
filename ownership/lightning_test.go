package ownership

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcec/v2/ecdsa"
)

// encodeZBase32 is the inverse of decodeZBase32.
func encodeZBase32(b []byte) string {
	var sb strings.Builder
	var acc uint32
	var bits uint
	for _, c := range b {
		acc = acc<<8 | uint32(c)
		bits += 8
		for bits >= 5 {
			bits -= 5
			sb.WriteByte(zbase32Alphabet[acc>>bits&31])
		}
		acc &= 1<<bits - 1
	}
	if bits > 0 {
		sb.WriteByte(zbase32Alphabet[acc<<(5-bits)&31])
	}
	return sb.String()
}

func lightningSign(t testing.TB, label string, message []byte) (string, string) {
	t.Helper()
	seed := sha256.Sum256([]byte(label))
	key, _ := btcec.PrivKeyFromBytes(seed[:])
	sig := ecdsa.SignCompact(key, lightningMessageHash(message), true)
	return hex.EncodeToString(key.PubKey().SerializeCompressed()), encodeZBase32(sig)
}

func TestZBase32(t *testing.T) {
	for n := range 70 {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i*37 + n)
		}
		got, ok := decodeZBase32(encodeZBase32(b))
		if !ok || hex.EncodeToString(got) != hex.EncodeToString(b) {
			t.Fatalf("len %d: %x %v", n, got, ok)
		}
	}
	if _, ok := decodeZBase32("ybnd0"); ok {
		t.Error("0 is not in the alphabet")
	}
	if _, ok := decodeZBase32("yb"); ok {
		t.Error("non-zero trailing bits accepted") // "b" = 1 leaves a set bit after 8 bits
	}
	if _, ok := decodeZBase32(strings.Repeat("y", 2000)); ok {
		t.Error("oversized input accepted")
	}
}

func TestLightningVerify(t *testing.T) {
	msg := []byte("walletgate lightning proof")
	node, sig := lightningSign(t, "ln", msg)
	w := Wallet{AccountType: AccountLightning, Address: node}
	if len(sig) != 104 {
		t.Fatalf("zbase32 length %d", len(sig))
	}
	if err := (LightningNodeVerifier{}).Verify(t.Context(), w, msg, Signature{Value: sig}); err != nil {
		t.Fatal(err)
	}
	reject := func(w Wallet, s, reason string) {
		t.Helper()
		wantReject(t, (LightningNodeVerifier{}).Verify(t.Context(), w, msg, Signature{Value: s}), reason)
	}
	const badNode = "node id is not a 33-byte compressed public key in hex"
	for _, a := range []string{"", node[:64], "04" + node[2:], "zz" + node[2:]} {
		reject(Wallet{Address: a}, sig, badNode)
	}
	reject(w, sig[:100], "signature is not 65 bytes of zbase32")
	reject(w, sig+"yyyyyyyy", "signature is not 65 bytes of zbase32")
	reject(w, "0"+sig[1:], "signature is not 65 bytes of zbase32")
	raw, _ := decodeZBase32(sig)
	raw[0] = 35
	reject(w, encodeZBase32(raw), "signature header is not a compact-signature header (27-34)")
	otherNode, _ := lightningSign(t, "other", msg)
	reject(Wallet{Address: otherNode}, sig, "recovered key does not match the node id")
	_, otherSig := lightningSign(t, "ln", []byte("other"))
	reject(w, otherSig, "recovered key does not match the node id")
}

package ownership

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/mr-tron/base58"
)

// tronAddressOf encodes a 20-byte key hash as a base58check T… address.
func tronAddressOf(hash20 []byte) string {
	return base58check(0x41, hash20)
}

func base58check(version byte, payload []byte) string {
	raw := append([]byte{version}, payload...)
	sum := sha256.Sum256(raw)
	sum = sha256.Sum256(sum[:])
	return base58.Encode(append(raw, sum[:4]...))
}

func TestTronAddress(t *testing.T) {
	hash := make([]byte, 20)
	for i := range hash {
		hash[i] = byte(i * 7)
	}
	good := tronAddressOf(hash)
	got, err := parseTronAddress(good)
	if err != nil || hex.EncodeToString(got) != hex.EncodeToString(hash) {
		t.Fatalf("%s: %x %v", good, got, err)
	}
	cases := map[string]string{
		"":                      "address is not a 34-character base58check TRON address",
		good[:33]:               "address is not a 34-character base58check TRON address",
		"0" + good[1:]:          "address is not a 34-character base58check TRON address",
		base58check(0x42, hash): "address version byte is not 0x41",
	}
	bad := []byte(good)
	bad[10] = map[bool]byte{true: 'b', false: 'a'}[bad[10] == 'a']
	cases[string(bad)] = "address fails its base58check checksum"
	for addr, reason := range cases {
		err := (TronVerifier{}).Verify(t.Context(), Wallet{Address: addr}, nil, Signature{})
		wantReject(t, err, reason)
	}
}

func TestTronSignature(t *testing.T) {
	msg := []byte("tron message")
	evmAddr, sig := evmSign(t, "tron", tronHash(msg))
	raw, _ := hex.DecodeString(evmAddr[2:])
	w := Wallet{Address: tronAddressOf(raw)}
	if err := (TronVerifier{}).Verify(t.Context(), w, msg, Signature{Value: "0x" + hex.EncodeToString(sig)}); err != nil {
		t.Fatal(err)
	}
	sig[64] = 30
	wantReject(t, (TronVerifier{}).Verify(t.Context(), w, msg, Signature{Value: hex.EncodeToString(sig)}), "signature recovery byte v")
	wantReject(t, (TronVerifier{}).Verify(t.Context(), w, msg, Signature{Value: "abc"}), "signature is not 65 bytes of hex")
}

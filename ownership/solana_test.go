package ownership

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/mr-tron/base58"
)

func solanaKey(label string) ed25519.PrivateKey {
	seed := sha256.Sum256([]byte(label))
	return ed25519.NewKeyFromSeed(seed[:])
}

func TestSolanaVerify(t *testing.T) {
	key := solanaKey("solana")
	msg := []byte("walletgate\nNonce: 1")
	sig := ed25519.Sign(key, msg)
	w := Wallet{Address: base58.Encode(key.Public().(ed25519.PublicKey))}
	for _, enc := range []string{base58.Encode(sig), hex.EncodeToString(sig), strings.ToUpper(hex.EncodeToString(sig)), base64.StdEncoding.EncodeToString(sig)} {
		if err := (SolanaVerifier{}).Verify(t.Context(), w, msg, Signature{Value: enc}); err != nil {
			t.Fatalf("%s: %v", enc, err)
		}
	}
	reject := func(w Wallet, s, reason string) {
		t.Helper()
		wantReject(t, (SolanaVerifier{}).Verify(t.Context(), w, msg, Signature{Value: s}), reason)
	}
	const badAddr = "address is not a base58 32-byte public key"
	for _, a := range []string{"", "0OIl" + w.Address[4:], base58.Encode(make([]byte, 31)) + "11", base58.Encode(append(make([]byte, 1), key.Public().(ed25519.PublicKey)...)), strings.Repeat("z", 45)} {
		reject(Wallet{Address: a}, base58.Encode(sig), badAddr)
	}
	const badSig = "signature is not 64 bytes of base58, hex or base64"
	for _, s := range []string{"", base58.Encode(sig[:63]), base58.Encode(append(sig, 0)), hex.EncodeToString(sig)[:126] + "zz",
		base64.StdEncoding.EncodeToString(sig)[:86] + "!=", base64.RawStdEncoding.EncodeToString(sig) + "A=", strings.Repeat("2", 200)} {
		reject(w, s, badSig)
	}
	other := solanaKey("other")
	reject(Wallet{Address: base58.Encode(other.Public().(ed25519.PublicKey))}, base58.Encode(sig), "ed25519 signature does not verify for the address")
	reject(w, base58.Encode(ed25519.Sign(key, []byte("other"))), "ed25519 signature does not verify for the address")
}

package ownership

import (
	"encoding/hex"
	"math/big"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/accounts"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
)

// secp256k1N is the order of the secp256k1 group.
var secp256k1N, _ = new(big.Int).SetString("fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141", 16)

// evmSign signs message with a deterministic test key and returns the
// checksummed address and the 0x r‖s‖v (v = 27/28) signature.
func evmSign(t testing.TB, label string, digest []byte) (string, []byte) {
	t.Helper()
	key, err := crypto.ToECDSA(crypto.Keccak256([]byte(label)))
	if err != nil {
		t.Fatal(err)
	}
	sig, err := crypto.Sign(digest, key)
	if err != nil {
		t.Fatal(err)
	}
	sig[64] += 27
	return crypto.PubkeyToAddress(key.PublicKey).Hex(), sig
}

func TestEVMVerify(t *testing.T) {
	msg := []byte("walletgate wants you to prove ownership of this wallet.\nNonce: abc")
	addr, sig := evmSign(t, "evm", accounts.TextHash(msg))
	w := Wallet{AccountType: AccountEthereum, Address: addr}
	ok := func(w Wallet, s string) {
		t.Helper()
		if err := (EVMVerifier{}).Verify(t.Context(), w, msg, Signature{Value: s}); err != nil {
			t.Fatalf("%s %s: %v", w.Address, s, err)
		}
	}
	ok(w, "0x"+hex.EncodeToString(sig))
	ok(w, "0X"+strings.ToUpper(hex.EncodeToString(sig)))
	v01 := append([]byte(nil), sig...)
	v01[64] -= 27
	ok(w, hex.EncodeToString(v01))
	ok(Wallet{Address: strings.ToLower(addr)}, hex.EncodeToString(sig))
	ok(Wallet{Address: "0X" + addr[2:]}, hex.EncodeToString(sig))

	reject := func(w Wallet, s string, reason string) {
		t.Helper()
		wantReject(t, (EVMVerifier{}).Verify(t.Context(), w, msg, Signature{Value: s}), reason)
	}
	good := hex.EncodeToString(sig)
	for _, a := range []string{"", "0x", addr[2:], addr[:41], addr + "0", "1x" + addr[2:], "0x" + strings.Repeat("g", 40)} {
		reject(Wallet{Address: a}, good, "address is not 0x followed by 40 hex digits")
	}
	// Flip the case of one letter: the EIP-55 checksum fails.
	for i := 2; i < len(addr); i++ {
		c := addr[i]
		if c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' {
			bad := addr[:i] + string(c^0x20) + addr[i+1:]
			reject(Wallet{Address: bad}, good, "address fails its EIP-55 checksum")
			break
		}
	}
	reject(w, "", "signature is not 65 bytes of hex")
	reject(w, good[:128], "signature is not 65 bytes of hex")
	reject(w, good+"00", "signature is not 65 bytes of hex")
	reject(w, "zz"+good[2:], "signature is not 65 bytes of hex")
	for _, v := range []byte{2, 26, 29, 35, 255} {
		bad := append([]byte(nil), sig...)
		bad[64] = v
		reject(w, hex.EncodeToString(bad), "signature recovery byte v is not 27, 28, 0 or 1")
	}
	set := func(off int, n *big.Int) string {
		bad := append([]byte(nil), sig...)
		n.FillBytes(bad[off : off+32])
		return hex.EncodeToString(bad)
	}
	reject(w, set(0, big.NewInt(0)), "signature r or s is out of range")
	reject(w, set(32, big.NewInt(0)), "signature r or s is out of range")
	reject(w, set(0, secp256k1N), "signature r or s is out of range")
	reject(w, set(32, secp256k1N), "signature r or s is out of range")
	// The high-S twin recovers the same key, and is still rejected (EIP-2).
	high := append([]byte(nil), sig...)
	new(big.Int).Sub(secp256k1N, new(big.Int).SetBytes(sig[32:64])).FillBytes(high[32:64])
	high[64] = 55 - high[64] // 27 <-> 28
	reject(w, hex.EncodeToString(high), "signature s is not low (EIP-2)")
	// A valid signature over another digest.
	_, other := evmSign(t, "evm", accounts.TextHash([]byte("other")))
	reject(w, hex.EncodeToString(other), "recovered address does not match")
	// r that is no x coordinate on the curve: nothing recovers.
	noPoint := append([]byte(nil), sig...)
	copy(noPoint[:32], []byte{0x00, 0x00, 0x00, 0x05})
	err := (EVMVerifier{}).Verify(t.Context(), w, msg, Signature{Value: hex.EncodeToString(noPoint)})
	wantReject(t, err, "")
}

// TestEVMTronSeparation signs the same message with one key under both
// prefixes: each verifies only on its own chain.
func TestEVMTronSeparation(t *testing.T) {
	msg := []byte("cross-chain replay check")
	evmAddr, evmSig := evmSign(t, "shared", accounts.TextHash(msg))
	_, tronSig := evmSign(t, "shared", tronHash(msg))
	raw, _ := hex.DecodeString(evmAddr[2:])
	tronAddr := tronAddressOf(raw)
	ctx := t.Context()
	if err := (EVMVerifier{}).Verify(ctx, Wallet{Address: evmAddr}, msg, Signature{Value: hex.EncodeToString(evmSig)}); err != nil {
		t.Fatal(err)
	}
	if err := (TronVerifier{}).Verify(ctx, Wallet{Address: tronAddr}, msg, Signature{Value: hex.EncodeToString(tronSig)}); err != nil {
		t.Fatal(err)
	}
	wantReject(t, (TronVerifier{}).Verify(ctx, Wallet{Address: tronAddr}, msg, Signature{Value: hex.EncodeToString(evmSig)}), "recovered address does not match")
	wantReject(t, (EVMVerifier{}).Verify(ctx, Wallet{Address: evmAddr}, msg, Signature{Value: hex.EncodeToString(tronSig)}), "recovered address does not match")
}

// TestEIP55MatchesGoEthereum checks the checksum case against go-ethereum's
// encoding of many addresses, and recovery against its signer.
func TestEIP55MatchesGoEthereum(t *testing.T) {
	for i := range 256 {
		var a evmAddress
		copy(a[:], crypto.Keccak256([]byte{byte(i)}))
		if got, want := "0x"+eip55(a), common.Address(a).Hex(); got != want {
			t.Fatalf("eip55 = %s, want %s", got, want)
		}
		if _, err := parseEVMAddress(common.Address(a).Hex()); err != nil {
			t.Fatalf("%s: %v", common.Address(a).Hex(), err)
		}
	}
	for i := range 32 {
		digest := crypto.Keccak256([]byte{byte(i), 1})
		addr, sig := evmSign(t, string(rune('a'+i)), digest)
		got, err := recoverPrefixed(digest, hex.EncodeToString(sig))
		if err != nil || common.Address(got).Hex() != addr {
			t.Fatalf("recovered %x, %v; want %s", got, err, addr)
		}
	}
}

package ownership

import (
	"bytes"
	"context"
	"encoding/hex"
	"math/big"
	"strconv"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
)

// EVMVerifier verifies EIP-191 personal_sign signatures for EVM chains
// (Ethereum, Base, Polygon, Plasma and any other).
//
// The address is 0x followed by 40 hex digits; a mixed-case address must
// carry a valid EIP-55 checksum, all-lowercase and all-uppercase are
// accepted. The signature is the 65 bytes r‖s‖v in hex (0x optional) with v
// in {27, 28} or {0, 1} and a low s (EIP-2). The digest is
// keccak256("\x19Ethereum Signed Message:\n" + len(message) + message) and
// the recovered address is compared as 20 bytes. EIP-191 carries no chain
// id: the message itself must name the chain. Contract wallets (EIP-1271,
// ERC-6492) are not recognised; compose a network-backed verifier with
// [AnyOf] for them. Wallet.Network is ignored.
type EVMVerifier struct{}

// Verify implements [Verifier].
func (EVMVerifier) Verify(_ context.Context, w Wallet, message []byte, sig Signature) error {
	want, err := parseEVMAddress(w.Address)
	if err != nil {
		return err
	}
	got, err := recoverPrefixed(evmHash(message), sig.Value)
	if err != nil {
		return err
	}
	if !bytes.Equal(got[:], want[:]) {
		return mismatch("recovered address does not match")
	}
	return nil
}

// evmMessagePrefix is EIP-191's version 0x45 (personal_sign) prefix.
const evmMessagePrefix = "\x19Ethereum Signed Message:\n"

// evmHash is the EIP-191 personal_sign digest of message: keccak256 of the
// prefix, the message length in decimal and the message.
func evmHash(message []byte) []byte {
	return crypto.Keccak256([]byte(evmMessagePrefix+strconv.Itoa(len(message))), message)
}

// parseEVMAddress decodes a 0x address and enforces EIP-55 on mixed case.
func parseEVMAddress(s string) (common.Address, error) {
	s = strings.TrimSpace(s)
	if len(s) != 42 || (s[:2] != "0x" && s[:2] != "0X") {
		return common.Address{}, malformed("address is not 0x followed by 40 hex digits")
	}
	var a common.Address
	if _, err := hex.Decode(a[:], []byte(s[2:])); err != nil {
		return common.Address{}, malformed("address is not 0x followed by 40 hex digits")
	}
	digits := s[2:]
	if digits != strings.ToLower(digits) && digits != strings.ToUpper(digits) {
		if a.Hex()[2:] != digits {
			return common.Address{}, malformed("address fails its EIP-55 checksum")
		}
	}
	return a, nil
}

// recoverPrefixed decodes a hex r‖s‖v signature, checks v and low-S, and
// returns the 20-byte Ethereum-style address of the key that signed digest.
// TRON shares this encoding and key hash.
func recoverPrefixed(digest []byte, value string) (common.Address, error) {
	sig, err := decodeRSV(value)
	if err != nil {
		return common.Address{}, err
	}
	pub, err := crypto.SigToPub(digest, sig)
	if err != nil {
		return common.Address{}, mismatch("no public key recovers from the signature")
	}
	return crypto.PubkeyToAddress(*pub), nil
}

// decodeRSV parses 65 bytes of hex r‖s‖v into go-ethereum's form (v in
// {0, 1}), rejecting other v values, out-of-range r or s, and high s.
func decodeRSV(value string) ([]byte, error) {
	s := strings.TrimSpace(value)
	if len(s) >= 2 && (s[:2] == "0x" || s[:2] == "0X") {
		s = s[2:]
	}
	if len(s) != 130 {
		return nil, malformed("signature is not 65 bytes of hex")
	}
	sig := make([]byte, 65)
	if _, err := hex.Decode(sig, []byte(s)); err != nil {
		return nil, malformed("signature is not 65 bytes of hex")
	}
	v := sig[64]
	if v >= 27 {
		v -= 27
	}
	if v > 1 {
		return nil, malformed("signature recovery byte v is not 27, 28, 0 or 1")
	}
	sig[64] = v
	r := new(big.Int).SetBytes(sig[:32])
	sv := new(big.Int).SetBytes(sig[32:64])
	if !crypto.ValidateSignatureValues(v, r, sv, false) {
		return nil, malformed("signature r or s is out of range")
	}
	if !crypto.ValidateSignatureValues(v, r, sv, true) {
		return nil, malformed("signature s is not low (EIP-2)")
	}
	return sig, nil
}

// ValidateAddress implements [AddressValidator]: a 0x address of 40 hex
// digits, EIP-55 checksummed when mixed case. The network is ignored.
func (EVMVerifier) ValidateAddress(w Wallet) error {
	_, err := parseEVMAddress(w.Address)
	return err
}

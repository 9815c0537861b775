package ownership

import (
	"bytes"
	"context"
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcec/v2/ecdsa"
	"github.com/walletgate/walletgate/apierror"
	"golang.org/x/crypto/sha3"
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
// id: the message itself must name the chain. Contract accounts (EIP-1271,
// ERC-6492) need a node and a [ContractVerifier]; a wallet with a
// [Wallet.ChainID] is one, and EVMVerifier refuses it with 500
// INTERNAL_ERROR instead of checking it as a key. Wallet.Network is ignored.
type EVMVerifier struct{}

// Verify implements [Verifier].
func (EVMVerifier) Verify(_ context.Context, w Wallet, message []byte, sig Signature) error {
	if w.ChainID != 0 {
		const reason = "contract accounts need a contract-wallet verifier"
		return apierror.New(apierror.InternalError, "%s", reason).WithDetail("reason", reason)
	}
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
	return keccak256([]byte(evmMessagePrefix+strconv.Itoa(len(message))), message)
}

// keccak256 is Ethereum's Keccak-256 (the original padding, not SHA3-256)
// of the concatenated parts.
func keccak256(parts ...[]byte) []byte {
	h := sha3.NewLegacyKeccak256()
	for _, p := range parts {
		h.Write(p)
	}
	return h.Sum(nil)
}

// evmAddress is the 20-byte key hash of an EVM (or TRON) address.
type evmAddress [20]byte

// parseEVMAddress decodes a 0x address and enforces EIP-55 on mixed case.
func parseEVMAddress(s string) (evmAddress, error) {
	s = strings.TrimSpace(s)
	if len(s) != 42 || (s[:2] != "0x" && s[:2] != "0X") {
		return evmAddress{}, malformed("address is not 0x followed by 40 hex digits")
	}
	var a evmAddress
	if _, err := hex.Decode(a[:], []byte(s[2:])); err != nil {
		return evmAddress{}, malformed("address is not 0x followed by 40 hex digits")
	}
	digits := s[2:]
	if digits != strings.ToLower(digits) && digits != strings.ToUpper(digits) {
		if eip55(a) != digits {
			return evmAddress{}, malformed("address fails its EIP-55 checksum")
		}
	}
	return a, nil
}

// eip55 returns the 40 hex digits of a in EIP-55 checksum case: a letter is
// upper case when the matching nibble of keccak256 of the lowercase digits
// is 8 or more.
func eip55(a evmAddress) string {
	digits := []byte(hex.EncodeToString(a[:]))
	hash := keccak256(digits)
	for i, c := range digits {
		nibble := hash[i/2] >> 4
		if i%2 == 1 {
			nibble = hash[i/2] & 0x0f
		}
		if c >= 'a' && nibble >= 8 {
			digits[i] = c - 'a' + 'A'
		}
	}
	return string(digits)
}

// recoverPrefixed decodes a hex r‖s‖v signature, checks v and low-S, and
// returns the 20-byte Ethereum-style address of the key that signed digest:
// the last 20 bytes of keccak256 of its uncompressed public key. TRON
// shares this encoding and key hash.
func recoverPrefixed(digest []byte, value string) (evmAddress, error) {
	compact, err := decodeRSV(value)
	if err != nil {
		return evmAddress{}, err
	}
	pub, _, err := ecdsa.RecoverCompact(compact, digest)
	if err != nil {
		return evmAddress{}, mismatch("no public key recovers from the signature")
	}
	var a evmAddress
	copy(a[:], keccak256(pub.SerializeUncompressed()[1:])[12:])
	return a, nil
}

// decodeRSV parses 65 bytes of hex r‖s‖v (v in {27, 28} or {0, 1}) into
// the compact form btcec recovers from (27+v, then r‖s, for an
// uncompressed key), rejecting other v values, r or s zero or not below the
// group order, and high s.
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
	var r, sv btcec.ModNScalar
	if r.SetByteSlice(sig[:32]) || sv.SetByteSlice(sig[32:64]) || r.IsZero() || sv.IsZero() {
		return nil, malformed("signature r or s is out of range")
	}
	if sv.IsOverHalfOrder() {
		return nil, malformed("signature s is not low (EIP-2)")
	}
	compact := make([]byte, 65)
	compact[0] = 27 + v
	copy(compact[1:], sig[:64])
	return compact, nil
}

// ValidateAddress implements [AddressValidator]: a 0x address of 40 hex
// digits, EIP-55 checksummed when mixed case. The network is ignored.
func (EVMVerifier) ValidateAddress(w Wallet) error {
	_, err := parseEVMAddress(w.Address)
	return err
}

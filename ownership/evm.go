package ownership

import (
	"bytes"
	"context"
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/btcsuite/btcd/btcec/v2"
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
//
// The public key is recovered by libsecp256k1 (go-ethereum's
// crypto/secp256k1 binding) in a build with cgo and by the pure-Go btcec
// without it (CGO_ENABLED=0); every check above is made before either, so
// both builds give the same answer, status and reason for every input.
// [TronVerifier] shares this recovery.
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
	digits := s[2:]
	if !decodeHexString(a[:], digits) {
		return evmAddress{}, malformed("address is not 0x followed by 40 hex digits")
	}
	if strings.ContainsAny(digits, "abcdef") && strings.ContainsAny(digits, "ABCDEF") {
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
// returns the 20-byte Ethereum-style address of the key that signed digest
// (32 bytes): the last 20 bytes of keccak256 of its uncompressed public key.
// TRON shares this encoding and key hash. The recovery itself is
// libsecp256k1's when the build has cgo and the pure-Go one otherwise
// ([recoverAddress]); both see only signatures that passed [decodeRSV].
func recoverPrefixed(digest []byte, value string) (evmAddress, error) {
	sig, err := decodeRSV(value)
	if err != nil {
		return evmAddress{}, err
	}
	a, ok := recoverAddress(digest, &sig)
	if !ok {
		return evmAddress{}, mismatch("no public key recovers from the signature")
	}
	return a, nil
}

// rsv is a signature that passed [decodeRSV]: r‖s‖v with r and s in
// [1, n), s at most n/2 and v, the recovery id, 0 or 1.
type rsv [65]byte

// decodeRSV parses 65 bytes of hex r‖s‖v (0x optional, v in {27, 28} or
// {0, 1}) into r‖s‖v with v reduced to 0 or 1, rejecting other v values,
// r or s zero or not below the group order, and high s.
func decodeRSV(value string) (rsv, error) {
	s := strings.TrimSpace(value)
	if len(s) >= 2 && (s[:2] == "0x" || s[:2] == "0X") {
		s = s[2:]
	}
	var sig rsv
	if len(s) != 2*len(sig) || !decodeHexString(sig[:], s) {
		return rsv{}, malformed("signature is not 65 bytes of hex")
	}
	v := sig[64]
	if v >= 27 {
		v -= 27
	}
	if v > 1 {
		return rsv{}, malformed("signature recovery byte v is not 27, 28, 0 or 1")
	}
	sig[64] = v
	var r, sv btcec.ModNScalar
	if r.SetByteSlice(sig[:32]) || sv.SetByteSlice(sig[32:64]) || r.IsZero() || sv.IsZero() {
		return rsv{}, malformed("signature r or s is out of range")
	}
	if sv.IsOverHalfOrder() {
		return rsv{}, malformed("signature s is not low (EIP-2)")
	}
	return sig, nil
}

// decodeHexString decodes the len(dst)*2 hex digits of s (either case) into
// dst, as hex.Decode does but without copying s; it reports false on any
// other character or length.
func decodeHexString(dst []byte, s string) bool {
	if len(s) != 2*len(dst) {
		return false
	}
	for i := range dst {
		hi, ok1 := fromHexChar(s[2*i])
		lo, ok2 := fromHexChar(s[2*i+1])
		if !ok1 || !ok2 {
			return false
		}
		dst[i] = hi<<4 | lo
	}
	return true
}

// fromHexChar is the value of one hex digit, either case.
func fromHexChar(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// keyHash is the Ethereum-style address of an uncompressed public key
// (0x04‖X‖Y, 65 bytes): the last 20 bytes of keccak256(X‖Y).
func keyHash(uncompressed []byte) evmAddress {
	var a evmAddress
	copy(a[:], keccak256(uncompressed[1:])[12:])
	return a
}

// ValidateAddress implements [AddressValidator]: a 0x address of 40 hex
// digits, EIP-55 checksummed when mixed case. The network is ignored.
func (EVMVerifier) ValidateAddress(w Wallet) error {
	_, err := parseEVMAddress(w.Address)
	return err
}

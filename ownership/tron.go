package ownership

import (
	"bytes"
	"context"
	"crypto/sha256"
	"strconv"
	"strings"

	"github.com/mr-tron/base58"
)

// TronVerifier verifies TRON signMessageV2 (TIP-191) signatures.
//
// The digest is keccak256("\x19TRON Signed Message:\n" + len(message) +
// message), the length in decimal bytes as tronweb computes it. The
// signature is hex r‖s‖v (0x optional), v in {27, 28} or {0, 1}, low s. The
// address is base58check of 0x41 followed by the key's 20-byte hash (a
// 34-character T… string); Shasta and Nile share the mainnet prefix, so
// Wallet.Network is ignored. Because the prefix differs from EIP-191, an
// Ethereum personal_sign signature by the same key never verifies here, nor
// the reverse. The legacy fixed-length V1 header is not accepted.
type TronVerifier struct{}

// tronMessagePrefix is TIP-191's prefix; tronweb keeps the 0x19 lead byte.
const tronMessagePrefix = "\x19TRON Signed Message:\n"

// Verify implements [Verifier].
func (TronVerifier) Verify(_ context.Context, w Wallet, message []byte, sig Signature) error {
	want, err := parseTronAddress(w.Address)
	if err != nil {
		return err
	}
	got, err := recoverPrefixed(tronHash(message), sig.Value)
	if err != nil {
		return err
	}
	if !bytes.Equal(got[:], want) {
		return mismatch("recovered address does not match")
	}
	return nil
}

// tronHash is the TIP-191 digest of message.
func tronHash(message []byte) []byte {
	return keccak256([]byte(tronMessagePrefix+strconv.Itoa(len(message))), message)
}

// parseTronAddress decodes a base58check T… address into its 20-byte key hash.
func parseTronAddress(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if len(s) != 34 {
		return nil, malformed("address is not a 34-character base58check TRON address")
	}
	raw, err := base58.Decode(s)
	if err != nil || len(raw) != 25 {
		return nil, malformed("address is not a 34-character base58check TRON address")
	}
	sum := sha256.Sum256(raw[:21])
	sum = sha256.Sum256(sum[:])
	if !bytes.Equal(sum[:4], raw[21:]) {
		return nil, malformed("address fails its base58check checksum")
	}
	if raw[0] != 0x41 {
		return nil, malformed("address version byte is not 0x41")
	}
	return raw[1:21], nil
}

// ValidateAddress implements [AddressValidator]: a base58check T… address.
// The network is ignored.
func (TronVerifier) ValidateAddress(w Wallet) error {
	_, err := parseTronAddress(w.Address)
	return err
}

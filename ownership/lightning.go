package ownership

import (
	"bytes"
	"context"
	"encoding/hex"
	"strings"

	"github.com/btcsuite/btcd/btcec/v2/ecdsa"
	"github.com/btcsuite/btcd/chainhash/v2"
)

// LightningNodeVerifier verifies a Lightning node's signmessage output, as
// LND and Core Lightning (its "zbase" field) produce it: a recoverable
// compact signature by the node identity key over
// SHA256d("Lightning Signed Message:" ‖ message), zbase32-encoded (104
// characters).
//
// The address is the node id: the 33-byte compressed public key in hex (66
// characters). Only node operators can produce this proof; invoices,
// Lightning addresses and LNURL hold no key. It is therefore not part of
// [DefaultVerifiers]: register it for [AccountLightning] explicitly (one
// registration covers [AccountLightningAlias] too, see [Verifiers.Lookup]) when the
// account records a node id. Like LND's offline check, it compares keys
// only and does not look the node up in a channel graph. Wallet.Network is
// ignored.
type LightningNodeVerifier struct{}

// lightningMessagePrefix is prepended to the message by LND and CLN.
const lightningMessagePrefix = "Lightning Signed Message:"

// Verify implements [Verifier].
func (LightningNodeVerifier) Verify(_ context.Context, w Wallet, message []byte, sig Signature) error {
	node, err := parseNodeID(w.Address)
	if err != nil {
		return err
	}
	raw, ok := decodeZBase32(strings.TrimSpace(sig.Value))
	if !ok || len(raw) != 65 {
		return malformed("signature is not 65 bytes of zbase32")
	}
	if raw[0] < 27 || raw[0] > 34 {
		return malformed("signature header is not a compact-signature header (27-34)")
	}
	pub, _, err := ecdsa.RecoverCompact(raw, lightningMessageHash(message))
	if err != nil {
		return mismatch("no public key recovers from the signature")
	}
	if !bytes.Equal(pub.SerializeCompressed(), node) {
		return mismatch("recovered key does not match the node id")
	}
	return nil
}

// lightningMessageHash is SHA256d(prefix ‖ message).
func lightningMessageHash(message []byte) []byte {
	buf := make([]byte, 0, len(lightningMessagePrefix)+len(message))
	buf = append(buf, lightningMessagePrefix...)
	buf = append(buf, message...)
	return chainhash.DoubleHashB(buf)
}

// parseNodeID decodes a 66-character hex compressed public key.
func parseNodeID(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if len(s) != 66 {
		return nil, malformed("node id is not a 33-byte compressed public key in hex")
	}
	raw, err := hex.DecodeString(s)
	if err != nil || (raw[0] != 0x02 && raw[0] != 0x03) {
		return nil, malformed("node id is not a 33-byte compressed public key in hex")
	}
	return raw, nil
}

// zbase32Alphabet is the human-oriented base-32 alphabet of lnd's signatures.
const zbase32Alphabet = "ybndrfg8ejkmcpqxot1uwisza345h769"

// decodeZBase32 decodes zbase32, big-endian and left-aligned as lnd writes
// it. It reports false for a character outside the alphabet or non-zero
// unused bits in the last character.
func decodeZBase32(s string) ([]byte, bool) {
	if len(s) > 1024 {
		return nil, false
	}
	out := make([]byte, 0, len(s)*5/8)
	var acc uint32
	var bits uint
	for i := range len(s) {
		v := strings.IndexByte(zbase32Alphabet, s[i])
		if v < 0 {
			return nil, false
		}
		acc = acc<<5 | uint32(v)
		bits += 5
		if bits >= 8 {
			bits -= 8
			out = append(out, byte(acc>>bits))
			acc &= 1<<bits - 1
		}
	}
	if acc != 0 {
		return nil, false
	}
	return out, true
}

// ValidateAddress implements [AddressValidator]: a node id, 66 hex
// characters of a compressed public key. The network is ignored.
func (LightningNodeVerifier) ValidateAddress(w Wallet) error {
	_, err := parseNodeID(w.Address)
	return err
}

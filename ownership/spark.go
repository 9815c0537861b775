package ownership

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"

	"github.com/btcsuite/btcd/address/v2/bech32"
	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcec/v2/ecdsa"
)

// SparkVerifier verifies Spark identity-key signatures, as
// SparkWallet.signMessageWithIdentityKey produces them: secp256k1 ECDSA
// (RFC 6979, low s) over SHA-256 of the message bytes.
//
// The address is bech32m with HRP spark (mainnet), sparkt (testnet), sparks
// (signet) or sparkrt (regtest), or the older sp, spt, sps, sprt, whose
// payload is the protobuf SparkAddress holding only field 1, the 33-byte
// compressed identity public key. Invoices (addresses with further fields)
// and local-network addresses are rejected, and the HRP must match
// Wallet.Network. The signature is DER (70-72 bytes) or compact r‖s (64
// bytes), in hex or standard base64 (as Xverse returns it). A high s is
// rejected in either form, as the SDK's own verifier does.
type SparkVerifier struct{}

// maxSparkAddressLen is the SDK's bech32m length limit.
const maxSparkAddressLen = 1024

// Verify implements [Verifier].
func (SparkVerifier) Verify(_ context.Context, w Wallet, message []byte, sig Signature) error {
	pub, err := parseSparkAddress(w.Address, w.Network)
	if err != nil {
		return err
	}
	es, err := decodeSparkSignature(sig.Value)
	if err != nil {
		return err
	}
	digest := sha256.Sum256(message)
	if !es.Verify(digest[:], pub) {
		return mismatch("ecdsa signature does not verify for the identity key")
	}
	return nil
}

// sparkNetwork maps a Spark HRP (current or legacy) to its network. known is
// false for other prefixes; local is true for the local network, which has no
// counterpart in Network.
func sparkNetwork(hrp string) (n Network, known, local bool) {
	switch hrp {
	case "spark", "sp":
		return Mainnet, true, false
	case "sparkt", "spt":
		return Testnet, true, false
	case "sparks", "sps":
		return Signet, true, false
	case "sparkrt", "sprt":
		return Regtest, true, false
	case "sparkl", "spl":
		return 0, true, true
	}
	return 0, false, false
}

// parseSparkAddress decodes a plain Spark address into its identity key.
func parseSparkAddress(s string, want Network) (*btcec.PublicKey, error) {
	s = strings.TrimSpace(s)
	if len(s) > maxSparkAddressLen {
		return nil, malformed("spark address is longer than 1024 characters")
	}
	hrp, data, version, err := bech32.DecodeNoLimitWithVersion(s)
	if err != nil {
		return nil, malformed("address is not bech32m")
	}
	if version != bech32.VersionM {
		return nil, malformed("spark address uses bech32, not bech32m")
	}
	switch n, known, local := sparkNetwork(hrp); {
	case !known:
		return nil, malformed("address prefix is not a spark network")
	case local:
		return nil, malformed("local-network spark address is not accepted")
	case n != want:
		return nil, malformed(n.String() + " address under " + want.String() + " configuration")
	}
	payload, err := bech32.ConvertBits(data, 5, 8, false)
	if err != nil {
		return nil, malformed("spark address payload is not whole bytes")
	}
	// Protobuf SparkAddress: field 1, wire type 2 (tag 0x0a), length 33.
	if len(payload) < 2 || payload[0] != 0x0a || payload[1] != 33 || len(payload) < 35 {
		return nil, malformed("spark address does not start with a 33-byte identity key")
	}
	if len(payload) != 35 {
		return nil, malformed("spark address carries invoice fields; a plain address is required")
	}
	key := payload[2:]
	if key[0] != 0x02 && key[0] != 0x03 {
		return nil, malformed("spark identity key is not a compressed secp256k1 key")
	}
	pub, err := btcec.ParsePubKey(key)
	if err != nil {
		return nil, malformed("spark identity key is not on the curve")
	}
	return pub, nil
}

// decodeSparkSignature decodes a DER or compact ECDSA signature from hex or
// base64 and rejects a high s.
func decodeSparkSignature(value string) (*ecdsa.Signature, error) {
	s := strings.TrimSpace(value)
	const bad = "signature is not hex or base64 of a DER or 64-byte compact ECDSA signature"
	if len(s) > 200 {
		return nil, malformed(bad)
	}
	raw, err := hex.DecodeString(s)
	if err != nil {
		raw, err = base64.StdEncoding.Strict().DecodeString(s)
		if err != nil {
			return nil, malformed(bad)
		}
	}
	var r, sv btcec.ModNScalar
	switch {
	case len(raw) == 64:
		if r.SetByteSlice(raw[:32]) || sv.SetByteSlice(raw[32:]) || r.IsZero() || sv.IsZero() {
			return nil, malformed("signature r or s is out of range")
		}
	case len(raw) >= 8 && len(raw) <= 72 && raw[0] == 0x30:
		der, err := ecdsa.ParseDERSignature(raw)
		if err != nil {
			return nil, malformed("signature is not strict DER")
		}
		r, sv = der.R(), der.S()
	default:
		return nil, malformed(bad)
	}
	if sv.IsOverHalfOrder() {
		return nil, malformed("signature s is not low")
	}
	return ecdsa.NewSignature(&r, &sv), nil
}

// ValidateAddress implements [AddressValidator]: a plain bech32m Spark
// address of w.Network.
func (SparkVerifier) ValidateAddress(w Wallet) error {
	_, err := parseSparkAddress(w.Address, w.Network)
	return err
}

package ownership

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"strings"

	"github.com/mr-tron/base58"
)

// SolanaVerifier verifies Solana signMessage signatures: Ed25519 (RFC 8032)
// over the raw message bytes, with no prefix and no hashing, as Phantom and
// Solflare produce.
//
// The address is the base58 32-byte public key. The signature is 64 bytes,
// base58 as the service documents; hex (128 digits) and standard base64
// (88 characters) are also accepted, which cannot be confused because the
// three encodings of 64 bytes differ in length or alphabet. Ledger's
// off-chain message envelope is not accepted. Wallet.Network is ignored.
type SolanaVerifier struct{}

// Verify implements [Verifier].
func (SolanaVerifier) Verify(_ context.Context, w Wallet, message []byte, sig Signature) error {
	pub, err := parseSolanaAddress(w.Address)
	if err != nil {
		return err
	}
	raw, err := decodeSolanaSignature(sig.Value)
	if err != nil {
		return err
	}
	if !ed25519.Verify(pub, message, raw) {
		return mismatch("ed25519 signature does not verify for the address")
	}
	return nil
}

// parseSolanaAddress decodes a base58 Ed25519 public key.
func parseSolanaAddress(s string) (ed25519.PublicKey, error) {
	s = strings.TrimSpace(s)
	if len(s) < 32 || len(s) > 44 {
		return nil, malformed("address is not a base58 32-byte public key")
	}
	raw, err := base58.Decode(s)
	if err != nil || len(raw) != ed25519.PublicKeySize {
		return nil, malformed("address is not a base58 32-byte public key")
	}
	return ed25519.PublicKey(raw), nil
}

// decodeSolanaSignature decodes 64 signature bytes from base58, hex or base64.
func decodeSolanaSignature(value string) ([]byte, error) {
	s := strings.TrimSpace(value)
	const bad = "signature is not 64 bytes of base58, hex or base64"
	switch {
	case len(s) == 2*ed25519.SignatureSize:
		if raw, err := hex.DecodeString(s); err == nil {
			return raw, nil
		}
	case len(s) == 88 && strings.HasSuffix(s, "=="):
		raw, err := base64.StdEncoding.Strict().DecodeString(s)
		if err == nil && len(raw) == ed25519.SignatureSize {
			return raw, nil
		}
		return nil, malformed(bad)
	}
	if len(s) > 90 {
		return nil, malformed(bad)
	}
	raw, err := base58.Decode(s)
	if err != nil || len(raw) != ed25519.SignatureSize {
		return nil, malformed(bad)
	}
	return raw, nil
}

// ValidateAddress implements [AddressValidator]: a base58 32-byte Ed25519
// public key. The network is ignored.
func (SolanaVerifier) ValidateAddress(w Wallet) error {
	_, err := parseSolanaAddress(w.Address)
	return err
}

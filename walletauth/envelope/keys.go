package envelope

import (
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/hex"
	"io"
)

// Sizes of the P-256 encodings the formats use (SEC 1).
const (
	compressedKeyLen   = 33 // 02|03 || X
	uncompressedKeyLen = 65 // 04 || X || Y
	scalarLen          = 32 // big-endian private scalar
)

// maxKeyCandidates bounds rejection sampling of private scalars. A uniformly
// random 32-byte string is a valid P-256 scalar with probability about
// 1 - 2^-32, so a reader that fails this many times in a row is broken.
const maxKeyCandidates = 64

// parsePublicKeyHex returns the key, or a problem phrase ("is not hex", ...)
// that the caller prefixes with the field name.
func parsePublicKeyHex(s string) (*ecdsa.PublicKey, string) {
	pub, _, problem := parsePublicKeyHexRaw(s)
	return pub, problem
}

// parsePublicKeyHexRaw is parsePublicKeyHex that also returns the decoded
// SEC 1 bytes of the key it accepted.
func parsePublicKeyHexRaw(s string) (*ecdsa.PublicKey, []byte, string) {
	if s == "" {
		return nil, nil, "is required"
	}
	if len(s) != 2*compressedKeyLen && len(s) != 2*uncompressedKeyLen {
		return nil, nil, "must be 66 (compressed) or 130 (uncompressed) hex characters"
	}
	raw, err := hex.DecodeString(s)
	if err != nil {
		return nil, nil, "is not hex"
	}
	pub, problem := parsePublicKeyBytes(raw)
	if problem != "" {
		return nil, nil, problem
	}
	return pub, raw, ""
}

// parsePublicKeyBytes parses a compressed or uncompressed SEC 1 point.
func parsePublicKeyBytes(raw []byte) (*ecdsa.PublicKey, string) {
	switch len(raw) {
	case uncompressedKeyLen:
		pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), raw)
		if err != nil {
			return nil, "is not a point on P-256"
		}
		return pub, ""
	case compressedKeyLen:
		// UnmarshalCompressed accepts only an X below p with a square root
		// of X³ - 3X + b, and returns that point's coordinates: the key is
		// built from them directly rather than re-encoded and checked again.
		x, y := elliptic.UnmarshalCompressed(elliptic.P256(), raw)
		if x == nil {
			return nil, "is not a point on P-256"
		}
		return &ecdsa.PublicKey{Curve: elliptic.P256(), X: x, Y: y}, ""
	default:
		return nil, "must be a 33-byte compressed or 65-byte uncompressed P-256 point"
	}
}

// parseUncompressedPoint parses exactly 65 bytes 04 || X || Y as an ECDH key.
func parseUncompressedPoint(raw []byte) (*ecdh.PublicKey, string) {
	if len(raw) != uncompressedKeyLen {
		return nil, "must be a 65-byte uncompressed P-256 point"
	}
	pub, err := ecdh.P256().NewPublicKey(raw)
	if err != nil {
		return nil, "is not a point on P-256"
	}
	return pub, ""
}

// decompressPoint turns 02|03 || X into 04 || X || Y. It reports false for a
// wrong prefix or an X with no point on the curve.
func decompressPoint(compressed []byte) ([]byte, bool) {
	x, y := elliptic.UnmarshalCompressed(elliptic.P256(), compressed)
	if x == nil {
		return nil, false
	}
	out := make([]byte, uncompressedKeyLen)
	out[0] = 4
	x.FillBytes(out[1:33])
	y.FillBytes(out[33:])
	return out, true
}

// compressPoint turns 04 || X || Y into 02|03 || X (the prefix carries the
// parity of Y). The input must be a valid uncompressed point.
func compressPoint(uncompressed []byte) []byte {
	out := make([]byte, compressedKeyLen)
	out[0] = 2 | uncompressed[uncompressedKeyLen-1]&1
	copy(out[1:], uncompressed[1:33])
	return out
}

// generateKey draws a P-256 private key from r (crypto/rand when nil) by
// rejection sampling 32-byte big-endian candidates, which yields a uniform
// scalar in [1, n-1] and is deterministic for a deterministic r.
func generateKey(r io.Reader) (*ecdsa.PrivateKey, error) {
	if r == nil {
		r = rand.Reader
	}
	var buf [scalarLen]byte
	defer clear(buf[:])
	for range maxKeyCandidates {
		if _, err := io.ReadFull(r, buf[:]); err != nil {
			return nil, internal("reading randomness for a P-256 key", err)
		}
		if k, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), buf[:]); err == nil {
			return k, nil
		}
	}
	return nil, internal("the randomness source gave no valid P-256 scalar", nil)
}

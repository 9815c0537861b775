package signedretry

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"unicode/utf8"

	"golang.org/x/crypto/cryptobyte"
	casn1 "golang.org/x/crypto/cryptobyte/asn1"

	"github.com/walletgate/walletgate/apierror"
)

// SchemeP256 is the only stamp scheme accepted: ECDSA over P-256 with SHA-256,
// as produced by @turnkey/api-key-stamper.
const SchemeP256 = "SIGNATURE_SCHEME_TK_API_P256"

// MaxStampBytes bounds the length of a Service-Wallet-Signature header value.
// A stamp with an uncompressed key and a 72-byte signature encodes to about
// 500 characters; anything longer than this is rejected before decoding.
const MaxStampBytes = 4096

// DER-encoded ECDSA P-256 signatures are SEQUENCE{INTEGER r, INTEGER s} with
// r and s in [1, n-1]: at least 8 and at most 72 bytes.
const (
	minDERSignatureBytes = 8
	maxDERSignatureBytes = 72
)

// Stamp is a parsed Service-Wallet-Signature header value: a P-256 public key
// and a DER ECDSA signature. A Stamp returned by [ParseStamp] is well formed
// (the key is a point on P-256, the signature is strict DER with r and s in
// range); whether the signature holds is decided by [Stamp.Verify]. A Stamp is
// immutable and safe for concurrent use.
type Stamp struct {
	publicKey *ecdsa.PublicKey
	signature []byte
}

// stampWire is the JSON object inside the header, with the members in the order
// @turnkey/api-key-stamper writes them.
type stampWire struct {
	PublicKey string `json:"publicKey"`
	Scheme    string `json:"scheme"`
	Signature string `json:"signature"`
}

// NewStamp signs payload with key and returns the Service-Wallet-Signature
// header value: unpadded base64url of the compact JSON
// {"publicKey":<compressed hex>,"scheme":"SIGNATURE_SCHEME_TK_API_P256","signature":<DER hex>},
// byte for byte what @turnkey/api-key-stamper produces. The signature is over
// SHA-256 of payload exactly as given. key must be a P-256 private key;
// otherwise the error is 400 INVALID_INPUT.
func NewStamp(key *ecdsa.PrivateKey, payload []byte) (string, error) {
	if key == nil || key.Curve != elliptic.P256() {
		return "", apierror.New(apierror.InvalidInput, "stamp signing key must be a P-256 private key")
	}
	pub, err := CompressedHex(&key.PublicKey)
	if err != nil {
		return "", err
	}
	digest := sha256.Sum256(payload)
	sig, err := ecdsa.SignASN1(rand.Reader, key, digest[:])
	if err != nil {
		return "", apierror.Internal(err)
	}
	body, err := json.Marshal(stampWire{PublicKey: pub, Scheme: SchemeP256, Signature: hex.EncodeToString(sig)})
	if err != nil {
		return "", apierror.Internal(err)
	}
	return base64.RawURLEncoding.EncodeToString(body), nil
}

// ParseStamp decodes a Service-Wallet-Signature header value. It accepts
// base64url with or without padding; a JSON object whose members publicKey,
// scheme and signature are strings, in any order, with unknown members
// ignored (member names are matched exactly, case included); a publicKey in
// compressed (66 hex) or uncompressed (130 hex) SEC1 form that is a point on
// P-256; and a signature in strict DER whatever its S half (high-S is valid).
//
// Every other input is 401 WALLET_SIGNATURE_MALFORMED whose message and
// details.reason name the failed check: a value longer than [MaxStampBytes],
// characters outside the base64url alphabet, wrong padding, a payload that is
// not exactly one JSON object, a missing, repeated or non-string member, a
// scheme other than [SchemeP256], bad hex, a key off the curve, and a
// signature that is not DER or whose r or s is outside [1, n-1]. The sandbox
// literal "sandbox-valid-signature" is not a stamp and is rejected here too.
func ParseStamp(header string) (*Stamp, error) {
	return parseStamp(header, parsePublicKey)
}

// parseStamp is ParseStamp with the public key parser supplied, so a caller
// may put a cache in front of it.
func parseStamp(header string, parseKey func(string) (*ecdsa.PublicKey, string)) (*Stamp, error) {
	if header == "" {
		return nil, malformed("header value is empty")
	}
	if len(header) > MaxStampBytes {
		return nil, malformed(fmt.Sprintf("header value is longer than %d bytes", MaxStampBytes))
	}
	raw, err := decodeBase64URL(header)
	if err != nil {
		return nil, err
	}
	w, err := decodeStampJSON(raw)
	if err != nil {
		return nil, err
	}
	if w.Scheme != SchemeP256 {
		return nil, malformed("scheme is not " + SchemeP256)
	}
	pub, problem := parseKey(w.PublicKey)
	if problem != "" {
		return nil, malformed("publicKey " + problem)
	}
	sig, err := parseDERSignature(w.Signature)
	if err != nil {
		return nil, err
	}
	return &Stamp{publicKey: pub, signature: sig}, nil
}

// Verify reports whether the stamp's signature is a valid ECDSA P-256
// signature by the stamp's key over SHA-256 of payload, taken byte for byte.
// High-S signatures are valid. A signature that does not verify is 401
// WALLET_SIGNATURE_INVALID. Verify says nothing about whether the key may
// sign; compare it to the allowed key with [Stamp.SignedBy]. A nil or zero
// Stamp never verifies.
func (s *Stamp) Verify(payload []byte) error {
	digest := sha256.Sum256(payload)
	if s == nil || s.publicKey == nil || !ecdsa.VerifyASN1(s.publicKey, digest[:], s.signature) {
		return apierror.New(apierror.WalletSignatureInvalid, "wallet signature does not verify over the payload").
			WithDetail("reason", "signature does not verify")
	}
	return nil
}

// PublicKey returns the P-256 key named in the stamp (nil for a nil or zero
// Stamp). The caller must not modify it.
func (s *Stamp) PublicKey() *ecdsa.PublicKey {
	if s == nil {
		return nil
	}
	return s.publicKey
}

// Signature returns a copy of the DER-encoded signature.
func (s *Stamp) Signature() []byte {
	if s == nil {
		return nil
	}
	return bytes.Clone(s.signature)
}

// SignedBy reports whether the stamp names pub as its key, comparing curve
// points (a compressed and an uncompressed encoding of one key are the same
// signer). It is false for a nil key or a key on another curve. It does not
// verify the signature; call [Stamp.Verify] as well.
func (s *Stamp) SignedBy(pub *ecdsa.PublicKey) bool {
	if s == nil || s.publicKey == nil || pub == nil || pub.Curve != elliptic.P256() {
		return false
	}
	a, err1 := s.publicKey.Bytes()
	b, err2 := pub.Bytes()
	return err1 == nil && err2 == nil && bytes.Equal(a, b)
}

// ParsePublicKey decodes a hex SEC1 P-256 public key, compressed (66 hex
// characters, prefix 02 or 03) or uncompressed (130 characters, prefix 04),
// either letter case. The point must be on the curve. Any other input is
// 400 INVALID_INPUT whose message and details.reason name the problem.
func ParsePublicKey(hexKey string) (*ecdsa.PublicKey, error) {
	pub, problem := parsePublicKey(hexKey)
	if problem != "" {
		return nil, apierror.New(apierror.InvalidInput, "public key %s", problem).WithDetail("reason", "public key "+problem)
	}
	return pub, nil
}

// CompressedHex returns the compressed SEC1 encoding of a P-256 public key as
// 66 lowercase hex characters, the form stamps carry. A nil key, a key on
// another curve or an invalid point is 400 INVALID_INPUT.
func CompressedHex(pub *ecdsa.PublicKey) (string, error) {
	if pub == nil || pub.Curve != elliptic.P256() {
		return "", apierror.New(apierror.InvalidInput, "public key must be a P-256 key")
	}
	u, err := pub.Bytes()
	if err != nil || len(u) != 65 {
		return "", apierror.New(apierror.InvalidInput, "public key is not a valid P-256 point")
	}
	c := make([]byte, 33)
	c[0] = 0x02 | u[64]&1
	copy(c[1:], u[1:33])
	return hex.EncodeToString(c), nil
}

// parsePublicKey returns the key, or a phrase completing "public key ..." that
// names the problem.
func parsePublicKey(s string) (*ecdsa.PublicKey, string) {
	switch len(s) {
	case 66, 130:
	case 0:
		return nil, "is empty"
	default:
		return nil, "must be 66 (compressed) or 130 (uncompressed) hex characters"
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		return nil, "is not valid hex"
	}
	if len(b) == 33 {
		if b[0] != 0x02 && b[0] != 0x03 {
			return nil, "in compressed form must start with 02 or 03"
		}
		x, y := elliptic.UnmarshalCompressed(elliptic.P256(), b)
		if x == nil {
			return nil, "is not a point on P-256"
		}
		b = make([]byte, 65)
		b[0] = 0x04
		x.FillBytes(b[1:33])
		y.FillBytes(b[33:])
	} else if b[0] != 0x04 {
		return nil, "in uncompressed form must start with 04"
	}
	pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), b)
	if err != nil {
		return nil, "is not a point on P-256"
	}
	return pub, ""
}

// decodeBase64URL decodes base64url, padded or not. Strict decoding rejects
// non-zero trailing bits, so one stamp has exactly two spellings (with and
// without padding). Go's decoder skips CR and LF; they are rejected first.
func decodeBase64URL(s string) ([]byte, error) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '=') {
			return nil, malformed("header value has a character outside the base64url alphabet")
		}
	}
	enc := base64.RawURLEncoding.Strict()
	if len(s) > 0 && s[len(s)-1] == '=' {
		enc = base64.URLEncoding.Strict()
	}
	raw, err := enc.DecodeString(s)
	if err != nil {
		return nil, malformed("header value is not valid base64url")
	}
	return raw, nil
}

// decodeStampJSON reads exactly one JSON object and its three members,
// rejecting repeated or non-string members; other members are skipped.
// The object every client sends (string members only, none of them
// escaped) is read by [decodePlainStamp] in one pass; anything else, and
// every failure, is left to the token-by-token reading, whose answers are
// the errors.
func decodeStampJSON(raw []byte) (stampWire, error) {
	if w, ok := decodePlainStamp(raw); ok {
		return w, nil
	}
	return decodeStampTokens(raw)
}

// decodePlainStamp reads raw when it is one JSON object (whitespace
// allowed around it and its tokens) whose members, names and values alike,
// are strings without escapes or control characters and in valid UTF-8,
// with publicKey, scheme and signature each present once. Those strings
// are exactly what encoding/json would decode, so the result is
// decodeStampTokens's. It reports false for anything else, leaving the
// input (valid or not) to decodeStampTokens.
func decodePlainStamp(raw []byte) (stampWire, bool) {
	var w stampWire
	var seen [3]bool
	i := skipJSONSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return w, false
	}
	i = skipJSONSpace(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		return w, false // no members: decodeStampTokens names the missing one
	}
	for {
		name, next, ok := plainJSONString(raw, i)
		if !ok {
			return w, false
		}
		i = skipJSONSpace(raw, next)
		if i >= len(raw) || raw[i] != ':' {
			return w, false
		}
		value, next, ok := plainJSONString(raw, skipJSONSpace(raw, i+1))
		if !ok {
			return w, false
		}
		var k int
		switch string(name) {
		case "publicKey":
			k = 0
		case "scheme":
			k = 1
		case "signature":
			k = 2
		default:
			k = -1
		}
		if k >= 0 {
			if seen[k] {
				return w, false
			}
			seen[k] = true
			switch k {
			case 0:
				w.PublicKey = string(value)
			case 1:
				w.Scheme = string(value)
			case 2:
				w.Signature = string(value)
			}
		}
		i = skipJSONSpace(raw, next)
		if i >= len(raw) {
			return w, false
		}
		if raw[i] == '}' {
			break
		}
		if raw[i] != ',' {
			return w, false
		}
		i = skipJSONSpace(raw, i+1)
	}
	if skipJSONSpace(raw, i+1) != len(raw) || !seen[0] || !seen[1] || !seen[2] {
		return w, false
	}
	return w, true
}

// skipJSONSpace returns the index of the first byte at or after i that is
// not JSON whitespace (space, tab, newline, carriage return).
func skipJSONSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// plainJSONString reads the JSON string starting at b[i] when it has no
// escape and no control character and is valid UTF-8, returning its
// contents and the index after its closing quote; ok is false otherwise.
func plainJSONString(b []byte, i int) (s []byte, next int, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, 0, false
	}
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			s = b[i+1 : j]
			return s, j + 1, utf8.Valid(s)
		case c == '\\' || c < 0x20:
			return nil, 0, false
		}
	}
	return nil, 0, false
}

// decodeStampTokens is decodeStampJSON read token by token with
// encoding/json, for every input.
func decodeStampTokens(raw []byte) (stampWire, error) {
	var w stampWire
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return w, malformed("decoded header is not a JSON object")
	}
	seen := make(map[string]bool, 3)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return w, malformed("decoded header is not valid JSON")
		}
		name, _ := tok.(string)
		var dst *string
		switch name {
		case "publicKey":
			dst = &w.PublicKey
		case "scheme":
			dst = &w.Scheme
		case "signature":
			dst = &w.Signature
		}
		if dst == nil {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return w, malformed("decoded header is not valid JSON")
			}
			continue
		}
		if seen[name] {
			return w, malformed("member " + name + " appears more than once")
		}
		seen[name] = true
		tok, err = dec.Token()
		if err != nil {
			return w, malformed("decoded header is not valid JSON")
		}
		str, ok := tok.(string)
		if !ok {
			return w, malformed("member " + name + " is not a string")
		}
		*dst = str
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return w, malformed("decoded header is not valid JSON")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return w, malformed("decoded header has data after the JSON object")
	}
	for _, name := range []string{"publicKey", "scheme", "signature"} {
		if !seen[name] {
			return w, malformed("member " + name + " is missing")
		}
	}
	return w, nil
}

// parseDERSignature hex-decodes s and checks it is the one DER encoding of
// SEQUENCE{INTEGER r, INTEGER s} with r and s in [1, n-1].
func parseDERSignature(s string) ([]byte, error) {
	if len(s) < 2*minDERSignatureBytes || len(s) > 2*maxDERSignatureBytes {
		return nil, malformed("signature must be 16 to 144 hex characters")
	}
	der, err := hex.DecodeString(s)
	if err != nil {
		return nil, malformed("signature is not valid hex")
	}
	// cryptobyte reads strict DER (minimal lengths and integers, nothing
	// trailing), the form crypto/ecdsa itself parses.
	var r, sv big.Int
	input, inner := cryptobyte.String(der), cryptobyte.String(nil)
	if !input.ReadASN1(&inner, casn1.SEQUENCE) || !input.Empty() ||
		!inner.ReadASN1Integer(&r) || !inner.ReadASN1Integer(&sv) || !inner.Empty() {
		return nil, malformed("signature is not a DER ECDSA signature")
	}
	rs := struct{ R, S *big.Int }{&r, &sv}
	n := elliptic.P256().Params().N
	if rs.R.Sign() <= 0 || rs.R.Cmp(n) >= 0 {
		return nil, malformed("signature r is outside [1, n-1]")
	}
	if rs.S.Sign() <= 0 || rs.S.Cmp(n) >= 0 {
		return nil, malformed("signature s is outside [1, n-1]")
	}
	return der, nil
}

// malformed returns 401 WALLET_SIGNATURE_MALFORMED naming the failed check.
func malformed(reason string) *apierror.Error {
	return apierror.New(apierror.WalletSignatureMalformed, "malformed wallet signature: %s", reason).
		WithDetail("reason", reason)
}

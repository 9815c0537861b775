package signedretry

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strings"

	"golang.org/x/crypto/cryptobyte"
	casn1 "golang.org/x/crypto/cryptobyte/asn1"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/signedretry/stamper"
)

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
// @turnkey/api-key-stamper and [stamper.NewStamp] write them.
type stampWire struct {
	PublicKey string `json:"publicKey"`
	Scheme    string `json:"scheme"`
	Signature string `json:"signature"`
}

// ParseStamp decodes a Service-Wallet-Signature header value. It accepts
// base64url with or without padding; a JSON object, read as
// [apierror.DecodeBytes] reads every outside input (valid UTF-8, no
// unpaired surrogate escape, no two member names alike or alike but for
// case at any depth), whose members publicKey, scheme and signature are
// strings, in any order, with unknown members ignored (member names are
// matched exactly, case included); a publicKey in compressed (66 hex) or
// uncompressed (130 hex) SEC1 form that is a point on P-256; and a
// signature in strict DER whatever its S half (high-S is valid).
//
// Every other input is 401 WALLET_SIGNATURE_MALFORMED whose message and
// details.reason name the failed check: a value longer than [MaxStampBytes],
// characters outside the base64url alphabet, wrong padding, a payload that is
// not exactly one JSON object or that DecodeBytes refuses, a missing,
// repeated or non-string member, a
// scheme other than [stamper.SchemeP256], bad hex, a key off the curve, and a
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
	if w.Scheme != stamper.SchemeP256 {
		return nil, malformed("scheme is not " + stamper.SchemeP256)
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

// decodeStampJSON reads raw, which must be one JSON object, as every
// outside input is read ([apierror.DecodeBytes]: strictly, member names
// case-sensitive, unknown members ignored) and names the failed check of a
// refused object: data after it, one of its three members repeated, not a
// string or missing (a member spelled only in another case is missing).
// Everything else DecodeBytes refuses is "decoded header is not valid
// JSON".
func decodeStampJSON(raw []byte) (stampWire, error) {
	var w stampWire
	if i := bytes.IndexFunc(raw, notJSONSpace); i < 0 || raw[i] != '{' {
		return w, malformed("decoded header is not a JSON object")
	}
	if err := apierror.DecodeBytes(raw, &w); err != nil {
		return w, stampJSONError(err)
	}
	if w.PublicKey != "" && w.Scheme != "" && w.Signature != "" {
		return w, nil
	}
	// An empty value is an empty string, a null or no member at all.
	// DecodeBytes accepted raw, so it accepts it into raw values too.
	var present struct {
		PublicKey json.RawMessage `json:"publicKey"`
		Scheme    json.RawMessage `json:"scheme"`
		Signature json.RawMessage `json:"signature"`
	}
	if err := apierror.DecodeBytes(raw, &present); err != nil {
		return w, stampJSONError(err)
	}
	for _, m := range []struct {
		name string
		raw  json.RawMessage
	}{{"publicKey", present.PublicKey}, {"scheme", present.Scheme}, {"signature", present.Signature}} {
		switch {
		case m.raw == nil:
			return w, malformed("member " + m.name + " is missing")
		case m.raw[0] != '"':
			return w, malformed("member " + m.name + " is not a string")
		}
	}
	return w, nil
}

// stampMembers are the members of a stamp object, as stampWire names them.
var stampMembers = []string{"publicKey", "scheme", "signature"}

// stampJSONError names the check of a stamp object that DecodeBytes
// refused with err.
func stampJSONError(err error) error {
	e := apierror.As(err)
	if e == nil {
		return malformed("decoded header is not valid JSON")
	}
	switch e.Reason() {
	case "data after the JSON value":
		return malformed("decoded header has data after the JSON object")
	case "duplicate member name":
		if name, _ := e.Details["member"].(string); slices.Contains(stampMembers, name) {
			return malformed("member " + name + " appears more than once")
		}
	}
	if fe := e.FieldErrors(); len(fe) == 1 {
		for _, name := range stampMembers {
			switch {
			case fe[0].Field == name:
				return malformed("member " + name + " is not a string")
			case strings.EqualFold(fe[0].Field, name):
				return malformed("member " + name + " is missing")
			}
		}
	}
	return malformed("decoded header is not valid JSON")
}

// notJSONSpace reports whether r is not JSON whitespace (space, tab,
// newline, carriage return).
func notJSONSpace(r rune) bool {
	return r != ' ' && r != '\t' && r != '\n' && r != '\r'
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

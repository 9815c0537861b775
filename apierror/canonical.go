package apierror

import (
	"errors"

	"github.com/walletgate/walletgate/apierror/internal/canonjson"
)

// Limits of [Canonicalize]. They bound its cost and the cost of whatever later
// decodes the same body; no payments request comes near them. They are the
// limits the canonicalizer enforces (a test holds the two equal).
const (
	// MaxCanonicalDepth is the deepest nesting of arrays and objects accepted;
	// the top-level container is depth 1.
	MaxCanonicalDepth = 64
	// MaxNumberLength is the longest number literal accepted, in bytes.
	MaxNumberLength = 512
	// MaxNumberExponent bounds the magnitude of numbers: written in
	// scientific notation d.ddd×10^x, a non-zero number needs |x| at most
	// this. Zero may be written with any exponent up to this plus
	// MaxNumberLength.
	MaxNumberExponent = 9999
)

// Canonicalize returns the canonical form of a JSON request body, so that two
// bodies holding the same JSON value give identical bytes and bodies holding
// different values give different bytes.
//
// The canonical form is compact JSON (no whitespace) that follows RFC 8785
// (JCS) except for numbers:
//
//   - Object members are sorted by their names compared as UTF-16 code units,
//     as RFC 8785 orders them. Names are compared after unescaping, so "a" and
//     "\u0061" are the same name.
//   - Strings are written as UTF-8 with the escapes \" \\ \b \f \n \r \t and
//     \u00xx (lowercase) for other control characters, and nothing else
//     escaped: "\u0041" and "A" canonicalize alike, as do "\/" and "/".
//   - Numbers are compared exactly, as decimals, never through float64: 1,
//     1.0, 10e-1 and 1e0 all become 1, -0 becomes 0, while 9007199254740993
//     and 9007199254740992 stay distinct. The decimal digits, stripped of
//     leading and trailing zeros, are laid out as ECMAScript's
//     Number::toString lays out a double's shortest digits (plain notation
//     for exponents up to 21, otherwise d.ddde+x), so a number whose digits
//     are already a double's shortest form is written as RFC 8785 writes it.
//   - true, false and null are copied.
//
// An empty body, or one of only whitespace, is a request without a body and
// canonicalizes to empty output. Everything else must be exactly one JSON
// value (RFC 8259), with no byte-order mark and no trailing data.
//
// Rejected with 400 INVALID_INPUT, whose message and details.reason name the
// problem and details.offset its byte offset: malformed JSON, invalid UTF-8,
// an escaped surrogate that is not part of a pair (it has no UTF-8 form), an
// object with two members of the same name or with two names that differ only
// in case ("a" and "A", "k" and the Kelvin sign; details.member is the later
// name, unescaped), nesting deeper than
// [MaxCanonicalDepth], a number literal longer than [MaxNumberLength] bytes,
// and a number whose magnitude is outside the range [MaxNumberExponent] sets.
// The output of Canonicalize is always accepted by it again, unchanged. Cost
// is linear in the input size times the nesting depth; the output is never
// longer than the input by more than 20 bytes per number.
func Canonicalize(body []byte) ([]byte, error) {
	out, err := canonjson.Canonicalize(body)
	if err != nil {
		return nil, bodyError(err)
	}
	return out, nil
}

// bodyError turns a refusal of canonjson into 400 INVALID_INPUT: a syntax
// error with details.reason (the fixed phrase), details.offset and, for a
// repeated or case-colliding name, details.member, a member
// name that matches a field only under case folding as a field error naming
// the field, a member with no field (DecodeStored) as a field error naming
// the member.
func bodyError(err error) *Error {
	var se *canonjson.SyntaxError
	if errors.As(err, &se) {
		msg := se.Reason
		if se.Found != "" {
			msg += " " + se.Found
		}
		e := New(InvalidInput, "request body is not acceptable JSON: %s at offset %d", msg, se.Offset).
			WithDetail("reason", se.Reason).
			WithDetail("offset", se.Offset)
		if se.Member != "" {
			e = e.WithDetail("member", se.Member)
		}
		return e
	}
	var ne *canonjson.NameError
	if errors.As(err, &ne) {
		return InvalidField(ne.Path, nil, "unknown member: member names are case-sensitive; the field is "+ne.Field)
	}
	var ue *canonjson.UnknownMemberError
	if errors.As(err, &ue) {
		return InvalidField(ue.Path, nil, "unknown member")
	}
	return Internal(err)
}

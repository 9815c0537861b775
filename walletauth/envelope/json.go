package envelope

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/walletgate/walletgate/apierror"
)

// marshalCompact encodes v as compact JSON in struct field order, without
// escaping <, > and & and without a trailing newline: the bytes
// JavaScript's JSON.stringify gives for the same object, except that
// encoding/json always escapes U+2028 and U+2029 (JSON.parse reads both
// forms the same).
func marshalCompact(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// decodeObject decodes exactly one JSON object into dst the one way every
// outside input is read ([apierror.DecodeBytes]: member names matched
// case-sensitively, duplicate or case-colliding names refused, unknown members
// ignored). It reports false for anything else, including a JSON null.
//
// The two objects of an OTP attempt ([clientMessage], [otpPayload]) are
// first tried by [decodePlainObject], which reads in one pass the inputs
// on which DecodeBytes's answer is plain to see and gives that answer,
// leaving every other input to DecodeBytes.
func decodeObject(data []byte, dst any) bool {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return false
	}
	switch d := dst.(type) {
	case *clientMessage:
		if decodePlainObject(data, [2]string{"encappedPublic", "ciphertext"}, [2]*string{&d.EncappedPublic, &d.Ciphertext}) {
			return true
		}
	case *otpPayload:
		if decodePlainObject(data, [2]string{"otp_code", "public_key"}, [2]*string{&d.OTPCode, &d.PublicKey}) {
			return true
		}
	}
	return apierror.DecodeBytes(data, dst) == nil
}

// maxPlainMembers bounds the members decodePlainObject reads; a longer
// object goes to DecodeBytes.
const maxPlainMembers = 8

// decodePlainObject fills the string fields named names (ASCII JSON
// names of a struct whose fields they all are) from data, one object, when
// every member's name is ASCII and every name and value a JSON string
// without escapes or control characters, in valid UTF-8, and no two names
// are equal under ASCII case folding, nor equal a field's name only under
// it. On such input apierror.DecodeBytes decodes exactly this (the
// canonical form of such strings is the strings themselves; there are no
// duplicate, case-colliding or case-folded names for it to refuse; unknown
// members are ignored) and cannot fail. It reports false for any other
// input, leaving it, and dst, to DecodeBytes.
func decodePlainObject(data []byte, names [2]string, dst [2]*string) bool {
	var (
		vals  [2]string
		seen  [maxPlainMembers][]byte
		count int
	)
	i := skipSpace(data, 1) // data[0] is '{'
	if i >= len(data) || data[i] == '}' {
		return false
	}
	for {
		name, next, ok := plainString(data, i)
		if !ok || count == maxPlainMembers || !isASCII(name) {
			return false
		}
		for _, prev := range seen[:count] {
			if bytes.EqualFold(prev, name) {
				return false // duplicate or case-colliding: DecodeBytes refuses it
			}
		}
		seen[count] = name
		count++
		i = skipSpace(data, next)
		if i >= len(data) || data[i] != ':' {
			return false
		}
		value, next, ok := plainString(data, skipSpace(data, i+1))
		if !ok {
			return false
		}
		for k, field := range names {
			if string(name) == field {
				vals[k] = string(value)
			} else if strings.EqualFold(string(name), field) {
				return false // a case-folded field name: DecodeBytes names it
			}
		}
		i = skipSpace(data, next)
		if i >= len(data) {
			return false
		}
		if data[i] == '}' {
			break
		}
		if data[i] != ',' {
			return false
		}
		i = skipSpace(data, i+1)
	}
	if i+1 != len(data) {
		return false // data was trimmed, so anything after the object is data
	}
	for k := range dst {
		*dst[k] = vals[k]
	}
	return true
}

// skipSpace returns the index of the first byte at or after i that is not
// JSON whitespace (space, tab, newline, carriage return).
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// plainString reads the JSON string starting at b[i] when it has no escape
// and no control character and is valid UTF-8, returning its contents and
// the index after its closing quote; ok is false otherwise.
func plainString(b []byte, i int) (s []byte, next int, ok bool) {
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

// isASCII reports whether b is all ASCII.
func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

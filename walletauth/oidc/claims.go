package oidc

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/walletgate/walletgate/apierror"
)

// claimSet is a decoded JWT claim set, each value kept as its JSON text so
// that types are checked exactly (a string "1700000000" is not a NumericDate).
type claimSet map[string]json.RawMessage

// parseClaims decodes the payload, which must be one JSON object.
func parseClaims(payload []byte) (claimSet, *apierror.Error) {
	trimmed := bytes.TrimLeft(payload, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, notJWT("payload is not a JSON object")
	}
	// Read as every outside input is (apierror.DecodeBytes): a claim set
	// naming a claim twice, or in two cases, has no single reading and is
	// not a JWT. For a claimSet, DecodeBytes is the canonical form decoded
	// by encoding/json (a map has no field names to check); the members of
	// that form are taken here in one pass instead, the same strings and
	// the same value bytes (see FuzzParseClaims).
	canon, err := apierror.Canonicalize(payload)
	if err != nil {
		return nil, notJWT("payload is not a JSON object with unique claim names")
	}
	if c, ok := canonicalMembers(canon); ok {
		return c, nil
	}
	var c claimSet
	if err := apierror.DecodeBytes(payload, &c); err != nil {
		return nil, notJWT("payload is not a JSON object with unique claim names")
	}
	return c, nil
}

// canonicalMembers splits a canonical JSON object (apierror.Canonicalize's
// output: compact, valid, member names unique) into its members, each value
// kept as its canonical text, as json.Unmarshal into a claimSet would. It
// reports false for anything but an object, leaving it to the decoder.
func canonicalMembers(canon []byte) (claimSet, bool) {
	if len(canon) < 2 || canon[0] != '{' {
		return nil, false
	}
	c := claimSet{}
	i := 1
	if canon[i] == '}' {
		return c, i+1 == len(canon)
	}
	for {
		end, escaped := canonicalStringEnd(canon, i)
		if end < 0 || end >= len(canon) || canon[end] != ':' {
			return nil, false
		}
		var name string
		if escaped {
			if json.Unmarshal(canon[i:end], &name) != nil {
				return nil, false
			}
		} else {
			name = string(canon[i+1 : end-1])
		}
		start := end + 1
		stop := canonicalValueEnd(canon, start)
		if stop < 0 || stop >= len(canon) {
			return nil, false
		}
		c[name] = json.RawMessage(canon[start:stop:stop])
		switch canon[stop] {
		case '}':
			return c, stop+1 == len(canon)
		case ',':
			i = stop + 1
		default:
			return nil, false
		}
	}
}

// canonicalStringEnd returns the index after the JSON string that starts at
// b[i] and whether it holds an escape; -1 when b[i] starts no string.
func canonicalStringEnd(b []byte, i int) (int, bool) {
	if i >= len(b) || b[i] != '"' {
		return -1, false
	}
	escaped := false
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			escaped = true
			j++
		case '"':
			return j + 1, escaped
		}
	}
	return -1, false
}

// canonicalValueEnd returns the index after the compact JSON value that
// starts at b[i], or -1.
func canonicalValueEnd(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		end, _ := canonicalStringEnd(b, i)
		return end
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end, _ := canonicalStringEnd(b, j)
				if end < 0 {
					return -1
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	// A number or a literal: compact, so it ends at , } ] or the end.
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' {
		j++
	}
	if j == i {
		return -1
	}
	return j
}

// present reports whether name is set to something other than null.
func (c claimSet) present(name string) bool {
	raw, ok := c[name]
	return ok && !bytes.Equal(raw, []byte("null"))
}

// str returns the claim as a string and whether it is a JSON string.
func (c claimSet) str(name string) (string, bool) {
	raw, ok := c[name]
	if !ok || len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	if s, ok := plainString(raw); ok {
		return s, true
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false
	}
	return s, true
}

// plainString returns the contents of a JSON string that has no escape, no
// control character and only valid UTF-8, which json.Unmarshal would return
// unchanged; ok is false for any other text, which json.Unmarshal then reads.
func plainString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	body := raw[1 : len(raw)-1]
	for _, b := range body {
		if b == '"' || b == '\\' || b < 0x20 {
			return "", false
		}
	}
	if !utf8.Valid(body) {
		return "", false
	}
	return string(body), true
}

// Bounds of a NumericDate: values outside are clamped, which keeps every
// comparison with a real clock correct (1e300 is far future, -5 is 1970).
const (
	minUnix = 0
	maxUnix = 253402300799 // 9999-12-31T23:59:59Z
)

// numericDate returns the claim as a time when it is a JSON number; ok is
// false when it is any other JSON type.
func (c claimSet) numericDate(name string) (t time.Time, ok bool) {
	raw := c[name]
	if len(raw) == 0 || !(raw[0] == '-' || '0' <= raw[0] && raw[0] <= '9') {
		return time.Time{}, false
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil && !isRangeError(err) {
		return time.Time{}, false
	}
	f = math.Max(minUnix, math.Min(maxUnix, f)) // also maps ±Inf from a range error
	sec := math.Floor(f)
	return time.Unix(int64(sec), int64((f-sec)*1e9)).UTC(), true
}

// isRangeError reports whether err is strconv's out-of-range error, whose
// value is still a correctly signed infinity.
func isRangeError(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// audience returns the single audience: aud must be a non-empty string or an
// array of exactly one non-empty string.
func (c claimSet) audience() (string, *apierror.Error) {
	if !c.present("aud") {
		return "", rejected(reasonAudMissing)
	}
	if s, ok := c.str("aud"); ok {
		if s == "" {
			return "", rejected(reasonAudMalformed)
		}
		return s, nil
	}
	var list []json.RawMessage
	if err := json.Unmarshal(c["aud"], &list); err != nil || len(list) != 1 {
		return "", rejected(reasonAudMalformed)
	}
	one := claimSet{"aud": list[0]}
	s, ok := one.str("aud")
	if !ok || s == "" {
		return "", rejected(reasonAudMalformed)
	}
	return s, nil
}

// emailVerified reads email_verified as the boolean true or the string "true".
func (c claimSet) emailVerified() bool {
	raw := bytes.TrimSpace(c["email_verified"])
	return bytes.Equal(raw, []byte("true")) || bytes.Equal(raw, []byte(`"true"`))
}

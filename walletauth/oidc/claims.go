package oidc

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"time"

	"github.com/walletgate/walletgate/apierror"
)

// claimSet is a decoded JWT claim set, each value kept as its JSON text so
// that types are checked exactly (a string "1700000000" is not a NumericDate).
type claimSet map[string]json.RawMessage

// parseClaims decodes the payload, which must be one JSON object, as every
// outside input is read (apierror.DecodeBytes): a claim set naming a claim
// twice, or in two cases, has no single reading and is not a JWT. Each
// claim keeps its canonical text.
func parseClaims(payload []byte) (claimSet, *apierror.Error) {
	trimmed := bytes.TrimLeft(payload, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, notJWT("payload is not a JSON object")
	}
	var c claimSet
	if err := apierror.DecodeBytes(payload, &c); err != nil {
		return nil, notJWT("payload is not a JSON object with unique claim names")
	}
	return c, nil
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
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false
	}
	return s, true
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

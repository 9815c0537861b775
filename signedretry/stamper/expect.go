package stamper

import (
	"bytes"
	"crypto/ecdsa"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/storage"
)

// MaxPayloadBytes bounds the length of a payloadToSign [ParsePayload]
// accepts.
const MaxPayloadBytes = 1 << 20

// Payload is a parsed payloadToSign: the operation a stamp over it
// authorizes. A Payload returned by [ParsePayload] is well formed; whether it
// is the operation the client asked for is decided by [Expectation.Check].
type Payload struct {
	// Type names the operation, e.g. "REFRESH_SESSION".
	Type string
	// RequestID is "Request:<uuid>", the Request-Id of the retry.
	RequestID string
	// AccountID is the account the operation acts on.
	AccountID string
	// Parameters is the parameters object as the payload spells it.
	Parameters json.RawMessage
	// BodySHA256 is the lowercase hex SHA-256 of the canonical body of the
	// first call (see [BodyDigest]).
	BodySHA256 string
	// Timestamp is when the challenge was issued (timestampMs).
	Timestamp time.Time
	// ExpiresAt is when the challenge stops being accepted.
	ExpiresAt time.Time
}

// payloadMembers are the members of a payload, each required, no other
// allowed.
var payloadMembers = [...]string{"type", "requestId", "accountId", "parameters", "bodySha256", "timestampMs", "expiresAt"}

// ParsePayload decodes a payloadToSign strictly, one way: at most
// [MaxPayloadBytes] bytes of JSON that [apierror.Canonicalize] accepts (valid
// UTF-8, no repeated member names, none that differ only in case), exactly
// one object whose members are type, requestId, accountId, parameters,
// bodySha256, timestampMs and expiresAt, each present once and no other
// (names matched exactly, case included); type and accountId non-empty
// strings; requestId a string "Request:<uuid>"; parameters an object;
// bodySha256 64 lowercase hex digits; timestampMs a string of decimal digits
// without a leading zero that fits a millisecond Unix time; expiresAt an
// RFC 3339 string.
//
// Anything else is 400 INVALID_INPUT whose details.field is "payloadToSign"
// and whose message and details.reason name the failed check.
func ParsePayload(payloadToSign string) (*Payload, error) {
	if len(payloadToSign) > MaxPayloadBytes {
		return nil, badPayload(fmt.Sprintf("is longer than %d bytes", MaxPayloadBytes))
	}
	raw := []byte(payloadToSign)
	if _, err := apierror.Canonicalize(raw); err != nil {
		reason := "is not acceptable JSON"
		if e := apierror.As(err); e != nil && e.Reason() != "" {
			reason += ": " + e.Reason()
		}
		return nil, badPayload(reason)
	}
	var members map[string]json.RawMessage
	if trimmed := bytes.TrimSpace(raw); len(trimmed) == 0 || trimmed[0] != '{' || json.Unmarshal(raw, &members) != nil {
		return nil, badPayload("is not a JSON object")
	}
	for name := range members {
		known := false
		for _, m := range payloadMembers {
			known = known || name == m
		}
		if !known {
			return nil, badPayload("has an unknown member " + strconv.Quote(name))
		}
	}
	for _, m := range payloadMembers {
		if _, ok := members[m]; !ok {
			return nil, badPayload("member " + m + " is missing")
		}
	}
	str := func(name string) (string, error) {
		v := bytes.TrimSpace(members[name])
		var s string
		if len(v) == 0 || v[0] != '"' || json.Unmarshal(v, &s) != nil {
			return "", badPayload("member " + name + " is not a string")
		}
		return s, nil
	}
	var p Payload
	var err error
	if p.Type, err = str("type"); err != nil {
		return nil, err
	}
	if p.Type == "" {
		return nil, badPayload("member type is empty")
	}
	if p.RequestID, err = str("requestId"); err != nil {
		return nil, err
	}
	if !storage.ValidID(p.RequestID, "Request") {
		return nil, badPayload(`member requestId is not "Request:<uuid>"`)
	}
	if p.AccountID, err = str("accountId"); err != nil {
		return nil, err
	}
	if p.AccountID == "" {
		return nil, badPayload("member accountId is empty")
	}
	params := bytes.TrimSpace(members["parameters"])
	if len(params) == 0 || params[0] != '{' {
		return nil, badPayload("member parameters is not a JSON object")
	}
	p.Parameters = bytes.Clone(params)
	if p.BodySHA256, err = str("bodySha256"); err != nil {
		return nil, err
	}
	if !lowerHex(p.BodySHA256, 64) {
		return nil, badPayload("member bodySha256 is not 64 lowercase hex digits")
	}
	ts, err := str("timestampMs")
	if err != nil {
		return nil, err
	}
	ms, ok := decimal(ts)
	if !ok {
		return nil, badPayload("member timestampMs is not a decimal millisecond time")
	}
	p.Timestamp = time.UnixMilli(ms).UTC()
	exp, err := str("expiresAt")
	if err != nil {
		return nil, err
	}
	if p.ExpiresAt, err = time.Parse(time.RFC3339Nano, exp); err != nil {
		return nil, badPayload("member expiresAt is not an RFC 3339 time")
	}
	return &p, nil
}

// Expectation is what a client knows about a signed operation it started,
// checked against the payloadToSign of the 202 before it stamps it. The
// payload names no method or path: the route is bound by the Type the
// route's operation has, by the Parameters (which carry the ids of the
// path, such as the session or credential acted on, and every value the
// operation will use) and by the digest of the Body the client sent.
type Expectation struct {
	// Type is the operation of the route called, e.g. "REFRESH_SESSION"
	// for POST /auth/sessions/{id}/refresh. Required.
	Type string
	// AccountID is the account the client acts on. Required.
	AccountID string
	// Body is the body of the first call, byte for byte as sent (nil or
	// empty for a call without a body). The payload's bodySha256 must be
	// its [BodyDigest].
	Body []byte
	// Parameters is the parameters object the client expects: a value that
	// marshals to a JSON object (a json.RawMessage or []byte is taken as
	// JSON text). The payload's parameters must be the same JSON value:
	// member order, white space, string escapes and the spelling of numbers
	// aside, no member more or less and no value different. Nil means {}.
	Parameters any
	// Now is the time the expiry is judged at; zero means time.Now().
	Now time.Time
}

// Check parses payloadToSign with [ParsePayload] and checks it is the
// operation e describes, in this order: its type is e.Type, its accountId is
// e.AccountID, its bodySha256 is the [BodyDigest] of e.Body, its parameters
// equal e.Parameters as JSON values (see [Expectation.Parameters]), and its
// expiresAt is after e.Now. It returns the parsed payload, whose RequestID is
// the Request-Id to retry with.
//
// A payload that does not parse is ParsePayload's 400 INVALID_INPUT. A
// payload that parses but is not the expected operation is 401 UNAUTHORIZED
// whose details.check names the failed check ("type", "accountId",
// "bodySha256", "parameters", "expiresAt") and whose message and
// details.reason say what was found. An Expectation without Type or
// AccountID, a Body that is not JSON or Parameters that are not a JSON
// object are the caller's mistakes: 400 INVALID_INPUT naming the field of
// Expectation. Check never accepts what it cannot compare.
func (e Expectation) Check(payloadToSign string) (*Payload, error) {
	if e.Type == "" || e.AccountID == "" {
		return nil, apierror.New(apierror.InvalidInput, "stamper: Expectation.Type and Expectation.AccountID are required").
			WithDetail("field", "Expectation")
	}
	digest, err := BodyDigest(e.Body)
	if err != nil {
		return nil, apierror.New(apierror.InvalidInput, "stamper: Expectation.Body is not a JSON body: %s", apierror.As(err).Message).
			WithDetail("field", "Expectation.Body")
	}
	want, err := expectedParameters(e.Parameters)
	if err != nil {
		return nil, err
	}
	p, err := ParsePayload(payloadToSign)
	if err != nil {
		return nil, err
	}
	switch {
	case p.Type != e.Type:
		return nil, refused("type", fmt.Sprintf("the payload is a %s operation, not %s", strconv.Quote(p.Type), strconv.Quote(e.Type)))
	case p.AccountID != e.AccountID:
		return nil, refused("accountId", "the payload acts on another account")
	case p.BodySHA256 != hex.EncodeToString(digest[:]):
		return nil, refused("bodySha256", "the payload binds another body than the one sent")
	}
	got, err := apierror.Canonicalize(p.Parameters)
	if err != nil || !bytes.Equal(got, want) {
		return nil, refused("parameters", "the payload's parameters "+truncate(string(got), 512)+" are not the expected "+truncate(string(want), 512))
	}
	now := e.Now
	if now.IsZero() {
		now = time.Now()
	}
	if !now.Before(p.ExpiresAt) {
		return nil, refused("expiresAt", "the payload expired at "+p.ExpiresAt.Format(time.RFC3339Nano))
	}
	return p, nil
}

// Stamp checks payloadToSign with [Expectation.Check] and, only when it
// passes, stamps it byte for byte with key ([NewStamp]). It returns the
// Service-Wallet-Signature value and the parsed payload (retry with its
// RequestID). On any error nothing is stamped.
func (e Expectation) Stamp(key *ecdsa.PrivateKey, payloadToSign string) (string, *Payload, error) {
	p, err := e.Check(payloadToSign)
	if err != nil {
		return "", nil, err
	}
	stamp, err := NewStamp(key, []byte(payloadToSign))
	if err != nil {
		return "", nil, err
	}
	return stamp, p, nil
}

// expectedParameters returns the canonical form of the expected parameters.
func expectedParameters(v any) ([]byte, error) {
	var raw []byte
	switch p := v.(type) {
	case nil:
		raw = []byte(`{}`)
	case json.RawMessage:
		raw = p
	case []byte:
		raw = p
	default:
		b, err := json.Marshal(p)
		if err != nil {
			return nil, apierror.New(apierror.InvalidInput, "stamper: Expectation.Parameters does not marshal to JSON: %v", err).
				WithDetail("field", "Expectation.Parameters")
		}
		raw = b
	}
	canon, err := apierror.Canonicalize(raw)
	if err != nil || len(canon) == 0 || canon[0] != '{' {
		return nil, apierror.New(apierror.InvalidInput, "stamper: Expectation.Parameters is not a JSON object").
			WithDetail("field", "Expectation.Parameters")
	}
	return canon, nil
}

// badPayload is 400 INVALID_INPUT on the payloadToSign naming the check.
func badPayload(reason string) *apierror.Error {
	reason = "payloadToSign " + reason
	return apierror.InvalidField("payloadToSign", nil, reason).WithDetail("reason", reason)
}

// refused is the 401 of a payload that is not the operation the client
// asked for: details.check names the check, details.reason what was found.
func refused(check, reason string) *apierror.Error {
	return apierror.New(apierror.Unauthorized, "refusing to stamp the payload: %s: %s", check, reason).
		WithDetail("check", check).WithDetail("reason", reason)
}

func lowerHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// decimal parses a non-negative decimal without sign or leading zero.
func decimal(s string) (int64, bool) {
	if s == "" || len(s) > 1 && s[0] == '0' {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

package webhooksig

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/walletgate/walletgate/apierror"
)

// Defaults of [VerifierConfig].
const (
	// DefaultMaxBodyBytes is the largest body a Verifier reads: 1 MiB.
	DefaultMaxBodyBytes = 1 << 20
	// DefaultFreshnessWindow is how old a delivery's timestamp may be: as
	// long as storage/relay tries an event (its DefaultMaxAge), so every
	// retry of a delivery still verifies.
	DefaultFreshnessWindow = 72 * time.Hour
	// MaxClockSkew is how far in the future of the receiver's clock a
	// delivery's timestamp may be.
	MaxClockSkew = 5 * time.Minute
)

// Reason names the check a delivery failed. Reasons are fixed phrases, fit
// for logs and for a receiver's error responses.
type Reason string

// Reasons of a [*VerifyError], with the HTTP status a receiver should answer.
const (
	// ReasonSignatureMissing: no X-Grid-Signature header (401).
	ReasonSignatureMissing Reason = "signature header missing"
	// ReasonHeaderRepeated: X-Grid-Signature or X-Grid-Webhook-Id appears
	// more than once (400).
	ReasonHeaderRepeated Reason = "header repeated"
	// ReasonHeaderMalformed: the X-Grid-Signature value is too long, not a
	// JSON object, has duplicate, missing or unknown members, or a
	// signature that is not a string (400).
	ReasonHeaderMalformed Reason = "signature header malformed"
	// ReasonVersionUnsupported: version is not the number 1 (400).
	ReasonVersionUnsupported Reason = "signature version unsupported"
	// ReasonSignatureEncoding: the signature is not padded standard base64
	// in its one encoding (400).
	ReasonSignatureEncoding Reason = "signature not base64"
	// ReasonSignatureDER: the decoded signature is not the one DER encoding
	// of an ECDSA (r, s) with 1 <= r, s < n (400).
	ReasonSignatureDER Reason = "signature not DER"
	// ReasonSignatureInvalid: the signature does not verify over the body
	// with the sender's key (401).
	ReasonSignatureInvalid Reason = "signature invalid"
	// ReasonBodyTooLarge: the body is longer than MaxBodyBytes (413).
	ReasonBodyTooLarge Reason = "body too large"
	// ReasonBodyUnreadable: reading the body failed (400).
	ReasonBodyUnreadable Reason = "body unreadable"
	// ReasonEnvelopeMalformed: the signed body is not a valid envelope
	// {id, type, timestamp, data}: bad JSON, a duplicate member, a missing
	// member or one of the wrong type or shape (400).
	ReasonEnvelopeMalformed Reason = "envelope malformed"
	// ReasonStale: the envelope timestamp is outside the freshness window
	// (400). Retrying the same body cannot succeed.
	ReasonStale Reason = "timestamp outside freshness window"
	// ReasonIDMismatch: X-Grid-Webhook-Id differs from the signed id (400).
	ReasonIDMismatch Reason = "id header does not match body"
)

// Status returns the HTTP status a receiver should answer for a delivery
// refused for reason r: 401 for a missing or wrong signature, 413 for an
// oversized body, 400 for everything else.
func (r Reason) Status() int {
	switch r {
	case ReasonSignatureMissing, ReasonSignatureInvalid:
		return http.StatusUnauthorized
	case ReasonBodyTooLarge:
		return http.StatusRequestEntityTooLarge
	default:
		return http.StatusBadRequest
	}
}

// VerifyError is why a delivery was refused: the failed check (Reason), a
// message with the particulars, and the underlying error when there is one.
type VerifyError struct {
	// Reason is the failed check; Reason.Status() the answer to give.
	Reason Reason
	// Message gives the particulars (which member, which length); it may
	// be empty and never holds key material.
	Message string
	// Err is the underlying error, or nil.
	Err error
}

func verifyErr(reason Reason, msg string, cause error) *VerifyError {
	return &VerifyError{Reason: reason, Message: msg, Err: cause}
}

// Error returns "webhook: <reason>: <message>".
func (e *VerifyError) Error() string {
	if e.Message == "" {
		return "webhook: " + string(e.Reason)
	}
	return "webhook: " + string(e.Reason) + ": " + e.Message
}

// Unwrap returns the underlying error, if any.
func (e *VerifyError) Unwrap() error { return e.Err }

// Status is the HTTP status a receiver should answer: e.Reason.Status().
func (e *VerifyError) Status() int { return e.Reason.Status() }

// Delivery is a verified webhook.
type Delivery struct {
	// ID is the envelope id, "Webhook:<uuid>": the idempotency key.
	ID string
	// Type is the event type, e.g. EXTERNAL_ACCOUNT.STATUS_UPDATED.
	Type string
	// Timestamp is the event time.
	Timestamp time.Time
	// Data is the envelope's data object in canonical form (the one
	// strict decoding of the body: members sorted, no insignificant
	// whitespace); Body holds the bytes as signed.
	Data json.RawMessage
	// Body is the whole signed body.
	Body []byte
}

// VerifierConfig configures a [Verifier]. The zero value gives the defaults.
type VerifierConfig struct {
	// MaxBodyBytes limits the body [Verifier.Verify] reads; zero means
	// DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// FreshnessWindow is how old the envelope timestamp may be (it may
	// also be at most MaxClockSkew ahead of now); zero means
	// DefaultFreshnessWindow and a negative value switches the check off
	// (for receivers that remember every id they have processed for longer
	// than the sender retries).
	FreshnessWindow time.Duration
	// Clock is the clock of [Verifier.Verify]; nil means time.Now.
	Clock func() time.Time
}

// Verifier checks deliveries signed by one sender. It is safe for
// concurrent use.
type Verifier struct {
	key *ecdsa.PublicKey
	cfg VerifierConfig // normalized
}

// NewVerifier returns a Verifier for the sender's P-256 public key. It
// refuses a nil key, another curve, a point not on P-256 and negative
// MaxBodyBytes.
func NewVerifier(key *ecdsa.PublicKey, cfg VerifierConfig) (*Verifier, error) {
	if key == nil {
		return nil, errors.New("webhook: verifier key is nil")
	}
	if key.Curve != elliptic.P256() {
		return nil, fmt.Errorf("webhook: verifier key must be P-256, not %s", curveName(key.Curve))
	}
	if _, err := key.ECDH(); err != nil {
		return nil, fmt.Errorf("webhook: verifier key is not a P-256 point: %w", err)
	}
	if cfg.MaxBodyBytes < 0 {
		return nil, fmt.Errorf("webhook: MaxBodyBytes must not be negative, not %d", cfg.MaxBodyBytes)
	}
	if cfg.MaxBodyBytes == 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.FreshnessWindow == 0 {
		cfg.FreshnessWindow = DefaultFreshnessWindow
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	return &Verifier{key: key, cfg: cfg}, nil
}

// NewVerifierPEM is [NewVerifier] with the key as an SPKI PEM (see
// [ParsePublicKeyPEM]).
func NewVerifierPEM(publicKeyPEM []byte, cfg VerifierConfig) (*Verifier, error) {
	key, err := ParsePublicKeyPEM(publicKeyPEM)
	if err != nil {
		return nil, err
	}
	return NewVerifier(key, cfg)
}

// Verify reads r's body (at most MaxBodyBytes) and checks the delivery:
// exactly one X-Grid-Signature, then everything [Verifier.VerifyBytes]
// checks at the Verifier's clock, then, when X-Grid-Webhook-Id is present
// (at most once), that it equals the signed id. It does not close the body
// (the server does). Every failure is a *VerifyError.
func (v *Verifier) Verify(r *http.Request) (Delivery, error) {
	sigs := r.Header.Values(SignatureHeader)
	switch len(sigs) {
	case 0:
		return Delivery{}, verifyErr(ReasonSignatureMissing, "", nil)
	case 1:
	default:
		return Delivery{}, verifyErr(ReasonHeaderRepeated, SignatureHeader+" appears more than once", nil)
	}
	ids := r.Header.Values(IDHeader)
	if len(ids) > 1 {
		return Delivery{}, verifyErr(ReasonHeaderRepeated, IDHeader+" appears more than once", nil)
	}
	if r.ContentLength > v.cfg.MaxBodyBytes {
		return Delivery{}, verifyErr(ReasonBodyTooLarge, fmt.Sprintf("Content-Length %d exceeds %d bytes", r.ContentLength, v.cfg.MaxBodyBytes), nil)
	}
	var body []byte
	if r.Body != nil {
		var err error
		body, err = io.ReadAll(io.LimitReader(r.Body, v.cfg.MaxBodyBytes+1))
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				return Delivery{}, verifyErr(ReasonBodyTooLarge, fmt.Sprintf("exceeds %d bytes", mbe.Limit), err)
			}
			return Delivery{}, verifyErr(ReasonBodyUnreadable, err.Error(), err)
		}
	}
	if int64(len(body)) > v.cfg.MaxBodyBytes {
		return Delivery{}, verifyErr(ReasonBodyTooLarge, fmt.Sprintf("exceeds %d bytes", v.cfg.MaxBodyBytes), nil)
	}
	d, err := v.VerifyBytes(sigs[0], body, v.cfg.Clock())
	if err != nil {
		return Delivery{}, err
	}
	if len(ids) == 1 && ids[0] != d.ID {
		return Delivery{}, verifyErr(ReasonIDMismatch, fmt.Sprintf("%s is %q, body id is %q", IDHeader, ids[0], d.ID), nil)
	}
	return d, nil
}

// VerifyBytes checks one delivery given its X-Grid-Signature value and raw
// body, at time now, in this order: the header parses strictly (see the
// package documentation), the signature verifies over SHA-256(body) with the
// sender's key, the body is a valid envelope, and its timestamp is within the
// freshness window of now. It applies no size limit of its own. On success
// the Delivery is fully populated; every failure is a *VerifyError.
func (v *Verifier) VerifyBytes(header string, body []byte, now time.Time) (Delivery, error) {
	if header == "" {
		return Delivery{}, verifyErr(ReasonSignatureMissing, "", nil)
	}
	der, verr := parseHeader(header)
	if verr != nil {
		return Delivery{}, verr
	}
	digest := sha256.Sum256(body)
	if !ecdsa.VerifyASN1(v.key, digest[:], der) {
		return Delivery{}, verifyErr(ReasonSignatureInvalid, "", nil)
	}
	d, verr := parseEnvelope(body)
	if verr != nil {
		return Delivery{}, verr
	}
	if v.cfg.FreshnessWindow > 0 {
		if age := now.Sub(d.Timestamp); age > v.cfg.FreshnessWindow || age < -MaxClockSkew {
			return Delivery{}, verifyErr(ReasonStale, fmt.Sprintf("timestamp %s is %s from now, window is %s back and %s ahead", d.Timestamp.Format(time.RFC3339Nano), age.Round(time.Second), v.cfg.FreshnessWindow, MaxClockSkew), nil)
		}
	}
	return d, nil
}

// envelope is the shape DecodeBytes checks the body against.
type envelope struct {
	ID        *string         `json:"id"`
	Type      *string         `json:"type"`
	Timestamp *string         `json:"timestamp"`
	Data      json.RawMessage `json:"data"`
}

func parseEnvelope(body []byte) (Delivery, *VerifyError) {
	bad := func(msg string, cause error) (Delivery, *VerifyError) {
		return Delivery{}, verifyErr(ReasonEnvelopeMalformed, msg, cause)
	}
	var e envelope
	if err := apierror.DecodeBytes(body, &e); err != nil {
		msg := err.Error()
		if ae := apierror.As(err); ae != nil {
			msg = ae.Message
		}
		return bad(msg, err)
	}
	switch {
	case e.ID == nil:
		return bad(`member "id" is missing`, nil)
	case e.Type == nil:
		return bad(`member "type" is missing`, nil)
	case e.Timestamp == nil:
		return bad(`member "timestamp" is missing`, nil)
	case len(e.Data) == 0:
		return bad(`member "data" is missing`, nil)
	}
	if !validID(*e.ID) {
		return bad(fmt.Sprintf(`id %q is not "Webhook:<uuid>"`, *e.ID), nil)
	}
	if *e.Type == "" || len(*e.Type) > 128 {
		return bad("type must be a non-empty string of at most 128 bytes", nil)
	}
	ts, err := time.Parse(time.RFC3339Nano, *e.Timestamp)
	if err != nil {
		return bad(fmt.Sprintf("timestamp %q is not RFC 3339", *e.Timestamp), err)
	}
	if e.Data[0] != '{' {
		return bad("data is not a JSON object", nil)
	}
	return Delivery{ID: *e.ID, Type: *e.Type, Timestamp: ts, Data: e.Data, Body: body}, nil
}

// validID reports whether id is "Webhook:<uuid>" with a UUID in canonical
// lowercase or uppercase hex form: the rule storage.ValidID applies to
// every record id, restated here so that a receiver need not import the
// storage tree.
func validID(id string) bool {
	rest, ok := strings.CutPrefix(id, "Webhook:")
	if !ok || len(rest) != 36 {
		return false
	}
	for i := range len(rest) {
		c := rest[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
	}
	return true
}

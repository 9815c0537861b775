// Package apierror is the error model every walletgate package returns and every
// HTTP adapter writes.
//
// An [Error] is what a client receives as the JSON body
//
//	{"status": 401, "code": "WALLET_SIGNATURE_INVALID", "message": "...", "details": {...}}
//
// The status is not stored separately: it is the status of the [Code], so an
// error can never claim one status in its body and another on the wire, and a
// code can never be paired with the wrong status.
//
// Domain packages return *Error for every failure a client can act on. Anything
// else that reaches [Write] is an internal failure and is written as
// 500 INTERNAL_ERROR with a fixed message, so causes (SQL text, file paths,
// key material) never leak to clients. [From] is the one mapping a domain
// package applies to the errors of its store and helpers at its boundary.
package apierror

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Error is a client-facing error: a code (which fixes the HTTP status), a
// human-readable message and optional free-form details.
//
// The zero Code is treated as INTERNAL_ERROR. Details keys are part of the wire
// format: "reason" names the failed check of an authentication failure and
// "errors" lists [FieldError]s of a validation failure.
type Error struct {
	// Code is the service error code; Code.Status() is the HTTP status.
	Code Code
	// Message is a human-readable explanation. It must not contain secrets.
	Message string
	// Details is optional structured data, written as the "details" object.
	Details map[string]any
	// RetryAfter, when positive, is sent as the Retry-After header (whole
	// seconds, rounded up). It is set on RATE_LIMITED errors.
	RetryAfter time.Duration

	cause error
}

// New returns an error with the given code and message (formatted with
// fmt.Sprintf when args are given).
func New(code Code, format string, args ...any) *Error {
	msg := format
	if len(args) > 0 {
		msg = fmt.Sprintf(format, args...)
	}
	return &Error{Code: code, Message: msg}
}

// Unauthenticated returns 401 UNAUTHORIZED whose details.reason names the failed
// check, for example "Invalid OTP code" or "request id expired".
func Unauthenticated(reason string) *Error {
	return &Error{
		Code:    Unauthorized,
		Message: "authentication failed: " + reason,
		Details: map[string]any{"reason": reason},
	}
}

// TooManyRequests returns 429 RATE_LIMITED telling the client to wait retryAfter
// (written as the Retry-After header, in whole seconds, at least 1).
func TooManyRequests(retryAfter time.Duration) *Error {
	e := &Error{Code: RateLimited, Message: "too many requests; retry later", RetryAfter: retryAfter}
	e.Details = map[string]any{"retryAfterSeconds": e.RetryAfterSeconds()}
	return e
}

// Internal wraps cause as 500 INTERNAL_ERROR. The cause is available to the
// host through errors.Unwrap (for logging) and is never written to clients.
func Internal(cause error) *Error {
	return &Error{Code: InternalError, Message: internalMessage, cause: cause}
}

const internalMessage = "internal error"

// WithDetail returns e after setting details[key] = value. It is meant for
// building an error in one expression; it modifies e.
func (e *Error) WithDetail(key string, value any) *Error {
	if e.Details == nil {
		e.Details = map[string]any{}
	}
	e.Details[key] = value
	return e
}

// WithCause returns e after recording cause, reachable through errors.Unwrap
// and never written to clients. It modifies e.
func (e *Error) WithCause(cause error) *Error {
	e.cause = cause
	return e
}

// Status returns the HTTP status of the error: the status of its code, or 500
// when the code is zero.
func (e *Error) Status() int {
	if e.Code.IsZero() {
		return InternalError.Status()
	}
	return e.Code.Status()
}

// Reason returns details.reason when it is a string, or "".
func (e *Error) Reason() string {
	s, _ := e.Details["reason"].(string)
	return s
}

// FieldErrors returns details.errors, the invalid fields of a validation
// failure, or nil.
func (e *Error) FieldErrors() []FieldError {
	fe, _ := e.Details["errors"].([]FieldError)
	return fe
}

// RetryAfterSeconds returns RetryAfter in whole seconds, rounded up, and at
// least 1 when RetryAfter is positive; 0 otherwise.
func (e *Error) RetryAfterSeconds() int {
	if e.RetryAfter <= 0 {
		return 0
	}
	s := int((e.RetryAfter + time.Second - 1) / time.Second)
	return max(s, 1)
}

// Error implements the error interface: "STATUS CODE: message".
func (e *Error) Error() string {
	code := e.Code
	if code.IsZero() {
		code = InternalError
	}
	s := fmt.Sprintf("%d %s: %s", code.Status(), code.name, e.Message)
	if r := e.Reason(); r != "" && !strings.Contains(e.Message, r) {
		s += " (reason: " + r + ")"
	}
	if e.cause != nil {
		s += ": " + e.cause.Error()
	}
	return s
}

// Unwrap returns the cause recorded with [Internal] or [Error.WithCause].
func (e *Error) Unwrap() error { return e.cause }

// Is reports whether target is an *Error with the same code, so that
// errors.Is(err, apierror.New(apierror.Conflict, "")) matches any CONFLICT.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

type wireError struct {
	Status  int            `json:"status"`
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
}

// MarshalJSON writes exactly {"status","code","message","details"?}. An error
// with the zero code is written as INTERNAL_ERROR without its message.
func (e *Error) MarshalJSON() ([]byte, error) {
	w := wireError{Status: e.Status(), Code: e.Code.name, Message: e.Message, Details: e.Details}
	if e.Code.IsZero() {
		w.Code, w.Message, w.Details = InternalError.name, internalMessage, nil
	}
	if len(w.Details) == 0 {
		w.Details = nil
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads an error body as a client receives it. The code must be
// a known code and the status must be that code's status; details.errors is
// decoded into []FieldError.
func (e *Error) UnmarshalJSON(data []byte) error {
	var w struct {
		Status  int             `json:"status"`
		Code    string          `json:"code"`
		Message string          `json:"message"`
		Details json.RawMessage `json:"details"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	code, ok := LookupCode(w.Code)
	if !ok {
		return fmt.Errorf("apierror: unknown code %q", w.Code)
	}
	if code.Status() != w.Status {
		return fmt.Errorf("apierror: code %s has status %d, body says %d", code.name, code.Status(), w.Status)
	}
	var details map[string]any
	if len(w.Details) > 0 && string(w.Details) != "null" {
		if err := json.Unmarshal(w.Details, &details); err != nil {
			return fmt.Errorf("apierror: details: %w", err)
		}
		if raw, ok := details["errors"]; ok {
			b, _ := json.Marshal(raw)
			var fe []FieldError
			if err := json.Unmarshal(b, &fe); err != nil {
				return fmt.Errorf("apierror: details.errors: %w", err)
			}
			details["errors"] = fe
		}
	}
	*e = Error{Code: code, Message: w.Message, Details: details}
	return nil
}

// CodeOf returns the code of the first *Error in err's chain, INTERNAL_ERROR for
// any other non-nil error, and the zero Code for nil.
func CodeOf(err error) Code {
	if err == nil {
		return Code{}
	}
	var e *Error
	if errors.As(err, &e) && !e.Code.IsZero() {
		return e.Code
	}
	return InternalError
}

// As returns the first *Error in err's chain, or for any other non-nil error
// an INTERNAL_ERROR wrapping it. It returns nil for nil.
func As(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) && !e.Code.IsZero() {
		return e
	}
	return Internal(err)
}

// Refusal is the answer to a host's refusal of a call (a tenant guard's
// error): the *Error in refusal's chain, as the host chose it, or for a
// plain error hidden, the answer the call gives an id that names nothing,
// so that a refusal does not tell the caller the record exists. It
// returns nil for a nil refusal.
func Refusal(refusal error, hidden func() error) error {
	if refusal == nil {
		return nil
	}
	var e *Error
	if errors.As(refusal, &e) && !e.Code.IsZero() {
		return e
	}
	return hidden()
}

// From is the one mapping of a domain package's failures to client errors,
// for the errors a package returns from its store, verifiers and helpers. It
// is nil-safe and returns, for err:
//
//   - nil: nil (so `return x, apierror.From(err)` is safe);
//   - an error whose chain holds an *Error: that *Error, unchanged;
//   - an error whose chain holds an error reporting Conflict() == true
//     (storage.ErrConflict, storage.ErrDuplicate: a concurrent writer won):
//     409 CONFLICT "changed concurrently; retry", wrapping err, since the
//     same request sent again is decided against the winner's write;
//   - anything else, storage.ErrNotFound included: 500 INTERNAL_ERROR
//     wrapping err. A "not found" the client can act on names what was not
//     found, so the caller maps it to its own code before this point.
//
// The cause stays reachable through errors.Unwrap and is never written to
// clients. [As], [CodeOf] and [Write] read only *Error values and do not
// apply this mapping.
func From(err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) && !e.Code.IsZero() {
		return e
	}
	var c interface{ Conflict() bool }
	if errors.As(err, &c) && c.Conflict() {
		return New(Conflict, "%s", concurrentChange).WithDetail("reason", concurrentChange).WithCause(err)
	}
	return Internal(err)
}

const concurrentChange = "changed concurrently; retry"

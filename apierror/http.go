package apierror

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"

	"github.com/walletgate/walletgate/apierror/internal/canonjson"
)

// Write writes err as the response: the JSON error body with its status, and
// Retry-After for rate limits. An error with no *Error in its chain is written
// as 500 INTERNAL_ERROR with a fixed message that reveals nothing of the cause.
// Write with a nil error writes 500 as well: a handler that got here had
// nothing to report and is broken. Under [Observe], the error is also
// reported to the host's logger.
func Write(w http.ResponseWriter, err error) {
	e := As(err)
	if e == nil {
		e = Internal(errors.New("apierror.Write called with a nil error"))
		err = e
	}
	if o := observerOf(w); o != nil {
		o.report(e, err)
	}
	if e.Code == InternalError {
		// Whatever the message says, an internal failure speaks only in
		// generic terms on the wire.
		e = &Error{Code: InternalError, Message: internalMessage}
	}
	if s := e.RetryAfterSeconds(); s > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(s))
	}
	WriteJSON(w, e.Status(), e)
}

// WriteJSON writes v as a JSON response with the given status. When v cannot be
// encoded, it writes 500 INTERNAL_ERROR instead (nothing has been sent yet).
func WriteJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status = InternalError.Status()
		body, _ = json.Marshal(&Error{Code: InternalError, Message: internalMessage})
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

// DefaultMaxBodyBytes is the request body limit of [Decode]: 1 MiB.
const DefaultMaxBodyBytes = 1 << 20

// Decoder reads JSON request bodies for the HTTP adapters.
//
// A body must hold exactly one JSON value, at most MaxBytes long, and is read
// as [DecodeBytes] reads it: strictly, one way, member names case-sensitive.
// Unknown fields are ignored (clients may be newer than the server). Every
// failure is 400 INVALID_INPUT: an empty body, malformed JSON (with its byte
// offset), duplicate or case-colliding member names, a value of the wrong
// type (naming the field), trailing data after the value, and a body over the
// limit.
type Decoder struct {
	// MaxBytes limits the body size; zero means DefaultMaxBodyBytes.
	MaxBytes int64
}

// Decode reads r's body into dst with the default limit. See [Decoder].
func Decode(r *http.Request, dst any) error { return Decoder{}.Decode(r, dst) }

// Decode reads r's body into dst. See [Decoder].
func (d Decoder) Decode(r *http.Request, dst any) error {
	body, err := d.ReadBody(r)
	if err != nil {
		return err
	}
	return DecodeBytes(body, dst)
}

// ReadBody reads r's body whole, within the size limit, for handlers that
// need the raw bytes (a signed retry compares them) as well as the decoded
// value. An oversized or unreadable body is 400 INVALID_INPUT; a missing body
// reads as empty.
func (d Decoder) ReadBody(r *http.Request) ([]byte, error) {
	limit := d.MaxBytes
	if limit <= 0 {
		limit = DefaultMaxBodyBytes
	}
	if r.Body == nil {
		return nil, nil
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, New(InvalidInput, "request body exceeds %d bytes", mbe.Limit)
		}
		return nil, New(InvalidInput, "request body could not be read").WithCause(err)
	}
	if int64(len(body)) > limit {
		return nil, New(InvalidInput, "request body exceeds %d bytes", limit)
	}
	return body, nil
}

// DecodeBytes decodes one JSON value from body into dst with the rules of
// [Decoder], except for the size limit. It is the one reading of a request
// body in walletgate, and it is strict where encoding/json is lenient:
//
//   - The body must be acceptable to [Canonicalize]: valid UTF-8, no
//     duplicate member names, no two names that differ only in case, no
//     unpaired surrogate escapes, bounded nesting and numbers. Anything else
//     is 400 INVALID_INPUT naming the problem and its offset.
//   - dst is filled from the canonical form of body, not from body itself,
//     so two bodies with the same canonical form (the same bodySha256 of a
//     signed retry) always decode to the same value: escapes, member order,
//     whitespace and the spelling of numbers (1, 1.0, 1e0) cannot change
//     what is decoded.
//   - Member names are matched case-sensitively: a member whose name equals
//     a field's only under case folding ("ClientPublicKey" for
//     "clientPublicKey") is 400 INVALID_INPUT naming it, where encoding/json
//     would have filled the field.
//
// Unknown members are ignored: a client may be newer than the server.
//
// A flat object (members that are strings, numbers, booleans or null) is
// read in one pass when dst points to a struct of string, bool, integer and
// float fields or to a map[string]json.RawMessage; the result and every
// refusal are those the canonical reading gives.
func DecodeBytes(body []byte, dst any) error {
	return decodeBytes(body, dst, false)
}

// DecodeStored decodes one JSON value the server itself wrote (parameters
// it stored, a record of its own) into dst with every rule of
// [DecodeBytes], and one more: a member that dst's type has no field for,
// at any depth, is refused, since no newer writer can have added it. The
// refusal is 400 INVALID_INPUT with the member's dotted path in the field
// error ("unknown member"), found in the same walk of the canonical form
// as the case-sensitive names, before anything is decoded. Members of maps,
// of interfaces and of types with their own UnmarshalJSON or UnmarshalText
// are theirs to judge. Every refusal is a fault of the writer, which the
// caller reports as its own (signedretry answers 500 INTERNAL_ERROR for
// stored parameters that fail).
func DecodeStored(body []byte, dst any) error {
	return decodeBytes(body, dst, true)
}

// decodeBytes is DecodeBytes and, with known, DecodeStored. A flat object
// is decoded in one pass when canonjson.DecodeFlat can fill dst from it;
// every other body, and every refusal, is decodeCanonical's.
func decodeBytes(body []byte, dst any, known bool) error {
	if canonjson.DecodeFlat(body, dst, known) {
		return nil
	}
	checkNames := canonjson.CheckNames
	if known {
		checkNames = canonjson.CheckKnownNames
	}
	return decodeCanonical(body, dst, checkNames)
}

// decodeCanonical is the full reading of DecodeBytes and DecodeStored:
// body canonicalized, checkNames walking the canonical form beside dst's
// type, then the canonical form decoded by encoding/json.
func decodeCanonical(body []byte, dst any, checkNames func([]byte, reflect.Type) error) error {
	canon, err := Canonicalize(body)
	if err != nil {
		return err
	}
	if len(canon) == 0 {
		return New(InvalidInput, "request body is required")
	}
	if err := checkNames(canon, reflect.TypeOf(dst)); err != nil {
		return bodyError(err)
	}
	if err := json.Unmarshal(canon, dst); err != nil {
		return decodeError(err)
	}
	return nil
}

func decodeError(err error) *Error {
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			return New(InvalidInput, "request body must be %s, not %s", jsonKind(typ.Type.Kind().String()), typ.Value)
		}
		return InvalidField(field, nil, fmt.Sprintf("must be %s, not %s", jsonKind(typ.Type.Kind().String()), typ.Value))
	default:
		// Errors returned by a field's UnmarshalJSON, for example an *Error
		// from a domain type, pass through when they are already typed.
		var e *Error
		if errors.As(err, &e) {
			return e
		}
		return New(InvalidInput, "malformed JSON: %s", err.Error())
	}
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "slice", "array":
		return "an array"
	case "map", "struct":
		return "an object"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "an integer"
	case "float32", "float64":
		return "a number"
	default:
		return "a valid value"
	}
}

package signedretry

import (
	"net/http"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/signedretry/stamper"
)

// RequestFrom builds the [Request] of r, on either leg: the stamp and the
// request id are read from the [stamper.HeaderSignature] and
// [stamper.HeaderRequestID] headers. body is r's body, already read by the
// host (the same bytes it decoded).
func RequestFrom(r *http.Request, body []byte) Request {
	return Request{
		Method:    r.Method,
		Path:      r.URL.Path,
		Body:      body,
		Signature: r.Header.Get(stamper.HeaderSignature),
		RequestID: r.Header.Get(stamper.HeaderRequestID),
	}
}

// WriteChallenge answers a first call: 202 Accepted with the challenge.
func WriteChallenge(w http.ResponseWriter, c *Challenge) {
	apierror.WriteJSON(w, http.StatusAccepted, c)
}

// WriteAnswer writes the HTTP answer of an operation, signed or not: err
// ([apierror.Write]) when it is not nil, otherwise the 202 challenge when c
// is not nil (the first call of a signed operation), otherwise v as JSON
// with status, or 204 No Content when v is nil. An operation that never
// takes a signed retry passes a nil c. Pass a nil v, not a typed nil
// pointer, for "no content".
func WriteAnswer(w http.ResponseWriter, status int, v any, c *Challenge, err error) {
	switch {
	case err != nil:
		apierror.Write(w, err)
	case c != nil:
		WriteChallenge(w, c)
	case v == nil:
		w.WriteHeader(http.StatusNoContent)
	default:
		apierror.WriteJSON(w, status, v)
	}
}

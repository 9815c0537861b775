package signedretry

import (
	"net/http"

	"github.com/walletgate/walletgate/apierror"
)

// Header names of the signed retry.
const (
	HeaderSignature = "Service-Wallet-Signature"
	HeaderRequestID = "Request-Id"
)

// RequestFrom builds the [Request] of r, on either leg. body is r's body,
// already read by the host (the same bytes it decoded).
func RequestFrom(r *http.Request, body []byte) Request {
	return Request{
		Method:    r.Method,
		Path:      r.URL.Path,
		Body:      body,
		Signature: r.Header.Get(HeaderSignature),
		RequestID: r.Header.Get(HeaderRequestID),
	}
}

// WriteChallenge answers a first call: 202 Accepted with the challenge.
func WriteChallenge(w http.ResponseWriter, c *Challenge) {
	apierror.WriteJSON(w, http.StatusAccepted, c)
}

// WriteResult writes the outcome of an operation that may take a signed
// retry: err when it is not nil, otherwise the 202 challenge when there is
// one, otherwise v with status, or 204 No Content when v is nil. Pass a nil
// v, not a typed nil pointer, for "no content".
func WriteResult(w http.ResponseWriter, status int, v any, c *Challenge, err error) {
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

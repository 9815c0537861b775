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

// IsRetry reports whether r carries either signed-retry header. A request
// with neither is a first call; a request with one of them is a retry, and
// [Manager.Complete] names the header that is missing.
func IsRetry(r *http.Request) bool {
	return r.Header.Get(HeaderSignature) != "" || r.Header.Get(HeaderRequestID) != ""
}

// RetryFrom builds the [Retry] of r for the operation type the route expects.
// body is r's body, already read by the host (the same bytes it decoded).
func RetryFrom(r *http.Request, opType string, body []byte) Retry {
	return Retry{
		Signature: r.Header.Get(HeaderSignature),
		RequestID: r.Header.Get(HeaderRequestID),
		Type:      opType,
		Method:    r.Method,
		Path:      r.URL.Path,
		Body:      body,
	}
}

// OperationFrom fills the Method, Path and Body of op from the first call r,
// so the retry can be matched against them.
func OperationFrom(r *http.Request, op Operation, body []byte) Operation {
	op.Method, op.Path, op.Body = r.Method, r.URL.Path, body
	return op
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

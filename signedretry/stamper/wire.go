package stamper

import (
	"crypto/sha256"
	"time"

	"github.com/walletgate/walletgate/apierror"
)

// Header names of the signed retry: the retry carries the stamp in
// HeaderSignature and the payload's requestId in HeaderRequestID.
const (
	HeaderSignature = "Service-Wallet-Signature"
	HeaderRequestID = "Request-Id"
)

// Challenge is the 202 body of a first call.
type Challenge struct {
	// PayloadToSign is stamped byte for byte by the client.
	PayloadToSign string `json:"payloadToSign"`
	// RequestID is "Request:<uuid>", sent back in the Request-Id header.
	RequestID string `json:"requestId"`
	// ExpiresAt is when the challenge stops being accepted.
	ExpiresAt time.Time `json:"expiresAt"`
	// Type is the credential type on auth operations.
	Type string `json:"type,omitempty"`
}

// BodyDigest returns the SHA-256 of the canonical form of a request body (see
// [apierror.Canonicalize]): the bodySha256 a challenge binds. An empty body
// digests the empty string. A body that is not acceptable JSON, including one
// whose object member names collide under case folding, is 400 INVALID_INPUT,
// exactly as [apierror.DecodeBytes] rejects it, so a body that has a digest is
// a body that decodes, and two bodies with one digest decode to one value.
func BodyDigest(body []byte) ([32]byte, error) {
	canon, err := apierror.Canonicalize(body)
	if err != nil {
		return [32]byte{}, err
	}
	return sha256.Sum256(canon), nil
}

package signedretry

import (
	"crypto/sha256"

	"github.com/walletgate/walletgate/apierror"
)

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

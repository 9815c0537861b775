package oidc

import (
	"errors"

	"github.com/walletgate/walletgate/apierror"
)

// fieldToken is the wire field that a malformed token is reported against.
const fieldToken = "oidcToken"

// reasonNotJWT is details.reason of every 400 answer: the input does not have
// the shape of a compact JWS carrying a JSON claim set.
const reasonNotJWT = "not a JWT"

// Reasons of 401 answers, in the order the checks run. Each names exactly one
// failed check and is written as details.reason.
const (
	reasonAlgNone         = "alg none not allowed"
	reasonAlgHMAC         = "HMAC alg not allowed"
	reasonAlgUnsupported  = "alg not supported"
	reasonKidMissing      = "kid missing"
	reasonCritUnsupported = "crit header not supported"

	reasonIssMissing       = "iss missing"
	reasonIssNotRegistered = "iss not registered"

	reasonKeyNotFound   = "signing key not found"
	reasonKeyAlgRefused = "signing key does not allow alg"
	reasonSignature     = "signature invalid"

	reasonAudMissing     = "aud missing"
	reasonAudMalformed   = "aud malformed"
	reasonAudNotAccepted = "aud not accepted"

	reasonSubMissing   = "sub missing"
	reasonSubMalformed = "sub malformed"

	reasonIatMissing    = "iat missing"
	reasonIatNotNumeric = "iat not numeric"
	reasonIatTooOld     = "iat too old"
	reasonIatFuture     = "iat in the future"

	reasonExpMissing    = "exp missing"
	reasonExpNotNumeric = "exp not numeric"
	reasonExpPast       = "exp in the past"

	reasonNbfNotNumeric = "nbf not numeric"
	reasonNbfFuture     = "nbf in the future"

	reasonIssMismatch = "iss mismatch"
	reasonAudMismatch = "aud mismatch"
	reasonSubMismatch = "sub mismatch"

	reasonNonceMissing  = "nonce missing"
	reasonNonceMismatch = "nonce mismatch"
)

// notJWT returns 400 INVALID_INPUT against the oidcToken field; why says what
// about the shape is wrong and goes into the message only.
func notJWT(why string) *apierror.Error {
	return apierror.InvalidField(fieldToken, apierror.Format("jwt"), "not a JWT: "+why).
		WithDetail("reason", reasonNotJWT)
}

// rejected returns 401 UNAUTHORIZED whose details.reason names the failed check.
func rejected(reason string) *apierror.Error {
	return apierror.Unauthenticated(reason)
}

// internal returns 500 INTERNAL_ERROR; the cause is kept for logs and never
// written to clients.
func internal(what string, cause error) *apierror.Error {
	if cause == nil {
		return apierror.Internal(errors.New("oidc: " + what))
	}
	return apierror.Internal(errors.Join(errors.New("oidc: "+what), cause))
}

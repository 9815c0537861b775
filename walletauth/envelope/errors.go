package envelope

import (
	"errors"

	"github.com/walletgate/walletgate/apierror"
)

// Wire field names that errors point at.
const (
	fieldEncryptedOTPBundle = "encryptedOtpBundle"
	fieldTargetBundle       = "otpEncryptionTargetBundle"
	fieldSessionKey         = "encryptedSessionSigningKey"
	fieldClientPublicKey    = "clientPublicKey"
	fieldPublicKey          = "publicKey"
	fieldExportBundle       = "encryptedWalletCredentials"
)

// invalid returns 400 INVALID_INPUT naming the wire field in details.errors
// and the failed check in details.reason.
func invalid(field, reason string) *apierror.Error {
	return apierror.InvalidField(field, nil, reason).WithDetail("reason", reason)
}

// internal returns 500 INTERNAL_ERROR for a fault of the caller or the
// platform (a nil key, a failing randomness source); the cause is kept for
// logs and never written to clients.
func internal(what string, cause error) *apierror.Error {
	if cause == nil {
		cause = errors.New(what)
	} else {
		cause = errors.Join(errors.New(what), cause)
	}
	return apierror.Internal(cause)
}

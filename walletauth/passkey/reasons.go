package passkey

import "github.com/walletgate/walletgate/apierror"

// Reasons written into details.reason of the 401 UNAUTHORIZED errors this
// package returns. Each names the check that failed.
const (
	ReasonRegistrationChallengeUnknown = "registration challenge unknown"
	ReasonRegistrationChallengeExpired = "registration challenge expired"
	ReasonRegistrationChallengeUsed    = "registration challenge already used"
	ReasonRegistrationChallengeAccount = "registration challenge issued for another account"
	ReasonClientDataType               = "client data type mismatch"
	ReasonChallengeMismatch            = "challenge mismatch"
	ReasonOriginNotAllowed             = "origin not allowed"
	ReasonCrossOrigin                  = "cross-origin ceremony not allowed"
	ReasonRPIDMismatch                 = "RP ID mismatch"
	ReasonUserNotPresent               = "user not present"
	ReasonUserNotVerified              = "user not verified"
	ReasonBackupFlags                  = "backup state set without backup eligibility"
	ReasonBackupEligibilityChanged     = "backup eligibility changed"
	ReasonAlgorithmNotSupported        = "credential algorithm not supported"
	ReasonAttestationInvalid           = "attestation invalid"
	ReasonCredentialIDMismatch         = "credential id mismatch"
	ReasonUnknownCredential            = "unknown credential"
	ReasonSignatureInvalid             = "signature invalid"
	ReasonCounterNotIncreased          = "sign counter did not increase"
	ReasonWebAuthnVerificationFailed   = "WebAuthn verification failed"
)

func fail(reason string) *apierror.Error { return apierror.Unauthenticated(reason) }

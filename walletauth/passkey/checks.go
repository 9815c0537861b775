package passkey

import (
	"bytes"
	"crypto/subtle"
	"errors"
	"strings"

	"github.com/go-webauthn/webauthn/protocol"

	"github.com/walletgate/walletgate/apierror"
)

// The checks below run before go-webauthn's own verification so that a
// rejection names the exact check that failed. go-webauthn then runs all of
// them again together with the signature and attestation verification; it is
// the authority, these only name its reasons.

// parseClientData decodes clientDataJSON the one way outside input is read
// (apierror.DecodeBytes: duplicate or case-colliding member names refused),
// which is stricter than go-webauthn's own decoding of the same bytes; a
// failure is 400 INVALID_INPUT on field.
func parseClientData(field string, raw []byte) (*protocol.CollectedClientData, error) {
	var c protocol.CollectedClientData
	if len(bytes.TrimSpace(raw)) == 0 || bytes.TrimSpace(raw)[0] != '{' || apierror.DecodeBytes(raw, &c) != nil {
		return nil, apierror.InvalidField(field, apierror.Format("json"), "is not a JSON client data object")
	}
	if tb := c.TokenBinding; tb != nil && tb.Status != protocol.Present && tb.Status != protocol.Supported && tb.Status != protocol.NotSupported {
		return nil, apierror.InvalidField(field, nil, "has a malformed tokenBinding")
	}
	return &c, nil
}

// checkClientData checks the ceremony type, the challenge echo, the origin and
// the absence of a cross-origin context.
func (v *Verifier) checkClientData(c *protocol.CollectedClientData, ceremony protocol.CeremonyType, challenge string) error {
	if c.Type != ceremony {
		return fail(ReasonClientDataType).WithDetail("expected", string(ceremony))
	}
	if subtle.ConstantTimeCompare([]byte(c.Challenge), []byte(challenge)) != 1 {
		return fail(ReasonChallengeMismatch)
	}
	if !protocol.IsOriginInHaystack(c.Origin, v.origins) && !protocol.IsOpaqueOriginInHaystack(c.Origin, v.opaque) {
		return fail(ReasonOriginNotAllowed)
	}
	if c.CrossOrigin || c.TopOrigin != "" {
		return fail(ReasonCrossOrigin)
	}
	return nil
}

// checkAuthData checks the RP id hash, user presence, user verification (when
// required) and the consistency of the backup flags.
func (v *Verifier) checkAuthData(a *protocol.AuthenticatorData) error {
	if subtle.ConstantTimeCompare(a.RPIDHash, v.rpIDHash[:]) != 1 {
		return fail(ReasonRPIDMismatch)
	}
	if !a.Flags.HasUserPresent() {
		return fail(ReasonUserNotPresent)
	}
	if v.cfg.RelyingParty.RequireUserVerification && !a.Flags.HasUserVerified() {
		return fail(ReasonUserNotVerified)
	}
	if !a.Flags.HasBackupEligible() && a.Flags.HasBackupState() {
		return fail(ReasonBackupFlags)
	}
	return nil
}

// libraryFailure turns a rejection by go-webauthn, reached after the checks
// above passed, into a 401 naming it. The library error is kept as the cause
// for the host's logs.
func libraryFailure(err error) *apierror.Error {
	var pe *protocol.Error
	if !errors.As(err, &pe) {
		return fail(ReasonWebAuthnVerificationFailed).WithCause(err)
	}
	switch {
	case pe.Type == protocol.ErrAssertionSignature.Type:
		return fail(ReasonSignatureInvalid).WithCause(err)
	case strings.Contains(pe.DevInfo, "algorithm not supported"):
		return fail(ReasonAlgorithmNotSupported).WithCause(err)
	case pe.Details == "Error validating the attested credential id":
		return fail(ReasonCredentialIDMismatch).WithCause(err)
	case pe.Type == protocol.ErrAttestation.Type, pe.Type == protocol.ErrInvalidAttestation.Type,
		pe.Type == protocol.ErrAttestationCertificate.Type, pe.Type == protocol.ErrUnsupportedKey.Type,
		pe.Type == protocol.ErrUnsupportedAlgorithm.Type:
		return fail(ReasonAttestationInvalid).WithCause(err)
	}
	return fail(ReasonWebAuthnVerificationFailed).WithCause(err)
}

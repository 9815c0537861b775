package passkey

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/walletauth/authclient"
)

// SandboxSignature is the legacy assertion signature that, in sandbox mode
// only ([Config].Sandbox), skips the WebAuthn checks.
const SandboxSignature = "sandbox-valid-passkey-signature"

// SessionPayloadType is the type member of the payload an assertion
// challenge is the digest of.
const SessionPayloadType = "PASSKEY_SESSION"

// AssertionPayload returns the canonical payload a passkey authentication
// binds: compact JSON with the members in this order,
//
//	{"type":"PASSKEY_SESSION","rpId":...,"requestId":...,"credentialId":...,"clientPublicKey":...}
//
// with every value exactly as given (clientPublicKey is the hex key string
// as the client sent it). Equal inputs give equal bytes.
func (v *Verifier) AssertionPayload(clientPublicKey, credentialID, requestID string) []byte {
	b, _ := json.Marshal(struct {
		Type            string `json:"type"`
		RPID            string `json:"rpId"`
		RequestID       string `json:"requestId"`
		CredentialID    string `json:"credentialId"`
		ClientPublicKey string `json:"clientPublicKey"`
	}{SessionPayloadType, v.cfg.RelyingParty.ID, requestID, credentialID, clientPublicKey})
	return b
}

// AssertionChallenge returns the challenge of a passkey authentication: the
// lowercase hex SHA-256 of [Verifier.AssertionPayload] (64 characters). The
// browser's WebAuthn challenge is the UTF-8 bytes of this hex string, so
// clientDataJSON.challenge is [authclient.ClientDataChallenge] of it.
func (v *Verifier) AssertionChallenge(clientPublicKey, credentialID, requestID string) string {
	sum := sha256Sum(v.AssertionPayload(clientPublicKey, credentialID, requestID))
	return hex.EncodeToString(sum[:])
}

// Assertion is the browser's authentication response, as the client sends
// it ([authclient.Assertion]).
type Assertion = authclient.Assertion

// VerifyAssertion verifies an assertion against the stored credential and the
// challenge the caller issued (lowercase hex, from
// [Verifier.AssertionChallenge]). It checks, in order: the credential id,
// client data type webauthn.get, the challenge echo, the origin, the RP id
// hash, user presence, user verification when required, the signature over
// authenticatorData || SHA-256(clientDataJSON) with the stored COSE key
// (go-webauthn), the backup flags and the sign counter. A counter that does
// not increase (other than staying 0 on an authenticator that never counts)
// is rejected unless AllowCounterRegression is set, in which case the result
// carries CloneWarning and keeps the stored counter.
//
// On success it returns a copy of stored with the counter, the flags and
// CloneWarning (once set, it stays set) advanced; stored is not modified.
// Storing the result is the caller's, in the transaction that creates the
// session.
//
// In sandbox mode a Signature equal to [SandboxSignature] skips every check
// but the credential id and returns stored unchanged.
//
// Errors: 400 INVALID_INPUT naming malformed assertion.* fields, 401
// UNAUTHORIZED with a Reason constant in details.reason (a nil stored is
// ReasonUnknownCredential), 500 INTERNAL_ERROR when expectedChallengeHex is
// not a 64-character lowercase hex string.
func (v *Verifier) VerifyAssertion(stored *storage.WebAuthnCredential, expectedChallengeHex string, a Assertion) (*storage.WebAuthnCredential, error) {
	if stored == nil || len(stored.CredentialID) == 0 {
		return nil, fail(ReasonUnknownCredential)
	}
	var f fields
	credID := f.b64("assertion.credentialId", a.CredentialID, true, maxCredentialID)
	if v.cfg.Sandbox && a.Signature == SandboxSignature {
		if err := f.err(); err != nil {
			return nil, err
		}
		if !bytes.Equal(credID, stored.CredentialID) {
			return nil, fail(ReasonCredentialIDMismatch)
		}
		return cloneCredential(stored), nil
	}
	clientData := f.b64("assertion.clientDataJson", a.ClientDataJSON, true, maxClientDataJSON)
	authData := f.b64("assertion.authenticatorData", a.AuthenticatorData, true, maxAuthenticatorData)
	sig := f.b64("assertion.signature", a.Signature, true, maxSignature)
	userHandle := f.b64("assertion.userHandle", a.UserHandle, false, maxUserHandle)
	if err := f.err(); err != nil {
		return nil, err
	}
	if !validChallengeHex(expectedChallengeHex) {
		return nil, apierror.Internal(errors.New("passkey: expected challenge is not 64 lowercase hex digits"))
	}
	if !bytes.Equal(credID, stored.CredentialID) {
		return nil, fail(ReasonCredentialIDMismatch)
	}
	cd, err := parseClientData("assertion.clientDataJson", clientData)
	if err != nil {
		return nil, err
	}
	car := protocol.CredentialAssertionResponse{
		PublicKeyCredential: protocol.PublicKeyCredential{
			Credential: protocol.Credential{ID: b64url(credID), Type: string(protocol.PublicKeyCredentialType)},
			RawID:      credID,
		},
		AssertionResponse: protocol.AuthenticatorAssertionResponse{
			AuthenticatorResponse: protocol.AuthenticatorResponse{ClientDataJSON: clientData},
			AuthenticatorData:     authData,
			Signature:             sig,
			UserHandle:            userHandle,
		},
	}
	parsed, err := car.Parse()
	if err != nil {
		return nil, apierror.InvalidField("assertion.authenticatorData", nil, "is not WebAuthn authenticator data").WithCause(err)
	}
	challenge := authclient.ClientDataChallenge(expectedChallengeHex)
	if err := v.checkClientData(cd, protocol.AssertCeremony, challenge); err != nil {
		return nil, err
	}
	ad := parsed.Response.AuthenticatorData
	if err := v.checkAuthData(&ad); err != nil {
		return nil, err
	}
	if err := parsed.Verify(challenge, v.cfg.RelyingParty.ID, "", v.origins, v.opaque, nil, protocol.TopOriginExplicitVerificationMode,
		false, v.cfg.RelyingParty.RequireUserVerification, true, stored.PublicKey, signaturePolicy); err != nil {
		return nil, libraryFailure(err)
	}
	if ad.Flags.HasBackupEligible() != stored.BackupEligible {
		return nil, fail(ReasonBackupEligibilityChanged)
	}

	out := cloneCredential(stored)
	counter := webauthn.Authenticator{SignCount: stored.SignCount}
	counter.UpdateCounter(ad.Counter)
	if counter.CloneWarning {
		if !v.cfg.RelyingParty.AllowCounterRegression {
			return nil, fail(ReasonCounterNotIncreased).
				WithDetail("storedCounter", stored.SignCount).WithDetail("receivedCounter", ad.Counter)
		}
		out.CloneWarning = true
	}
	out.SignCount = counter.SignCount
	flags := storedFlags(stored).Update(ad.Flags)
	out.UserPresent, out.UserVerified = flags.UserPresent, flags.UserVerified
	out.BackupEligible, out.BackupState = flags.BackupEligible, flags.BackupState
	return out, nil
}

// storedFlags rebuilds go-webauthn's credential flags from the record.
func storedFlags(c *storage.WebAuthnCredential) webauthn.CredentialFlags {
	var f protocol.AuthenticatorFlags
	for _, b := range []struct {
		set  bool
		flag protocol.AuthenticatorFlags
	}{
		{c.UserPresent, protocol.FlagUserPresent}, {c.UserVerified, protocol.FlagUserVerified},
		{c.BackupEligible, protocol.FlagBackupEligible}, {c.BackupState, protocol.FlagBackupState},
	} {
		if b.set {
			f |= b.flag
		}
	}
	return webauthn.NewCredentialFlags(f)
}

func cloneCredential(c *storage.WebAuthnCredential) *storage.WebAuthnCredential {
	out := *c
	out.CredentialID = slices.Clone(c.CredentialID)
	out.PublicKey = slices.Clone(c.PublicKey)
	out.AAGUID = slices.Clone(c.AAGUID)
	out.Transports = slices.Clone(c.Transports)
	return &out
}

func validChallengeHex(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

package passkey

import (
	"encoding/json"
	"errors"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"

	"github.com/walletgate/walletgate/apierror"
)

// User names the account a passkey is created for, as authenticators show it.
type User struct {
	// Name is an account identifier the user recognises (an email address,
	// a phone number); DisplayName a friendlier name. Both are only shown.
	Name, DisplayName string
}

// CreationOptions returns the PublicKeyCredentialCreationOptions JSON for
// rc, the argument of PublicKeyCredential.parseCreationOptionsFromJSON: the
// RP id and name, user.id = the UTF-8 bytes of the account id, the challenge,
// every algorithm go-webauthn verifies, a resident (discoverable) key, user
// verification "required" when configured and "preferred" otherwise, no
// attestation conveyance, and excludeCredentials listing exclude (the raw ids
// of the account's passkeys, so an authenticator is not registered twice).
func (v *Verifier) CreationOptions(rc *RegistrationChallenge, user User, exclude [][]byte) ([]byte, error) {
	if rc == nil {
		return nil, apierror.Internal(errors.New("passkey: CreationOptions without a challenge"))
	}
	ch, ok := decodeB64URL(rc.Challenge)
	if !ok || len(ch) < minChallengeBytes {
		return nil, apierror.Internal(errors.New("passkey: CreationOptions with a malformed challenge"))
	}
	opts := protocol.PublicKeyCredentialCreationOptions{
		RelyingParty: protocol.RelyingPartyEntity{CredentialEntity: protocol.CredentialEntity{Name: v.cfg.RelyingParty.Name}, ID: v.cfg.RelyingParty.ID},
		User: protocol.UserEntity{CredentialEntity: protocol.CredentialEntity{Name: user.Name},
			DisplayName: user.DisplayName, ID: protocol.URLEncodedBase64(rc.AccountID)},
		Challenge:  ch,
		Parameters: webauthn.CredentialParametersDefault(),
		Timeout:    int(v.cfg.RegistrationTTL.Milliseconds()),
		AuthenticatorSelection: protocol.AuthenticatorSelection{
			ResidentKey: protocol.ResidentKeyRequirementRequired, RequireResidentKey: protocol.ResidentKeyRequired(),
			UserVerification: v.userVerification()},
		Attestation: protocol.PreferNoAttestation,
	}
	for _, id := range exclude {
		opts.CredentialExcludeList = append(opts.CredentialExcludeList,
			protocol.CredentialDescriptor{Type: protocol.PublicKeyCredentialType, CredentialID: id})
	}
	b, err := json.Marshal(opts)
	if err != nil {
		return nil, apierror.Internal(err)
	}
	return b, nil
}

// RequestOptions returns the PublicKeyCredentialRequestOptions JSON for an
// assertion challenge (lowercase hex), the argument of
// PublicKeyCredential.parseRequestOptionsFromJSON: the challenge bytes are the
// hex string's UTF-8 bytes, rpId is the RP id, allowCredentials lists the
// given raw credential ids (none: any discoverable credential) and user
// verification is "required" when configured, "preferred" otherwise.
func (v *Verifier) RequestOptions(challengeHex string, credentialIDs [][]byte) ([]byte, error) {
	if !validChallengeHex(challengeHex) {
		return nil, apierror.Internal(errors.New("passkey: RequestOptions with a challenge that is not 64 lowercase hex digits"))
	}
	opts := protocol.PublicKeyCredentialRequestOptions{
		Challenge:        []byte(challengeHex),
		RelyingPartyID:   v.cfg.RelyingParty.ID,
		UserVerification: v.userVerification(),
	}
	for _, id := range credentialIDs {
		opts.AllowedCredentials = append(opts.AllowedCredentials,
			protocol.CredentialDescriptor{Type: protocol.PublicKeyCredentialType, CredentialID: id})
	}
	b, err := json.Marshal(opts)
	if err != nil {
		return nil, apierror.Internal(err)
	}
	return b, nil
}

func (v *Verifier) userVerification() protocol.UserVerificationRequirement {
	if v.cfg.RelyingParty.RequireUserVerification {
		return protocol.VerificationRequired
	}
	return protocol.VerificationPreferred
}

package client

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-webauthn/webauthn/protocol"

	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/walletauth/authclient"
)

// PasskeyAddParams returns the ADD_CREDENTIAL parameters a passkey
// registration must produce: the credential the client's own authenticator
// attested (its id, COSE public key, AAGUID, counter and flags, read from
// att), the attestation type its statement verifies as, the registration
// challenge and the nickname as the service trims it. A client compares them
// with the payload before stamping, so the session key authorizes this
// passkey and no other. An attestation that does not parse or whose
// statement does not verify is an error.
func PasskeyAddParams(att *authclient.Attestation, nickname, challenge string) (*authclient.AddParams, error) {
	if att == nil {
		return nil, errors.New("client: no attestation")
	}
	nick, err := authclient.NormalizeNickname(nickname)
	if err != nil {
		return nil, err
	}
	dec := base64.RawURLEncoding.Strict()
	rawID, err1 := dec.DecodeString(att.CredentialID)
	clientData, err2 := dec.DecodeString(att.ClientDataJSON)
	object, err3 := dec.DecodeString(att.AttestationObject)
	if err := errors.Join(err1, err2, err3); err != nil {
		return nil, fmt.Errorf("client: attestation member is not base64url: %w", err)
	}
	ccr := protocol.CredentialCreationResponse{
		PublicKeyCredential: protocol.PublicKeyCredential{
			Credential: protocol.Credential{ID: att.CredentialID, Type: string(protocol.PublicKeyCredentialType)},
			RawID:      rawID,
		},
		AttestationResponse: protocol.AuthenticatorAttestationResponse{
			AuthenticatorResponse: protocol.AuthenticatorResponse{ClientDataJSON: clientData},
			AttestationObject:     object,
			Transports:            att.Transports,
		},
	}
	pcc, err := ccr.Parse()
	if err != nil {
		return nil, fmt.Errorf("client: parsing the attestation: %w", err)
	}
	obj := &pcc.Response.AttestationObject
	hash := sha256.Sum256(clientData)
	if err := obj.VerifyAttestation(hash[:], nil, protocol.AttestationPolicy{},
		protocol.SignaturePolicy{ECDSAEncoding: protocol.ECDSASignatureEncodingDER}); err != nil {
		return nil, fmt.Errorf("client: the attestation statement does not verify: %w", err)
	}
	ad := obj.AuthData
	if !bytes.Equal(ad.AttData.CredentialID, rawID) {
		return nil, errors.New("client: the attested credential id is not the attestation's credentialId")
	}
	enc := base64.RawURLEncoding.EncodeToString
	return &authclient.AddParams{Type: storage.Passkey, Nickname: nick, Passkey: &authclient.PasskeyParams{
		CredentialID: enc(ad.AttData.CredentialID), RegistrationChallenge: challenge,
		PublicKey: enc(ad.AttData.CredentialPublicKey), AttestationType: obj.Type, AAGUID: enc(ad.AttData.AAGUID),
		SignCount: ad.Counter, Transports: slices.Clone(att.Transports),
		UserPresent: ad.Flags.HasUserPresent(), UserVerified: ad.Flags.HasUserVerified(),
		BackupEligible: ad.Flags.HasBackupEligible(), BackupState: ad.Flags.HasBackupState()}}, nil
}

// OAuthAddParams returns the ADD_CREDENTIAL parameters an OAUTH credential
// added with idToken must produce: the identity the token asserts (iss, its
// single aud, sub), the email claim as nickname and the token's SHA-256. The
// client got the token from its identity provider; it reads the claims, it
// does not verify them (the service does). The issuer is taken as the token
// spells it, so a token naming an alias of the issuer is refused by the
// comparison rather than accepted.
func OAuthAddParams(idToken string) (*authclient.AddParams, error) {
	parts := strings.Split(idToken, ".")
	if len(parts) != 3 {
		return nil, errors.New("client: the ID token is not a JWS compact serialization")
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil, errors.New("client: the ID token payload is not base64url")
	}
	var claims struct {
		Iss   string          `json:"iss"`
		Aud   json.RawMessage `json:"aud"`
		Sub   string          `json:"sub"`
		Email any             `json:"email"`
	}
	if err := json.Unmarshal(raw, &claims); err != nil {
		return nil, fmt.Errorf("client: the ID token claims: %w", err)
	}
	var aud string
	if err := json.Unmarshal(claims.Aud, &aud); err != nil {
		var auds []string
		if err := json.Unmarshal(claims.Aud, &auds); err != nil || len(auds) != 1 {
			return nil, errors.New("client: the ID token has no single audience")
		}
		aud = auds[0]
	}
	email, _ := claims.Email.(string)
	sum := sha256.Sum256([]byte(idToken))
	return &authclient.AddParams{Type: storage.OAuth, Nickname: email, Issuer: claims.Iss, Audience: aud, Subject: claims.Sub,
		OIDCTokenSHA256: hex.EncodeToString(sum[:])}, nil
}

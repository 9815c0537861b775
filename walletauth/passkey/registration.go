package passkey

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/walletauth/authclient"
)

// KindRegistration is the storage.PendingRequest kind of a registration
// challenge.
const KindRegistration = "PASSKEY_REGISTRATION"

// registrationIDPrefix prefixes the pending-request id of a registration
// challenge; the rest is the hex SHA-256 of the challenge, so the challenge a
// client returns finds its record and the id never collides with a
// "Request:<uuid>" of a signed retry.
const registrationIDPrefix = "PasskeyRegistration:"

// registrationScope, followed by the account id, is the scope of an
// account's registration challenges (storage.Quota).
const registrationScope = "passkey-registration:"

// Registration challenge size in bytes, and the sizes accepted back.
const (
	challengeBytes    = 32
	minChallengeBytes = 16
	maxChallengeBytes = 64
)

// Transports are the authenticator transport hints a registration may carry
// (WebAuthn Level 3 AuthenticatorTransport).
var Transports = []string{"usb", "nfc", "ble", "smart-card", "hybrid", "internal"}

// RegistrationChallenge is an issued registration challenge.
type RegistrationChallenge struct {
	// Challenge is the base64url (unpadded) encoding of 32 random bytes: the
	// challenge member of the browser's creation options.
	Challenge string
	// AccountID is the account it was issued for.
	AccountID string
	// ExpiresAt is when it stops being accepted.
	ExpiresAt time.Time
}

// IssueRegistrationChallenge creates a registration challenge for accountID
// and remembers it in tx as a single-use pending request (kind
// [KindRegistration]) expiring after the registration TTL. The challenge
// exists once tx commits.
func (v *Verifier) IssueRegistrationChallenge(ctx context.Context, tx storage.Tx, accountID string, now time.Time) (*RegistrationChallenge, error) {
	if accountID == "" {
		return nil, apierror.InvalidField("accountId", nil, "is required")
	}
	raw := make([]byte, challengeBytes)
	if _, err := io.ReadFull(v.cfg.Rand, raw); err != nil {
		return nil, apierror.Internal(fmt.Errorf("passkey: reading challenge randomness: %w", err))
	}
	ch := b64url(raw)
	rc := &RegistrationChallenge{Challenge: ch, AccountID: accountID, ExpiresAt: now.Add(v.cfg.RegistrationTTL)}
	p := &storage.PendingRequest{ID: registrationID(ch), Kind: KindRegistration, AccountID: accountID,
		Payload: []byte(ch), CreatedAt: now, ExpiresAt: rc.ExpiresAt}
	// Bounded per account, the oldest superseded: a caller that asks for
	// challenges without end fills nothing but its own account's scope.
	quota := storage.Quota{Scope: registrationScope + accountID, Limit: v.cfg.MaxRegistrationChallenges}
	if err := tx.PendingRequests().Create(ctx, p, quota); err != nil {
		return nil, apierror.Internal(fmt.Errorf("passkey: storing registration challenge: %w", err))
	}
	return rc, nil
}

func registrationID(challenge string) string {
	sum := sha256Sum([]byte(challenge))
	return registrationIDPrefix + hex.EncodeToString(sum[:])
}

// Attestation is the browser's registration response, as the client sends
// it ([authclient.Attestation]).
type Attestation = authclient.Attestation

// RegistrationRequest is a passkey registration: the account, the nickname
// the user chose, the challenge the platform issued and the attestation.
type RegistrationRequest struct {
	AccountID string
	// Tenant is the tenant of the wallet AccountID
	// ([storage.InternalAccount].Tenant): the WebAuthn credential id must
	// be new among its passkeys.
	Tenant      string
	Nickname    string
	Challenge   string
	Attestation Attestation
}

// Registration is a verified passkey registration, ready to be stored as a
// PASSKEY credential of AccountID.
type Registration struct {
	AccountID string
	// Nickname is the trimmed, validated nickname.
	Nickname string
	// AttestationFormat is the attestation statement format ("none",
	// "packed", ...).
	AttestationFormat string
	// Credential is the WebAuthn credential record.
	Credential *storage.WebAuthnCredential
}

// VerifyRegistration verifies a passkey registration in tx at now. It consumes
// the registration challenge (it must have been issued for req.AccountID, be
// unexpired and unused) and verifies the attestation with go-webauthn:
// client data type webauthn.create, the challenge echo, the origin, the RP id
// hash, user presence, user verification when required, the attestation
// statement (every format go-webauthn supports, "none" included), the key
// algorithm and that rawId is the attested credential id. A credential id
// already stored answers 400 PASSKEY_CREDENTIAL_ALREADY_EXISTS.
//
// The challenge is consumed in tx: when the caller rolls tx back on an error
// it stays usable until it expires.
//
// Errors: 400 INVALID_INPUT listing every malformed field (nickname,
// challenge, accountId, attestation.*), 400 PASSKEY_CREDENTIAL_ALREADY_EXISTS,
// 401 UNAUTHORIZED with a Reason constant in details.reason.
func (v *Verifier) VerifyRegistration(ctx context.Context, tx storage.Tx, req RegistrationRequest, now time.Time) (*Registration, error) {
	return v.verifyRegistration(ctx, tx, req, now, true)
}

// CheckRegistration makes every check of [Verifier.VerifyRegistration] but
// leaves the registration challenge unconsumed, for a registration that a
// later transaction completes (after a signed retry): that transaction calls
// [Verifier.ConsumeRegistration] with the same challenge and stores the
// returned credential record, so the challenge is still used once.
func (v *Verifier) CheckRegistration(ctx context.Context, tx storage.Tx, req RegistrationRequest, now time.Time) (*Registration, error) {
	return v.verifyRegistration(ctx, tx, req, now, false)
}

// ConsumeRegistration consumes a registration challenge that
// [Verifier.CheckRegistration] accepted: it must still be unused, unexpired
// and issued for accountID. Errors: 401 UNAUTHORIZED with a Reason constant.
//
// Expiry is decided on a time read after the consumption's lock: clock,
// the caller's clock (the Verifier reads none of its own), is read once
// for the consumption and again once the store granted the challenge's
// lock and read it back ([storage.ConsumeNow]), and a challenge expired by
// that second reading answers 401 with
// [ReasonRegistrationChallengeExpired], however long the consumption
// waited for the lock. The consumption is then tx's: the caller rolls tx
// back on the error, which leaves the challenge unconsumed.
func (v *Verifier) ConsumeRegistration(ctx context.Context, tx storage.Tx, challenge, accountID string, clock func() time.Time) error {
	if clock == nil {
		return apierror.Internal(errors.New("passkey: ConsumeRegistration needs a clock"))
	}
	p, err := v.consumeRegistration(ctx, tx, challenge, accountID, clock(), true)
	if err != nil {
		return err
	}
	if now := clock(); !now.Before(p.ExpiresAt) {
		return fail(ReasonRegistrationChallengeExpired)
	}
	return nil
}

func (v *Verifier) verifyRegistration(ctx context.Context, tx storage.Tx, req RegistrationRequest, now time.Time, consume bool) (*Registration, error) {
	var f fields
	nickname, err := authclient.NormalizeNickname(req.Nickname)
	if err != nil {
		for _, fe := range apierror.As(err).FieldErrors() {
			f.v.Add(fe.Field, fe.Constraint, fe.Message)
		}
	}
	if req.AccountID == "" {
		f.v.Add("accountId", nil, "is required")
	}
	if ch := f.b64("challenge", req.Challenge, true, maxChallengeBytes); ch != nil && len(ch) < minChallengeBytes {
		f.v.Add("challenge", apierror.Length(minChallengeBytes, maxChallengeBytes), "is shorter than 16 bytes")
	}
	att := req.Attestation
	credID := f.b64("attestation.credentialId", att.CredentialID, true, maxCredentialID)
	clientData := f.b64("attestation.clientDataJson", att.ClientDataJSON, true, maxClientDataJSON)
	object := f.b64("attestation.attestationObject", att.AttestationObject, true, maxAttestationObject)
	for i, t := range att.Transports {
		if !slices.Contains(Transports, t) {
			f.v.Add(apierror.Path("attestation", "transports", i), apierror.OneOf(Transports...), "unknown transport")
		}
	}
	if err := f.err(); err != nil {
		return nil, err
	}
	cd, err := parseClientData("attestation.clientDataJson", clientData)
	if err != nil {
		return nil, err
	}
	ccr := protocol.CredentialCreationResponse{
		PublicKeyCredential: protocol.PublicKeyCredential{
			Credential: protocol.Credential{ID: b64url(credID), Type: string(protocol.PublicKeyCredentialType)},
			RawID:      credID,
		},
		AttestationResponse: protocol.AuthenticatorAttestationResponse{
			AuthenticatorResponse: protocol.AuthenticatorResponse{ClientDataJSON: clientData},
			AttestationObject:     object,
			Transports:            att.Transports,
		},
	}
	pcc, err := ccr.Parse()
	if err != nil {
		return nil, apierror.InvalidField("attestation.attestationObject", nil, "is not a WebAuthn attestation object with attested credential data").WithCause(err)
	}

	pending, err := v.consumeRegistration(ctx, tx, req.Challenge, req.AccountID, now, consume)
	if err != nil {
		return nil, err
	}
	challenge := string(pending.Payload)
	if err := v.checkClientData(cd, protocol.CreateCeremony, challenge); err != nil {
		return nil, err
	}
	if err := v.checkAuthData(&pcc.Response.AttestationObject.AuthData); err != nil {
		return nil, err
	}
	hash, err := pcc.Verify(challenge, v.cfg.RelyingParty.ID, v.origins, v.opaque, nil, protocol.TopOriginExplicitVerificationMode,
		false, v.cfg.RelyingParty.RequireUserVerification, true, nil, webauthn.CredentialParametersDefault(),
		protocol.AttestationPolicy{}, signaturePolicy)
	if err != nil {
		return nil, libraryFailure(err)
	}
	cred, err := webauthn.NewCredential(hash, pcc)
	if err != nil {
		return nil, libraryFailure(err)
	}

	switch _, err := tx.Credentials().FindByWebAuthnID(ctx, req.Tenant, cred.ID); {
	case err == nil:
		return nil, apierror.New(apierror.PasskeyCredentialAlreadyExists, "this passkey is already registered")
	case !errors.Is(err, storage.ErrNotFound):
		return nil, apierror.Internal(fmt.Errorf("passkey: looking up credential id: %w", err))
	}
	return &Registration{
		AccountID:         req.AccountID,
		Nickname:          nickname,
		AttestationFormat: cred.AttestationFormat,
		Credential: &storage.WebAuthnCredential{
			CredentialID:    slices.Clone(cred.ID),
			PublicKey:       slices.Clone(cred.PublicKey),
			AttestationType: cred.AttestationType,
			AAGUID:          slices.Clone(cred.Authenticator.AAGUID),
			SignCount:       cred.Authenticator.SignCount,
			Transports:      slices.Clone(att.Transports),
			UserPresent:     cred.Flags.UserPresent,
			UserVerified:    cred.Flags.UserVerified,
			BackupEligible:  cred.Flags.BackupEligible,
			BackupState:     cred.Flags.BackupState,
		},
	}, nil
}

// signaturePolicy is go-webauthn's strictest: ECDSA signatures must be DER,
// as the WebAuthn specification requires.
var signaturePolicy = protocol.SignaturePolicy{ECDSAEncoding: protocol.ECDSASignatureEncodingDER}

// consumeRegistration consumes the registration challenge, or with consume
// false only reads it and judges it as Consume would, and checks that it
// belongs to accountID.
func (v *Verifier) consumeRegistration(ctx context.Context, tx storage.Tx, challenge, accountID string, now time.Time, consume bool) (storage.PendingRequest, error) {
	var p storage.PendingRequest
	var err error
	if consume {
		p, err = storage.ConsumeNow(ctx, tx, registrationID(challenge), now)
	} else if p, err = tx.PendingRequests().Get(ctx, registrationID(challenge)); err == nil {
		switch {
		case !p.ConsumedAt.IsZero():
			err = storage.ErrConsumed
		case !now.Before(p.ExpiresAt):
			err = storage.ErrExpired
		}
	}
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return p, fail(ReasonRegistrationChallengeUnknown)
	case errors.Is(err, storage.ErrExpired):
		return p, fail(ReasonRegistrationChallengeExpired)
	case errors.Is(err, storage.ErrConsumed):
		return p, fail(ReasonRegistrationChallengeUsed)
	case err != nil:
		return p, apierror.Internal(fmt.Errorf("passkey: consuming registration challenge: %w", err))
	case p.Kind != KindRegistration || string(p.Payload) != challenge:
		return p, fail(ReasonRegistrationChallengeUnknown)
	case p.AccountID != accountID:
		return p, fail(ReasonRegistrationChallengeAccount)
	}
	return p, nil
}

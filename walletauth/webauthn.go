package walletauth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/walletauth/authclient"
	"github.com/walletgate/walletgate/walletauth/passkey"
)

// kindPasskeySession is the pending-request kind of a passkey authentication
// challenge.
const kindPasskeySession = "PASSKEY_SESSION"

func (s *Service) passkeys() (*passkey.Verifier, error) {
	if s.cfg.Passkeys == nil {
		return nil, apierror.InvalidField("type", apierror.OneOf(string(storage.EmailOTP), string(storage.SMSOTP)),
			"credential type PASSKEY is not enabled on this service")
	}
	return s.cfg.Passkeys, nil
}

// PasskeyRegistrationChallenge issues a single-use WebAuthn registration
// challenge for an account, for the platform backend to put in the browser's
// creation options; the registration (AddCredential with type PASSKEY) must
// echo it. The [Config].Guard is asked about the wallet before the
// challenge is stored. Errors: 400 INVALID_INPUT (PASSKEY not enabled, bad
// account id), 404 REFERENCE_NOT_FOUND (no such wallet, or refused by the
// guard).
func (s *Service) PasskeyRegistrationChallenge(ctx context.Context, accountID string) (*passkey.RegistrationChallenge, error) {
	v, err := s.passkeys()
	if err != nil {
		return nil, err
	}
	if !storage.ValidID(accountID, "InternalAccount") {
		return nil, apierror.InvalidField("accountId", apierror.Pattern(`^InternalAccount:[0-9a-fA-F-]{36}$`), "must be an InternalAccount id")
	}
	var rc *passkey.RegistrationChallenge
	err = s.atomic(ctx, func(tx storage.Tx) error {
		unknown := unknownAs("internal account", accountID)
		w, err := tx.InternalAccounts().Get(ctx, accountID)
		if errors.Is(err, storage.ErrNotFound) {
			return unknown()
		} else if err != nil {
			return err
		}
		if err := s.admit(ctx, &w, unknown); err != nil {
			return err
		}
		rc, err = v.IssueRegistrationChallenge(ctx, tx, accountID, s.cfg.Clock().UTC())
		return err
	})
	if err != nil {
		return nil, apierror.From(err)
	}
	return rc, nil
}

// passkeyParams verifies a passkey registration and records it in p. With
// consume the registration challenge is consumed in tx, otherwise it is only
// checked and the retry that creates the credential consumes it.
func (s *Service) passkeyParams(ctx context.Context, tx storage.Tx, acct *storage.InternalAccount, p *authclient.AddParams, req *AddCredentialRequest, consume bool) error {
	v, err := s.passkeys()
	if err != nil {
		return err
	}
	if req.Attestation == nil {
		return apierror.InvalidField("attestation", nil, "is required for PASSKEY")
	}
	verify := v.CheckRegistration
	if consume {
		verify = v.VerifyRegistration
	}
	reg, err := verify(ctx, tx, passkey.RegistrationRequest{AccountID: acct.ID, Tenant: acct.Tenant, Nickname: req.Nickname,
		Challenge: req.Challenge, Attestation: *req.Attestation}, s.cfg.Clock().UTC())
	if err != nil {
		return err
	}
	w := reg.Credential
	p.Nickname = reg.Nickname
	p.Passkey = &authclient.PasskeyParams{CredentialID: base64URL(w.CredentialID), RegistrationChallenge: req.Challenge,
		PublicKey: base64URL(w.PublicKey), AttestationType: w.AttestationType, AAGUID: base64URL(w.AAGUID),
		SignCount: w.SignCount, Transports: w.Transports, UserPresent: w.UserPresent, UserVerified: w.UserVerified,
		BackupEligible: w.BackupEligible, BackupState: w.BackupState}
	return nil
}

// passkeyRecord is the stored form of the verified passkey p.
func passkeyRecord(p *authclient.PasskeyParams) (*storage.WebAuthnCredential, error) {
	var raw [3][]byte
	for i, v := range []string{p.CredentialID, p.PublicKey, p.AAGUID} {
		b, err := base64.RawURLEncoding.DecodeString(v)
		if err != nil {
			return nil, apierror.Internal(errors.New("walletauth: stored passkey parameters are not base64url"))
		}
		raw[i] = b
	}
	return &storage.WebAuthnCredential{CredentialID: raw[0], PublicKey: raw[1], AttestationType: p.AttestationType,
		AAGUID: raw[2], SignCount: p.SignCount, Transports: p.Transports, UserPresent: p.UserPresent,
		UserVerified: p.UserVerified, BackupEligible: p.BackupEligible, BackupState: p.BackupState}, nil
}

type passkeySession struct {
	CredentialID    string `json:"credentialId"`
	ClientPublicKey string `json:"clientPublicKey"`
	Challenge       string `json:"challenge"`
}

// passkeyScope names the bounded scope of the login challenges of the
// PASSKEY credential credentialID (see [storage.PendingRequests.Create] with a scope's [storage.Quota]).
func passkeyScope(credentialID string) string { return kindPasskeySession + "/" + credentialID }

// passkeyChallenge binds clientPublicKey into a WebAuthn challenge stored,
// in tx, as a single-use pending request, one of at most
// Config.MaxPasskeyChallenges live ones of the credential: a new one
// supersedes the oldest.
func (s *Service) passkeyChallenge(ctx context.Context, tx storage.Tx, c *storage.Credential, req ChallengeRequest) (*ChallengeResponse, error) {
	v, err := s.passkeys()
	if err != nil {
		return nil, err
	}
	if _, err := signedretry.ParsePublicKey(req.ClientPublicKey); err != nil {
		return nil, apierror.InvalidField("clientPublicKey", apierror.Pattern(`^(0[23][0-9a-fA-F]{64}|04[0-9a-fA-F]{128})$`), apierror.As(err).Message)
	}
	if c.WebAuthn == nil {
		return nil, apierror.Internal(errors.New("walletauth: PASSKEY credential without a WebAuthn record"))
	}
	id, err := s.newID("Request")
	if err != nil {
		return nil, err
	}
	m := authMethod(c)
	challenge := v.AssertionChallenge(req.ClientPublicKey, m.CredentialID, id)
	data, err := json.Marshal(passkeySession{CredentialID: c.ID, ClientPublicKey: req.ClientPublicKey, Challenge: challenge})
	if err != nil {
		return nil, apierror.Internal(err)
	}
	now := s.cfg.Clock().UTC()
	p := storage.PendingRequest{ID: id, Kind: kindPasskeySession, AccountID: c.AccountID,
		Payload: v.AssertionPayload(req.ClientPublicKey, m.CredentialID, id), Data: data,
		CreatedAt: now, ExpiresAt: now.Add(s.cfg.RetryTTL)}
	// Anyone who knows the credential's id may ask for a login challenge,
	// so these challenges must not fill the wallet's cap of signed first
	// legs (MaxPendingChallenges), which would lock its owner out. They
	// are bounded per credential instead: the store keeps at most
	// MaxPasskeyChallenges of them, a new one superseding the oldest, so
	// issuing one is never refused.
	if err := tx.PendingRequests().Create(ctx, &p, storage.Quota{Scope: passkeyScope(c.ID), Limit: s.cfg.MaxPasskeyChallenges}); err != nil {
		return nil, err
	}
	return &ChallengeResponse{AuthMethod: *m, Challenge: challenge, RequestID: id, ExpiresAt: &p.ExpiresAt}, nil
}

// verifyPasskey checks an assertion against the challenge named by the
// Request-Id and, in one transaction, consumes the challenge, stores the
// advanced sign counter and flags (compare-and-set, so a replayed assertion
// racing the original loses) and creates the session.
func (s *Service) verifyPasskey(ctx context.Context, credentialID string, req VerifyRequest, call signedretry.Request) (*AuthSession, error) {
	v, err := s.passkeys()
	if err != nil {
		return nil, err
	}
	if req.Assertion == nil {
		return nil, apierror.InvalidField("assertion", nil, "is required for PASSKEY")
	}
	if call.RequestID == "" {
		return nil, apierror.New(apierror.RequestIDMissing, "the Request-Id header of the passkey challenge is required")
	}
	var p storage.PendingRequest
	var cred storage.Credential
	var data passkeySession
	now := s.cfg.Clock()
	err = s.atomic(ctx, func(tx storage.Tx) error {
		var err error
		p, err = tx.PendingRequests().Get(ctx, call.RequestID)
		switch {
		case errors.Is(err, storage.ErrNotFound) || err == nil && p.Kind != kindPasskeySession:
			return apierror.Unauthenticated("unknown request id")
		case err != nil:
			return err
		case !p.ConsumedAt.IsZero():
			return apierror.Unauthenticated("request id already used")
		case !now.Before(p.ExpiresAt):
			return apierror.Unauthenticated("request id expired")
		}
		if err := json.Unmarshal(p.Data, &data); err != nil {
			return apierror.Internal(err)
		}
		if data.CredentialID != credentialID {
			return apierror.Unauthenticated("request id was issued for another credential")
		}
		cred, err = credentialOfType(ctx, tx, credentialID, storage.Passkey)
		return err
	})
	if err != nil {
		return nil, apierror.From(err)
	}
	updated, err := v.VerifyAssertion(cred.WebAuthn, data.Challenge, *req.Assertion)
	if err != nil {
		return nil, err
	}
	pub, essk, err := s.sessionKey(data.ClientPublicKey)
	if err != nil {
		return nil, err
	}
	var out *AuthSession
	err = s.atomic(ctx, func(tx storage.Tx) error {
		now := s.cfg.Clock() // read again on every run of the transaction
		if _, err := storage.ConsumeNow(ctx, tx, p.ID, now); err != nil {
			switch {
			case errors.Is(err, storage.ErrNotFound):
				// Superseded by newer challenges of the credential
				// since it was read.
				return apierror.Unauthenticated("unknown request id")
			case errors.Is(err, storage.ErrConsumed):
				return apierror.Unauthenticated("request id already used")
			case errors.Is(err, storage.ErrExpired):
				return apierror.Unauthenticated("request id expired")
			}
			return err
		}
		// Decided on a time read after the consumption's lock was
		// granted, again on every rerun: a login that waited past the
		// challenge's expiry is refused and consumes nothing.
		if !s.cfg.Clock().Before(p.ExpiresAt) {
			return apierror.Unauthenticated("request id expired")
		}
		c := cred
		c.WebAuthn, c.UpdatedAt = updated, s.cfg.Clock().UTC()
		if err := tx.Credentials().Update(ctx, &c); err != nil {
			if errors.Is(err, storage.ErrConflict) || errors.Is(err, storage.ErrNotFound) {
				return apierror.Unauthenticated("the credential changed during verification; authenticate again")
			}
			return err
		}
		out, err = s.createSession(ctx, tx, &c, pub)
		return err
	})
	if err != nil {
		return nil, apierror.From(err)
	}
	out.EncryptedSessionSigningKey = essk
	return out, nil
}

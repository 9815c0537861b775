package walletauth

import (
	"context"
	"encoding/base64"
	"errors"
	"slices"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/walletauth/authclient"
)

func base64URL(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// AddCredentialRequest is the body of POST /auth/credentials ([authclient.AddCredentialRequest]).
type AddCredentialRequest = authclient.AddCredentialRequest

var credentialTypes = []string{string(storage.EmailOTP), string(storage.SMSOTP), string(storage.Passkey), string(storage.OAuth)}

// AddCredential adds a credential to an account. When the account has no
// credential it is created at once. Otherwise the first call (call without
// signed-retry headers) checks everything, binds the credential to be created
// into the payload's parameters (see [authclient.AddParams]) and answers a challenge
// (202); the retry, stamped by an active session of the account, creates
// exactly that credential. An added EMAIL_OTP or SMS_OTP credential gets a
// one-time code at once: the result carries its otpEncryptionTargetBundle
// and the code is sent.
//
// An EMAIL_OTP credential is tied to the account's email, which no EMAIL_OTP
// credential of another customer may hold (as in [Service.CreateWallet] and
// [Service.UpdateEmail]): both legs hold the address and check it, the
// retry in the transaction that creates the credential, so an address
// another customer took in between is refused too. A phone number is not
// exclusive: SMS_OTP credentials of several customers may send to one number
// (no call ties a customer to a number, and the API has no error for it).
//
// On the retry req is not read: the credential comes from the parameters the
// first call stored, never from the retry's body, so what the user signed is
// what is added. An OAUTH token and a passkey attestation are verified on the
// first call; the retry consumes the passkey's registration challenge.
//
// call carries the method, path and raw body of the request and, on the
// retry, its two headers. Exactly one of the results is non-nil on success.
// The [Config].Guard is asked about the account on each leg, once it is
// locked, before anything about it is decided.
//
// Errors: 400 INVALID_INPUT (bad body, unsupported type),
// 400 MISSING_MANDATORY_USER_INFO (no email or phone),
// 400 EMAIL_OTP_CREDENTIAL_ALREADY_EXISTS / SMS_OTP_CREDENTIAL_ALREADY_EXISTS /
// PASSKEY_CREDENTIAL_ALREADY_EXISTS, 409 CONFLICT (the same OAUTH identity, or
// the contact the credential was bound to changed before the retry), 409
// EMAIL_OTP_EMAIL_ALREADY_EXISTS (the account's email is tied to an
// EMAIL_OTP credential of another customer), 404
// REFERENCE_NOT_FOUND (account, or a plain refusal of the guard), the 401s
// of OIDC and passkey verification and of signedretry.
func (s *Service) AddCredential(ctx context.Context, req AddCredentialRequest, call signedretry.Request) (*AuthMethod, *signedretry.Challenge, error) {
	created, ch, err := run(ctx, s, call, signedretry.Steps[authclient.AddParams, storage.InternalAccount, *storage.Credential]{
		Type: OpAddCredential,
		Bind: func(ctx context.Context, tx storage.Tx) (*signedretry.Operation[authclient.AddParams], *storage.Credential, error) {
			return s.bindAdd(ctx, tx, &req)
		},
		// The wallet and, for EMAIL_OTP, the address are locked before the
		// signer (the store's lock order: internal accounts, then an
		// address, then credentials and sessions).
		// The guard decides on the wallet as locked, before the address
		// and the signer are.
		Lock: func(ctx context.Context, tx storage.Tx, a *signedretry.Authorization, p authclient.AddParams) (storage.InternalAccount, error) {
			unknown := unknownAs("internal account", a.AccountID)
			acct, err := tx.InternalAccounts().Lock(ctx, a.AccountID)
			if errors.Is(err, storage.ErrNotFound) {
				return acct, unknown()
			}
			if err != nil {
				return acct, err
			}
			if err := s.admit(ctx, &acct, unknown); err != nil {
				return acct, err
			}
			if p.Type == storage.EmailOTP {
				return acct, tx.Credentials().LockEmail(ctx, acct.Tenant, p.Email)
			}
			return acct, nil
		},
		// The retry creates the credential the first call bound, from the
		// stored parameters alone, enrolled by the signing session: it
		// carries no more than that session's credential's assurance for
		// the security-change period. The wallet records the change, and
		// the owner's existing channels are told of it.
		Effect: func(ctx context.Context, tx storage.Tx, a *signedretry.Authorization, p authclient.AddParams, acct storage.InternalAccount) (*storage.Credential, error) {
			created, before, err := s.createFromParams(ctx, tx, &acct, &p, a)
			if err != nil {
				return nil, err
			}
			if err := securityChanged(ctx, tx, &acct, created.CreatedAt); err != nil {
				return nil, err
			}
			if err := s.credentialAdded(ctx, tx, &acct, created, a.SessionID); err != nil {
				return nil, err
			}
			return created, s.securityNotice(ctx, tx, &acct, noticeAdded, created, a, enrollerOf(created, before), before, created.CreatedAt)
		},
	})
	if err != nil || ch != nil {
		return nil, ch, err
	}
	m, err := s.afterCreate(ctx, created)
	return m, nil, err
}

// bindAdd is the first call of an add, in its transaction: it checks req
// against the account and returns the operation binding the credential to
// be created, or, when the account has no credential, creates it at once and
// returns it with no operation.
func (s *Service) bindAdd(ctx context.Context, tx storage.Tx, req *AddCredentialRequest) (*signedretry.Operation[authclient.AddParams], *storage.Credential, error) {
	var v apierror.Validation
	v.Check(storage.ValidID(req.AccountID, "InternalAccount"), "accountId", apierror.Pattern(`^InternalAccount:[0-9a-fA-F-]{36}$`), "must be an InternalAccount id")
	v.Check(slices.Contains(credentialTypes, string(req.Type)), "type", apierror.OneOf(credentialTypes...), "unknown credential type")
	if err := v.Err(); err != nil {
		return nil, nil, err
	}
	unknown := unknownAs("internal account", req.AccountID)
	acct, err := tx.InternalAccounts().Lock(ctx, req.AccountID)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil, unknown()
	}
	if err != nil {
		return nil, nil, err
	}
	if err := s.admit(ctx, &acct, unknown); err != nil {
		return nil, nil, err
	}
	existing, err := tx.Credentials().ListByAccount(ctx, acct.ID)
	if err != nil {
		return nil, nil, err
	}
	final := len(existing) == 0
	p, err := s.addParams(ctx, tx, &acct, req, final)
	if err != nil {
		return nil, nil, err
	}
	if final {
		first, _, err := s.createFromParams(ctx, tx, &acct, p, nil)
		if err != nil {
			return nil, nil, err
		}
		return nil, first, s.credentialAdded(ctx, tx, &acct, first, "")
	}
	if err := checkUnique(existing, p); err != nil {
		return nil, nil, err
	}
	return &signedretry.Operation[authclient.AddParams]{AccountID: acct.ID, Signer: signedretry.Signer{Rule: signedretry.AnySession},
		Parameters: *p, CredentialType: string(req.Type)}, nil, nil
}

// addParams checks an add request against the account and returns what the
// credential will be created from. An OAUTH token and a passkey attestation
// are verified here; consume consumes the passkey's registration challenge
// (the credential is created in this transaction), otherwise the retry will.
func (s *Service) addParams(ctx context.Context, tx storage.Tx, acct *storage.InternalAccount, req *AddCredentialRequest, consume bool) (*authclient.AddParams, error) {
	p := &authclient.AddParams{Type: req.Type}
	switch req.Type {
	case storage.EmailOTP:
		if acct.Email == "" {
			return nil, apierror.New(apierror.MissingMandatoryUserInfo, "the customer has no email address")
		}
		if err := holdEmail(ctx, tx, acct.Tenant, acct.Email, acct.CustomerID); err != nil {
			return nil, err
		}
		p.Email, p.Nickname = acct.Email, acct.Email
	case storage.SMSOTP:
		if acct.Phone == "" {
			return nil, apierror.New(apierror.MissingMandatoryUserInfo, "the customer has no phone number")
		}
		p.Phone, p.Nickname = acct.Phone, acct.Phone
	case storage.Passkey:
		if err := s.passkeyParams(ctx, tx, acct, p, req, consume); err != nil {
			return nil, err
		}
	case storage.OAuth:
		if err := s.oauthParams(ctx, p, req); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// createFromParams creates the credential p describes on acct, which the
// caller has locked, and returns it with the account's credentials as they
// were before. a is the authorization of the signed retry that enrolls it,
// nil for the credential of an account that has none (which takes no
// signature and carries its own type's assurance at once). On the retry
// the account must still hold the contact the payload names, a passkey's
// registration challenge is consumed now, and the credential is enrolled
// by a's session ([Service.enrolment]).
func (s *Service) createFromParams(ctx context.Context, tx storage.Tx, acct *storage.InternalAccount, p *authclient.AddParams, a *signedretry.Authorization) (*storage.Credential, []storage.Credential, error) {
	retry := a != nil
	id, err := s.newID("AuthMethod")
	if err != nil {
		return nil, nil, err
	}
	now := s.cfg.Clock().UTC()
	var enrolment storage.Enrolment
	if retry {
		now = a.Now
		by, err := signerCredential(ctx, tx, a)
		if err != nil {
			return nil, nil, err
		}
		enrolment = s.enrolment(p.Type, a, by, now)
	}
	c := &storage.Credential{ID: id, AccountID: acct.ID, Tenant: acct.Tenant, Type: p.Type, Nickname: p.Nickname,
		Enrolment: enrolment, CreatedAt: now, UpdatedAt: now}
	changed := apierror.New(apierror.Conflict, "the account's contact changed since the challenge was issued; start again")
	switch p.Type {
	case storage.EmailOTP:
		if retry {
			if acct.Email != p.Email {
				return nil, nil, changed
			}
			// The address may have been tied to another customer's
			// EMAIL_OTP credential since the first call checked it.
			if err := holdEmail(ctx, tx, acct.Tenant, p.Email, acct.CustomerID); err != nil {
				return nil, nil, err
			}
		}
		c.Email = p.Email
	case storage.SMSOTP:
		if retry && acct.Phone != p.Phone {
			return nil, nil, changed
		}
		c.Phone = p.Phone
	case storage.OAuth:
		c.OAuth = &storage.OAuthIdentity{Issuer: p.Issuer, Audience: p.Audience, Subject: p.Subject}
	case storage.Passkey:
		if p.Passkey == nil {
			return nil, nil, apierror.Internal(errors.New("walletauth: PASSKEY parameters without a passkey"))
		}
		if c.WebAuthn, err = passkeyRecord(p.Passkey); err != nil {
			return nil, nil, err
		}
		if retry {
			v, err := s.passkeys()
			if err != nil {
				return nil, nil, err
			}
			if err := v.ConsumeRegistration(ctx, tx, p.Passkey.RegistrationChallenge, acct.ID, s.cfg.Clock); err != nil {
				return nil, nil, err
			}
		}
	default:
		return nil, nil, apierror.Internal(errors.New("walletauth: stored parameters name an unknown credential type"))
	}
	existing, err := tx.Credentials().ListByAccount(ctx, acct.ID)
	if err != nil {
		return nil, nil, err
	}
	if err := checkUnique(existing, p); err != nil {
		return nil, nil, err
	}
	if err := createCredential(ctx, tx, c); err != nil {
		return nil, nil, err
	}
	return c, existing, nil
}

// enrollerOf returns, among before, the credential whose session enrolled
// c; nil when c was enrolled without a session.
func enrollerOf(c *storage.Credential, before []storage.Credential) *storage.Credential {
	for i := range before {
		if before[i].ID == c.Enrolment.CredentialID {
			return &before[i]
		}
	}
	return nil
}

// checkUnique gives the clear error for a credential the account cannot
// take; the store enforces the same rules on create.
func checkUnique(existing []storage.Credential, p *authclient.AddParams) error {
	for _, o := range existing {
		switch {
		case o.Type != p.Type:
		case p.Type == storage.OAuth:
			if o.OAuth != nil && *o.OAuth == (storage.OAuthIdentity{Issuer: p.Issuer, Audience: p.Audience, Subject: p.Subject}) {
				return duplicateCredential(p.Type)
			}
		case p.Type != storage.Passkey:
			return duplicateCredential(p.Type)
		}
	}
	return nil
}

func duplicateCredential(t storage.CredentialType) *apierror.Error {
	switch t {
	case storage.EmailOTP:
		return apierror.New(apierror.EmailOTPCredentialAlreadyExists, "the account already has an EMAIL_OTP credential")
	case storage.SMSOTP:
		return apierror.New(apierror.SMSOTPCredentialAlreadyExists, "the account already has an SMS_OTP credential")
	case storage.Passkey:
		return apierror.New(apierror.PasskeyCredentialAlreadyExists, "this passkey is already registered")
	default:
		return apierror.New(apierror.Conflict, "the account already has a credential for this identity")
	}
}

func createCredential(ctx context.Context, tx storage.Tx, c *storage.Credential) error {
	err := tx.Credentials().Create(ctx, c)
	if errors.Is(err, storage.ErrDuplicate) {
		return duplicateCredential(c.Type)
	}
	return err
}

// afterCreate issues the first one-time code of a new OTP credential.
func (s *Service) afterCreate(ctx context.Context, c *storage.Credential) (*AuthMethod, error) {
	m := authMethod(c)
	if c.Type != storage.EmailOTP && c.Type != storage.SMSOTP {
		return m, nil
	}
	bundle, err := s.issueCode(ctx, c, false)
	if err != nil {
		return nil, err
	}
	m.OTPEncryptionTargetBundle = bundle
	return m, nil
}

// ListCredentials returns the credentials of an account, oldest first.
// Without a [Config].Guard an unknown account has none; with one the
// account is read for the guard, and an unknown account is 404
// REFERENCE_NOT_FOUND, as a refused one is.
func (s *Service) ListCredentials(ctx context.Context, accountID string) ([]AuthMethod, error) {
	if !storage.ValidID(accountID, "InternalAccount") {
		return nil, apierror.InvalidField("accountId", apierror.Pattern(`^InternalAccount:[0-9a-fA-F-]{36}$`), "must be an InternalAccount id")
	}
	var creds []storage.Credential
	err := s.atomic(ctx, func(tx storage.Tx) error {
		if err := s.admitID(ctx, tx, accountID, unknownAs("internal account", accountID)); err != nil {
			return err
		}
		var err error
		creds, err = tx.Credentials().ListByAccount(ctx, accountID)
		return err
	})
	if err != nil {
		return nil, apierror.From(err)
	}
	out := make([]AuthMethod, len(creds))
	for i := range creds {
		out[i] = *authMethod(&creds[i])
	}
	return out, nil
}

// RevokeCredential removes a credential. The first call answers a challenge
// that a session of a different credential of the same account must stamp;
// the retry removes the credential and revokes every session it issued, in
// one transaction. An account keeps at least one credential: revoking the
// last answers 400 INVALID_INPUT. An unknown credential is 404
// REFERENCE_NOT_FOUND. A credential enrolled by a session of a weaker
// credential, within its security-change period, cannot revoke a
// credential older than itself: 403 FORBIDDEN with details.assurance and
// details.availableAt (see [Config].SecurityChangePeriod). The wallet's
// contact channels, the removed credential's among them, are told
// ([EventSecurityNotice]). The [Config].Guard is asked about the
// credential's wallet on each leg, once it is locked; a plain refusal
// answers as an unknown credential. On success both results are nil.
func (s *Service) RevokeCredential(ctx context.Context, credentialID string, call signedretry.Request) (*signedretry.Challenge, error) {
	// check reads the credential id and locks its account before counting
	// its credentials, so that of concurrent revokes of its credentials the
	// count of each sees the deletes of those that committed before it,
	// and asks the guard about that account, on each leg. It returns the
	// credential, its account and the account's credentials.
	check := func(ctx context.Context, tx storage.Tx, id string) (*storage.Credential, *storage.InternalAccount, []storage.Credential, error) {
		c, err := tx.Credentials().Get(ctx, id)
		if errors.Is(err, storage.ErrNotFound) {
			return nil, nil, nil, notFound("credential", id)
		}
		if err != nil {
			return nil, nil, nil, err
		}
		acct, err := tx.InternalAccounts().Lock(ctx, c.AccountID)
		if errors.Is(err, storage.ErrNotFound) {
			return nil, nil, nil, notFound("internal account", c.AccountID)
		} else if err != nil {
			return nil, nil, nil, err
		}
		// The guard decides on the credential's wallet as locked; a
		// plain refusal answers as an unknown credential.
		if err := s.admit(ctx, &acct, unknownAs("credential", id)); err != nil {
			return nil, nil, nil, err
		}
		all, err := tx.Credentials().ListByAccount(ctx, c.AccountID)
		if err != nil {
			return nil, nil, nil, err
		}
		if !slices.ContainsFunc(all, func(o storage.Credential) bool { return o.ID == c.ID }) {
			return nil, nil, nil, notFound("credential", id)
		}
		if len(all) <= 1 {
			return nil, nil, nil, apierror.New(apierror.InvalidInput, "an account must keep at least one credential; add another before revoking this one")
		}
		return &c, &acct, all, nil
	}
	_, ch, err := run(ctx, s, call, signedretry.Steps[revokeParams, struct{}, struct{}]{
		Type: OpRevokeCredential,
		Bind: func(ctx context.Context, tx storage.Tx) (*signedretry.Operation[revokeParams], struct{}, error) {
			c, _, _, err := check(ctx, tx, credentialID)
			if err != nil {
				return nil, struct{}{}, err
			}
			return &signedretry.Operation[revokeParams]{AccountID: c.AccountID,
				Signer:     signedretry.Signer{Rule: signedretry.OtherCredentialSession, Ref: c.ID},
				Parameters: revokeParams{CredentialID: c.ID}, CredentialType: string(c.Type)}, struct{}{}, nil
		},
		// The retry revokes the credential the payload names, if the
		// signer's credential may revoke it.
		Effect: func(ctx context.Context, tx storage.Tx, a *signedretry.Authorization, p revokeParams, _ struct{}) (struct{}, error) {
			c, acct, all, err := check(ctx, tx, p.CredentialID)
			if err != nil {
				return struct{}{}, err
			}
			if c.AccountID != a.AccountID {
				return struct{}{}, apierror.Unauthenticated("request id is bound to another account")
			}
			signer, err := signerCredential(ctx, tx, a)
			if err != nil {
				return struct{}{}, err
			}
			if err := mayRevoke(signer, c, a.Now); err != nil {
				return struct{}{}, err
			}
			if err := tx.Credentials().Delete(ctx, c.ID); err != nil {
				return struct{}{}, err
			}
			now := a.Now
			revoked, err := tx.Sessions().RevokeByCredential(ctx, c.ID, now)
			if err != nil {
				return struct{}{}, err
			}
			if err := securityChanged(ctx, tx, acct, now); err != nil {
				return struct{}{}, err
			}
			if err := s.credentialRevoked(ctx, tx, acct, c, revoked, a.SessionID, now); err != nil {
				return struct{}{}, err
			}
			return struct{}{}, s.securityNotice(ctx, tx, acct, noticeRevoked, c, a, signer, all, now)
		},
	})
	return ch, err
}

// revokeParams are the parameters of a REVOKE_CREDENTIAL payload.
type revokeParams struct {
	CredentialID string `json:"credentialId"`
}

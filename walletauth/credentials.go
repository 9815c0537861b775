package walletauth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/walletauth/passkey"
)

func base64URL(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// NewWallet describes an embedded wallet to provision.
type NewWallet struct {
	CustomerID string
	// Email is the customer's email; the wallet's EMAIL_OTP credential is
	// tied to it. Required.
	Email string
	// Phone is the customer's E.164 phone number, needed to add SMS_OTP.
	Phone string
}

// CreateWallet provisions an internal account for a customer with its first
// credential, an EMAIL_OTP credential tied to the customer's email. The email
// is stored lowercased. An address already tied to an EMAIL_OTP credential of
// another customer is 409 EMAIL_OTP_EMAIL_ALREADY_EXISTS, also when two
// customers race for it.
func (s *Service) CreateWallet(ctx context.Context, w NewWallet) (*storage.InternalAccount, *AuthMethod, error) {
	var v apierror.Validation
	email := normalizeEmail(w.Email)
	v.Check(validEmail(email), "email", apierror.Format("email"), "must be an email address")
	v.Check(w.Phone == "" || validPhone(w.Phone), "phone", apierror.Format("e.164"), "must be an E.164 phone number")
	if err := v.Err(); err != nil {
		return nil, nil, err
	}
	accountID, err := s.newID("InternalAccount")
	if err != nil {
		return nil, nil, err
	}
	credID, err := s.newID("AuthMethod")
	if err != nil {
		return nil, nil, err
	}
	now := s.cfg.Clock().UTC()
	acct := storage.InternalAccount{ID: accountID, CustomerID: w.CustomerID, Email: email, Phone: w.Phone, CreatedAt: now, UpdatedAt: now}
	cred := storage.Credential{ID: credID, AccountID: accountID, Type: storage.EmailOTP, Nickname: email, Email: email,
		CreatedAt: now, UpdatedAt: now}
	err = s.atomic(ctx, func(tx storage.Tx) error {
		// The address is held from the check to the insert, so two
		// customers never both tie it to an EMAIL_OTP credential.
		if err := holdEmail(ctx, tx, email, w.CustomerID); err != nil {
			return err
		}
		if err := tx.InternalAccounts().Create(ctx, &acct); err != nil {
			return err
		}
		if err := tx.Credentials().Create(ctx, &cred); err != nil {
			return err
		}
		return s.credentialAdded(ctx, tx, &acct, &cred, "")
	})
	if err != nil {
		return nil, nil, storeErr(err)
	}
	return &acct, authMethod(&cred), nil
}

// holdEmail holds the address email until the transaction ends
// ([storage.Credentials.LockEmail]) and fails with 409
// EMAIL_OTP_EMAIL_ALREADY_EXISTS when an EMAIL_OTP credential of a wallet of
// another customer than customerID is tied to it. Every path that ties an
// address to an EMAIL_OTP credential calls it in the transaction that ties
// it, after locking the internal accounts it changes and before any
// credential lock (the store's lock order), so of two customers racing for
// one address at most one holds it.
func holdEmail(ctx context.Context, tx storage.Tx, email, customerID string) error {
	if err := tx.Credentials().LockEmail(ctx, email); err != nil {
		return err
	}
	tied, err := tx.Credentials().ListEmailOTPByEmail(ctx, email)
	if err != nil {
		return err
	}
	for _, c := range tied {
		owner, err := tx.InternalAccounts().Get(ctx, c.AccountID)
		if err != nil {
			return err
		}
		if owner.CustomerID != customerID {
			return emailTaken()
		}
	}
	return nil
}

func emailTaken() *apierror.Error {
	return apierror.New(apierror.EmailOTPEmailAlreadyExists, "the email address is already tied to another EMAIL_OTP credential")
}

// AddCredentialRequest is the body of POST /auth/credentials.
type AddCredentialRequest struct {
	Type      storage.CredentialType `json:"type"`
	AccountID string                 `json:"accountId"`
	// OIDCToken is the OpenID Connect ID token (OAUTH).
	OIDCToken string `json:"oidcToken,omitempty"`
	// Nickname, Challenge and Attestation register a passkey (PASSKEY).
	Nickname    string               `json:"nickname,omitempty"`
	Challenge   string               `json:"challenge,omitempty"`
	Attestation *passkey.Attestation `json:"attestation,omitempty"`
}

var credentialTypes = []string{string(storage.EmailOTP), string(storage.SMSOTP), string(storage.Passkey), string(storage.OAuth)}

// AddCredential adds a credential to an account. When the account has no
// credential it is created at once. Otherwise the first call (call without
// signed-retry headers) checks everything, binds the credential to be created
// into the payload's parameters (see [AddParams]) and answers a challenge
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
//
// Errors: 400 INVALID_INPUT (bad body, unsupported type),
// 400 MISSING_MANDATORY_USER_INFO (no email or phone),
// 400 EMAIL_OTP_CREDENTIAL_ALREADY_EXISTS / SMS_OTP_CREDENTIAL_ALREADY_EXISTS /
// PASSKEY_CREDENTIAL_ALREADY_EXISTS, 409 CONFLICT (the same OAUTH identity, or
// the contact the credential was bound to changed before the retry), 409
// EMAIL_OTP_EMAIL_ALREADY_EXISTS (the account's email is tied to an
// EMAIL_OTP credential of another customer), 404
// REFERENCE_NOT_FOUND (account), the 401s of OIDC and passkey verification
// and of signedretry.
func (s *Service) AddCredential(ctx context.Context, req AddCredentialRequest, call signedretry.Request) (*AuthMethod, *signedretry.Challenge, error) {
	var created *storage.Credential // on either leg
	var (
		p    AddParams
		acct storage.InternalAccount
	)
	_, ch, err := s.run(ctx, call, signedretry.Steps{
		Type: OpAddCredential,
		Bind: func(ctx context.Context, tx storage.Tx) (*signedretry.Operation, error) {
			var op *signedretry.Operation
			var err error
			op, created, err = s.bindAdd(ctx, tx, &req)
			return op, err
		},
		// The wallet and, for EMAIL_OTP, the address are locked before the
		// signer (the store's lock order: internal accounts, then an
		// address, then credentials and sessions).
		Lock: func(ctx context.Context, tx storage.Tx, a *signedretry.Authorization) error {
			p = AddParams{}
			if err := a.DecodeParameters(&p); err != nil {
				return err
			}
			var err error
			acct, err = tx.InternalAccounts().Lock(ctx, a.AccountID)
			if errors.Is(err, storage.ErrNotFound) {
				return notFound("internal account", a.AccountID)
			}
			if err != nil {
				return err
			}
			if p.Type == storage.EmailOTP {
				return tx.Credentials().LockEmail(ctx, p.Email)
			}
			return nil
		},
		// The retry creates the credential the first call bound, from the
		// stored parameters alone.
		Effect: func(ctx context.Context, tx storage.Tx, a *signedretry.Authorization) error {
			var err error
			if created, err = s.createFromParams(ctx, tx, &acct, &p, true); err != nil {
				return err
			}
			return s.credentialAdded(ctx, tx, &acct, created, a.SessionID)
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
func (s *Service) bindAdd(ctx context.Context, tx storage.Tx, req *AddCredentialRequest) (*signedretry.Operation, *storage.Credential, error) {
	var v apierror.Validation
	v.Check(storage.ValidID(req.AccountID, "InternalAccount"), "accountId", apierror.Pattern(`^InternalAccount:[0-9a-fA-F-]{36}$`), "must be an InternalAccount id")
	v.Check(slices.Contains(credentialTypes, string(req.Type)), "type", apierror.OneOf(credentialTypes...), "unknown credential type")
	if err := v.Err(); err != nil {
		return nil, nil, err
	}
	acct, err := tx.InternalAccounts().Lock(ctx, req.AccountID)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil, notFound("internal account", req.AccountID)
	}
	if err != nil {
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
		first, err := s.createFromParams(ctx, tx, &acct, p, false)
		if err != nil {
			return nil, nil, err
		}
		return nil, first, s.credentialAdded(ctx, tx, &acct, first, "")
	}
	if err := checkUnique(existing, p); err != nil {
		return nil, nil, err
	}
	return &signedretry.Operation{AccountID: acct.ID, Signer: signedretry.Signer{Rule: signedretry.AnySession},
		Parameters: p, CredentialType: string(req.Type)}, nil, nil
}

// AddParams are the parameters of an ADD_CREDENTIAL payload: every value the
// credential is created from, so that a wallet showing the payload shows
// exactly what will be added.
type AddParams struct {
	Type     storage.CredentialType `json:"type"`
	Nickname string                 `json:"nickname"`
	// Email is the address an EMAIL_OTP credential is tied to.
	Email string `json:"email,omitempty"`
	// Phone is the number an SMS_OTP credential sends codes to.
	Phone string `json:"phone,omitempty"`
	// Issuer, Audience and Subject are the OpenID Connect identity of an
	// OAUTH credential, and OIDCTokenSHA256 the lowercase hex SHA-256 of
	// the ID token that asserted it.
	Issuer          string `json:"issuer,omitempty"`
	Audience        string `json:"audience,omitempty"`
	Subject         string `json:"subject,omitempty"`
	OIDCTokenSHA256 string `json:"oidcTokenSha256,omitempty"`
	// Passkey is the verified WebAuthn credential of a PASSKEY credential.
	Passkey *PasskeyParams `json:"passkey,omitempty"`
}

// PasskeyParams are the verified registration of a passkey as a payload
// carries it; binary values are base64url without padding.
type PasskeyParams struct {
	// CredentialID is the WebAuthn credential id.
	CredentialID string `json:"credentialId"`
	// RegistrationChallenge is the challenge the attestation answered; the
	// retry consumes it.
	RegistrationChallenge string `json:"registrationChallenge"`
	// PublicKey is the COSE public key.
	PublicKey       string   `json:"publicKey"`
	AttestationType string   `json:"attestationType"`
	AAGUID          string   `json:"aaguid"`
	SignCount       uint32   `json:"signCount"`
	Transports      []string `json:"transports,omitempty"`
	UserPresent     bool     `json:"userPresent"`
	UserVerified    bool     `json:"userVerified"`
	BackupEligible  bool     `json:"backupEligible"`
	BackupState     bool     `json:"backupState"`
}

// addParams checks an add request against the account and returns what the
// credential will be created from. An OAUTH token and a passkey attestation
// are verified here; consume consumes the passkey's registration challenge
// (the credential is created in this transaction), otherwise the retry will.
func (s *Service) addParams(ctx context.Context, tx storage.Tx, acct *storage.InternalAccount, req *AddCredentialRequest, consume bool) (*AddParams, error) {
	p := &AddParams{Type: req.Type}
	switch req.Type {
	case storage.EmailOTP:
		if acct.Email == "" {
			return nil, apierror.New(apierror.MissingMandatoryUserInfo, "the customer has no email address")
		}
		if err := holdEmail(ctx, tx, acct.Email, acct.CustomerID); err != nil {
			return nil, err
		}
		p.Email, p.Nickname = acct.Email, acct.Email
	case storage.SMSOTP:
		if acct.Phone == "" {
			return nil, apierror.New(apierror.MissingMandatoryUserInfo, "the customer has no phone number")
		}
		p.Phone, p.Nickname = acct.Phone, acct.Phone
	case storage.Passkey:
		if err := s.passkeyParams(ctx, tx, acct.ID, p, req, consume); err != nil {
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
// caller has locked. retry is set on the second leg of a signed retry: the
// account must still hold the contact the payload names, and a passkey's
// registration challenge is consumed now.
func (s *Service) createFromParams(ctx context.Context, tx storage.Tx, acct *storage.InternalAccount, p *AddParams, retry bool) (*storage.Credential, error) {
	id, err := s.newID("AuthMethod")
	if err != nil {
		return nil, err
	}
	now := s.cfg.Clock().UTC()
	c := &storage.Credential{ID: id, AccountID: acct.ID, Type: p.Type, Nickname: p.Nickname, CreatedAt: now, UpdatedAt: now}
	changed := apierror.New(apierror.Conflict, "the account's contact changed since the challenge was issued; start again")
	switch p.Type {
	case storage.EmailOTP:
		if retry {
			if acct.Email != p.Email {
				return nil, changed
			}
			// The address may have been tied to another customer's
			// EMAIL_OTP credential since the first call checked it.
			if err := holdEmail(ctx, tx, p.Email, acct.CustomerID); err != nil {
				return nil, err
			}
		}
		c.Email = p.Email
	case storage.SMSOTP:
		if retry && acct.Phone != p.Phone {
			return nil, changed
		}
		c.Phone = p.Phone
	case storage.OAuth:
		c.OAuth = &storage.OAuthIdentity{Issuer: p.Issuer, Audience: p.Audience, Subject: p.Subject}
	case storage.Passkey:
		if p.Passkey == nil {
			return nil, apierror.Internal(errors.New("walletauth: PASSKEY parameters without a passkey"))
		}
		if c.WebAuthn, err = p.Passkey.record(); err != nil {
			return nil, err
		}
		if retry {
			v, err := s.passkeys()
			if err != nil {
				return nil, err
			}
			if err := v.ConsumeRegistration(ctx, tx, p.Passkey.RegistrationChallenge, acct.ID, now); err != nil {
				return nil, err
			}
		}
	default:
		return nil, apierror.Internal(errors.New("walletauth: stored parameters name an unknown credential type"))
	}
	existing, err := tx.Credentials().ListByAccount(ctx, acct.ID)
	if err != nil {
		return nil, err
	}
	if err := checkUnique(existing, p); err != nil {
		return nil, err
	}
	if err := createCredential(ctx, tx, c); err != nil {
		return nil, err
	}
	return c, nil
}

// checkUnique gives the clear error for a credential the account cannot
// take; the store enforces the same rules on create.
func checkUnique(existing []storage.Credential, p *AddParams) error {
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

// ListCredentials returns the credentials of an account, oldest first; an
// unknown account has none.
func (s *Service) ListCredentials(ctx context.Context, accountID string) ([]AuthMethod, error) {
	if !storage.ValidID(accountID, "InternalAccount") {
		return nil, apierror.InvalidField("accountId", apierror.Pattern(`^InternalAccount:[0-9a-fA-F-]{36}$`), "must be an InternalAccount id")
	}
	var creds []storage.Credential
	err := s.atomic(ctx, func(tx storage.Tx) error {
		var err error
		creds, err = tx.Credentials().ListByAccount(ctx, accountID)
		return err
	})
	if err != nil {
		return nil, storeErr(err)
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
// REFERENCE_NOT_FOUND. On success both results are nil.
func (s *Service) RevokeCredential(ctx context.Context, credentialID string, call signedretry.Request) (*signedretry.Challenge, error) {
	// check locks the account before counting its credentials, so that of
	// concurrent revokes of its credentials the count of each sees the
	// deletes of those that committed before it.
	check := func(ctx context.Context, tx storage.Tx) (*storage.Credential, error) {
		c, err := tx.Credentials().Get(ctx, credentialID)
		if errors.Is(err, storage.ErrNotFound) {
			return nil, notFound("credential", credentialID)
		}
		if err != nil {
			return nil, err
		}
		if _, err := tx.InternalAccounts().Lock(ctx, c.AccountID); errors.Is(err, storage.ErrNotFound) {
			return nil, notFound("internal account", c.AccountID)
		} else if err != nil {
			return nil, err
		}
		all, err := tx.Credentials().ListByAccount(ctx, c.AccountID)
		if err != nil {
			return nil, err
		}
		if !slices.ContainsFunc(all, func(o storage.Credential) bool { return o.ID == c.ID }) {
			return nil, notFound("credential", credentialID)
		}
		if len(all) <= 1 {
			return nil, apierror.New(apierror.InvalidInput, "an account must keep at least one credential; add another before revoking this one")
		}
		return &c, nil
	}
	_, ch, err := s.run(ctx, call, signedretry.Steps{
		Type: OpRevokeCredential,
		Bind: func(ctx context.Context, tx storage.Tx) (*signedretry.Operation, error) {
			c, err := check(ctx, tx)
			if err != nil {
				return nil, err
			}
			return &signedretry.Operation{AccountID: c.AccountID,
				Signer:     signedretry.Signer{Rule: signedretry.OtherCredentialSession, Ref: c.ID},
				Parameters: map[string]string{"credentialId": c.ID}, CredentialType: string(c.Type)}, nil
		},
		Effect: func(ctx context.Context, tx storage.Tx, a *signedretry.Authorization) error {
			c, err := check(ctx, tx)
			if err != nil {
				return err
			}
			if c.AccountID != a.AccountID {
				return apierror.Unauthenticated("request id is bound to another account")
			}
			if err := tx.Credentials().Delete(ctx, c.ID); err != nil {
				return err
			}
			now := s.cfg.Clock().UTC()
			revoked, err := tx.Sessions().RevokeByCredential(ctx, c.ID, now)
			if err != nil {
				return err
			}
			return s.credentialRevoked(ctx, tx, c, revoked, a.SessionID, now)
		},
	})
	return ch, err
}

// EmailChange is the result of [Service.UpdateEmail].
type EmailChange struct {
	// Email is the new address, lowercased.
	Email string
	// CredentialIDs are the EMAIL_OTP credentials now tied to it.
	CredentialIDs []string
	// Host is the host's own values of the request as the first call bound
	// them (JSON), nil when it bound none.
	Host json.RawMessage
}

// emailParams are the parameters of an UPDATE_EMAIL payload.
type emailParams struct {
	CustomerID    string          `json:"customerId"`
	Email         string          `json:"email"`
	CredentialIDs []string        `json:"credentialIds"`
	Host          json.RawMessage `json:"request,omitempty"`
}

// UpdateEmail changes the email of a customer's embedded wallets. When an
// EMAIL_OTP credential is tied to the customer's wallets, the change needs a
// signed retry stamped by an active session of the account: the first call
// binds the customer, the new address and the tied credentials into the
// payload and answers a challenge; the retry updates the wallet and
// credential emails in one transaction. Without a tied credential the change
// applies at once. The host applies the change to its own customer record
// after success.
//
// host, when not nil, holds the host's own values of the same request (for
// example the other fields of a customer update); it must marshal to JSON. It
// is bound into the payload as "request" and handed back in
// [EmailChange.Host], so that a host applies on the retry what the user
// signed. On the retry, email and host are not read: the change comes from
// the payload's parameters.
//
// Errors: 400 INVALID_INPUT (not an email), 404 USER_NOT_FOUND (no wallet for
// the customer), 409 EMAIL_OTP_EMAIL_ALREADY_EXISTS (the address is tied to
// another EMAIL_OTP credential), 409 EMAIL_OTP_CREDENTIAL_SET_CHANGED (the
// tied credentials changed between the challenge and the retry), the 401s of
// signedretry.
func (s *Service) UpdateEmail(ctx context.Context, customerID, email string, host any, call signedretry.Request) (*EmailChange, *signedretry.Challenge, error) {
	// apply writes the change, and an INTERNAL_ACCOUNT.EMAIL_UPDATED event
	// for each wallet whose email or tied credentials it changed; signer is
	// the session that stamped the retry, if any.
	apply := func(tx storage.Tx, p *emailParams, accts []storage.InternalAccount, tied []storage.Credential, signer string) (*EmailChange, error) {
		now := s.cfg.Clock().UTC()
		changed := map[string]bool{}
		for i := range accts {
			a := accts[i]
			changed[a.ID] = a.Email != p.Email
			a.Email, a.UpdatedAt = p.Email, now
			if err := tx.InternalAccounts().Update(ctx, &a); err != nil {
				return nil, err
			}
		}
		change := &EmailChange{Email: p.Email, Host: p.Host}
		credIDs := map[string][]string{}
		for i := range tied {
			c := tied[i]
			changed[c.AccountID] = changed[c.AccountID] || c.Email != p.Email || c.Nickname != p.Email
			c.Email, c.Nickname, c.UpdatedAt = p.Email, p.Email, now
			if err := tx.Credentials().Update(ctx, &c); err != nil {
				return nil, err
			}
			change.CredentialIDs = append(change.CredentialIDs, c.ID)
			credIDs[c.AccountID] = append(credIDs[c.AccountID], c.ID)
		}
		for i := range accts {
			if !changed[accts[i].ID] {
				continue
			}
			slices.Sort(credIDs[accts[i].ID])
			if err := s.emailUpdated(ctx, tx, &accts[i], p.Email, credIDs[accts[i].ID], signer, now); err != nil {
				return nil, err
			}
		}
		return change, nil
	}
	var change *EmailChange
	// The retry locks every wallet of the customer and the address; they
	// come before the signer's credential and session in the lock order, so
	// they are locked before the signer is checked.
	var p emailParams
	var locked []storage.InternalAccount
	_, ch, err := s.run(ctx, call, signedretry.Steps{
		Type: OpUpdateEmail,
		Bind: func(ctx context.Context, tx storage.Tx) (*signedretry.Operation, error) {
			change = nil
			p := &emailParams{CustomerID: customerID, Email: normalizeEmail(email)}
			if !validEmail(p.Email) {
				return nil, apierror.InvalidField("email", apierror.Format("email"), "must be an email address")
			}
			if host != nil {
				b, err := json.Marshal(host)
				if err != nil {
					return nil, apierror.Internal(fmt.Errorf("walletauth: host values of an email change: %w", err))
				}
				p.Host = b
			}
			locked, err := s.lockCustomer(ctx, tx, customerID, p.Email)
			if err != nil {
				return nil, err
			}
			accts, tied, err := s.tiedCredentials(ctx, tx, p.CustomerID, locked, p.Email)
			if err != nil {
				return nil, err
			}
			if len(tied) == 0 {
				change, err = apply(tx, p, accts, nil, "")
				return nil, err
			}
			p.CredentialIDs = ids(tied)
			return &signedretry.Operation{AccountID: tied[0].AccountID, Signer: signedretry.Signer{Rule: signedretry.AnySession},
				Parameters: p, CredentialType: string(storage.EmailOTP)}, nil
		},
		Lock: func(ctx context.Context, tx storage.Tx, a *signedretry.Authorization) error {
			p = emailParams{}
			if err := a.DecodeParameters(&p); err != nil {
				return err
			}
			if p.CustomerID != customerID {
				return apierror.Unauthenticated("request id is bound to another customer")
			}
			var err error
			locked, err = s.lockCustomer(ctx, tx, p.CustomerID, p.Email)
			return err
		},
		Effect: func(ctx context.Context, tx storage.Tx, a *signedretry.Authorization) error {
			accts, tied, err := s.tiedCredentials(ctx, tx, customerID, locked, p.Email)
			if err != nil {
				return err
			}
			if !slices.Equal(ids(tied), p.CredentialIDs) {
				return apierror.New(apierror.EmailOTPCredentialSetChanged, "the EMAIL_OTP credentials tied to the customer changed since the challenge was issued; start again")
			}
			change, err = apply(tx, &p, accts, tied, a.SessionID)
			return err
		},
	})
	if err != nil {
		return nil, nil, err
	}
	return change, ch, nil
}

// lockCustomer locks the customer's wallets and then the address email, and
// returns the wallets as locked (nil when the customer has none).
func (s *Service) lockCustomer(ctx context.Context, tx storage.Tx, customerID, email string) ([]storage.InternalAccount, error) {
	accts, err := tx.InternalAccounts().ListByCustomer(ctx, customerID)
	if err != nil || len(accts) == 0 {
		return nil, err
	}
	// Lock the wallets (in id order, so two changes never wait on each other
	// in a cycle) and then the address before reading what the change is
	// decided on: the tied set and the address's other owners stay as read
	// until the change commits. The locked rows carry the current versions.
	order := make([]string, len(accts))
	for i := range accts {
		order[i] = accts[i].ID
	}
	slices.Sort(order)
	locked := make(map[string]storage.InternalAccount, len(order))
	for _, id := range order {
		a, err := tx.InternalAccounts().Lock(ctx, id)
		if err != nil {
			return nil, err
		}
		locked[id] = a
	}
	for i := range accts {
		accts[i] = locked[accts[i].ID]
	}
	if err := tx.Credentials().LockEmail(ctx, email); err != nil {
		return nil, err
	}
	return accts, nil
}

// tiedCredentials returns the customer's wallets, as lockCustomer locked
// them, and their EMAIL_OTP credentials, and fails when email is tied to an
// EMAIL_OTP credential of someone else.
func (s *Service) tiedCredentials(ctx context.Context, tx storage.Tx, customerID string, accts []storage.InternalAccount, email string) ([]storage.InternalAccount, []storage.Credential, error) {
	if len(accts) == 0 {
		return nil, nil, apierror.New(apierror.UserNotFound, "customer %s has no embedded wallet", customerID)
	}
	var tied []storage.Credential
	mine := map[string]bool{}
	for _, a := range accts {
		mine[a.ID] = true
		creds, err := tx.Credentials().ListByAccount(ctx, a.ID)
		if err != nil {
			return nil, nil, err
		}
		for _, c := range creds {
			if c.Type == storage.EmailOTP {
				tied = append(tied, c)
			}
		}
	}
	others, err := tx.Credentials().ListEmailOTPByEmail(ctx, email)
	if err != nil {
		return nil, nil, err
	}
	for _, o := range others {
		if !mine[o.AccountID] {
			return nil, nil, emailTaken()
		}
	}
	return accts, tied, nil
}

func ids(creds []storage.Credential) []string {
	out := make([]string, len(creds))
	for i := range creds {
		out[i] = creds[i].ID
	}
	slices.Sort(out)
	return out
}

func normalizeEmail(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

// validEmail is a deliberately plain check: one @, a non-empty local part, a
// dotted domain, no spaces or control characters, at most 254 bytes.
func validEmail(s string) bool {
	local, domain, ok := strings.Cut(s, "@")
	if !ok || local == "" || len(s) > 254 || strings.Contains(domain, "@") {
		return false
	}
	if i := strings.LastIndexByte(domain, '.'); i <= 0 || i == len(domain)-1 {
		return false
	}
	for _, r := range s {
		if r <= ' ' || r == 0x7f {
			return false
		}
	}
	return true
}

// validPhone checks E.164: '+' and 8 to 15 digits, the first not zero.
func validPhone(s string) bool {
	if len(s) < 9 || len(s) > 16 || s[0] != '+' || s[1] == '0' {
		return false
	}
	for _, c := range s[1:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

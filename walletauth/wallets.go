package walletauth

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"strings"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/walletauth/authclient"
	"github.com/walletgate/walletgate/walletauth/envelope"
)

// NewWallet describes an embedded wallet to provision.
type NewWallet struct {
	CustomerID string
	// Tenant names the host's tenant the wallet belongs to (a platform, in
	// a host serving several); it never changes. An email address is tied
	// to EMAIL_OTP credentials of one customer per tenant, and a passkey
	// registered once per tenant: no answer to one tenant depends on
	// another's wallets. A host with one tenant leaves it empty. The
	// [Config].Guard can compare it with the caller's principal.
	Tenant string
	// Email is the customer's email; the wallet's EMAIL_OTP credential is
	// tied to it. Required.
	Email string
	// Phone is the customer's E.164 phone number, needed to add SMS_OTP.
	Phone string
}

// CreateWallet provisions an internal account for a customer with its first
// credential, an EMAIL_OTP credential tied to the customer's email. The email
// is stored lowercased. An address already tied to an EMAIL_OTP credential of
// another customer of the same tenant is 409 EMAIL_OTP_EMAIL_ALREADY_EXISTS,
// also when two customers race for it; another tenant's customers play no
// part. The first credential is the host's to vouch for (it takes no
// session), so it carries its own type's assurance at once.
//
// The [Config].Guard is asked about the new wallet (its CustomerID and
// Tenant as given) in the transaction that stores it, before anything is
// written; a plain refusal is 403 FORBIDDEN.
//
// To create the host's customer row and its wallet together, call it with a
// context bound to the host's transaction (storage/postgres's Store.WithTx):
// the wallet, its credential and its event commit when the host commits, and
// a refusal leaves the host's transaction usable (see the package
// documentation).
func (s *Service) CreateWallet(ctx context.Context, w NewWallet) (*storage.InternalAccount, *AuthMethod, error) {
	var v apierror.Validation
	email := normalizeEmail(w.Email)
	v.Check(validEmail(email), "email", apierror.Format("email"), "must be an email address")
	v.Check(w.Phone == "" || validPhone(w.Phone), "phone", apierror.Format("e.164"), "must be an E.164 phone number")
	v.Check(validTenant(w.Tenant), "tenant", nil, "must be at most 128 printable ASCII characters")
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
	acct := storage.InternalAccount{ID: accountID, CustomerID: w.CustomerID, Tenant: w.Tenant, Email: email, Phone: w.Phone,
		CreatedAt: now, UpdatedAt: now}
	cred := storage.Credential{ID: credID, AccountID: accountID, Tenant: w.Tenant, Type: storage.EmailOTP, Nickname: email,
		Email: email, CreatedAt: now, UpdatedAt: now}
	err = s.atomic(ctx, func(tx storage.Tx) error {
		// The guard decides on the wallet about to be stored; a plain
		// refusal is 403, as the call names no id to be unknown.
		if err := s.admit(ctx, &acct, forbidden); err != nil {
			return err
		}
		// The address is held from the check to the insert, so two
		// customers never both tie it to an EMAIL_OTP credential.
		if err := holdEmail(ctx, tx, w.Tenant, email, w.CustomerID); err != nil {
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
		return nil, nil, apierror.From(err)
	}
	return &acct, authMethod(&cred), nil
}

// validTenant reports whether t is a tenant name a wallet may carry: at
// most 128 printable ASCII characters, the empty tenant included.
func validTenant(t string) bool {
	if len(t) > 128 {
		return false
	}
	for i := 0; i < len(t); i++ {
		if t[i] < ' ' || t[i] > '~' {
			return false
		}
	}
	return true
}

// WalletSecrets gives [Service.ExportWallet] the secret of an embedded
// wallet (its mnemonic, for instance). The host implements it: the custody
// of wallet keys is the host's, the service only seals what it is given to
// the client's key. Secret is called on an authorized retry, inside the
// transaction that consumes the request; an error leaves the request
// unconsumed and is returned (an *apierror.Error unchanged, anything else as
// 500 INTERNAL_ERROR). It may be called more than once for one retry (the
// store reruns a transaction that lost a lock conflict or a serialization
// check), so it must only read.
type WalletSecrets interface {
	Secret(ctx context.Context, accountID string) ([]byte, error)
}

// ExportRequest is the body of a wallet export ([authclient.ExportRequest]).
type ExportRequest = authclient.ExportRequest

// WalletExport is the result of a completed export ([authclient.WalletExport]):
// its EncryptedWalletCredentials is signed by [Keys].SigningKey, whose public
// half is [Service.SigningPublicKey].
type WalletExport = authclient.WalletExport

// exportParams are the parameters of an EXPORT_WALLET payload.
type exportParams struct {
	ClientPublicKey string `json:"clientPublicKey"`
}

const clientKeyPattern = `^(0[23][0-9a-fA-F]{64}|04[0-9a-fA-F]{128})$`

// exportKey parses the key an export is sealed to.
func exportKey(key string) (*ecdsa.PublicKey, error) {
	pub, err := signedretry.ParsePublicKey(key)
	if err != nil {
		return nil, apierror.InvalidField("clientPublicKey", apierror.Pattern(clientKeyPattern), apierror.As(err).Message)
	}
	return pub, nil
}

// ExportWallet exports an embedded wallet's secret ([Config].WalletSecrets)
// sealed to the client's key, through the signed retry: the first call binds
// clientPublicKey into the payload and answers the challenge, which any
// active session of the wallet stamps; the retry seals the secret to the
// clientPublicKey of the payload. On the retry, req is not read.
//
// The [Config].Guard is asked about the wallet on each leg.
//
// Errors: 400 INVALID_INPUT (clientPublicKey not a P-256 key, compressed or
// uncompressed), 404 REFERENCE_NOT_FOUND (no such wallet, or a plain
// refusal of the guard), the 401s of signedretry, 500 INTERNAL_ERROR (no
// WalletSecrets, or its failure).
func (s *Service) ExportWallet(ctx context.Context, accountID string, req ExportRequest, call signedretry.Request) (_ *WalletExport, _ *signedretry.Challenge, err error) {
	ctx, o := s.tel.Begin(ctx, opExport, s.tel.outcomes)
	o.Quiet = call.IsRetry() // signedretry.complete logs the retry's refusals
	defer func() { o.End(ctx, err) }()
	out, ch, err := run(ctx, s, call, walletOp(s, OpExportWallet, accountID, exportBind(req), nil, s.export))
	if err != nil || ch != nil {
		return nil, ch, err
	}
	return &WalletExport{ID: accountID, EncryptedWalletCredentials: out}, nil, nil
}

// exportBind returns the parameters the first call of an export binds: the
// key the secret will be sealed to, which must be a P-256 key.
func exportBind(req ExportRequest) func() (exportParams, error) {
	return func() (exportParams, error) {
		key := strings.TrimSpace(req.ClientPublicKey)
		if _, err := exportKey(key); err != nil {
			return exportParams{}, err
		}
		return exportParams{ClientPublicKey: key}, nil
	}
}

// export is the effect of a signed export: it seals the wallet's secret to
// the key of the signed parameters p and returns the bundle.
func (s *Service) export(ctx context.Context, _ storage.Tx, a *signedretry.Authorization, p exportParams) (string, error) {
	if _, err := exportKey(p.ClientPublicKey); err != nil {
		return "", apierror.Internal(err)
	}
	if s.cfg.WalletSecrets == nil {
		return "", apierror.Internal(errors.New("walletauth: Config.WalletSecrets is not set"))
	}
	secret, err := s.cfg.WalletSecrets.Secret(ctx, a.AccountID)
	if err != nil {
		return "", apierror.From(err)
	}
	out, err := envelope.NewExportBundle(s.cfg.Keys.SigningKey, s.cfg.OrganizationID, p.ClientPublicKey, secret, s.cfg.Rand)
	if err != nil {
		// The key was checked when the payload was bound, so any failure
		// here is the service's.
		return "", apierror.Internal(err)
	}
	return out, nil
}

// PrivacyRequest is the body of a wallet privacy update ([authclient.PrivacyRequest]).
type PrivacyRequest = authclient.PrivacyRequest

// WalletPrivacy is the result of a completed privacy update: the value the
// user signed, which the host persists.
type WalletPrivacy struct {
	AccountID      string `json:"accountId"`
	PrivateEnabled bool   `json:"privateEnabled"`
}

// privacyParams are the parameters of an UPDATE_WALLET_PRIVACY payload.
type privacyParams struct {
	PrivateEnabled *bool `json:"privateEnabled"`
}

// UpdateWalletPrivacy authorizes a change of an embedded wallet's privacy
// setting through the signed retry (any active session of the wallet
// signs). The service does not keep the setting: the host persists the
// returned [WalletPrivacy.PrivateEnabled], the value the user signed, and
// never the retry's own. apply, when not nil, runs inside the transaction
// that consumes the request with that value, so a host that keeps the
// setting in the same store commits it together with the consumption. apply
// may run more than once for one retry (the store reruns a transaction that
// lost a lock conflict or a serialization check, and rolls back every run
// but the last), so it must write only through tx and have no effect
// outside it: a change of another system or of process memory belongs after
// UpdateWalletPrivacy returns. On the retry, req is not read.
//
// The [Config].Guard is asked about the wallet on each leg.
//
// Errors: 400 INVALID_INPUT (privateEnabled missing), 404
// REFERENCE_NOT_FOUND (no such wallet, or a plain refusal of the guard),
// the 401s of signedretry, errors of apply unchanged.
func (s *Service) UpdateWalletPrivacy(ctx context.Context, accountID string, req PrivacyRequest, call signedretry.Request,
	apply func(tx storage.Tx, privateEnabled bool) error) (*WalletPrivacy, *signedretry.Challenge, error) {
	bind := func() (privacyParams, error) {
		if req.PrivateEnabled == nil {
			return privacyParams{}, apierror.InvalidField("privateEnabled", nil, "is required")
		}
		return privacyParams{PrivateEnabled: req.PrivateEnabled}, nil
	}
	out, ch, err := run(ctx, s, call, walletOp(s, OpWalletPrivacy, accountID, bind, nil,
		func(_ context.Context, tx storage.Tx, _ *signedretry.Authorization, p privacyParams) (*WalletPrivacy, error) {
			if p.PrivateEnabled == nil {
				return nil, apierror.Internal(errors.New("walletauth: signed privacy update without privateEnabled"))
			}
			out := &WalletPrivacy{AccountID: accountID, PrivateEnabled: *p.PrivateEnabled}
			if apply != nil {
				if err := apply(tx, out.PrivateEnabled); err != nil {
					return nil, err
				}
			}
			return out, nil
		}))
	if err != nil || ch != nil {
		return nil, ch, err
	}
	return out, nil, nil
}

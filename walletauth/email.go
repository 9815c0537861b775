package walletauth

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
)

// holdEmail holds the address email of tenant until the transaction ends
// ([storage.Credentials.LockEmail]) and fails with 409
// EMAIL_OTP_EMAIL_ALREADY_EXISTS when an EMAIL_OTP credential of a wallet of
// the tenant of another customer than customerID is tied to it. Every path
// that ties an address to an EMAIL_OTP credential calls it in the
// transaction that ties it, after locking the internal accounts it changes
// and before any credential lock (the store's lock order), so of two
// customers of one tenant racing for one address at most one holds it.
// Other tenants' wallets play no part: the rule is the tenant's.
func holdEmail(ctx context.Context, tx storage.Tx, tenant, email, customerID string) error {
	if err := tx.Credentials().LockEmail(ctx, tenant, email); err != nil {
		return err
	}
	tied, err := tx.Credentials().ListEmailOTPByEmail(ctx, tenant, email)
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
// The [Config].Guard is asked about every wallet of the customer, on both
// legs, once they are locked: a wallet it refuses refuses the change, a
// plain refusal answered as a customer without wallets.
//
// Errors: 400 INVALID_INPUT (not an email), 404 USER_NOT_FOUND (no wallet for
// the customer, or one refused by the guard), 409 EMAIL_OTP_EMAIL_ALREADY_EXISTS (the address is tied to
// another EMAIL_OTP credential), 409 EMAIL_OTP_CREDENTIAL_SET_CHANGED (the
// tied credentials changed between the challenge and the retry), the 401s of
// signedretry.
func (s *Service) UpdateEmail(ctx context.Context, customerID, email string, host any, call signedretry.Request) (*EmailChange, *signedretry.Challenge, error) {
	// apply writes the change, and an INTERNAL_ACCOUNT.EMAIL_UPDATED event
	// for each wallet whose email or tied credentials it changed; a is the
	// authorization of the signed retry, nil when the change took none (no
	// tied credential). A wallet whose tied credentials move to another
	// address has its means of authentication changed: it records so, and
	// its owner is told at the channels it had
	// (INTERNAL_ACCOUNT.SECURITY_NOTICE).
	apply := func(tx storage.Tx, p *emailParams, accts []storage.InternalAccount, tied, all []storage.Credential, a *signedretry.Authorization) (*EmailChange, error) {
		now := s.cfg.Clock().UTC()
		signer := ""
		if a != nil {
			now, signer = a.Now, a.SessionID
		}
		moved := map[string]bool{}
		for _, c := range tied {
			moved[c.AccountID] = moved[c.AccountID] || c.Email != p.Email
		}
		changed := map[string]bool{}
		for i := range accts {
			w := &accts[i]
			changed[w.ID] = w.Email != p.Email
			w.Email, w.UpdatedAt = p.Email, now
			if moved[w.ID] {
				w.SecurityChangedAt = now
			}
			if err := tx.InternalAccounts().Update(ctx, w); err != nil {
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
		var signerCred *storage.Credential
		for i := range all {
			if a != nil && all[i].ID == a.CredentialID {
				signerCred = &all[i]
			}
		}
		for i := range accts {
			if !moved[accts[i].ID] {
				continue
			}
			// all holds the credentials as they were read before the
			// change: the notice goes to the addresses they had.
			var before []storage.Credential
			for _, c := range all {
				if c.AccountID == accts[i].ID {
					before = append(before, c)
				}
			}
			if err := s.securityNotice(ctx, tx, &accts[i], noticeEmail, nil, a, signerCred, before, now); err != nil {
				return nil, err
			}
		}
		return change, nil
	}
	// The retry locks every wallet of the customer and the address; they
	// come before the signer's credential and session in the lock order, so
	// they are locked before the signer is checked.
	change, ch, err := run(ctx, s, call, signedretry.Steps[emailParams, []storage.InternalAccount, *EmailChange]{
		Type: OpUpdateEmail,
		Bind: func(ctx context.Context, tx storage.Tx) (*signedretry.Operation[emailParams], *EmailChange, error) {
			p := emailParams{CustomerID: customerID, Email: normalizeEmail(email)}
			if !validEmail(p.Email) {
				return nil, nil, apierror.InvalidField("email", apierror.Format("email"), "must be an email address")
			}
			if host != nil {
				b, err := json.Marshal(host)
				if err != nil {
					return nil, nil, apierror.Internal(fmt.Errorf("walletauth: host values of an email change: %w", err))
				}
				p.Host = b
			}
			locked, err := s.lockCustomer(ctx, tx, customerID, p.Email)
			if err != nil {
				return nil, nil, err
			}
			accts, tied, all, err := s.tiedCredentials(ctx, tx, p.CustomerID, locked, p.Email)
			if err != nil {
				return nil, nil, err
			}
			if len(tied) == 0 {
				change, err := apply(tx, &p, accts, nil, all, nil)
				return nil, change, err
			}
			p.CredentialIDs = ids(tied)
			return &signedretry.Operation[emailParams]{AccountID: tied[0].AccountID, Signer: signedretry.Signer{Rule: signedretry.AnySession},
				Parameters: p, CredentialType: string(storage.EmailOTP)}, nil, nil
		},
		Lock: func(ctx context.Context, tx storage.Tx, _ *signedretry.Authorization, p emailParams) ([]storage.InternalAccount, error) {
			if p.CustomerID != customerID {
				return nil, apierror.Unauthenticated("request id is bound to another customer")
			}
			return s.lockCustomer(ctx, tx, p.CustomerID, p.Email)
		},
		Effect: func(ctx context.Context, tx storage.Tx, a *signedretry.Authorization, p emailParams, locked []storage.InternalAccount) (*EmailChange, error) {
			accts, tied, all, err := s.tiedCredentials(ctx, tx, p.CustomerID, locked, p.Email)
			if err != nil {
				return nil, err
			}
			if !slices.Equal(ids(tied), p.CredentialIDs) {
				return nil, apierror.New(apierror.EmailOTPCredentialSetChanged, "the EMAIL_OTP credentials tied to the customer changed since the challenge was issued; start again")
			}
			return apply(tx, &p, accts, tied, all, a)
		},
	})
	if err != nil {
		return nil, nil, err
	}
	return change, ch, nil
}

// lockCustomer locks the customer's wallets, asks the guard about each and
// then locks the address email, and returns the wallets as locked (nil
// when the customer has none).
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
	// The guard decides on every wallet as locked, before the address is
	// held: one refused wallet refuses the change, as a customer without
	// wallets is.
	for i := range accts {
		accts[i] = locked[accts[i].ID]
		if err := s.admit(ctx, &accts[i], func() error { return noWallet(customerID) }); err != nil {
			return nil, err
		}
	}
	for _, tenant := range tenantsOf(accts) {
		if err := tx.Credentials().LockEmail(ctx, tenant, email); err != nil {
			return nil, err
		}
	}
	return accts, nil
}

// tenantsOf returns the tenants of accts, sorted, each once (the order
// the address locks of several are taken in).
func tenantsOf(accts []storage.InternalAccount) []string {
	var out []string
	for _, a := range accts {
		out = append(out, a.Tenant)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// tiedCredentials returns the customer's wallets, as lockCustomer locked
// them, their EMAIL_OTP credentials and all their credentials, and fails
// when email is tied to an EMAIL_OTP credential of someone else of their
// tenant.
func (s *Service) tiedCredentials(ctx context.Context, tx storage.Tx, customerID string, accts []storage.InternalAccount, email string) (_ []storage.InternalAccount, tied, all []storage.Credential, _ error) {
	if len(accts) == 0 {
		return nil, nil, nil, noWallet(customerID)
	}
	mine := map[string]bool{}
	for _, a := range accts {
		mine[a.ID] = true
		creds, err := tx.Credentials().ListByAccount(ctx, a.ID)
		if err != nil {
			return nil, nil, nil, err
		}
		all = append(all, creds...)
		for _, c := range creds {
			if c.Type == storage.EmailOTP {
				tied = append(tied, c)
			}
		}
	}
	for _, tenant := range tenantsOf(accts) {
		others, err := tx.Credentials().ListEmailOTPByEmail(ctx, tenant, email)
		if err != nil {
			return nil, nil, nil, err
		}
		for _, o := range others {
			if !mine[o.AccountID] {
				return nil, nil, nil, emailTaken()
			}
		}
	}
	return accts, tied, all, nil
}

// noWallet is the answer to a customer without an embedded wallet, and to
// a plain refusal of the guard of one of its wallets.
func noWallet(customerID string) error {
	return apierror.New(apierror.UserNotFound, "customer %s has no embedded wallet", customerID)
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

package memory

import (
	"cmp"
	"context"
	"errors"
	"slices"

	"github.com/walletgate/walletgate/storage"
)

// Credentials.

func cloneCred(a *storage.Credential) *storage.Credential {
	c := *a
	if a.OAuth != nil {
		o := *a.OAuth
		c.OAuth = &o
	}
	if a.WebAuthn != nil {
		w := *a.WebAuthn
		w.CredentialID = slices.Clone(w.CredentialID)
		w.PublicKey = slices.Clone(w.PublicKey)
		w.AAGUID = slices.Clone(w.AAGUID)
		w.Transports = slices.Clone(w.Transports)
		c.WebAuthn = &w
	}
	return &c
}

type credRepo struct{ *tx }

// scoped is the key of value k within tenant: the uniqueness rules and
// the address locks hold per tenant. A tenant never holds a NUL (the
// stores keep text), so no two pairs share a key.
func scoped(tenant, k string) string { return tenant + "\x00" + k }

// lockKeys takes the exclusive locks of the WebAuthn id and the address c
// is (or will be) listed under, in its tenant.
func (r credRepo) lockKeys(ctx context.Context, c *storage.Credential) error {
	if c.Type == storage.Passkey && c.WebAuthn != nil {
		if err := r.lockX(ctx, lkWebAuthn, scoped(c.Tenant, string(c.WebAuthn.CredentialID))); err != nil {
			return err
		}
	}
	if c.Type == storage.EmailOTP {
		return r.lockX(ctx, lkEmail, scoped(c.Tenant, c.Email))
	}
	return nil
}

// conflicts reports whether c would break a uniqueness rule against the stored
// credentials other than c itself. The caller holds the lock of c's account's
// credentials and lockKeys(c); conflicts reads each of them under a shared
// lock.
func (r credRepo) conflicts(ctx context.Context, c *storage.Credential) (bool, error) {
	if c.Type == storage.Passkey && c.WebAuthn != nil {
		if owner, ok := r.s.webauthn.get(scoped(c.Tenant, string(c.WebAuthn.CredentialID))); ok && owner != c.ID {
			return true, nil
		}
	}
	ids, _ := r.s.credsByAcct.get(c.AccountID)
	for _, id := range ids {
		if id == c.ID {
			continue
		}
		if err := r.lockS(ctx, lkCred, id); err != nil {
			return false, err
		}
		o, _ := r.s.creds.get(id)
		switch {
		case o.Type != c.Type:
		case c.Type == storage.EmailOTP, c.Type == storage.SMSOTP:
			return true, nil
		case c.Type == storage.OAuth && c.OAuth != nil && o.OAuth != nil && *c.OAuth == *o.OAuth:
			return true, nil
		}
	}
	return false, nil
}

// emailOf returns the key of the address c is listed under (in its
// tenant), and whether it is listed under one at all (only EMAIL_OTP
// credentials are).
func emailOf(c *storage.Credential) (string, bool) {
	return scoped(c.Tenant, c.Email), c.Type == storage.EmailOTP
}

// index lists c under its WebAuthn id and, unless it is listed there
// already (as was), its address.
func (r credRepo) index(c, was *storage.Credential) {
	if c.Type == storage.Passkey && c.WebAuthn != nil {
		tput(r.tx, &r.s.webauthn, scoped(c.Tenant, string(c.WebAuthn.CredentialID)), c.ID)
	}
	if e, ok := emailOf(c); ok {
		if was != nil {
			if we, wok := emailOf(was); wok && we == e {
				return
			}
		}
		appendIndex(r.tx, &r.s.credsByEmail, e, c.ID)
	}
}

// unindex removes c from the WebAuthn id index and, unless it stays listed
// there (as next), from its address.
func (r credRepo) unindex(c, next *storage.Credential) {
	if c.Type == storage.Passkey && c.WebAuthn != nil {
		tdel(r.tx, &r.s.webauthn, scoped(c.Tenant, string(c.WebAuthn.CredentialID)))
	}
	if e, ok := emailOf(c); ok {
		if next != nil {
			if ne, nok := emailOf(next); nok && ne == e {
				return
			}
		}
		removeIndex(r.tx, &r.s.credsByEmail, e, c.ID)
	}
}

func (r credRepo) Create(ctx context.Context, c *storage.Credential) error {
	if err := r.lockX(ctx, lkCred, c.ID); err != nil {
		return err
	}
	if _, ok := r.s.creds.get(c.ID); ok {
		return storage.ErrDuplicate
	}
	if err := r.lockX(ctx, lkCredByAccount, c.AccountID); err != nil {
		return err
	}
	if err := r.lockKeys(ctx, c); err != nil {
		return err
	}
	if dup, err := r.conflicts(ctx, c); err != nil || dup {
		return cmp.Or(err, storage.ErrDuplicate)
	}
	c.Version = 1
	cp := cloneCred(c)
	tput(r.tx, &r.s.creds, c.ID, cp)
	appendIndex(r.tx, &r.s.credsByAcct, c.AccountID, c.ID)
	r.index(cp, nil)
	return nil
}

func (r credRepo) get(ctx context.Context, id string, mode lockMode) (storage.Credential, error) {
	if err := r.lock(ctx, lkCred, id, mode); err != nil {
		return storage.Credential{}, err
	}
	c, ok := r.s.creds.get(id)
	if !ok {
		return storage.Credential{}, storage.ErrNotFound
	}
	return *cloneCred(c), nil
}

func (r credRepo) Get(ctx context.Context, id string) (storage.Credential, error) {
	return r.get(ctx, id, shared)
}

func (r credRepo) Update(ctx context.Context, c *storage.Credential) error {
	if err := r.lockX(ctx, lkCred, c.ID); err != nil {
		return err
	}
	cur, ok := r.s.creds.get(c.ID)
	if !ok {
		return storage.ErrNotFound
	}
	if cur.Version != c.Version {
		return storage.ErrConflict
	}
	c.Tenant = cur.Tenant // a credential's tenant is its wallet's, for good
	// The account's list is read (shared) for the uniqueness check, and
	// changed (exclusive) only when c moves to another account.
	moves := cur.AccountID != c.AccountID
	mode := shared
	if moves {
		mode = exclusive
		if err := r.lockX(ctx, lkCredByAccount, cur.AccountID); err != nil {
			return err
		}
	}
	if err := r.lock(ctx, lkCredByAccount, c.AccountID, mode); err != nil {
		return err
	}
	if err := r.lockKeys(ctx, cur); err != nil {
		return err
	}
	if err := r.lockKeys(ctx, c); err != nil {
		return err
	}
	if dup, err := r.conflicts(ctx, c); err != nil || dup {
		return cmp.Or(err, storage.ErrDuplicate)
	}
	if moves {
		removeIndex(r.tx, &r.s.credsByAcct, cur.AccountID, c.ID)
		appendIndex(r.tx, &r.s.credsByAcct, c.AccountID, c.ID)
	}
	c.Version++
	cp := cloneCred(c)
	r.unindex(cur, cp)
	r.index(cp, cur)
	tput(r.tx, &r.s.creds, c.ID, cp)
	return nil
}

func (r credRepo) Delete(ctx context.Context, id string) error {
	if err := r.lockX(ctx, lkCred, id); err != nil {
		return err
	}
	cur, ok := r.s.creds.get(id)
	if !ok {
		return storage.ErrNotFound
	}
	if err := r.lockX(ctx, lkCredByAccount, cur.AccountID); err != nil {
		return err
	}
	if err := r.lockKeys(ctx, cur); err != nil {
		return err
	}
	tdel(r.tx, &r.s.creds, id)
	removeIndex(r.tx, &r.s.credsByAcct, cur.AccountID, id)
	r.unindex(cur, nil)
	return nil
}

// list returns the credentials with the given ids, read under shared locks.
func (r credRepo) list(ctx context.Context, ids []string) ([]storage.Credential, error) {
	out := make([]storage.Credential, 0, len(ids))
	for _, id := range ids {
		c, err := r.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

func (r credRepo) ListByAccount(ctx context.Context, accountID string) ([]storage.Credential, error) {
	if err := r.lockS(ctx, lkCredByAccount, accountID); err != nil {
		return nil, err
	}
	ids, _ := r.s.credsByAcct.get(accountID)
	return r.list(ctx, ids)
}

func (r credRepo) FindByWebAuthnID(ctx context.Context, tenant string, credentialID []byte) (storage.Credential, error) {
	k := scoped(tenant, string(credentialID))
	if err := r.lockS(ctx, lkWebAuthn, k); err != nil {
		return storage.Credential{}, err
	}
	id, ok := r.s.webauthn.get(k)
	if !ok {
		return storage.Credential{}, storage.ErrNotFound
	}
	return r.Get(ctx, id)
}

// Lock is Get under an exclusive lock, held until the transaction ends;
// with an attempt, it then reads the credential's issuance and, when it is
// live for an attempt, counts the budget's hit and reserves the attempt,
// in the same transaction.
func (r credRepo) Lock(ctx context.Context, id string, a *storage.OTPAttempt) (storage.LockedCredential, error) {
	c, err := r.get(ctx, id, exclusive)
	if err != nil || a == nil {
		return storage.LockedCredential{Credential: c}, err
	}
	res := storage.LockedCredential{Credential: c}
	o, err := otpRepo(r).ofCredential(ctx, id)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return res, nil
	case err != nil:
		return storage.LockedCredential{}, err
	}
	res.Issuance = &o
	if !o.ConsumedAt.IsZero() || !a.Now.Before(o.ExpiresAt) || o.Attempts >= a.Limit {
		return res, nil
	}
	if res.Wait, err = limitRepo(r).allow(ctx, a.Key, a.Now, a.Window, a.Budget); err != nil || res.Wait > 0 {
		return res, err
	}
	if res.Reserved, err = otpRepo(r).attempt(ctx, o.ID, a.Limit, a.Now); err != nil {
		return storage.LockedCredential{}, err
	}
	return res, nil
}

// LockEmail takes the exclusive lock of the address: the one every write of
// an EMAIL_OTP credential of the address takes too.
func (r credRepo) LockEmail(ctx context.Context, tenant, email string) error {
	return r.lockX(ctx, lkEmail, scoped(tenant, email))
}

func (r credRepo) ListEmailOTPByEmail(ctx context.Context, tenant, email string) ([]storage.Credential, error) {
	k := scoped(tenant, email)
	if err := r.lockS(ctx, lkEmail, k); err != nil {
		return nil, err
	}
	ids, _ := r.s.credsByEmail.get(k)
	out, err := r.list(ctx, ids)
	slices.SortStableFunc(out, func(a, b storage.Credential) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out, err
}

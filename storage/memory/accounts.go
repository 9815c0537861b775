package memory

import (
	"context"
	"slices"
	"time"

	"github.com/walletgate/walletgate/storage"
)

// External accounts.

func cloneExt(a *storage.ExternalAccount) *storage.ExternalAccount {
	c := *a
	c.Info = slices.Clone(a.Info)
	return &c
}

type extRepo struct{ *tx }

func (r extRepo) Create(ctx context.Context, a *storage.ExternalAccount) error {
	if err := r.lockX(ctx, lkExt, a.ID); err != nil {
		return err
	}
	if _, ok := r.s.ext.get(a.ID); ok {
		return storage.ErrDuplicate
	}
	if err := r.lockX(ctx, lkExtByCustomer, a.CustomerID); err != nil {
		return err
	}
	a.Version = 1
	tput(r.tx, &r.s.ext, a.ID, cloneExt(a))
	appendIndex(r.tx, &r.s.extByCustomer, a.CustomerID, a.ID)
	return nil
}

func (r extRepo) get(ctx context.Context, id string, mode lockMode) (storage.ExternalAccount, error) {
	if err := r.lock(ctx, lkExt, id, mode); err != nil {
		return storage.ExternalAccount{}, err
	}
	a, ok := r.s.ext.get(id)
	if !ok {
		return storage.ExternalAccount{}, storage.ErrNotFound
	}
	return *cloneExt(a), nil
}

func (r extRepo) Get(ctx context.Context, id string) (storage.ExternalAccount, error) {
	return r.get(ctx, id, shared)
}

// Lock is Get under an exclusive lock, held until the transaction ends.
func (r extRepo) Lock(ctx context.Context, id string) (storage.ExternalAccount, error) {
	return r.get(ctx, id, exclusive)
}

func (r extRepo) Update(ctx context.Context, a *storage.ExternalAccount) error {
	if err := r.lockX(ctx, lkExt, a.ID); err != nil {
		return err
	}
	cur, ok := r.s.ext.get(a.ID)
	if !ok {
		return storage.ErrNotFound
	}
	if cur.Version != a.Version {
		return storage.ErrConflict
	}
	a.Tenant = cur.Tenant // an account's tenant never changes
	if cur.CustomerID != a.CustomerID {
		if err := r.lockX(ctx, lkExtByCustomer, cur.CustomerID); err != nil {
			return err
		}
		if err := r.lockX(ctx, lkExtByCustomer, a.CustomerID); err != nil {
			return err
		}
		removeIndex(r.tx, &r.s.extByCustomer, cur.CustomerID, a.ID)
		appendIndex(r.tx, &r.s.extByCustomer, a.CustomerID, a.ID)
	}
	a.Version++
	tput(r.tx, &r.s.ext, a.ID, cloneExt(a))
	return nil
}

func (r extRepo) ListByCustomer(ctx context.Context, customerID string) ([]storage.ExternalAccount, error) {
	if err := r.lockS(ctx, lkExtByCustomer, customerID); err != nil {
		return nil, err
	}
	ids, _ := r.s.extByCustomer.get(customerID)
	out := make([]storage.ExternalAccount, 0, len(ids))
	for _, id := range ids {
		a, err := r.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// Internal accounts.

type walletRepo struct{ *tx }

func (r walletRepo) Create(ctx context.Context, a *storage.InternalAccount) error {
	if err := r.lockX(ctx, lkWallet, a.ID); err != nil {
		return err
	}
	if _, ok := r.s.wallets.get(a.ID); ok {
		return storage.ErrDuplicate
	}
	if err := r.lockX(ctx, lkWalletByCustomer, a.CustomerID); err != nil {
		return err
	}
	a.Version = 1
	cp := *a
	tput(r.tx, &r.s.wallets, a.ID, &cp)
	appendIndex(r.tx, &r.s.walletsByCust, a.CustomerID, a.ID)
	return nil
}

func (r walletRepo) get(ctx context.Context, id string, mode lockMode) (storage.InternalAccount, error) {
	if err := r.lock(ctx, lkWallet, id, mode); err != nil {
		return storage.InternalAccount{}, err
	}
	a, ok := r.s.wallets.get(id)
	if !ok {
		return storage.InternalAccount{}, storage.ErrNotFound
	}
	return *a, nil
}

func (r walletRepo) Get(ctx context.Context, id string) (storage.InternalAccount, error) {
	return r.get(ctx, id, shared)
}

// OfCredential reads the credential, then its account, under shared locks.
func (r walletRepo) OfCredential(ctx context.Context, credentialID string) (storage.InternalAccount, error) {
	c, err := credRepo(r).Get(ctx, credentialID)
	if err != nil {
		return storage.InternalAccount{}, err
	}
	return r.Get(ctx, c.AccountID)
}

// OfSession reads the session, then its account, under shared locks.
func (r walletRepo) OfSession(ctx context.Context, sessionID string) (storage.InternalAccount, error) {
	s, err := sessionRepo(r).Get(ctx, sessionID)
	if err != nil {
		return storage.InternalAccount{}, err
	}
	return r.Get(ctx, s.AccountID)
}

func (r walletRepo) Update(ctx context.Context, a *storage.InternalAccount) error {
	if err := r.lockX(ctx, lkWallet, a.ID); err != nil {
		return err
	}
	cur, ok := r.s.wallets.get(a.ID)
	if !ok {
		return storage.ErrNotFound
	}
	if cur.Version != a.Version {
		return storage.ErrConflict
	}
	a.Tenant = cur.Tenant // a wallet's tenant never changes
	if cur.CustomerID != a.CustomerID {
		if err := r.lockX(ctx, lkWalletByCustomer, cur.CustomerID); err != nil {
			return err
		}
		if err := r.lockX(ctx, lkWalletByCustomer, a.CustomerID); err != nil {
			return err
		}
		removeIndex(r.tx, &r.s.walletsByCust, cur.CustomerID, a.ID)
		appendIndex(r.tx, &r.s.walletsByCust, a.CustomerID, a.ID)
	}
	a.Version++
	cp := *a
	tput(r.tx, &r.s.wallets, a.ID, &cp)
	return nil
}

// Lock is Get under an exclusive lock, held until the transaction ends.
func (r walletRepo) Lock(ctx context.Context, id string) (storage.InternalAccount, error) {
	return r.get(ctx, id, exclusive)
}

// MarkSecurityChanged updates the account under its exclusive lock; it
// reports at once.
func (r walletRepo) MarkSecurityChanged(ctx context.Context, id string, at time.Time) error {
	a, err := r.get(ctx, id, exclusive)
	if err != nil {
		return err
	}
	a.SecurityChangedAt, a.UpdatedAt = at, at
	a.Version++
	tput(r.tx, &r.s.wallets, a.ID, &a)
	return nil
}

func (r walletRepo) ListByCustomer(ctx context.Context, customerID string) ([]storage.InternalAccount, error) {
	if err := r.lockS(ctx, lkWalletByCustomer, customerID); err != nil {
		return nil, err
	}
	ids, _ := r.s.walletsByCust.get(customerID)
	out := make([]storage.InternalAccount, 0, len(ids))
	for _, id := range ids {
		a, err := r.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

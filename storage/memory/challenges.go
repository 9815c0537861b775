package memory

import (
	"context"

	"github.com/walletgate/walletgate/storage"
)

// Ownership challenges.

type challengeRepo struct{ *tx }

func (r challengeRepo) Put(ctx context.Context, c *storage.OwnershipChallenge) error {
	if err := r.lockX(ctx, lkChallenge, c.AccountID); err != nil {
		return err
	}
	cp := *c
	tput(r.tx, &r.s.challenges, c.AccountID, &cp)
	r.watch(kindChallenge, c.AccountID, c.ExpiresAt)
	return nil
}

func (r challengeRepo) Get(ctx context.Context, accountID string) (storage.OwnershipChallenge, error) {
	if err := r.lockS(ctx, lkChallenge, accountID); err != nil {
		return storage.OwnershipChallenge{}, err
	}
	c, ok := r.s.challenges.get(accountID)
	if !ok {
		return storage.OwnershipChallenge{}, storage.ErrNotFound
	}
	return *c, nil
}

func (r challengeRepo) Consume(ctx context.Context, accountID, challengeID string) (storage.OwnershipChallenge, error) {
	if err := r.lockX(ctx, lkChallenge, accountID); err != nil {
		return storage.OwnershipChallenge{}, err
	}
	c, ok := r.s.challenges.get(accountID)
	if !ok || c.ID != challengeID {
		return storage.OwnershipChallenge{}, storage.ErrNotFound
	}
	tdel(r.tx, &r.s.challenges, accountID)
	return *c, nil
}

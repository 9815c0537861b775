package memory

import (
	"context"
	"slices"

	"github.com/walletgate/walletgate/storage"
)

// Payout approvals.

func cloneApproval(a *storage.PayoutApproval) *storage.PayoutApproval {
	c := *a
	c.Approvers = slices.Clone(a.Approvers)
	return &c
}

type approvalRepo struct{ *tx }

func (r approvalRepo) Create(ctx context.Context, a *storage.PayoutApproval) error {
	if err := r.lockX(ctx, lkApproval, a.ID); err != nil {
		return err
	}
	if _, ok := r.s.approvals.get(a.ID); ok {
		return storage.ErrDuplicate
	}
	a.Version = 1
	tput(r.tx, &r.s.approvals, a.ID, cloneApproval(a))
	r.watch(kindApproval, a.ID, a.ExpiresAt)
	return nil
}

func (r approvalRepo) Lock(ctx context.Context, id string) (storage.PayoutApproval, error) {
	if err := r.lockX(ctx, lkApproval, id); err != nil {
		return storage.PayoutApproval{}, err
	}
	a, ok := r.s.approvals.get(id)
	if !ok {
		return storage.PayoutApproval{}, storage.ErrNotFound
	}
	return *cloneApproval(a), nil
}

func (r approvalRepo) Update(ctx context.Context, a *storage.PayoutApproval) error {
	if err := r.lockX(ctx, lkApproval, a.ID); err != nil {
		return err
	}
	cur, ok := r.s.approvals.get(a.ID)
	if !ok {
		return storage.ErrNotFound
	}
	if cur.Version != a.Version {
		return storage.ErrConflict
	}
	a.Version++
	tput(r.tx, &r.s.approvals, a.ID, cloneApproval(a))
	r.watch(kindApproval, a.ID, a.ExpiresAt)
	return nil
}

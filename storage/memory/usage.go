package memory

import (
	"context"
	"slices"
	"time"

	"github.com/walletgate/walletgate/storage"
)

// Payout usages.

type usageRepo struct{ *tx }

// Hold takes the customer's usage index exclusively, so a Hold or a
// Record of the customer in another transaction waits until this one
// ends, and reads the usages since.
func (r usageRepo) Hold(ctx context.Context, customerID string, since time.Time) ([]storage.PayoutUsage, error) {
	if err := r.lockX(ctx, lkUsageByCustomer, customerID); err != nil {
		return nil, err
	}
	ids, _ := r.s.usageByCust.get(customerID)
	var out []storage.PayoutUsage
	for _, id := range ids {
		if u, ok := r.s.usage.get(id); ok && !u.CreatedAt.Before(since) {
			out = append(out, *u)
		}
	}
	slices.SortStableFunc(out, func(a, b storage.PayoutUsage) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out, nil
}

func (r usageRepo) Record(ctx context.Context, u *storage.PayoutUsage) error {
	if err := r.lockX(ctx, lkUsageByCustomer, u.CustomerID); err != nil {
		return err
	}
	if err := r.lockX(ctx, lkUsage, u.ID); err != nil {
		return err
	}
	if _, ok := r.s.usage.get(u.ID); ok {
		return storage.ErrDuplicate
	}
	c := *u
	tput(r.tx, &r.s.usage, u.ID, &c)
	appendIndex(r.tx, &r.s.usageByCust, u.CustomerID, u.ID)
	r.watch(kindUsage, u.ID, u.ExpiresAt)
	return nil
}

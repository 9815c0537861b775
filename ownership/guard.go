package ownership

import (
	"context"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/storage"
)

// AccountGuard decides whether the caller of an operation may act on
// account: the host reads its own principal from ctx (a value its
// authentication middleware, or its gRPC interceptor, put there) and
// compares it with the account's owner: typically account.Tenant (set by
// [NewAccount].Tenant) with the calling platform, or account.CustomerID
// (empty for the platform's own account). It returns nil to let the
// operation act.
//
// The service asks it inside the operation's transaction, on the account
// as that transaction reads or holds it, before the operation answers
// anything that depends on the account (its eligibility, its challenge,
// the payout rules) and before anything is written (see [Config].Guard for
// where each operation asks). So it must be a pure check of its arguments,
// with no I/O and no transaction of its own: it runs while the operation
// holds the account, and the store may run a transaction again
// ([storage.Store.Atomic]), asking the guard again. The library never
// moves an account to another customer, so its answer holds for the rest
// of the call.
//
// A refusal that is an *apierror.Error (or wraps one) is answered as it is,
// for a host that wants 403 FORBIDDEN or must report its own failure (500
// through apierror.Internal). Any other error is answered as the 404
// REFERENCE_NOT_FOUND an unknown account answers, with the same message, so
// a refusal does not tell the caller that another tenant's account exists;
// [Service.RegisterAccount], which creates the account, answers it with
// 403 FORBIDDEN. The refusal is an error returned inside the operation's
// transaction: a refused call writes nothing (no challenge stored or
// consumed, no status changed, no event, no payout allowed).
type AccountGuard func(ctx context.Context, account storage.ExternalAccount) error

// admit asks the guard whether the caller may act on a: nil when it may
// (or the service has no guard), the guard's *apierror.Error, or for a
// plain refusal what unknown returns.
func (s *Service) admit(ctx context.Context, a *storage.ExternalAccount, unknown func() error) error {
	if s.cfg.Guard == nil {
		return nil
	}
	return apierror.Refusal(s.cfg.Guard(ctx, *a), unknown)
}

// admitNamed is admit for the account a call named by its id: a plain
// refusal is answered as an unknown account.
func (s *Service) admitNamed(ctx context.Context, a *storage.ExternalAccount) error {
	return s.admit(ctx, a, func() error { return notFound(a.ID) })
}

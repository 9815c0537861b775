package walletauth

import (
	"context"
	"errors"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/storage"
)

// WalletGuard decides whether the caller of an operation may act on
// wallet: the host reads its own principal from ctx (a value its
// authentication middleware, or its gRPC interceptor, put there) and
// compares it with the wallet's owner, typically wallet.Tenant (set by
// [NewWallet].Tenant) with the calling platform, or wallet.CustomerID. It
// returns nil to let the operation act.
//
// The service asks it inside the operation's transaction, on the wallet as
// that transaction reads or locks it, before the operation answers anything
// that depends on the wallet (a credential's type, an attempt, an
// assertion's result) and before anything the operation writes can commit
// (see [Config].Guard for where each operation asks). So it must be a pure
// check of its arguments, with no I/O and no transaction of its own: it runs
// while the operation holds its locks, and the store may run a transaction
// again ([storage.Store.Atomic]), asking the guard again. A wallet's customer
// and tenant never change, so its answer holds for the rest of the call.
//
// A refusal that is an *apierror.Error (or wraps one) is answered as it is,
// for a host that wants 403 FORBIDDEN or must report its own failure (500
// through apierror.Internal). Any other error is answered as the 404
// REFERENCE_NOT_FOUND that an unknown id of the call answers (the
// credential, session or internal account it names), with the same message,
// so a refusal does not tell the caller that another tenant's wallet,
// credential or session exists. [Service.CreateWallet], which names no id,
// answers it with 403 FORBIDDEN, and [Service.UpdateEmail], which names a
// customer, as it answers a customer without a wallet (404 USER_NOT_FOUND).
// The refusal is an error returned inside the operation's transaction:
// whatever the call did before rolls back, so a refused call writes nothing
// (no code mailed, no attempt or budget spent, no challenge or pending
// request stored, no event).
type WalletGuard func(ctx context.Context, wallet storage.InternalAccount) error

// admit asks the guard whether the caller may act on wallet: nil when it
// may (or the service has no guard), the guard's *apierror.Error, or for a
// plain refusal what unknown returns, the answer to the call's id naming
// nothing.
func (s *Service) admit(ctx context.Context, wallet *storage.InternalAccount, unknown func() error) error {
	if s.cfg.Guard == nil {
		return nil
	}
	return apierror.Refusal(s.cfg.Guard(ctx, *wallet), unknown)
}

// admitID is admit for the wallet accountID, which it reads in tx only when
// the service has a guard. Called right after the lock of a row of the
// wallet (the wallet itself, a credential of it, the signer of a signed
// retry), the read costs no round trip on PostgreSQL: the store answers it
// from what the lock read. A wallet that does not exist answers unknown.
func (s *Service) admitID(ctx context.Context, tx storage.Tx, accountID string, unknown func() error) error {
	if s.cfg.Guard == nil {
		return nil
	}
	w, err := walletFor(ctx, tx, accountID, unknown)
	if err != nil {
		return err
	}
	return s.admit(ctx, &w, unknown)
}

// walletFor reads the wallet accountID for the guard; one that does not
// exist answers unknown.
func walletFor(ctx context.Context, tx storage.Tx, accountID string, unknown func() error) (storage.InternalAccount, error) {
	w, err := tx.InternalAccounts().Get(ctx, accountID)
	if errors.Is(err, storage.ErrNotFound) {
		return w, unknown()
	}
	return w, err
}

// admission is what the guard answered in a call that may reach it at more
// than one place (a verification, whose failed retry is checked again), so
// that it is asked once per leg.
type admission struct {
	admitted, refused bool
}

// admitOnce is admitID unless a records an admission already (a rerun of
// the transaction, or a check after the leg that asked), and records the
// guard's answer in a. A nil a records nothing.
func (s *Service) admitOnce(ctx context.Context, tx storage.Tx, accountID string, unknown func() error, a *admission) error {
	if a == nil {
		a = &admission{}
	}
	if a.admitted || s.cfg.Guard == nil {
		return nil
	}
	w, err := walletFor(ctx, tx, accountID, unknown)
	if err != nil {
		return err
	}
	if err := s.admit(ctx, &w, unknown); err != nil {
		a.refused = true
		return err
	}
	a.admitted = true
	return nil
}

// unknownAs returns the answer to an unknown id of kind what (a
// "credential", an "active session", an "internal account"), the answer of
// a plain refusal of the guard too.
func unknownAs(what, id string) func() error {
	return func() error { return notFound(what, id) }
}

// forbidden is the answer to a plain refusal of a call that names no id
// (the creation of a wallet).
func forbidden() error {
	return apierror.New(apierror.Forbidden, "the caller may not act on this wallet")
}

package ownership

import (
	"context"
	"errors"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/storage"
)

// Account returns the external account id as it is committed (or as the
// host's transaction bound to ctx sees it), for a host's own reads: support
// screens, audit, the checks before a payout of its own. It takes no lock;
// a decision that must hold until a commit uses [Service.CheckPayoutIn].
//
// The [Config].Guard is asked about the account read; a plain refusal is
// answered as an unknown account.
//
// Errors: 400 INVALID_INPUT (field accountId) when id is not an
// ExternalAccount id, 404 REFERENCE_NOT_FOUND when there is no such account
// (or the guard refuses it).
func (s *Service) Account(ctx context.Context, id string) (*storage.ExternalAccount, error) {
	if !storage.ValidID(id, "ExternalAccount") {
		return nil, apierror.InvalidField("accountId", nil, "must be an ExternalAccount id")
	}
	var a storage.ExternalAccount
	err := s.cfg.Store.Atomic(ctx, func(tx storage.Tx) error {
		var err error
		a, err = tx.ExternalAccounts().Get(ctx, id)
		if errors.Is(err, storage.ErrNotFound) {
			return notFound(id)
		}
		if err != nil {
			return err
		}
		return s.admitNamed(ctx, &a)
	})
	if err != nil {
		return nil, apierror.From(err)
	}
	return &a, nil
}

// Accounts returns the customer's external accounts in the order they were
// registered, INACTIVE ones included; a customer without accounts (or
// unknown to walletgate) has none. Like [Service.Account] it takes no lock.
// The [Config].Guard is asked about each account: one it refuses with a
// plain error is left out, and a refusal that is an *apierror.Error fails
// the call with it.
//
// Errors: 400 INVALID_INPUT (field customerId) when customerID is empty.
func (s *Service) Accounts(ctx context.Context, customerID string) ([]storage.ExternalAccount, error) {
	if customerID == "" {
		return nil, apierror.InvalidField("customerId", nil, "is required")
	}
	var out []storage.ExternalAccount
	err := s.cfg.Store.Atomic(ctx, func(tx storage.Tx) error {
		all, err := tx.ExternalAccounts().ListByCustomer(ctx, customerID)
		if err != nil {
			return err
		}
		out = all[:0]
		for i := range all {
			err := s.admit(ctx, &all[i], errRefused)
			if errors.Is(err, errRefusedPlainly) {
				continue
			}
			if err != nil {
				return err
			}
			out = append(out, all[i])
		}
		return nil
	})
	if err != nil {
		return nil, apierror.From(err)
	}
	return out, nil
}

// errRefusedPlainly marks a plain refusal of the guard for a list, which
// leaves the refused account out.
var errRefusedPlainly = errors.New("ownership: refused by the guard")

func errRefused() error { return errRefusedPlainly }

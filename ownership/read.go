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
// Errors: 400 INVALID_INPUT (field accountId) when id is not an
// ExternalAccount id, 404 REFERENCE_NOT_FOUND when there is no such account.
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
		return err
	})
	if err != nil {
		return nil, apierror.From(err)
	}
	return &a, nil
}

// Accounts returns the customer's external accounts in the order they were
// registered, INACTIVE ones included; a customer without accounts (or
// unknown to walletgate) has none. Like [Service.Account] it takes no lock.
//
// Errors: 400 INVALID_INPUT (field customerId) when customerID is empty.
func (s *Service) Accounts(ctx context.Context, customerID string) ([]storage.ExternalAccount, error) {
	if customerID == "" {
		return nil, apierror.InvalidField("customerId", nil, "is required")
	}
	var out []storage.ExternalAccount
	err := s.cfg.Store.Atomic(ctx, func(tx storage.Tx) error {
		var err error
		out, err = tx.ExternalAccounts().ListByCustomer(ctx, customerID)
		return err
	})
	if err != nil {
		return nil, apierror.From(err)
	}
	return out, nil
}

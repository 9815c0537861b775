package walletauth

import (
	"context"
	"errors"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/storage"
)

// Wallet returns the embedded wallet (internal account) id as it is
// committed, or as the host's transaction bound to ctx sees it, for a
// host's own reads; its credentials are [Service.ListCredentials] and its
// sessions [Service.ListSessions]. It takes no lock.
//
// The [Config].Guard is asked about the wallet read; a plain refusal is
// answered as an unknown wallet.
//
// Errors: 400 INVALID_INPUT (field accountId) when id is not an
// InternalAccount id, 404 REFERENCE_NOT_FOUND when there is no such wallet
// (or the guard refuses it).
func (s *Service) Wallet(ctx context.Context, id string) (*storage.InternalAccount, error) {
	if !storage.ValidID(id, "InternalAccount") {
		return nil, apierror.InvalidField("accountId", apierror.Pattern(`^InternalAccount:[0-9a-fA-F-]{36}$`), "must be an InternalAccount id")
	}
	var a storage.InternalAccount
	err := s.atomic(ctx, func(tx storage.Tx) error {
		unknown := unknownAs("internal account", id)
		var err error
		a, err = tx.InternalAccounts().Get(ctx, id)
		if errors.Is(err, storage.ErrNotFound) {
			return unknown()
		}
		if err != nil {
			return err
		}
		return s.admit(ctx, &a, unknown)
	})
	if err != nil {
		return nil, apierror.From(err)
	}
	return &a, nil
}

// Wallets returns the customer's embedded wallets in the order they were
// created; a customer without wallets has none. The [Config].Guard is
// asked about each: a wallet it refuses with a plain error is left out,
// and a refusal that is an *apierror.Error fails the call with it.
//
// Errors: 400 INVALID_INPUT (field customerId) when customerID is empty.
func (s *Service) Wallets(ctx context.Context, customerID string) ([]storage.InternalAccount, error) {
	if customerID == "" {
		return nil, apierror.InvalidField("customerId", nil, "is required")
	}
	var out []storage.InternalAccount
	err := s.atomic(ctx, func(tx storage.Tx) error {
		all, err := tx.InternalAccounts().ListByCustomer(ctx, customerID)
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
// leaves the refused wallet out.
var errRefusedPlainly = errors.New("walletauth: refused by the guard")

func errRefused() error { return errRefusedPlainly }

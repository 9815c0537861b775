package storagetest

import (
	"context"
	"testing"

	"github.com/walletgate/walletgate/storage"
)

// EventStore is a store that reads an account's events back for audit, as
// storage/memory and storage/postgres do. The contract leaves reading to
// each store: walletgate only appends and leases.
type EventStore interface {
	Events(ctx context.Context, accountID string) ([]storage.Event, error)
}

// Events returns the committed events of the account in Seq order. It
// fails tb when s has no Events method or the read fails.
func Events(tb testing.TB, s storage.Store, accountID string) []storage.Event {
	tb.Helper()
	es, ok := s.(EventStore)
	if !ok {
		tb.Fatalf("storagetest: the store %T does not read events back (no Events method)", s)
	}
	evs, err := es.Events(tb.Context(), accountID)
	if err != nil {
		tb.Fatalf("storagetest: reading the events of %s: %v", accountID, err)
	}
	return evs
}

// Issuance reads the live one-time code issuance of credential id in tx,
// through the only read the contract has of it: [storage.Credentials.Lock]
// with an attempt of limit zero, which charges nothing. It holds the
// credential until tx ends. Nil when the credential has no issuance;
// storage.ErrNotFound when the credential does not exist.
func Issuance(ctx context.Context, tx storage.Tx, id string) (*storage.OTPIssuance, error) {
	l, err := tx.Credentials().Lock(ctx, id, &storage.OTPAttempt{})
	return l.Issuance, err
}

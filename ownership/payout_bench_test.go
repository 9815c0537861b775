package ownership_test

import (
	"testing"

	"github.com/walletgate/walletgate/ownership"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/memory"
)

// BenchmarkCheckPayout is a gate decision on the memory store: one
// transaction with a read of the account, then arithmetic. Compare with
// BenchmarkStoreGetAccount, the raw read it wraps.
func BenchmarkCheckPayout(b *testing.B) {
	ctx := b.Context()
	store := memory.New()
	svc := newPayoutService(b, store)
	a := putAccount(b, store, status(storage.StatusPendingOwnershipVerification))
	p := ownership.Payout{AccountID: a.ID, Amount: 1_000_000, Corridor: "USD:USDC"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := svc.CheckPayout(ctx, p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheckPayoutIn is the gate inside the host's transaction, with the
// hold (a compare-and-set write of the account on this store).
func BenchmarkCheckPayoutIn(b *testing.B) {
	ctx := b.Context()
	store := memory.New()
	svc := newPayoutService(b, store)
	a := putAccount(b, store, status(storage.StatusPendingOwnershipVerification))
	p := ownership.Payout{AccountID: a.ID, Amount: 1_000_000, Corridor: "USD:USDC"}
	b.ReportAllocs()
	for b.Loop() {
		err := store.Atomic(ctx, func(tx storage.Tx) error {
			_, err := svc.CheckPayoutIn(ctx, tx, p)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStoreGetAccount is the raw primitive: one memory-store
// transaction that reads the account.
func BenchmarkStoreGetAccount(b *testing.B) {
	ctx := b.Context()
	store := memory.New()
	a := putAccount(b, store, status(storage.StatusPendingOwnershipVerification))
	b.ReportAllocs()
	for b.Loop() {
		err := store.Atomic(ctx, func(tx storage.Tx) error {
			_, err := tx.ExternalAccounts().Get(ctx, a.ID)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecide is the arithmetic alone, on an account already read.
func BenchmarkDecide(b *testing.B) {
	a := storage.ExternalAccount{ID: "ExternalAccount:1", Status: storage.StatusPendingOwnershipVerification,
		OwnershipType: ownership.FirstParty, Currency: "USDC", AccountType: ownership.AccountEthereum}
	p := ownership.Payout{AccountID: a.ID, Amount: 1_000_000, Corridor: "USD:USDC"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := testPolicy.Decide(&a, p); err != nil {
			b.Fatal(err)
		}
	}
}

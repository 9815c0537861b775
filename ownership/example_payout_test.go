package ownership_test

import (
	"context"
	"fmt"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/ownership"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/memory"
)

// A host gates payouts to a customer's wallet that is still pending
// ownership verification: below 1000 USDC it pays (gate and debit in one
// transaction), from 1000 USDC on it must verify first, and no single
// payout may exceed 50000 USDC.
func ExampleService_CheckPayoutIn() {
	ctx := context.Background()
	store := memory.New()
	svc, _ := ownership.New(ownership.Config{Store: store, Payouts: ownership.PayoutPolicy{
		VerificationThresholds: ownership.Limits{ByCurrency: map[string]int64{"USDC": 1_000_000_000}},
		MaxAmounts:             ownership.Limits{ByCurrency: map[string]int64{"USDC": 50_000_000_000}},
	}})
	acct := storage.ExternalAccount{ID: "ExternalAccount:7d1c9e0a-4b8e-4a55-9a3e-0c2f8d7b6a11", CustomerID: "Customer:1",
		Status: storage.StatusPendingOwnershipVerification, OwnershipType: ownership.FirstParty, Currency: "USDC",
		AccountType: ownership.AccountEthereum, Address: "0x2c7536E3605D9C16a7a3D7b1898e529396a65c23"}
	_ = store.Atomic(ctx, func(tx storage.Tx) error { return tx.ExternalAccounts().Create(ctx, &acct) })

	for _, amount := range []int64{250_000_000, 1_000_000_000, 60_000_000_000} {
		err := store.Atomic(ctx, func(tx storage.Tx) error {
			d, err := svc.CheckPayoutIn(ctx, tx, ownership.Payout{AccountID: acct.ID, Amount: amount, Currency: "USDC"})
			if err != nil {
				return err // nothing is debited
			}
			fmt.Println("pay", amount, "under", d.Rule)
			return nil // the host debits here, in tx
		})
		if e := apierror.As(err); e != nil {
			fmt.Println(e.Status(), e.Code, "-", e.Reason())
		}
	}
	// Output:
	// pay 250000000 under BELOW_THRESHOLD
	// 400 EXTERNAL_ACCOUNT_VERIFICATION_REQUIRED - amount 1000000000 USDC reaches the verification threshold 1000000000 (currency USDC) of a wallet PENDING_OWNERSHIP_VERIFICATION
	// 400 TRANSACTION_SIZE_LIMIT_EXCEEDED - amount 60000000000 USDC is above the single-transaction maximum 50000000000 (currency USDC)
}

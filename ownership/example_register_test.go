package ownership_test

import (
	"context"
	"fmt"

	"github.com/walletgate/walletgate/ownership"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/memory"
)

// Registering a first-party self-custody wallet: the address is checked by
// the chain's verifier, the account starts PENDING_OWNERSHIP_VERIFICATION
// and its status event is written with it. A host-driven change (here a
// deletion) writes the next event.
func ExampleService_RegisterAccount() {
	ctx := context.Background()
	store := memory.New()
	svc, _ := ownership.New(ownership.Config{Store: store,
		// Accounts register in the currencies the payout policy pays out.
		Payouts: ownership.PayoutPolicy{MaxAmounts: ownership.Limits{ByCurrency: map[string]int64{"USDC": 50_000_000_000}}}})

	_, err := svc.RegisterAccount(ctx, ownership.NewAccount{CustomerID: "Customer:1", AccountType: ownership.AccountEthereum,
		Address: "0x12", Currency: "USDC", OwnershipType: ownership.FirstParty})
	fmt.Println(err)

	a, err := svc.RegisterAccount(ctx, ownership.NewAccount{CustomerID: "Customer:1", AccountType: ownership.AccountEthereum,
		Address: "0x52908400098527886E0F7030069857D2E4169EE7", Currency: "USDC", OwnershipType: ownership.FirstParty})
	fmt.Println(err, a.Status)

	a, err = svc.SetStatus(ctx, a.ID, storage.StatusInactive)
	fmt.Println(err, a.Status)

	events, _ := store.Events(ctx, a.ID)
	fmt.Println(len(events), events[0].Type)
	// Output:
	// 400 INVALID_INPUT: invalid field accountInfo.address: address is not 0x followed by 40 hex digits
	// <nil> PENDING_OWNERSHIP_VERIFICATION
	// <nil> INACTIVE
	// 2 EXTERNAL_ACCOUNT.STATUS_UPDATED
}

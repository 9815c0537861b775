package ownership_test

import (
	"testing"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/ownership"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/memory"
)

// TestReadAccounts: a host reads an account and a customer's accounts
// through the service, with the service's errors.
func TestReadAccounts(t *testing.T) {
	ctx := t.Context()
	svc, err := ownership.New(ownership.Config{Store: memory.New(), Payouts: testPolicy})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, n := range []ownership.NewAccount{
		{CustomerID: "Customer:1", AccountType: ownership.AccountEthereum, Address: regEVM, Currency: "USDC", OwnershipType: ownership.FirstParty},
		{CustomerID: "Customer:1", AccountType: "USD_ACCOUNT", Address: "12345", Currency: "USD"},
		{CustomerID: "Customer:2", AccountType: "USD_ACCOUNT", Address: "67890", Currency: "USD"},
	} {
		a, err := svc.RegisterAccount(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, a.ID)
	}
	if _, err := svc.SetStatus(ctx, ids[1], storage.StatusInactive); err != nil {
		t.Fatal(err)
	}
	a, err := svc.Account(ctx, ids[0])
	if err != nil || a.ID != ids[0] || a.Status != storage.StatusPendingOwnershipVerification || a.Address != regEVM {
		t.Fatalf("Account: %+v, %v", a, err)
	}
	list, err := svc.Accounts(ctx, "Customer:1")
	if err != nil || len(list) != 2 || list[0].ID != ids[0] || list[1].ID != ids[1] || list[1].Status != storage.StatusInactive {
		t.Fatalf("Accounts: %+v, %v", list, err)
	}
	if none, err := svc.Accounts(ctx, "Customer:3"); err != nil || len(none) != 0 {
		t.Fatalf("Accounts of a customer without accounts: %+v, %v", none, err)
	}

	_, err = svc.Account(ctx, "ExternalAccount:00000000-0000-4000-8000-000000000000")
	apierrortest.Want(t, err, apierror.ReferenceNotFound, "")
	_, err = svc.Account(ctx, "InternalAccount:00000000-0000-4000-8000-000000000000")
	apierrortest.WantFields(t, err, apierror.InvalidInput, "accountId")
	_, err = svc.Accounts(ctx, "")
	apierrortest.WantFields(t, err, apierror.InvalidInput, "customerId")
}

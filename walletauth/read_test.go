package walletauth_test

import (
	"testing"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/walletauth"
)

// TestReadWallets: a host reads a wallet and a customer's wallets through
// the service, with the service's errors.
func TestReadWallets(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t, nil)
	second, _, err := e.svc.CreateWallet(ctx, walletauth.NewWallet{CustomerID: "Customer:1", Email: "grace@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	w, err := e.svc.Wallet(ctx, e.wallet.ID)
	if err != nil || w.ID != e.wallet.ID || w.CustomerID != "Customer:1" {
		t.Fatalf("Wallet: %+v, %v", w, err)
	}
	list, err := e.svc.Wallets(ctx, "Customer:1")
	if err != nil || len(list) != 2 || list[0].ID != e.wallet.ID || list[1].ID != second.ID {
		t.Fatalf("Wallets: %+v, %v", list, err)
	}
	if none, err := e.svc.Wallets(ctx, "Customer:2"); err != nil || len(none) != 0 {
		t.Fatalf("Wallets of a customer without wallets: %+v, %v", none, err)
	}
	_, err = e.svc.Wallet(ctx, "InternalAccount:00000000-0000-4000-8000-000000000000")
	apierrortest.Want(t, err, apierror.ReferenceNotFound, "")
	_, err = e.svc.Wallet(ctx, e.email.ID)
	apierrortest.WantFields(t, err, apierror.InvalidInput, "accountId")
	_, err = e.svc.Wallets(ctx, "")
	apierrortest.WantFields(t, err, apierror.InvalidInput, "customerId")
}

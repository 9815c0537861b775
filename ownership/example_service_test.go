package ownership_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/ethereum/go-ethereum/accounts"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/walletgate/walletgate/ownership"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/memory"
)

// A wallet-signature proof from challenge to ACTIVE, with the status event
// left in the outbox for the publisher.
func ExampleService_Verify() {
	ctx := context.Background()
	store := memory.New()
	svc, _ := ownership.New(ownership.Config{Store: store,
		// Accounts register in the currencies the payout policy pays out.
		Payouts: ownership.PayoutPolicy{MaxAmounts: ownership.Limits{ByCurrency: map[string]int64{"USDC": 50_000_000_000}}}, Service: "payments.example.com"})

	// The host registered the customer's wallet as an external account.
	key, _ := crypto.HexToECDSA("4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318")
	acct := storage.ExternalAccount{ID: "ExternalAccount:7d1c9e0a-4b8e-4a55-9a3e-0c2f8d7b6a11", CustomerID: "Customer:1",
		Status: storage.StatusPendingOwnershipVerification, OwnershipType: "FIRST_PARTY", Currency: "USDC",
		AccountType: ownership.AccountEthereum, Address: crypto.PubkeyToAddress(key.PublicKey).Hex(), CreatedAt: time.Now()}
	_ = store.Atomic(ctx, func(tx storage.Tx) error { return tx.ExternalAccounts().Create(ctx, &acct) })

	// The service issues the message; the wallet signs it (personal_sign).
	c, _ := svc.StartChallenge(ctx, acct.ID, ownership.MethodWalletSignature, ownership.CustomerTree)
	sig, _ := crypto.Sign(accounts.TextHash([]byte(c.MessageToSign)), key)
	sig[64] += 27

	got, err := svc.Verify(ctx, acct.ID, ownership.VerifyRequest{Signature: "0x" + hex.EncodeToString(sig)}, ownership.CustomerTree)
	fmt.Println(err, got.Status)

	events, _ := store.Events(ctx, acct.ID)
	fmt.Println(len(events), events[0].Type)
	// Output:
	// <nil> ACTIVE
	// 1 EXTERNAL_ACCOUNT.STATUS_UPDATED
}

package policy_test

import (
	"context"
	"fmt"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/ownership/policy"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/memory"
)

// A daily limit decided in the payout's transaction: the second payout of
// the day does not fit, and the refusal names the rule and when the window
// has room again.
func ExamplePolicy_Decide() {
	rules, err := policy.Parse([]byte(`{"referenceCurrency": "USD",
		"windows": [{"name": "day", "scope": "CUSTOMER", "period": "24h", "maxAmount": 100000}],
		"rules": [{"name": "daily-limit", "match": {"exceedsWindows": ["day"]}, "action": "BLOCK"},
			{"name": "default", "match": {}, "action": "ALLOW"}]}`))
	if err != nil {
		panic(err)
	}
	p, err := policy.New(policy.Config{Rules: rules})
	if err != nil {
		panic(err)
	}
	store := memory.New()
	ctx := context.Background()
	now := time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)
	dest := storage.ExternalAccount{ID: "ExternalAccount:5f0c7a36-1111-4e4e-9a9a-000000000001", CustomerID: "Customer:1",
		Status: storage.StatusActive, Currency: "USD", AccountType: "USD_ACCOUNT", Address: "123", CreatedAt: now.AddDate(0, -1, 0), UpdatedAt: now.AddDate(0, -1, 0)}
	_ = store.Atomic(ctx, func(tx storage.Tx) error { return tx.ExternalAccounts().Create(ctx, &dest) })

	pay := func(requestID string, amount int64) {
		// In a host, this runs in walletauth.Authorize's Effect, with its
		// authorization, beside the ledger debit.
		a := &signedretry.Authorization{RequestID: requestID, Now: now}
		err := store.Atomic(ctx, func(tx storage.Tx) error {
			d, err := p.Decide(ctx, tx, policy.Payout{CustomerID: "Customer:1", SourceID: "InternalAccount:1",
				DestinationID: dest.ID, Amount: amount, Currency: "USD", Authorization: a})
			if err == nil {
				fmt.Println("allowed by", d.Rule)
			}
			return err
		})
		if e := apierror.As(err); e != nil {
			fmt.Println(e.Code, e.Details["rule"], e.Details["availableAt"])
		}
	}
	pay("Request:1", 80000)
	pay("Request:2", 30000)
	// Output:
	// allowed by default
	// PAYOUT_BLOCKED daily-limit 2026-09-02T12:00:00Z
}

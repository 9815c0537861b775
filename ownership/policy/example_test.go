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

// A payout decided in its transaction, with its three outcomes: the host's
// debit is the Execute the policy calls for an allowed payout, and for no
// other; a held payout waits for its approval (Outcome.Held), and a
// refused one is an error naming its rule and, for a window, when it has
// room again.
func ExamplePolicy_Decide() {
	rules, err := policy.Parse([]byte(`{"referenceCurrency": "USD",
		"windows": [{"name": "day", "scope": "CUSTOMER", "period": "24h", "maxAmount": 100000}],
		"rules": [{"name": "daily-limit", "match": {"exceedsWindows": ["day"]}, "action": "BLOCK"},
			{"name": "large", "match": {"minAmount": 50000}, "action": "REQUIRE_APPROVAL",
				"approval": {"count": 1, "operators": ["risk-desk"], "ttl": "24h"}},
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

	// The host's payout: its ledger debit and payout record, written in tx.
	debit := func(ctx context.Context, tx storage.Tx, a *policy.Allowed) error {
		fmt.Println("debited", a.Payout.Amount, "allowed by", a.Rule)
		return nil
	}
	pay := func(requestID string, amount int64) {
		// In a host, this runs in walletauth.Authorize's Effect, with its
		// authorization.
		a := &signedretry.Authorization{RequestID: requestID, Now: now}
		err := store.Atomic(ctx, func(tx storage.Tx) error {
			out, err := p.Decide(ctx, tx, policy.Payout{CustomerID: "Customer:1", SourceID: "InternalAccount:1",
				DestinationID: dest.ID, Amount: amount, Currency: "USD", Authorization: a}, debit)
			if out.Held != nil {
				fmt.Println("held for approval by", out.Held.Rule, "until", out.Held.ExpiresAt.Format(time.RFC3339))
			}
			return err // commits the hold, or rolls the refusal back
		})
		if e := apierror.As(err); e != nil {
			fmt.Println(e.Code, e.Details["rule"], e.Details["availableAt"])
		}
	}
	pay("Request:1", 40000)
	pay("Request:2", 50000)
	pay("Request:3", 70000)
	// Output:
	// debited 40000 allowed by default
	// held for approval by large until 2026-09-02T12:00:00Z
	// PAYOUT_BLOCKED daily-limit 2026-09-02T12:00:00Z
}

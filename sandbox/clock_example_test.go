package sandbox_test

import (
	"context"
	"fmt"
	"time"

	"github.com/walletgate/walletgate/sandbox"
)

// A quote reaches its expiry without waiting: the test advances the
// simulator's clock past DefaultQuoteTTL and reads the quote again.
func ExampleSimulator_AdvanceClock() {
	sim, _ := sandbox.New(sandbox.Config{Clock: func() time.Time { return time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC) }})
	defer sim.Close()
	ctx := context.Background()

	customer, _ := sim.CreateCustomer(ctx, sandbox.CustomerCreate{CustomerType: sandbox.CustomerIndividual,
		FullName: "Ada Lovelace", Email: "ada.clock@example.com"})
	wallets, _ := sim.ListInternalAccounts(ctx, customer.ID, sandbox.ListOptions{})
	wallet := wallets.Data[0].ID
	quote, err := sim.CreateQuote(ctx, sandbox.QuoteRequest{Source: sandbox.QuoteSource{AccountID: wallet},
		Destination:        sandbox.QuoteDestination{DestinationType: sandbox.DestinationUMAAddress, UMAAddress: sandbox.UMASuccessUSD, Currency: "USD"},
		LockedCurrencySide: sandbox.LockSending, LockedCurrencyAmount: 1_000_000})
	if err != nil {
		panic(err)
	}
	fmt.Println(quote.Status)

	now, _ := sim.AdvanceClock(sandbox.DefaultQuoteTTL)
	fmt.Println(now.Format(time.RFC3339))
	quote, _ = sim.GetQuote(ctx, quote.ID)
	fmt.Println(quote.Status)

	_, err = sim.AdvanceClock(0)
	fmt.Println(err)
	// Output:
	// PENDING
	// 2026-03-01T12:05:00Z
	// EXPIRED
	// 400 INVALID_INPUT: invalid field d: must be positive: the clock only moves forward
}

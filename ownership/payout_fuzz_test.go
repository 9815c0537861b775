package ownership_test

import (
	"testing"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/ownership"
	"github.com/walletgate/walletgate/storage"
)

// FuzzPayoutCurrency feeds the payout gate arbitrary currency and corridor
// strings: it never panics, every refusal is a typed error, and an allowed
// payout is in the account's currency, spelled as a valid code, with a
// corridor (when named) that is two valid codes receiving that currency.
// A spelling the gate does not accept is never allowed, so no variant of a
// code slips past its limits.
func FuzzPayoutCurrency(f *testing.F) {
	for _, s := range [][2]string{
		{"", ""}, {"USDC", ""}, {"usdc", ""}, {"Usdc", ""}, {"USDC ", ""}, {"USD\x00C", ""}, {"ＵＳＤＣ", ""},
		{"EUR", ""}, {"", "USD:USDC"}, {"USDC", "USD:USDC"}, {"USDC", "usd:USDC"}, {"USDC", "USD:usdc"},
		{"USDC", "US-MX"}, {"USDC", "USD:USDC:EUR"}, {"USDC", ":USDC"}, {"USDC", "USD:"}, {"USDC", "MXN:USDC"},
	} {
		f.Add(s[0], s[1], int64(1))
		f.Add(s[0], s[1], int64(20_000_000_000))
	}
	policy := testPolicy
	if err := policy.Validate(); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, currency, corridor string, amount int64) {
		a := storage.ExternalAccount{ID: "ExternalAccount:1", Status: storage.StatusActive, OwnershipType: ownership.FirstParty,
			Currency: "USDC", AccountType: ownership.AccountEthereum}
		d, err := policy.Decide(&a, ownership.Payout{AccountID: a.ID, Amount: amount, Currency: currency, Corridor: corridor})
		if err != nil {
			if apierror.As(err) == nil || apierror.CodeOf(err).IsZero() {
				t.Fatalf("untyped refusal %v", err)
			}
			return
		}
		if currency != "" && currency != "USDC" {
			t.Fatalf("currency %q allowed for a USDC account", currency)
		}
		if corridor != "" && corridor != "USD:USDC" && corridor != "MXN:USDC" && !validCorridorToUSDC(corridor) {
			t.Fatalf("corridor %q allowed", corridor)
		}
		if d.Maximum == nil || amount > d.Maximum.Amount || amount <= 0 {
			t.Fatalf("amount %d allowed with maximum %v", amount, d.Maximum)
		}
	})
}

// validCorridorToUSDC is the corridor rule written out independently: a
// valid code, a colon, USDC.
func validCorridorToUSDC(c string) bool {
	const suffix = ":USDC"
	if len(c) <= len(suffix) || c[len(c)-len(suffix):] != suffix {
		return false
	}
	return ownership.ValidCurrency(c[:len(c)-len(suffix)])
}

package sandbox_test

import (
	"strings"
	"testing"

	"github.com/walletgate/walletgate/apierror"
)

// TestTransferOutPayoutGate: transfer-out goes through the library's payout
// gate: a wallet whose verification failed (UNVERIFIED) receives nothing
// until a new challenge is started, which re-opens payouts below the
// threshold; refusals name the threshold; third-party and custodial wallets
// are not gated.
func TestTransferOutPayoutGate(t *testing.T) {
	e := newEnv(t)
	c, w := e.customer("Gate Keeper")
	e.do("POST", "/sandbox/internal-accounts/"+w+"/fund", map[string]any{"amount": 50_000_000_000, "currency": "USDC"}).ok(t, 200, nil)
	ext := e.external(c.ID, evmWallet("0a1"))

	// At the threshold: refused, naming it.
	_, r := e.transfer(false, ext.ID, w, 1_000_000_000)
	f := r.fails(t, 400, apierror.ExternalAccountVerificationRequired)
	if f.Details["field"] != "destination.accountId" ||
		!strings.Contains(f.Reason(), "amount 1000000000 USDC reaches the verification threshold 1000000000 (currency USDC)") {
		t.Fatalf("details %v", f.Details)
	}

	// A failed proof: UNVERIFIED receives nothing.
	e.do("POST", "/customers/external-accounts/"+ext.ID+"/challenge", map[string]string{"method": "WALLET_SIGNATURE"}).ok(t, 201, nil)
	e.do("POST", "/customers/external-accounts/"+ext.ID+"/verify", map[string]string{"signature": "0x00"}).
		fails(t, 400, apierror.InvalidInput)
	_, r = e.transfer(false, ext.ID, w, 1)
	f = r.fails(t, 400, apierror.ExternalAccountVerificationRequired)
	if f.Details["field"] != "destination.accountId" || !strings.Contains(f.Reason(), "UNVERIFIED") {
		t.Fatalf("details %v", f.Details)
	}
	// A new challenge moves it back to PENDING_OWNERSHIP_VERIFICATION.
	e.do("POST", "/customers/external-accounts/"+ext.ID+"/challenge", map[string]string{"method": "WALLET_SIGNATURE"}).ok(t, 201, nil)
	tx, r := e.transfer(false, ext.ID, w, 999_999_999)
	r.ok(t, 201, nil)
	if tx.Status != "COMPLETED" {
		t.Fatalf("below the threshold %+v", tx)
	}

	// A THIRD_PARTY self-custody wallet and a custodial one start ACTIVE
	// and are not gated: above the threshold they receive.
	third := e.external(c.ID, map[string]any{"currency": "USDC", "ownershipType": "THIRD_PARTY", "accountInfo": map[string]any{
		"accountType": "ETHEREUM_WALLET", "address": "0x" + strings.Repeat("b", 37) + "0a2",
		"beneficiary": map[string]any{"beneficiaryType": "INDIVIDUAL", "fullName": "Someone Else", "countryOfResidence": "FR"}}})
	custodial := e.external(c.ID, map[string]any{"currency": "USDC", "ownershipType": "FIRST_PARTY", "accountInfo": map[string]any{
		"accountType": "ETHEREUM_WALLET", "address": "0x" + strings.Repeat("c", 37) + "0a3", "vaspName": "Kraken"}})
	for _, id := range []string{third.ID, custodial.ID} {
		_, r = e.transfer(false, id, w, 5_000_000_000)
		r.ok(t, 201, nil)
	}
}

package sandbox_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/sandbox"
	"github.com/walletgate/walletgate/storage/storagetest"
	"github.com/walletgate/walletgate/walletauth"
	"github.com/walletgate/walletgate/walletauth/passkey"
)

// TestStatusEventsOverHTTP: the EXTERNAL_ACCOUNT.STATUS_UPDATED events a
// wallet's life writes, in order, all under the external account's id (the
// unit of ordering): the starting status, UNVERIFIED after a failed proof,
// PENDING_OWNERSHIP_VERIFICATION after the new challenge that re-opens it
// (a challenge on a pending wallet writes nothing), ACTIVE after a proof,
// INACTIVE on delete.
func TestStatusEventsOverHTTP(t *testing.T) {
	e := newEnv(t)
	c, _ := e.customer("Event Order")
	w := e.external(c.ID, evmWallet("ee1"))
	path := "/customers/external-accounts/" + w.ID
	e.do("POST", path+"/challenge", map[string]string{"method": "WALLET_SIGNATURE"}).ok(t, 201, nil)
	e.do("POST", path+"/verify", map[string]string{"signature": "0x00"}).fails(t, 400, apierror.InvalidInput)
	e.do("POST", path+"/challenge", map[string]string{"method": "WALLET_SIGNATURE"}).ok(t, 201, nil)
	e.do("POST", path+"/challenge", map[string]string{"method": "WALLET_SIGNATURE"}).ok(t, 201, nil)
	e.do("DELETE", path, nil).ok(t, 204, nil)
	want := []string{"PENDING_OWNERSHIP_VERIFICATION", "UNVERIFIED", "PENDING_OWNERSHIP_VERIFICATION", "INACTIVE"}
	if got := statusEvents(t, e, w.ID); !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
}

// TestWalletEventsOrderedByWallet: walletauth's events are ordered under
// the embedded wallet's id (InternalAccount), the accountId of their data.
func TestWalletEventsOrderedByWallet(t *testing.T) {
	e := newEnv(t)
	_, wallet := e.customer("Wallet Events")
	e.login(wallet)
	var types []string
	for _, ev := range storagetest.Events(t, e.sim.Store(), wallet) {
		types = append(types, ev.Type)
	}
	if !slices.Contains(types, walletauth.EventCredentialAdded) || !slices.Contains(types, walletauth.EventSessionCreated) {
		t.Fatalf("events under the wallet's id: %v", types)
	}
}

// TestPasskeyRegistrationRefusalOrder: a registration sent again (the same
// challenge) is refused for the used challenge (401 UNAUTHORIZED, reason
// "registration challenge already used") before the credential is looked
// up; the same authenticator credential under a fresh challenge is 400
// PASSKEY_CREDENTIAL_ALREADY_EXISTS. Both refusals come on the first leg,
// before any signed-retry challenge.
func TestPasskeyRegistrationRefusalOrder(t *testing.T) {
	e := newEnv(t)
	_, wallet := e.customer("Passkey Order")
	session := e.login(wallet)
	a := newAuthenticator(t)
	body := func(challenge string) map[string]any {
		return map[string]any{"type": "PASSKEY", "accountId": wallet, "nickname": "Laptop",
			"challenge": challenge, "attestation": a.attest(t, challenge, wallet)}
	}
	register := func(challenge string) resp {
		body := body(challenge)
		r := e.do("POST", "/auth/credentials", body)
		var ch struct{ PayloadToSign, RequestID string }
		r.ok(t, 202, &ch)
		sig, err := session.Stamp(ch.PayloadToSign)
		if err != nil {
			t.Fatal(err)
		}
		return e.do("POST", "/auth/credentials", body, "Service-Wallet-Signature", sig, "Request-Id", ch.RequestID)
	}
	challenge := func() string {
		var rc struct{ Challenge string }
		e.do("POST", "/sandbox/passkeys/registration-challenge", map[string]string{"accountId": wallet}).ok(t, 201, &rc)
		return rc.Challenge
	}
	first := challenge()
	register(first).ok(t, 201, nil)
	again := e.do("POST", "/auth/credentials", body(first))
	if f := again.fails(t, 401, apierror.Unauthorized); f.Reason() != passkey.ReasonRegistrationChallengeUsed {
		t.Fatalf("reason %q", f.Reason())
	}
	e.do("POST", "/auth/credentials", body(challenge())).fails(t, 400, apierror.PasskeyCredentialAlreadyExists)
}

// TestThirdPartyBeneficiaryShape: a THIRD_PARTY self-custody wallet needs
// accountInfo.beneficiary, an INDIVIDUAL with fullName and
// countryOfResidence or a BUSINESS with legalName, as the README shows.
func TestThirdPartyBeneficiaryShape(t *testing.T) {
	e := newEnv(t)
	c, _ := e.customer("Third Party")
	wallet := func(suffix string, beneficiary map[string]any) map[string]any {
		info := map[string]any{"accountType": "ETHEREUM_WALLET", "address": "0x" + strings.Repeat("d", 40-len(suffix)) + suffix}
		if beneficiary != nil {
			info["beneficiary"] = beneficiary
		}
		return map[string]any{"customerId": c.ID, "currency": "USDC", "ownershipType": "THIRD_PARTY", "accountInfo": info}
	}
	f := e.do("POST", "/customers/external-accounts", wallet("1", nil)).fails(t, 400, apierror.InvalidInput)
	apierrortest.WantFields(t, f, apierror.InvalidInput, "accountInfo.beneficiary")
	f = e.do("POST", "/customers/external-accounts", wallet("2", map[string]any{"beneficiaryType": "INDIVIDUAL", "fullName": "Jane Doe"})).
		fails(t, 400, apierror.InvalidInput)
	apierrortest.WantFields(t, f, apierror.InvalidInput, "accountInfo.beneficiary.countryOfResidence")
	for i, b := range []map[string]any{
		{"beneficiaryType": "INDIVIDUAL", "fullName": "Jane Doe", "countryOfResidence": "FR", "nationality": "FR",
			"address": map[string]any{"line1": "1 Rue de Rivoli", "city": "Paris", "postalCode": "75001", "country": "FR"}},
		{"beneficiaryType": "BUSINESS", "legalName": "Acme SAS", "registrationNumber": "123456789", "taxId": "FR123456789", "countryOfResidence": "FR"},
	} {
		var a sandbox.ExternalAccount
		e.do("POST", "/customers/external-accounts", wallet(fmt.Sprint(3+i), b)).ok(t, 201, &a)
		if a.Status != "ACTIVE" {
			t.Fatalf("THIRD_PARTY wallet %+v", a)
		}
	}
}

// TestREADMECurrencyTable: the currency table of the sandbox's README
// (sandbox/README.md, its HTTP reference) is the simulator's:
// every currency with its decimals, unit, verification threshold and
// single-transaction maximum, no row more or less.
func TestREADMECurrencyTable(t *testing.T) {
	raw, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	header := "| currency | decimals | unit | verification threshold | single-transaction maximum |"
	_, rest, ok := strings.Cut(string(raw), header+"\n|---|---|---|---|---|\n")
	if !ok {
		t.Fatalf("README has no table %q", header)
	}
	var got []string
	for _, line := range strings.Split(rest, "\n") {
		if !strings.HasPrefix(line, "| ") {
			break
		}
		got = append(got, line)
	}
	var want []string
	e := newEnv(t)
	for _, c := range e.sim.Currencies() {
		unit := "1" + strings.Repeat("0", c.Decimals)
		want = append(want, fmt.Sprintf("| %s | %d | %s | %d | %d |", c.Code, c.Decimals, unit, c.VerificationThreshold, c.TransactionMaximum))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("README currency table:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestREADMELinks: every relative link of the module's READMEs names a file
// of the module, so moving a document cannot leave a reader at a dead link.
func TestREADMELinks(t *testing.T) {
	link := regexp.MustCompile(`\]\(([^)#:]+)(#[^)]*)?\)`)
	for _, doc := range []string{"../README.md", "README.md", "../apierror/operation/README.md"} {
		raw, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(raw), -1) {
			target := filepath.Join(filepath.Dir(doc), m[1])
			if _, err := os.Stat(target); err != nil {
				t.Errorf("%s links to %s: %v", doc, m[1], err)
			}
		}
	}
}

package sandbox_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/ownership"
	"github.com/walletgate/walletgate/sandbox"
)

// TestPlatformExternalAccountCreate creates platform-tree external accounts
// (customerId absent or null) over HTTP and runs the platform ownership
// challenge on one.
func TestPlatformExternalAccountCreate(t *testing.T) {
	e := newEnv(t)
	var bank sandbox.ExternalAccount
	e.do("POST", "/platform/external-accounts", usdAccount("5555000011")).ok(t, 201, &bank)
	if !strings.HasPrefix(bank.ID, "ExternalAccount:") || bank.CustomerID != "" || bank.Status != "ACTIVE" || bank.Currency != "USD" {
		t.Fatalf("platform bank account %+v", bank)
	}
	r := e.do("GET", "/customers/external-accounts/"+bank.ID, nil)
	var raw map[string]any
	r.ok(t, 200, &raw)
	if _, ok := raw["customerId"]; ok {
		t.Fatalf("platform account has a customerId: %s", r.body)
	}

	body := evmWallet("77")
	body["customerId"] = nil
	var w sandbox.ExternalAccount
	e.do("POST", "/platform/external-accounts", body).ok(t, 201, &w)
	if w.CustomerID != "" || w.Status != "PENDING_OWNERSHIP_VERIFICATION" {
		t.Fatalf("platform wallet %+v", w)
	}
	// The platform tree challenges it; the customer tree does not see it.
	var c ownership.Challenge
	e.do("POST", "/platform/external-accounts/"+w.ID+"/challenge", map[string]string{"method": "WALLET_SIGNATURE"}).ok(t, 201, &c)
	if c.MessageToSign == "" {
		t.Fatalf("challenge %+v", c)
	}
	e.do("POST", "/customers/external-accounts/"+w.ID+"/challenge", map[string]string{"method": "WALLET_SIGNATURE"}).
		fails(t, 404, apierror.ReferenceNotFound)

	// customerId set, or a default UMA deposit account: 400 on that field.
	cust, _ := e.customer("Platform Tree")
	withCustomer := usdAccount("5555000022")
	withCustomer["customerId"] = cust.ID
	err := e.do("POST", "/platform/external-accounts", withCustomer).fails(t, 400, apierror.InvalidInput)
	apierrortest.WantFields(t, err, apierror.InvalidInput, "customerId")
	uma := usdAccount("5555000033")
	uma["defaultUmaDepositAccount"] = true
	err = e.do("POST", "/platform/external-accounts", uma).fails(t, 400, apierror.InvalidInput)
	apierrortest.WantFields(t, err, apierror.InvalidInput, "defaultUmaDepositAccount")
	e.do("POST", "/platform/external-accounts", map[string]any{"currency": "USD"}).fails(t, 400, apierror.InvalidInput)
	// The customer tree still requires customerId.
	err = e.do("POST", "/customers/external-accounts", usdAccount("5555000044")).fails(t, 400, apierror.InvalidInput)
	apierrortest.WantFields(t, err, apierror.InvalidInput, "customerId")

	// The Go API.
	info, _ := json.Marshal(usdAccount("5555000055")["accountInfo"])
	a, gerr := e.sim.CreatePlatformExternalAccount(t.Context(), sandbox.ExternalAccountCreate{Currency: "USD", AccountInfo: info})
	if gerr != nil || a.CustomerID != "" {
		t.Fatalf("Go API: %+v %v", a, gerr)
	}
	_, gerr = e.sim.CreatePlatformExternalAccount(t.Context(), sandbox.ExternalAccountCreate{CustomerID: cust.ID, Currency: "USD", AccountInfo: info})
	apierrortest.Want(t, gerr, apierror.InvalidInput, "")
}

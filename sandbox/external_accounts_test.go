package sandbox_test

import (
	"encoding/json"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/ownership"
	"github.com/walletgate/walletgate/sandbox"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/storagetest"
)

func TestBeneficiaryNameVerification(t *testing.T) {
	e := newEnv(t)
	c, _ := e.customer("Bene Ficiary")
	for _, tc := range []struct {
		number, status, verified string
	}{
		{"000000102", "NOT_MATCHED", "Sandbox Account Holder"},
		{"000000103", "PARTIAL_MATCH", "J. Doe"},
		{"000000104", "PENDING", ""},
		{"000000106", "UNSUPPORTED", ""},
		{"000000107", "CHECKED_BY_RECEIVING_FI", ""},
		{"000000101", "MATCHED", "Jane Doe"},
		{"000000002", "MATCHED", "Jane Doe"},
	} {
		a := e.external(c.ID, usdAccount(tc.number))
		got := ""
		if a.BeneficiaryVerifiedData != nil {
			got = a.BeneficiaryVerifiedData.FullName
		}
		if a.BeneficiaryVerificationStatus != tc.status || got != tc.verified || a.Status != "ACTIVE" || a.Currency != "USD" {
			t.Errorf("%s: %+v", tc.number, a)
		}
	}
	body := usdAccount("000000105")
	body["customerId"] = c.ID
	e.do("POST", "/customers/external-accounts", body).fails(t, 400, apierror.InvalidBankAccount)

	// An email-style identifier counts its user part: a PIX key.
	a := e.external(c.ID, map[string]any{"currency": "BRL", "accountInfo": map[string]any{"accountType": "BRL_ACCOUNT",
		"pixKey": "testuser.103@pix.com.br", "pixKeyType": "EMAIL",
		"beneficiary": map[string]any{"beneficiaryType": "BUSINESS", "legalName": "Loja Ltda"}}})
	if a.BeneficiaryVerificationStatus != "PARTIAL_MATCH" {
		t.Fatalf("pix %+v", a)
	}
}

func TestFiatVariants(t *testing.T) {
	e := newEnv(t)
	c, _ := e.customer("Fia Fiat")
	ind := map[string]any{"beneficiaryType": "INDIVIDUAL", "fullName": "Jo Bloggs"}
	for _, tc := range []struct {
		currency string
		info     map[string]any
	}{
		{"EUR", map[string]any{"accountType": "EUR_ACCOUNT", "iban": "DE89370400440532013000", "swiftCode": "COBADEFFXXX"}},
		{"GBP", map[string]any{"accountType": "GBP_ACCOUNT", "accountNumber": "31926819", "sortCode": "601613"}},
		{"MXN", map[string]any{"accountType": "MXN_ACCOUNT", "clabeNumber": "002010077777777771"}},
		{"INR", map[string]any{"accountType": "INR_ACCOUNT", "vpa": "jo.bloggs@okbank"}},
		{"CAD", map[string]any{"accountType": "CAD_ACCOUNT", "accountNumber": "1234567", "institutionNumber": "001", "transitNumber": "12345"}},
		// A SWIFT account holds the request's currency, one of the table's
		// (a euro account at a Swiss bank).
		{"EUR", map[string]any{"accountType": "SWIFT_ACCOUNT", "accountNumber": "CH9300762011623852957", "swiftCode": "UBSWCHZH"}},
		{"NGN", map[string]any{"accountType": "NGN_ACCOUNT", "accountNumber": "0123456789", "bankName": "Sandbox Bank"}},
		{"USD", map[string]any{"accountType": "SLV_ACCOUNT", "accountNumber": "9988776655"}},
	} {
		tc.info["beneficiary"] = ind
		a := e.external(c.ID, map[string]any{"currency": tc.currency, "accountInfo": tc.info})
		var info map[string]any
		_ = json.Unmarshal(a.AccountInfo, &info)
		if a.Status != "ACTIVE" || info["accountType"] != tc.info["accountType"] || info["beneficiary"] == nil || a.BeneficiaryVerificationStatus != "MATCHED" {
			t.Errorf("%v: %+v %v", tc.info["accountType"], a, info)
		}
	}
	// Every invalid field at once.
	err := e.do("POST", "/customers/external-accounts", map[string]any{"customerId": c.ID, "currency": "EUR",
		"accountInfo": map[string]any{"accountType": "USD_ACCOUNT", "accountNumber": "12", "accountCategory": "GOLD",
			"beneficiary": map[string]any{"beneficiaryType": "INDIVIDUAL"}}}).fails(t, 400, apierror.InvalidInput)
	want := []string{"accountInfo.accountNumber", "accountInfo.routingNumber", "accountInfo.accountCategory",
		"accountInfo.beneficiary.fullName", "currency"}
	if got := fields(err); !slices.Equal(got, want) {
		t.Fatalf("fields\n got %v\nwant %v", got, want)
	}
	err = e.do("POST", "/customers/external-accounts", map[string]any{"accountInfo": map[string]any{"accountType": "GOLD_ACCOUNT"},
		"defaultUmaDepositAccount": "yes"}).fails(t, 400, apierror.InvalidInput)
	if got := fields(err); !slices.Equal(got, []string{"customerId", "currency", "accountInfo.accountType", "defaultUmaDepositAccount"}) {
		t.Fatalf("fields %v", got)
	}
	err = e.do("POST", "/customers/external-accounts", map[string]any{"customerId": c.ID, "currency": "MXN",
		"accountInfo": map[string]any{"accountType": "MXN_ACCOUNT", "clabeNumber": "002010077777777771"}}).fails(t, 400, apierror.InvalidInput)
	apierrortest.WantFields(t, err, apierror.InvalidInput, "accountInfo.beneficiary")
}

func TestWalletVariants(t *testing.T) {
	e := newEnv(t)
	c, _ := e.customer("Wally Wallet")
	for _, tc := range []struct {
		name, currency, ownership, status, storedType string
		info                                          map[string]any
	}{
		{"base first party", "USDC", "FIRST_PARTY", "PENDING_OWNERSHIP_VERIFICATION", "BASE_WALLET",
			map[string]any{"accountType": "BASE_WALLET", "address": "0xabCDEF1234567890ABcDEF1234567890aBCDeF12"}},
		{"polygon first party", "USDC", "FIRST_PARTY", "PENDING_OWNERSHIP_VERIFICATION", "POLYGON_WALLET",
			map[string]any{"accountType": "POLYGON_WALLET", "address": "0x1111111111111111111111111111111111111111"}},
		{"plasma first party", "USDT", "FIRST_PARTY", "PENDING_OWNERSHIP_VERIFICATION", "PLASMA_WALLET",
			map[string]any{"accountType": "PLASMA_WALLET", "address": "0x2222222222222222222222222222222222222222"}},
		{"solana first party", "USDC", "FIRST_PARTY", "PENDING_OWNERSHIP_VERIFICATION", "SOLANA_WALLET",
			map[string]any{"accountType": "SOLANA_WALLET", "address": "4Nd1m6Qkq7RfKuE5vQ9qP9Tn6H94Ueqb4xXHzsAbd8Wg"}},
		{"tron first party", "USDT", "FIRST_PARTY", "PENDING_OWNERSHIP_VERIFICATION", "TRON_WALLET",
			map[string]any{"accountType": "TRON_WALLET", "address": "TNPeeaaFB7K9cmo4uQpcU32zGK8G1NYqeL"}},
		{"spark first party", "BTC", "FIRST_PARTY", "PENDING_OWNERSHIP_VERIFICATION", "SPARK_WALLET",
			map[string]any{"accountType": "SPARK_WALLET", "address": "spark1pgss938nvery5elr8epzmux0pdm3072zp5nms6zvk2j6zm7m9w9d47jv34vdjc"}},
		{"custodial", "USDC", "FIRST_PARTY", "ACTIVE", "ETHEREUM_WALLET",
			map[string]any{"accountType": "ETHEREUM_WALLET", "address": "0x3333333333333333333333333333333333333333", "vaspName": "Coinbase"}},
		{"third party", "USDC", "THIRD_PARTY", "ACTIVE", "ETHEREUM_WALLET",
			map[string]any{"accountType": "ETHEREUM_WALLET", "address": "0x4444444444444444444444444444444444444444",
				"beneficiary": map[string]any{"beneficiaryType": "INDIVIDUAL", "fullName": "Al Ice", "countryOfResidence": "FR"}}},
		{"lightning address", "BTC", "FIRST_PARTY", "ACTIVE", "LIGHTNING",
			map[string]any{"accountType": "LIGHTNING", "lightningAddress": "alice@getalby.com"}},
		{"lightning alias", "BTC", "", "ACTIVE", "LIGHTNING",
			map[string]any{"accountType": "LIGHTNING_ACCOUNT", "bolt12": "lno1qcp4256ypqpq86q2pucnq42ngssx2an9wfujqerp0y2pqun4wd68jtn00fkxzcnn9ehhyec"}},
	} {
		body := map[string]any{"currency": tc.currency, "accountInfo": tc.info}
		if tc.ownership != "" {
			body["ownershipType"] = tc.ownership
		}
		a := e.external(c.ID, body)
		if a.Status != tc.status || a.BeneficiaryVerificationStatus != "" {
			t.Errorf("%s: %+v", tc.name, a)
			continue
		}
		// The store holds what the ownership package reads.
		var rec storage.ExternalAccount
		err := e.sim.Store().Atomic(t.Context(), func(tx storage.Tx) error {
			var err error
			rec, err = tx.ExternalAccounts().Get(t.Context(), a.ID)
			return err
		})
		addr, _ := tc.info["address"].(string)
		if addr == "" {
			addr, _ = tc.info["lightningAddress"].(string)
			if addr == "" {
				addr, _ = tc.info["bolt12"].(string)
			}
		}
		var info map[string]any
		_ = json.Unmarshal(rec.Info, &info)
		if err != nil || rec.AccountType != tc.storedType || rec.Address != addr || string(rec.Status) != tc.status ||
			rec.CustomerID != c.ID || info["accountType"] != tc.storedType || rec.VaspName != stringOr(tc.info["vaspName"]) {
			t.Errorf("%s: stored %+v %v (%v)", tc.name, rec, info, err)
		}
	}
	bad := []struct {
		name   string
		body   map[string]any
		fields []string
	}{
		{"bad evm", map[string]any{"currency": "USDC", "ownershipType": "FIRST_PARTY",
			"accountInfo": map[string]any{"accountType": "ETHEREUM_WALLET", "address": "0x12"}}, []string{"accountInfo.address"}},
		{"bad solana", map[string]any{"currency": "USDC", "ownershipType": "FIRST_PARTY",
			"accountInfo": map[string]any{"accountType": "SOLANA_WALLET", "address": "0OIl"}}, []string{"accountInfo.address"}},
		{"bad tron checksum", map[string]any{"currency": "USDT", "ownershipType": "FIRST_PARTY",
			"accountInfo": map[string]any{"accountType": "TRON_WALLET", "address": "TNPeeaaFB7K9cmo4uQpcU32zGK8G1NYqeM"}}, []string{"accountInfo.address"}},
		{"bad spark", map[string]any{"currency": "BTC", "ownershipType": "FIRST_PARTY",
			"accountInfo": map[string]any{"accountType": "SPARK_WALLET", "address": "spark1BAD"}}, []string{"accountInfo.address"}},
		{"no ownership type", map[string]any{"currency": "USDC",
			"accountInfo": map[string]any{"accountType": "BASE_WALLET", "address": "0x5555555555555555555555555555555555555555"}}, []string{"ownershipType"}},
		{"third party without beneficiary", map[string]any{"currency": "USDC", "ownershipType": "THIRD_PARTY",
			"accountInfo": map[string]any{"accountType": "BASE_WALLET", "address": "0x5555555555555555555555555555555555555555"}}, []string{"accountInfo.beneficiary"}},
		{"wallet beneficiary needs country", map[string]any{"currency": "USDC", "ownershipType": "THIRD_PARTY",
			"accountInfo": map[string]any{"accountType": "BASE_WALLET", "address": "0x5555555555555555555555555555555555555555",
				"beneficiary": map[string]any{"beneficiaryType": "INDIVIDUAL", "fullName": "X"}}}, []string{"accountInfo.beneficiary.countryOfResidence"}},
		{"two lightning targets", map[string]any{"currency": "BTC",
			"accountInfo": map[string]any{"accountType": "LIGHTNING", "lightningAddress": "a@b.co", "bolt12": "lno1qcp4256ypqpq86q2pucnq42ngssx2an9wfujqerp0y2pqun4wd68jtn00fkxzcnn9ehhyec"}},
			[]string{"accountInfo.invoice"}},
		{"bad invoice", map[string]any{"currency": "BTC",
			"accountInfo": map[string]any{"accountType": "LIGHTNING", "invoice": "lnxyz"}}, []string{"accountInfo.invoice"}},
	}
	for _, tc := range bad {
		tc.body["customerId"] = c.ID
		err := e.do("POST", "/customers/external-accounts", tc.body).fails(t, 400, apierror.InvalidInput)
		if got := fields(err); !slices.Equal(got, tc.fields) {
			t.Errorf("%s: fields %v, want %v", tc.name, got, tc.fields)
		}
	}
}

func stringOr(v any) string {
	s, _ := v.(string)
	return s
}

func TestExternalAccountLifecycle(t *testing.T) {
	e := newEnv(t)
	c, _ := e.customer("Del Ete")
	body := usdAccount("555000001")
	body["customerId"] = "Customer:00000000-0000-4000-8000-000000000000"
	e.do("POST", "/customers/external-accounts", body).fails(t, 404, apierror.UserNotFound)

	def := usdAccount("555000002")
	def["defaultUmaDepositAccount"] = true
	first := e.external(c.ID, def)
	if !first.DefaultUMADepositAccount {
		t.Fatalf("default %+v", first)
	}
	def["customerId"] = c.ID
	err := e.do("POST", "/customers/external-accounts", def).fails(t, 409, apierror.Conflict)
	if err.Details["field"] != "defaultUmaDepositAccount" {
		t.Fatalf("details %v", err.Details)
	}
	// Another customer may have its own default.
	other, _ := e.customer("Other Default")
	e.external(other.ID, accountBody(usdAccount("555000003")).withDefault())

	var got sandbox.ExternalAccount
	e.do("GET", "/customers/external-accounts/"+first.ID, nil).ok(t, 200, &got)
	if got.ID != first.ID || got.CustomerID != c.ID {
		t.Fatalf("get %+v", got)
	}
	e.do("GET", "/customers/external-accounts/ExternalAccount:00000000-0000-4000-8000-000000000000", nil).fails(t, 404, apierror.ReferenceNotFound)
	e.do("DELETE", "/customers/external-accounts/nope", nil).fails(t, 404, apierror.ReferenceNotFound)

	// Deleting the default frees the slot.
	e.do("DELETE", "/customers/external-accounts/"+first.ID, nil).ok(t, 204, nil)
	e.do("GET", "/customers/external-accounts/"+first.ID, nil).fails(t, 404, apierror.ReferenceNotFound)
	e.do("DELETE", "/customers/external-accounts/"+first.ID, nil).fails(t, 404, apierror.ReferenceNotFound)
	e.do("POST", "/customers/external-accounts", def).ok(t, 201, nil)
}

type accountBody map[string]any

func (b accountBody) withDefault() map[string]any {
	b["defaultUmaDepositAccount"] = true
	return b
}

func TestTrustedBeneficiaryDelete(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newBubbleEnv(t, sandbox.Config{})
		c, _ := e.scaCustomer("Tru Sted")
		a := e.external(c.ID, usdAccount("777000001"))
		p := "/customers/external-accounts/" + a.ID

		e.do("POST", p+"/untrust", nil).fails(t, 409, apierror.Conflict)
		e.do("POST", p+"/trust/confirm", map[string]string{"code": sandbox.SandboxSCACode}).fails(t, 409, apierror.Conflict)
		var start sandbox.TrustStart
		e.do("POST", p+"/trust", nil).ok(t, 200, &start)
		if start.SCAChallenge == nil || start.SCAChallenge.Purpose != "TRUST_BENEFICIARY" {
			t.Fatalf("trust start %+v", start)
		}
		e.do("POST", p+"/trust/confirm", map[string]string{"code": "000000"}).fails(t, 400, apierror.InvalidInput)
		e.do("POST", p+"/trust/confirm", map[string]string{"code": sandbox.SandboxSCACode, "challengeId": "ScaChallenge:other"}).fails(t, 400, apierror.InvalidInput)
		var conf sandbox.TrustConfirm
		e.do("POST", p+"/trust/confirm", map[string]string{"code": sandbox.SandboxSCACode, "challengeId": start.SCAChallenge.ID}).ok(t, 200, &conf)
		if !conf.Trusted {
			t.Fatal("not trusted")
		}
		e.do("POST", p+"/trust", nil).fails(t, 409, apierror.Conflict)

		e.do("DELETE", p, nil).fails(t, 409, apierror.BeneficiaryTrusted)
		// Starting the untrust is not enough.
		e.do("POST", p+"/untrust", nil).ok(t, 200, nil)
		e.do("DELETE", p, nil).fails(t, 409, apierror.BeneficiaryTrusted)
		// An expired untrust challenge.
		time.Sleep(6 * 60e9)
		e.do("POST", p+"/untrust/confirm", map[string]string{"code": sandbox.SandboxSCACode}).fails(t, 400, apierror.InvalidInput)
		e.do("POST", p+"/untrust/confirm", map[string]string{"code": sandbox.SandboxSCACode}).fails(t, 409, apierror.Conflict)
		e.do("POST", p+"/untrust", nil).ok(t, 200, nil)
		e.do("POST", p+"/untrust/confirm", map[string]string{"code": sandbox.SandboxSCACode}).ok(t, 200, &conf)
		if conf.Trusted {
			t.Fatal("still trusted")
		}
		e.do("DELETE", p, nil).ok(t, 204, nil)
		e.do("POST", p+"/trust", nil).fails(t, 404, apierror.ReferenceNotFound)
		e.do("POST", p+"/trust/confirm", `{"code":"123456"}`).fails(t, 404, apierror.ReferenceNotFound)
	})
}

// statusEvents returns the statuses carried by the account's
// EXTERNAL_ACCOUNT.STATUS_UPDATED events, in order.
func statusEvents(t *testing.T, e *env, id string) []string {
	t.Helper()
	var out []string
	for _, ev := range storagetest.Events(t, e.sim.Store(), id) {
		var env struct {
			Type string
			Data struct{ Status string }
		}
		if err := json.Unmarshal(ev.Payload, &env); err != nil || ev.Type != "EXTERNAL_ACCOUNT.STATUS_UPDATED" || env.Type != ev.Type {
			t.Fatalf("event %+v: %v", ev, err)
		}
		out = append(out, env.Data.Status)
	}
	return out
}

func TestExternalAccountStatusEvents(t *testing.T) {
	e := newEnv(t)
	c, _ := e.scaCustomer("Eve Ents")

	// Create writes the starting status; delete writes INACTIVE.
	w := e.external(c.ID, evmWallet("e1"))
	if w.Status != "PENDING_OWNERSHIP_VERIFICATION" {
		t.Fatalf("wallet %+v", w)
	}
	bank := e.external(c.ID, usdAccount("888000001"))
	e.do("DELETE", "/customers/external-accounts/"+w.ID, nil).ok(t, 204, nil)
	if got := statusEvents(t, e, w.ID); !slices.Equal(got, []string{"PENDING_OWNERSHIP_VERIFICATION", "INACTIVE"}) {
		t.Fatalf("wallet events %v", got)
	}
	if got := statusEvents(t, e, bank.ID); !slices.Equal(got, []string{"ACTIVE"}) {
		t.Fatalf("bank events %v", got)
	}
	// A second delete answers 404 and writes nothing.
	e.do("DELETE", "/customers/external-accounts/"+w.ID, nil).fails(t, 404, apierror.ReferenceNotFound)
	if got := statusEvents(t, e, w.ID); len(got) != 2 {
		t.Fatalf("wallet events after second delete %v", got)
	}
	// A trusted beneficiary's refused delete writes nothing either.
	var start sandbox.TrustStart
	p := "/customers/external-accounts/" + bank.ID
	e.do("POST", p+"/trust", nil).ok(t, 200, &start)
	e.do("POST", p+"/trust/confirm", map[string]string{"code": sandbox.SandboxSCACode, "challengeId": start.SCAChallenge.ID}).ok(t, 200, nil)
	e.do("DELETE", p, nil).fails(t, 409, apierror.BeneficiaryTrusted)
	if got := statusEvents(t, e, bank.ID); !slices.Equal(got, []string{"ACTIVE"}) {
		t.Fatalf("bank events after refused delete %v", got)
	}
}

func TestExternalAccountAddressesUseVerifierParsers(t *testing.T) {
	e := newEnv(t)
	c, _ := e.customer("Par Ser")
	for _, tc := range []struct {
		name string
		body map[string]any
	}{
		{"evm bad EIP-55 checksum", map[string]any{"currency": "USDC", "ownershipType": "FIRST_PARTY",
			"accountInfo": map[string]any{"accountType": "BASE_WALLET", "address": "0xAbCDEF1234567890aBCdEf1234567890ABcDef12"}}},
		{"spark not bech32m", map[string]any{"currency": "BTC", "ownershipType": "FIRST_PARTY",
			"accountInfo": map[string]any{"accountType": "SPARK_WALLET", "address": "spark1pgssyuuuhnrrdjswal5c3s3rafw9w3y5dd4cjy3duxlf7hjzkp0rqx6dj6mrhu"}}},
		{"spark custodial is still checked", map[string]any{"currency": "BTC",
			"accountInfo": map[string]any{"accountType": "SPARK_WALLET", "address": "spark1BAD", "vaspName": "Kraken"}}},
	} {
		tc.body["customerId"] = c.ID
		t.Log(tc.name)
		err := e.do("POST", "/customers/external-accounts", tc.body).fails(t, 400, apierror.InvalidInput)
		apierrortest.WantFields(t, err, apierror.InvalidInput, "accountInfo.address")
	}

	// The simulator's network decides for Spark: a mainnet address is
	// refused by a regtest simulator.
	sim, err := sandbox.New(sandbox.Config{Network: ownership.Regtest})
	if err != nil {
		t.Fatal(err)
	}
	// The body is checked before the customer is looked up.
	_, err = sim.CreateExternalAccount(t.Context(), sandbox.ExternalAccountCreate{CustomerID: c.ID, Currency: "BTC",
		OwnershipType: "FIRST_PARTY", AccountInfo: json.RawMessage(`{"accountType":"SPARK_WALLET","address":"spark1pgss938nvery5elr8epzmux0pdm3072zp5nms6zvk2j6zm7m9w9d47jv34vdjc"}`)})
	apierrortest.WantFields(t, err, apierror.InvalidInput, "accountInfo.address")
}

package sandbox

import (
	"encoding/json"
	"net/url"
	"reflect"
	"testing"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
)

var fuzzNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

var customerSeeds = []string{
	`{"customerType":"INDIVIDUAL","fullName":"Ada Lovelace","email":"ada@example.com"}`,
	`{"customerType":"INDIVIDUAL","fullName":"Rex 003","email":"a@b.co","birthDate":"1990-02-28","nationality":"GB",
	  "phoneNumber":"+447700900123","umaAddress":"$ada@example.com","platformCustomerId":"p1",
	  "address":{"line1":"1 Main","city":"London","postalCode":"N1","country":"GB"},
	  "sourceOfWealthCategories":["EMPLOYMENT"],"purposeOfAccount":"SAVINGS","annualIncomeRange":"UNDER_25K"}`,
	`{"customerType":"BUSINESS","email":"ops@acme.example","businessInfo":{"legalName":"Acme","registrationNumber":"R-002"},
	  "beneficialOwners":[{"personalInfo":{"firstName":"A","lastName":"B001"}}]}`,
	`{"customerType":"INDIVIDUAL","fullName":42,"email":"x","birthDate":"2999-01-01","address":[],"sourceOfWealthCategories":[1,"X"]}`,
	`{"customerType":"BUSINESS","beneficialOwners":["x",{},{"personalInfo":7}]}`,
	`{"fullName":"\u0000"}`, `[]`, `null`, `"s"`, `{`, ``, `{"a":1}{`, `{"customerType":"INDIVIDUAL","birthDate":"1899-12-31"}`,
}

// checkRejection asserts err is a typed 400 INVALID_INPUT whose field
// errors all name their field.
func checkRejection(t *testing.T, err error) {
	t.Helper()
	e := apierrortest.Want(t, err, apierror.InvalidInput, "")
	for _, fe := range e.FieldErrors() {
		if fe.Field == "" {
			t.Fatalf("field error without a path: %+v", e)
		}
	}
}

// FuzzParseCustomerCreate: the decoder and validator of POST /customers
// never panic, reject only with typed 400s naming their fields, and accept
// their own output again unchanged.
func FuzzParseCustomerCreate(f *testing.F) {
	for _, s := range customerSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		c, err := ParseCustomerCreate(body, fuzzNow)
		if err != nil {
			checkRejection(t, err)
			return
		}
		again, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		c2, err := ParseCustomerCreate(again, fuzzNow)
		if err != nil || !reflect.DeepEqual(c, c2) {
			t.Fatalf("accepted value does not round-trip: %v\n%+v\n%+v", err, c, c2)
		}
		if c.Email == "" || c.CustomerType == CustomerIndividual && c.FullName == "" || c.CustomerType == CustomerBusiness && c.BusinessInfo == nil {
			t.Fatalf("accepted an incomplete customer: %+v", c)
		}
	})
}

// FuzzParseCustomerUpdate: the same guarantees for PATCH /customers/{id}.
func FuzzParseCustomerUpdate(f *testing.F) {
	for _, s := range append(customerSeeds, `{"email":"n@example.com"}`, `{"email":"n@example.com","phoneNumber":"+15555550100"}`, `{}`) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		u, err := ParseCustomerUpdate(body, fuzzNow)
		if err != nil {
			checkRejection(t, err)
			return
		}
		if u.isEmpty() {
			t.Fatalf("accepted an empty update from %q", body)
		}
		again, _ := json.Marshal(u)
		if u2, err := ParseCustomerUpdate(again, fuzzNow); err != nil || !reflect.DeepEqual(u, u2) {
			t.Fatalf("accepted value does not round-trip: %v\n%+v\n%+v", err, u, u2)
		}
	})
}

// FuzzParseExternalAccount: the polymorphic accountInfo validator never
// panics and rejects only with typed 400s; an accepted account has an
// identifier, a known type and JSON-encodable info.
func FuzzParseExternalAccount(f *testing.F) {
	for _, s := range []string{
		`{"customerId":"Customer:1","currency":"USD","accountInfo":{"accountType":"USD_ACCOUNT","accountNumber":"000000102",
		  "routingNumber":"021000021","beneficiary":{"beneficiaryType":"INDIVIDUAL","fullName":"Jane Doe"}}}`,
		`{"customerId":"Customer:1","currency":"BRL","accountInfo":{"accountType":"BRL_ACCOUNT","pixKey":"t.002@pix.com.br",
		  "pixKeyType":"EMAIL","beneficiary":{"beneficiaryType":"BUSINESS","legalName":"L"}}}`,
		`{"customerId":"Customer:1","currency":"USDC","ownershipType":"FIRST_PARTY","accountInfo":{"accountType":"ETHEREUM_WALLET",
		  "address":"0xabCDEF1234567890ABcDEF1234567890aBCDeF12"}}`,
		`{"customerId":"Customer:1","currency":"USDT","ownershipType":"THIRD_PARTY","accountInfo":{"accountType":"TRON_WALLET",
		  "address":"TNPeeaaFB7K9cmo4uQpcU32zGK8G1NYqeL","beneficiary":{"beneficiaryType":"INDIVIDUAL","fullName":"A","countryOfResidence":"FR"}}}`,
		`{"customerId":"Customer:1","currency":"BTC","accountInfo":{"accountType":"LIGHTNING_ACCOUNT","lightningAddress":"a@b.co"}}`,
		`{"customerId":"Customer:1","currency":"USDC","ownershipType":"FIRST_PARTY","accountInfo":{"accountType":"SOLANA_WALLET","address":"0OIl"}}`,
		`{"accountInfo":{"accountType":"SPARK_WALLET","address":7}}`, `{"accountInfo":"x"}`, `{}`, `[]`, `nul`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := parseExternalCreate(body)
		if err != nil {
			checkRejection(t, err)
			return
		}
		if p.info.identifier == "" || !contains(accountTypes, p.info.accountType) || p.customerID == "" {
			t.Fatalf("accepted an incomplete account: %+v", p)
		}
		if _, err := json.Marshal(p.info.info); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzSuffix: Suffix never panics and returns at most three bytes.
func FuzzSuffix(f *testing.F) {
	for _, s := range []string{"testuser.002@pix.com.br", "12", "", "@", "abc@", "\xff\xfe\xfd"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got := Suffix(s); len(got) > 3 || (got != "" && len(got) != 3) {
			t.Fatalf("Suffix(%q) = %q", s, got)
		}
	})
}

// FuzzListOptions: the limit and cursor of a list query, read by
// listOptions and validated by ListOptions.page, never panic; a refusal is
// a typed 400 INVALID_INPUT naming limit or cursor, an accepted query
// gives a limit in range, and a cursor this package wrote is accepted and
// names the item it was written for.
func FuzzListOptions(f *testing.F) {
	good := encodeCursor("Customer:0e4c1a2b-3d4e-4f50-8a6b-7c8d9e0f1a2b", fuzzNow)
	for _, seed := range [][2]string{
		{"", ""}, {"20", ""}, {"1", good}, {"100", good}, {"0", ""}, {"101", ""}, {"-1", ""}, {" 5 ", ""},
		{"abc", ""}, {"", "!!"}, {"", "djF8eHxpZA"}, {"", "djJ8MXx4"}, {"9999999999999999999999", "djF8MXw"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, limit, cursor string) {
		q := url.Values{}
		if limit != "" {
			q.Set("limit", limit)
		}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		o, err := listOptions(q)
		if err == nil {
			var p page
			p, err = o.page()
			if err == nil && (p.limit < 1 || p.limit > MaxListLimit) {
				t.Fatalf("limit %q gave page size %d", limit, p.limit)
			}
		}
		if err != nil {
			e := apierrortest.Want(t, err, apierror.InvalidInput, "")
			for _, fe := range e.FieldErrors() {
				if fe.Field != "limit" && fe.Field != "cursor" {
					t.Fatalf("field error %+v", fe)
				}
			}
		}
		if id, at, ok := decodeCursor(encodeCursor(cursor, fuzzNow)); cursor != "" && (!ok || id != cursor || !at.Equal(fuzzNow)) {
			t.Fatalf("cursor of %q decodes to %q %v %v", cursor, id, at, ok)
		}
	})
}

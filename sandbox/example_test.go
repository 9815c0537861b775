package sandbox_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/walletgate/walletgate/sandbox"
)

// The simulator behind httptest.NewServer, driven over HTTP as a platform's
// backend would drive the service's sandbox; the test clock replaces
// waiting for the 30-second delayed failure.
func Example() {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	sim, _ := sandbox.New(sandbox.Config{Clock: func() time.Time { return now }})
	srv := httptest.NewServer(sim.Handler())
	defer srv.Close()

	call := func(method, path string, body any, out any) int {
		raw, _ := json.Marshal(body)
		req, _ := http.NewRequest(method, srv.URL+"/2025-10-13"+path, bytes.NewReader(raw))
		req.SetBasicAuth(sandbox.DefaultClientID, sandbox.DefaultClientSecret)
		res, err := srv.Client().Do(req)
		if err != nil {
			panic(err)
		}
		defer res.Body.Close()
		_ = json.NewDecoder(res.Body).Decode(out)
		return res.StatusCode
	}

	var customer sandbox.Customer
	fmt.Println(call("POST", "/customers", map[string]any{"customerType": "INDIVIDUAL",
		"fullName": "Ada Lovelace", "email": "ada@example.com"}, &customer))

	var verification sandbox.Verification
	call("POST", "/verifications", map[string]any{"customerId": customer.ID}, &verification)
	fmt.Println(verification.VerificationStatus, verification.KYCStatus)

	var wallets struct{ Data []sandbox.InternalAccount }
	call("GET", "/internal-accounts?customerId="+customer.ID, nil, &wallets)
	wallet := wallets.Data[0].ID

	var bank sandbox.ExternalAccount
	call("POST", "/customers/external-accounts", map[string]any{"customerId": customer.ID, "currency": "USD",
		"accountInfo": map[string]any{"accountType": "USD_ACCOUNT", "accountNumber": "123456005", "routingNumber": "021000021",
			"beneficiary": map[string]any{"beneficiaryType": "INDIVIDUAL", "fullName": "Ada Lovelace"}}}, &bank)
	fmt.Println(bank.BeneficiaryVerificationStatus)

	var tx sandbox.Transaction
	fmt.Println(call("POST", "/transfer-in", map[string]any{"source": map[string]any{"accountId": bank.ID},
		"destination": map[string]any{"accountId": wallet}, "amount": 10_000}, &tx), tx.Status)

	now = now.Add(sandbox.DelayedFailureAfter) // the account ends in 005
	call("GET", "/transactions/"+tx.ID, nil, &tx)
	fmt.Println(tx.Status, tx.FailureReason)

	var failure map[string]any
	fmt.Println(call("GET", "/customers/Customer:unknown", nil, &failure), failure["code"])
	// Output:
	// 201
	// IN_PROGRESS APPROVED
	// MATCHED
	// 201 PENDING
	// FAILED TIMEOUT
	// 404 USER_NOT_FOUND
}

// Extra routes join the same authenticated mux under the base path, for
// example the ownership challenge and verify endpoints.
func ExampleSimulator_Handle() {
	sim, _ := sandbox.New(sandbox.Config{})
	_ = sim.Handle("POST /customers/external-accounts/{id}/notes", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "notes for", r.PathValue("id"))
	}))
	srv := httptest.NewServer(sim.Handler())
	defer srv.Close()

	req, _ := http.NewRequest("POST", srv.URL+"/2025-10-13/customers/external-accounts/ExternalAccount:42/notes", nil)
	req.SetBasicAuth(sandbox.DefaultClientID, sandbox.DefaultClientSecret)
	res, _ := srv.Client().Do(req)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	fmt.Print(res.StatusCode, " ", string(body))

	req.Header.Del("Authorization")
	res, _ = srv.Client().Do(req)
	body, _ = io.ReadAll(res.Body)
	res.Body.Close()
	fmt.Print(res.StatusCode, " ", string(body))
	// Output:
	// 200 notes for ExternalAccount:42
	// 401 {"status":401,"code":"UNAUTHORIZED","message":"platform credentials are missing or wrong (HTTP Basic client id and secret)"}
}

// Reading every customer page by page in Go, with the cursor the HTTP list
// routes use (a cursor of either works in the other).
func ExampleSimulator_ListCustomers() {
	sim, _ := sandbox.New(sandbox.Config{})
	defer sim.Close()
	ctx := context.Background()
	for _, name := range []string{"Ada Lovelace", "Alan Turing", "Grace Hopper"} {
		_, _ = sim.CreateCustomer(ctx, sandbox.CustomerCreate{CustomerType: "INDIVIDUAL", FullName: name,
			Email: strings.ToLower(strings.ReplaceAll(name, " ", ".")) + "@example.com"})
	}
	opts := sandbox.ListOptions{Limit: 2}
	for {
		page, err := sim.ListCustomers(ctx, opts)
		if err != nil {
			panic(err)
		}
		for _, c := range page.Data {
			fmt.Println(c.FullName)
		}
		if !page.HasMore {
			fmt.Println("total", page.TotalCount)
			break
		}
		opts.Cursor = page.NextCursor
	}
	// Output:
	// Ada Lovelace
	// Alan Turing
	// Grace Hopper
	// total 3
}

// The sandbox's currencies: the smallest unit of each and the payout gate's
// verification threshold and single-transaction maximum, in smallest units.
func ExampleSimulator_Currencies() {
	sim, _ := sandbox.New(sandbox.Config{})
	defer sim.Close()
	for _, c := range sim.Currencies() {
		switch c.Code {
		case "BTC", "EUR", "USDB", "USDC":
			fmt.Println(c.Code, c.Decimals, c.VerificationThreshold, c.TransactionMaximum)
		}
	}
	// Output:
	// BTC 8 1000000 50000000
	// EUR 2 92000 4600000
	// USDB 6 1000000000 50000000000
	// USDC 6 1000000000 50000000000
}

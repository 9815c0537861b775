package sandbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/sandbox"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/memory"
	"github.com/walletgate/walletgate/storage/postgres"
	"github.com/walletgate/walletgate/storage/postgres/pgtest"
)

// TestQuoteRefusesAnotherCustomersAccount: a quote cannot pay an external
// account of another customer than its source, as transfer-out refuses:
// 400 INVALID_INPUT naming destination.accountId, for a wallet source and
// for a real-time funded one.
func TestQuoteRefusesAnotherCustomersAccount(t *testing.T) {
	e := newEnv(t)
	p := e.payer(10_000_000)
	other, _ := e.customer("Not The Payer")
	theirs := e.external(other.ID, usdAccount("41414101"))
	for _, src := range []map[string]any{{"accountId": p.wallet}, {"customerId": p.customer.ID, "currency": "USD"}} {
		r := e.do("POST", "/quotes", map[string]any{"source": src, "destination": map[string]any{"accountId": theirs.ID},
			"lockedCurrencySide": "SENDING", "lockedCurrencyAmount": 1_000_000})
		if f := r.fails(t, 400, apierror.InvalidInput); f.Details["field"] != "destination.accountId" ||
			!strings.Contains(f.Message, "another customer") {
			t.Fatalf("source %v: %+v", src, f)
		}
	}
	// The payer's own account is quoted.
	mine := e.external(p.customer.ID, usdAccount("41414102"))
	e.quote(p, map[string]any{"accountId": mine.ID}, 1_000_000)
}

// TestQuoteExecutionSignsEveryValue: the EXECUTE_QUOTE payload binds every
// value the execution uses, and the transaction is made of exactly those.
func TestQuoteExecutionSignsEveryValue(t *testing.T) {
	e := newEnv(t)
	p := e.payer(10_000_000)
	ext := e.external(p.customer.ID, map[string]any{"currency": "EUR", "accountInfo": map[string]any{
		"accountType": "EUR_ACCOUNT", "iban": "DE89370400440532013000",
		"beneficiary": map[string]any{"beneficiaryType": "INDIVIDUAL", "fullName": "Jane Doe"}}})
	q := e.quote(p, map[string]any{"accountId": ext.ID}, 5_000_000)
	path := "/quotes/" + q.ID + "/execute"
	ch := e.challenge("POST", path, nil)
	var payload struct {
		Type       string         `json:"type"`
		Parameters map[string]any `json:"parameters"`
	}
	if err := json.Unmarshal([]byte(ch.PayloadToSign), &payload); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"quoteId": q.ID, "sourceAccountId": p.wallet, "amount": float64(q.TotalSendingAmount), "currency": "USDB",
		"destinationAccountId": ext.ID, "receivingAmount": float64(q.TotalReceivingAmount), "receivingCurrency": "EUR",
		"exchangeRate": q.ExchangeRate, "fees": float64(q.Fees)}
	if payload.Type != sandbox.OpExecuteQuote || len(payload.Parameters) != len(want) {
		t.Fatalf("payload %s", ch.PayloadToSign)
	}
	for k, v := range want {
		if payload.Parameters[k] != v {
			t.Fatalf("parameter %s = %v, want %v (payload %s)", k, payload.Parameters[k], v, ch.PayloadToSign)
		}
	}
	var done sandbox.Quote
	e.retry(p.key, ch, "POST", path, nil).ok(t, 200, &done)
	tx := e.tx(done.TransactionID)
	if tx.Destination.AccountID != ext.ID || *tx.SentAmount != (sandbox.Money{Amount: q.TotalSendingAmount, Currency: "USDB"}) ||
		*tx.ReceivedAmount != (sandbox.Money{Amount: q.TotalReceivingAmount, Currency: "EUR"}) || tx.ExchangeRate != q.ExchangeRate {
		t.Fatalf("transaction %+v", tx)
	}
	if got := e.balance(p.wallet, "USDB"); got != 10_000_000-q.TotalSendingAmount {
		t.Fatalf("balance %d", got)
	}
}

// TestQuoteExecutionRunsTheGate: a quote made while its destination wallet
// could be paid is refused at execution when the wallet can no longer be:
// its verification failed (UNVERIFIED: 400
// EXTERNAL_ACCOUNT_VERIFICATION_REQUIRED) or it was deleted (409). The
// refusal leaves the signed request usable: once a new challenge re-opens
// small payouts, the same retry executes. The first leg is refused by the
// same rule, before a challenge is issued.
func TestQuoteExecutionRunsTheGate(t *testing.T) {
	e := newEnv(t)
	p := e.payer(10_000_000_000)
	wal := e.external(p.customer.ID, evmWallet("b01"))
	q := e.quote(p, map[string]any{"accountId": wal.ID}, 500_000_000) // 500 USDB -> 500 USDC, below the threshold
	path := "/quotes/" + q.ID + "/execute"
	ch := e.challenge("POST", path, nil)

	e.do("POST", "/customers/external-accounts/"+wal.ID+"/challenge", map[string]string{"method": "WALLET_SIGNATURE"}).ok(t, 201, nil)
	e.do("POST", "/customers/external-accounts/"+wal.ID+"/verify", map[string]string{"signature": "0x00"}).fails(t, 400, apierror.InvalidInput)
	f := e.retry(p.key, ch, "POST", path, nil).fails(t, 400, apierror.ExternalAccountVerificationRequired)
	if f.Details["field"] != "destination.accountId" || !strings.Contains(f.Reason(), "UNVERIFIED") {
		t.Fatalf("refusal %+v", f)
	}
	// The same rule decides the first leg: no challenge to sign for a
	// payout the gate refuses.
	if f := e.do("POST", path, nil).fails(t, 400, apierror.ExternalAccountVerificationRequired); f.Details["field"] != "destination.accountId" {
		t.Fatalf("first-leg refusal %+v", f)
	}
	if e.balance(p.wallet, "USDB") != 10_000_000_000 || e.getQuote(q.ID).Status != sandbox.QuotePending {
		t.Fatal("a refused execution paid")
	}
	e.do("POST", "/customers/external-accounts/"+wal.ID+"/challenge", map[string]string{"method": "WALLET_SIGNATURE"}).ok(t, 201, nil)
	e.retry(p.key, ch, "POST", path, nil).ok(t, 200, nil)
	if e.balance(p.wallet, "USDB") != 10_000_000_000-500_000_000 {
		t.Fatal("the retry did not pay")
	}

	// Deleted (INACTIVE) after the quote: 409, nothing paid.
	gone := e.external(p.customer.ID, usdAccount("41414103"))
	q = e.quote(p, map[string]any{"accountId": gone.ID}, 1_000_000)
	ch = e.challenge("POST", "/quotes/"+q.ID+"/execute", nil)
	e.do("DELETE", "/customers/external-accounts/"+gone.ID, nil).ok(t, 204, nil)
	e.retry(p.key, ch, "POST", "/quotes/"+q.ID+"/execute", nil).fails(t, 409, apierror.Conflict)
	if e.balance(p.wallet, "USDB") != 10_000_000_000-500_000_000 {
		t.Fatal("a quote to a deleted account paid")
	}

	// A real-time funded quote decides the gate when it is paid too.
	rq := sandbox.Quote{}
	pend := e.external(p.customer.ID, evmWallet("b02"))
	e.do("POST", "/quotes", map[string]any{"source": map[string]any{"customerId": p.customer.ID, "currency": "USD"},
		"destination": map[string]any{"accountId": pend.ID}, "lockedCurrencySide": "SENDING", "lockedCurrencyAmount": 100}).ok(t, 201, &rq)
	e.do("POST", "/customers/external-accounts/"+pend.ID+"/challenge", map[string]string{"method": "WALLET_SIGNATURE"}).ok(t, 201, nil)
	e.do("POST", "/customers/external-accounts/"+pend.ID+"/verify", map[string]string{"signature": "0x00"}).fails(t, 400, apierror.InvalidInput)
	e.do("POST", "/sandbox/send", map[string]any{"quoteId": rq.ID, "currencyCode": "USD"}).fails(t, 400, apierror.ExternalAccountVerificationRequired)
	if e.getQuote(rq.ID).Status != sandbox.QuotePending {
		t.Fatal("a refused send executed the quote")
	}
}

// snapshotAdversary wraps a store. Once armed with an account, it changes
// that account's status (through fire) right after the nth transaction
// that read the account without holding it (Get without Lock) commits: the
// window a decision on a snapshot leaves open. A gate that holds the
// account in the transaction that records the payout leaves none.
type snapshotAdversary struct {
	storage.Store
	mu     sync.Mutex
	target string
	fire   func()
	n      int // fire after the nth unheld read
	fired  bool
	holds  int // Lock calls on the target since armed
}

func (s *snapshotAdversary) arm(id string, n int, fire func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.target, s.n, s.fire = id, n, fire
}

func (s *snapshotAdversary) Atomic(ctx context.Context, fn func(storage.Tx) error) error {
	var read, held bool
	err := s.Store.Atomic(ctx, func(tx storage.Tx) error {
		read, held = false, false // per run: the store may rerun fn
		return fn(adversaryTx{tx, s, &read, &held})
	})
	s.mu.Lock()
	if err == nil && read && !held && s.fire != nil {
		s.n--
	}
	fire := s.n == 0 && !s.fired && s.fire != nil
	if fire {
		s.fired = true
	}
	f := s.fire
	s.mu.Unlock()
	if fire {
		f()
	}
	return err
}

type adversaryTx struct {
	storage.Tx
	s          *snapshotAdversary
	read, held *bool
}

func (t adversaryTx) ExternalAccounts() storage.ExternalAccounts {
	return adversaryAccounts{t.Tx.ExternalAccounts(), t}
}

type adversaryAccounts struct {
	storage.ExternalAccounts
	t adversaryTx
}

func (r adversaryAccounts) targeted(id string) bool {
	r.t.s.mu.Lock()
	defer r.t.s.mu.Unlock()
	return id == r.t.s.target
}

func (r adversaryAccounts) Get(ctx context.Context, id string) (storage.ExternalAccount, error) {
	if r.targeted(id) {
		*r.t.read = true
	}
	return r.ExternalAccounts.Get(ctx, id)
}

func (r adversaryAccounts) Lock(ctx context.Context, id string) (storage.ExternalAccount, error) {
	if r.targeted(id) {
		*r.t.held = true
		r.t.s.mu.Lock()
		r.t.s.holds++
		r.t.s.mu.Unlock()
	}
	return r.ExternalAccounts.Lock(ctx, id)
}

// TestTransferOutDecidesOnTheHeldAccount: the signed retry of a transfer
// out decides the payout gate on the destination as held in the
// transaction that consumes the request, never on a snapshot. The
// adversary makes the wallet UNVERIFIED right after the nth transaction
// that read it without holding it, for each n in turn; a transfer decided
// on such a read would pay a wallet that had already become UNVERIFIED.
func TestTransferOutDecidesOnTheHeldAccount(t *testing.T) {
	stores := map[string]func() storage.Store{"memory": func() storage.Store { return memory.New() }}
	if pg := payoutPostgres(t); pg != nil {
		stores["postgres"] = func() storage.Store { return pg }
	}
	for name, store := range stores {
		t.Run(name, func(t *testing.T) { transferOutDecidesOnTheHeldAccount(t, store) })
	}
}

// payoutPostgres returns a store on a fresh schema of the test database
// (one pool of at most 4 connections), or nil when none is configured.
func payoutPostgres(t *testing.T) storage.Store {
	dsn := os.Getenv(pgtest.EnvDSN)
	if dsn == "" {
		return nil
	}
	return pgtest.Store(t, pgtest.Pool(t, dsn, 4, nil), postgres.Config{})
}

func transferOutDecidesOnTheHeldAccount(t *testing.T, store func() storage.Store) {
	for n := 1; n <= 4; n++ {
		adv := &snapshotAdversary{Store: store()}
		e := newEnvWith(t, sandbox.Config{Store: adv})
		c, w := e.customer("Held Account")
		key := e.login(w)
		e.do("POST", "/sandbox/internal-accounts/"+w+"/fund", map[string]any{"amount": 5_000_000_000, "currency": "USDC"}).ok(t, 200, nil)
		ext := e.external(c.ID, evmWallet("c01"))
		body := map[string]any{"source": map[string]string{"accountId": w}, "destination": map[string]string{"accountId": ext.ID}, "amount": 500_000_000}
		ch := e.challenge("POST", "/transfer-out", body)

		changed := false
		adv.arm(ext.ID, n, func() {
			if _, err := e.sim.Ownership().SetStatus(t.Context(), ext.ID, storage.StatusUnverified); err != nil {
				t.Errorf("adversary: %v", err)
			}
			changed = true
		})
		r := e.retry(key, ch, "POST", "/transfer-out", body)
		paid := e.balance(w, "USDC") != 5_000_000_000
		switch {
		case changed && paid:
			t.Fatalf("n=%d: the transfer paid (%d) a wallet that became UNVERIFIED after an unheld read of the gate", n, r.status)
		case !changed:
			r.ok(t, 201, nil)
			if !paid {
				t.Fatalf("n=%d: a 201 transfer did not debit the wallet", n)
			}
		default:
			r.fails(t, 400, apierror.ExternalAccountVerificationRequired)
		}
		if !changed && adv.holds == 0 {
			t.Fatalf("n=%d: the retry decided without holding the destination account", n)
		}
	}
}

// TestVerificationThresholdByValue: the sandbox threshold is one value,
// 1000 US dollars, in every currency at the sandbox's rates: 0.01 BTC and
// 920 EUR, not 1000 of each.
func TestVerificationThresholdByValue(t *testing.T) {
	e := newEnv(t)
	c, w := e.customer("By Value")
	for _, tc := range []struct {
		cur, suffix string
		fund, below int64 // below: the largest amount a pending wallet receives
	}{
		{"BTC", "d01", 60_000_000_000, 999_999}, // 500 BTC funded; 0.01 BTC is the threshold
		{"EUR", "d02", 100_000_000, 91_999},     // 920.00 EUR
		{"USDC", "d03", 5_000_000_000, 999_999_999},
	} {
		e.do("POST", "/sandbox/internal-accounts/"+w+"/fund", map[string]any{"amount": tc.fund, "currency": tc.cur}).ok(t, 200, nil)
		body := evmWallet(tc.suffix)
		body["currency"] = tc.cur
		ext := e.external(c.ID, body)
		var maximum int64
		for _, c := range e.sim.Currencies() {
			if c.Code == tc.cur {
				maximum = c.TransactionMaximum
			}
		}
		for _, amount := range []int64{tc.below + 1, maximum} {
			if amount > tc.fund {
				continue
			}
			_, r := e.transfer(false, ext.ID, w, amount)
			if f := r.fails(t, 400, apierror.ExternalAccountVerificationRequired); !strings.Contains(f.Reason(), "(currency "+tc.cur+")") {
				t.Fatalf("%s %d: %s", tc.cur, amount, f.Reason())
			}
		}
		_, r := e.transfer(false, ext.ID, w, tc.below)
		r.ok(t, 201, nil)
	}
}

// TestExternalAccountVASPNameExact: a vaspName is one of the directory's
// names exactly as sent: a listed name with white space around it (spaces,
// a newline, a tab), or white space alone, is 400 INVALID_INPUT naming
// accountInfo.vaspName, and nothing is registered.
func TestExternalAccountVASPNameExact(t *testing.T) {
	e := newEnv(t)
	c, _ := e.customer("Vasp Exact")
	for i, vasp := range []string{" Coinbase", "Coinbase ", "Coinbase\n", "\tKraken", " Sandbox VASP\t", "  "} {
		f := e.do("POST", "/customers/external-accounts", map[string]any{"customerId": c.ID, "currency": "USDC",
			"ownershipType": "FIRST_PARTY", "accountInfo": map[string]any{"accountType": "ETHEREUM_WALLET",
				"address": fmt.Sprintf("0x%040x", 0xe0+i), "vaspName": vasp}}).fails(t, 400, apierror.InvalidInput)
		apierrortest.WantFields(t, f, apierror.InvalidInput, "accountInfo.vaspName")
	}
	var list struct{ Data []sandbox.ExternalAccount }
	e.do("GET", "/customers/external-accounts?customerId="+c.ID, nil).ok(t, 200, &list)
	if len(list.Data) != 0 {
		t.Fatalf("registered %d accounts with a vaspName not in the directory", len(list.Data))
	}
}

// TestExternalAccountCurrencyTable: registration takes only a currency of
// the currency table (Simulator.Currencies): a code-shaped currency the
// table does not list is 400 INVALID_INPUT naming currency, for wallets and
// SWIFT accounts alike; every listed currency registers.
func TestExternalAccountCurrencyTable(t *testing.T) {
	e := newEnv(t)
	c, _ := e.customer("Currency Table")
	wallet := func(cur, suffix string) map[string]any {
		return map[string]any{"customerId": c.ID, "currency": cur, "ownershipType": "THIRD_PARTY", "accountInfo": map[string]any{
			"accountType": "ETHEREUM_WALLET", "address": "0x" + strings.Repeat("f", 40-len(suffix)) + suffix, "vaspName": "Kraken"}}
	}
	for _, cur := range []string{"XYZ", "DOGE", "USDX", "ETH"} {
		f := e.do("POST", "/customers/external-accounts", wallet(cur, "1")).fails(t, 400, apierror.InvalidInput)
		apierrortest.WantFields(t, f, apierror.InvalidInput, "currency")
	}
	swift := map[string]any{"accountType": "SWIFT_ACCOUNT", "accountNumber": "12345678", "swiftCode": "DEUTDEFF",
		"beneficiary": map[string]any{"beneficiaryType": "INDIVIDUAL", "fullName": "Jane Doe"}}
	f := e.do("POST", "/platform/external-accounts", map[string]any{"currency": "XYZ", "accountInfo": swift}).
		fails(t, 400, apierror.InvalidInput)
	apierrortest.WantFields(t, f, apierror.InvalidInput, "currency")
	for i, cur := range e.sim.Currencies() {
		e.do("POST", "/customers/external-accounts", wallet(cur.Code, fmt.Sprint(100+i))).ok(t, 201, nil)
	}
}

// TestExternalAccountVASPDirectory: a vaspName makes a wallet custodial
// (ACTIVE, not gated) only when the sandbox's directory lists it; any other
// is 400 INVALID_INPUT naming accountInfo.vaspName.
func TestExternalAccountVASPDirectory(t *testing.T) {
	e := newEnv(t)
	c, _ := e.customer("Vasp User")
	body := func(vasp string) map[string]any {
		return map[string]any{"customerId": c.ID, "currency": "USDC", "ownershipType": "FIRST_PARTY", "accountInfo": map[string]any{
			"accountType": "ETHEREUM_WALLET", "address": "0x" + strings.Repeat("e", 40), "vaspName": vasp}}
	}
	for _, vasp := range []string{"Exchange", "coinbase", "COINBASE", "My Own Wallet"} {
		f := e.do("POST", "/customers/external-accounts", body(vasp)).fails(t, 400, apierror.InvalidInput)
		apierrortest.WantFields(t, f, apierror.InvalidInput, "accountInfo.vaspName")
	}
	for _, vasp := range sandbox.SandboxVASPs {
		var a sandbox.ExternalAccount
		e.do("POST", "/customers/external-accounts", body(vasp)).ok(t, 201, &a)
		if a.Status != "ACTIVE" {
			t.Fatalf("%s: status %s", vasp, a.Status)
		}
	}
}

// TestTransactionSizeLimitOverHTTP: each sandbox currency has a
// single-transaction maximum below the largest amount, so a payout above it
// answers 400 TRANSACTION_SIZE_LIMIT_EXCEEDED over HTTP (transfer-out on the
// first leg, quote creation), and the maximum itself passes.
func TestTransactionSizeLimitOverHTTP(t *testing.T) {
	e := newEnv(t)
	var usd sandbox.Currency
	for _, c := range e.sim.Currencies() {
		if c.TransactionMaximum <= 0 || c.TransactionMaximum >= sandbox.MaxAmount || c.VerificationThreshold <= 0 {
			t.Fatalf("%s: maximum %d, threshold %d", c.Code, c.TransactionMaximum, c.VerificationThreshold)
		}
		if c.Code == "USD" {
			usd = c
		}
	}
	if usd.Decimals != 2 || usd.TransactionMaximum != sandbox.TransactionMaximumUSD*100 {
		t.Fatalf("USD %+v", usd)
	}
	c, w := e.customer("Big Payer")
	ext := e.external(c.ID, usdAccount("41414101"))
	_, r := e.transfer(true, ext.ID, w, usd.TransactionMaximum+1) // money in is not a payout
	r.ok(t, 201, nil)
	body := map[string]any{"source": map[string]string{"accountId": w}, "destination": map[string]string{"accountId": ext.ID},
		"amount": usd.TransactionMaximum + 1}
	f := e.do("POST", "/transfer-out", body).fails(t, 400, apierror.TransactionSizeLimitExceeded)
	if f.Details["field"] != "destination.accountId" {
		t.Fatalf("details %v", f.Details)
	}
	_, r = e.transfer(false, ext.ID, w, usd.TransactionMaximum)
	r.ok(t, 201, nil)

	p := e.payer(60_000_000_000) // 60000 USDB
	pext := e.external(p.customer.ID, usdAccount("41414102"))
	e.do("POST", "/quotes", map[string]any{"source": map[string]any{"accountId": p.wallet},
		"destination": map[string]any{"accountId": pext.ID}, "lockedCurrencySide": "RECEIVING",
		"lockedCurrencyAmount": usd.TransactionMaximum + 1}).fails(t, 400, apierror.TransactionSizeLimitExceeded)
}

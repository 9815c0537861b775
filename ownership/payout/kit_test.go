package payout_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/walletgate/walletgate/ownership"
	"github.com/walletgate/walletgate/ownership/payout"
	"github.com/walletgate/walletgate/ownership/policy"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/memory"
	"github.com/walletgate/walletgate/storage/postgres"
	"github.com/walletgate/walletgate/storage/postgres/pgtest"
	"github.com/walletgate/walletgate/storage/storagetest"
	"github.com/walletgate/walletgate/walletauth"
	"github.com/walletgate/walletgate/walletauth/authclient"
)

// usd is one US dollar in cents, the minor unit of every payout here.
const usd = 100

// testRules is the payout policy of the tests, in USD: a customer makes at
// most three payouts and 10,000 USD a day, and from 1,000 USD a payout
// waits for the operator "desk" or another credential of the wallet.
const testRules = `{
	"referenceCurrency": "USD",
	"windows": [{"name": "customer-day", "scope": "CUSTOMER", "period": "24h", "maxAmount": 1000000, "maxCount": 3}],
	"rules": [
		{"name": "daily-limit", "match": {"exceedsWindows": ["customer-day"]}, "action": "BLOCK"},
		{"name": "review", "match": {"minAmount": 100000}, "action": "REQUIRE_APPROVAL",
			"approval": {"count": 1, "secondCredential": true, "operators": ["desk"], "ttl": "24h"}},
		{"name": "default", "match": {}, "action": "ALLOW"}
	]
}`

// reviewFrom is the amount from which testRules hold a payout.
const reviewFrom = 1_000 * usd

// opPay is the type of the tests' signed payout.
const opPay = "TEST_PAYOUT"

// hostPaid is the type of the event the tests' Pay records a payout with,
// in the payout's transaction, on the source wallet's outbox.
const hostPaid = "HOST.PAID"

// order is what the tests' wallets sign: every value the payout acts on.
type order struct {
	Wallet   string `json:"wallet"`
	To       string `json:"to"`
	Amount   int64  `json:"amount"`
	Currency string `json:"currency"`
	// Receives, when not zero, is what the destination receives in the
	// currency (a quote's conversion).
	Receives int64 `json:"receives,omitempty"`
	// Until, when set, is when the quote expires: the host's rule refuses
	// the order from then on.
	Until *time.Time `json:"until,omitempty"`
}

// receipt is what the tests' Pay returns: what it was handed.
type receipt struct {
	ID       string `json:"id"`
	Order    order  `json:"order"`
	Customer string `json:"customer"`
	SignedBy string `json:"signedBy"`
	Rule     string `json:"rule"`
	Approval string `json:"approval,omitempty"`
}

// codes is the tests' OTP Sender: it keeps the last code per credential.
type codes struct {
	mu   sync.Mutex
	last map[string]string
}

func (c *codes) Send(_ context.Context, m walletauth.Message) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last[m.CredentialID] = m.Code
	return nil
}

func (c *codes) of(credential string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last[credential]
}

// world is the three services and the payout service on one store, with
// the host's payout record: on PostgreSQL every payout operation runs in a
// host transaction (Store.InTx) and Pay writes the host's row through
// postgres.HostTx beside its event.
type world struct {
	tb     testing.TB
	store  storage.Store
	pg     *postgres.Store // nil on memory
	pool   *pgxpool.Pool
	ledger string // the host's payout table (PostgreSQL)
	clock  *storagetest.Clock
	guard  *storagetest.Guard // the gate's guard: it records the accounts the gate was asked about
	codes  *codes
	auth   *walletauth.Service
	gate   *ownership.Service
	policy *policy.Policy
	svc    *payout.Service
	// pays counts the calls of Pay, committed or not.
	pays atomic.Int64
}

// each runs test on the memory store and, with a database, on PostgreSQL.
func each(t *testing.T, test func(t *testing.T, w *world)) {
	t.Run("memory", func(t *testing.T) { test(t, newWorld(t, memory.New(), nil, nil, testRules)) })
	t.Run("postgres", func(t *testing.T) {
		pool := pgtest.Pool(t, pgtest.DSN(t), 16, nil)
		s := pgtest.Store(t, pool, postgres.Config{})
		test(t, newWorld(t, s, s, pool, testRules))
	})
}

func newWorld(tb testing.TB, store storage.Store, pg *postgres.Store, pool *pgxpool.Pool, rules string) *world {
	tb.Helper()
	w := &world{tb: tb, store: store, pg: pg, pool: pool, clock: storagetest.NewClock(time.Now().UTC()),
		guard: &storagetest.Guard{}, codes: &codes{last: map[string]string{}}}
	keys, err := walletauth.EphemeralKeys(nil)
	if err != nil {
		tb.Fatal(err)
	}
	if w.auth, err = walletauth.New(walletauth.Config{Store: store, Keys: keys, Sender: w.codes, Clock: w.clock.Now}); err != nil {
		tb.Fatal(err)
	}
	if w.gate, err = ownership.New(ownership.Config{Store: store, Clock: w.clock.Now, Guard: w.guard.Account,
		Payouts: ownership.PayoutPolicy{MaxAmounts: ownership.Limits{ByCurrency: map[string]int64{"USD": 1_000_000 * usd}}}}); err != nil {
		tb.Fatal(err)
	}
	parsed, err := policy.Parse([]byte(rules))
	if err != nil {
		tb.Fatal(err)
	}
	if w.policy, err = policy.New(policy.Config{Rules: parsed, Clock: w.clock.Now}); err != nil {
		tb.Fatal(err)
	}
	if w.svc, err = payout.New(payout.Config{Store: store, Gate: w.gate, Policy: w.policy, Wallets: w.auth, Clock: w.clock.Now}); err != nil {
		tb.Fatal(err)
	}
	if pg != nil {
		w.ledger = pgx.Identifier{pg.Schema(), "host_payouts"}.Sanitize()
		if _, err := pool.Exec(tb.Context(), "CREATE TABLE "+w.ledger+
			" (id text PRIMARY KEY, wallet text NOT NULL, destination text NOT NULL, amount bigint NOT NULL, signed_by text NOT NULL)"); err != nil {
			tb.Fatal(err)
		}
	}
	return w
}

// inTx runs fn as the host runs an operation: on PostgreSQL in a host
// transaction bound to the store, committed when fn returns nil.
func (w *world) inTx(fn func(ctx context.Context) error) error {
	ctx := w.tb.Context()
	if w.pg == nil {
		return fn(ctx)
	}
	return w.pg.InTx(ctx, func(hctx context.Context, _ pgx.Tx) error { return fn(hctx) })
}

// record is the host's payout record of pay, the signed order o, in tx:
// an event on the wallet's outbox and, on PostgreSQL, the host's row
// through the host transaction. It returns what it was handed.
func (w *world) record(ctx context.Context, tx storage.Tx, o order, pay *payout.Payment) (receipt, error) {
	w.pays.Add(1)
	r := receipt{ID: pay.ID, Order: o, Customer: pay.CustomerID, SignedBy: pay.SignedBy, Rule: pay.Allowed.Rule}
	if a := pay.Allowed.Approval; a != nil {
		r.Approval = a.ID
	}
	if w.pg != nil {
		pg, err := postgres.HostTx(ctx, tx)
		if err != nil {
			return receipt{}, err
		}
		if _, err := pg.Exec(ctx, "INSERT INTO "+w.ledger+" (id, wallet, destination, amount, signed_by) VALUES ($1, $2, $3, $4, $5)",
			pay.ID, pay.Transfer.SourceID, pay.Transfer.DestinationID, pay.Transfer.Amount, pay.SignedBy); err != nil {
			return receipt{}, err
		}
	}
	e, err := storage.NewEvent(nil, hostPaid, pay.Transfer.SourceID, r, pay.Now)
	if err != nil {
		return receipt{}, err
	}
	return r, tx.Outbox().Append(ctx, &e)
}

// payApproved is the host's PayFunc of an approval.
func (w *world) payApproved(ctx context.Context, tx storage.Tx, pay *payout.Payment) (receipt, error) {
	t := pay.Transfer
	return w.record(ctx, tx, order{Wallet: t.SourceID, To: t.DestinationID, Amount: t.Amount, Currency: t.Currency}, pay)
}

// approve runs the operator's approval of the held payout id as the host
// does, in its transaction on PostgreSQL.
func (w *world) approve(id, operator string) (payout.Approved[receipt], error) {
	var out payout.Approved[receipt]
	err := w.inTx(func(ctx context.Context) error {
		var err error
		out, err = payout.Approve(ctx, w.svc, id, operator, w.payApproved)
		return err
	})
	return out, err
}

// paid returns the committed payout records of the wallet, in order; on
// PostgreSQL the host's rows must be as many.
func (w *world) paid(wallet string) []receipt {
	w.tb.Helper()
	var out []receipt
	for _, e := range storagetest.Events(w.tb, w.store, wallet) {
		if e.Type != hostPaid {
			continue
		}
		var env struct{ Data receipt }
		if err := json.Unmarshal(e.Payload, &env); err != nil {
			w.tb.Fatal(err)
		}
		out = append(out, env.Data)
	}
	if w.pg != nil {
		var n int
		if err := w.pool.QueryRow(w.tb.Context(), "SELECT count(*) FROM "+w.ledger+" WHERE wallet = $1", wallet).Scan(&n); err != nil {
			w.tb.Fatal(err)
		}
		if n != len(out) {
			w.tb.Fatalf("%d host rows and %d payout events of %s", n, len(out), wallet)
		}
	}
	return out
}

// events counts the committed events of typ on the account.
func (w *world) events(account, typ string) int {
	w.tb.Helper()
	n := 0
	for _, e := range storagetest.Events(w.tb, w.store, account) {
		if e.Type == typ {
			n++
		}
	}
	return n
}

// customer is a customer of the tests: its wallet, logged in over
// EMAIL_OTP, and an external account of its own.
type customer struct {
	id, wallet, email string
	key               *authclient.ClientKey
	account           string
}

var customers atomic.Int64

// customer creates a customer with a wallet (and phone, for an SMS_OTP
// credential), logs the wallet in and registers a USD account of its
// own.
func (w *world) customer() *customer {
	w.tb.Helper()
	ctx := w.tb.Context()
	n := customers.Add(1)
	c := &customer{id: fmt.Sprintf("Customer:%d", n)}
	wallet, email, err := w.auth.CreateWallet(ctx, walletauth.NewWallet{CustomerID: c.id, Email: fmt.Sprintf("c%d@example.com", n),
		Phone: fmt.Sprintf("+1555%07d", n)})
	if err != nil {
		w.tb.Fatal(err)
	}
	c.wallet, c.email = wallet.ID, email.ID
	c.key = w.login(c.email)
	c.account = w.account(c.id)
	return c
}

// account registers a USD account of the customer, ACTIVE at once.
func (w *world) account(customer string) string {
	w.tb.Helper()
	a, err := w.gate.RegisterAccount(w.tb.Context(), ownership.NewAccount{CustomerID: customer, AccountType: "USD_ACCOUNT",
		Address: fmt.Sprintf("%012d", customers.Add(1)), Currency: "USD"})
	if err != nil {
		w.tb.Fatal(err)
	}
	return a.ID
}

// login logs the credential in with a new one-time code and returns the
// session's key.
func (w *world) login(credential string) *authclient.ClientKey {
	w.tb.Helper()
	ctx := w.tb.Context()
	m, err := w.auth.Challenge(ctx, credential, walletauth.ChallengeRequest{})
	if err != nil {
		w.tb.Fatal(err)
	}
	key, err := authclient.NewClientKey()
	if err != nil {
		w.tb.Fatal(err)
	}
	sealed, err := key.SealOTP(m.OTPEncryptionTargetBundle, w.auth.SigningPublicKey(), w.codes.of(credential), nil)
	if err != nil {
		w.tb.Fatal(err)
	}
	req := walletauth.VerifyRequest{Type: m.Type, EncryptedOTPBundle: sealed}
	call := signedretry.Request{Method: http.MethodPost, Path: "/auth/credentials/" + credential + "/verify", Body: []byte(`{}`)}
	_, ch, err := w.auth.Verify(ctx, credential, req, call)
	if err != nil {
		w.tb.Fatalf("login, leg 1: %v", err)
	}
	stamp(w.tb, &call, ch, key)
	if _, _, err := w.auth.Verify(ctx, credential, req, call); err != nil {
		w.tb.Fatalf("login, leg 2: %v", err)
	}
	return key
}

// addSMS enrolls an SMS_OTP credential of c's wallet, signed by c's
// session, and returns it.
func (w *world) addSMS(c *customer) string {
	w.tb.Helper()
	ctx := w.tb.Context()
	req := walletauth.AddCredentialRequest{Type: storage.SMSOTP, AccountID: c.wallet}
	call := signedretry.Request{Method: http.MethodPost, Path: "/auth/credentials", Body: []byte(`{"type":"SMS_OTP"}`)}
	_, ch, err := w.auth.AddCredential(ctx, req, call)
	if err != nil || ch == nil {
		w.tb.Fatalf("add SMS_OTP, leg 1: %v", err)
	}
	stamp(w.tb, &call, ch, c.key)
	m, _, err := w.auth.AddCredential(ctx, req, call)
	if err != nil {
		w.tb.Fatalf("add SMS_OTP, leg 2: %v", err)
	}
	return m.ID
}

// stamp makes call the retry of ch, stamped by key.
func stamp(tb testing.TB, call *signedretry.Request, ch *signedretry.Challenge, key *authclient.ClientKey) {
	tb.Helper()
	if ch == nil {
		tb.Fatal("no challenge to stamp")
	}
	sig, err := key.Stamp(ch.PayloadToSign)
	if err != nil {
		tb.Fatal(err)
	}
	call.Signature, call.RequestID = sig, ch.RequestID
}

// spec is the host's payout of o by c: a quote's expiry (Until) is its
// rule, and Pay records the payout.
func (w *world) spec(c *customer, o order) payout.Spec[order, receipt] {
	return payout.Spec[order, receipt]{Type: opPay, AccountID: c.wallet, Parameters: o, DestinationField: "to",
		Transfer: func(o order) payout.Transfer {
			t := payout.Transfer{SourceID: o.Wallet, DestinationID: o.To, Amount: o.Amount, Currency: o.Currency}
			if o.Receives != 0 {
				t.Received = &payout.Money{Amount: o.Receives, Currency: o.Currency}
			}
			return t
		},
		Check: func(_ context.Context, _ storage.Tx, o order, now time.Time) error {
			if o.Until != nil && !now.Before(*o.Until) {
				return quoteExpired(*o.Until)
			}
			return nil
		},
		Pay: w.record}
}

// payoutCall is the host's request of a payout of o.
func payoutCall(o order) signedretry.Request {
	body, _ := json.Marshal(o)
	return signedretry.Request{Method: http.MethodPost, Path: "/payouts", Body: body}
}

// authorize runs one leg of spec, the request call, as the host does.
func (w *world) authorize(spec payout.Spec[order, receipt], call signedretry.Request) (payout.Outcome[receipt], *signedretry.Challenge, error) {
	var (
		out payout.Outcome[receipt]
		ch  *signedretry.Challenge
	)
	err := w.inTx(func(ctx context.Context) error {
		var err error
		out, _, ch, err = walletauth.Authorize(ctx, w.auth, payout.Operation(w.svc, spec, call), call)
		return err
	})
	return out, ch, err
}

// signed runs the first leg of c's payout of o and returns its retry,
// stamped by c's session; the first leg must answer a challenge.
func (w *world) signed(c *customer, o order) signedretry.Request {
	w.tb.Helper()
	call := payoutCall(o)
	_, ch, err := w.authorize(w.spec(c, o), call)
	if err != nil || ch == nil {
		w.tb.Fatalf("first leg of %+v: challenge %v, %v", o, ch, err)
	}
	stamp(w.tb, &call, ch, c.key)
	return call
}

// retry sends the retry call of c's payout; the retry's Go values are
// nothing of what was signed.
func (w *world) retry(c *customer, call signedretry.Request) (payout.Outcome[receipt], error) {
	spec := w.spec(c, order{Wallet: c.wallet, To: "ExternalAccount:00000000-0000-4000-8000-000000000000", Amount: 1, Currency: "XXX"})
	out, _, err := w.authorize(spec, call)
	return out, err
}

// pay makes c's payout of o to its own account, which must be paid.
func (w *world) pay(c *customer, o order) receipt {
	w.tb.Helper()
	out, err := w.retry(c, w.signed(c, o))
	if err != nil || out.Paid == nil || out.Held != nil {
		w.tb.Fatalf("payout %+v: %+v, %v", o, out, err)
	}
	return *out.Paid
}

// orderOf is an order of amount from c's wallet to its own account.
func orderOf(c *customer, amount int64) order {
	return order{Wallet: c.wallet, To: c.account, Amount: amount, Currency: "USD"}
}

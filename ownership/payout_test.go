package ownership_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/ownership"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/memory"
	"github.com/walletgate/walletgate/storage/storagetest"
)

// testPolicy: USDC has 6 decimals, EUR, USD and GBP 2, BTC 8. GBP has no
// maximum, so no payout is made in it.
var testPolicy = ownership.PayoutPolicy{
	VerificationThresholds: ownership.Limits{
		ByCurrency: map[string]int64{"USDC": 1_000_000_000, "EUR": 100_000, "GBP": 100_000},
		ByCorridor: map[string]int64{"GBP:EUR": 50_000, "USD:EUR": 9_000_000_000},
	},
	MaxAmounts: ownership.Limits{
		ByCurrency: map[string]int64{"USDC": 10_000_000_000, "USD": 1_000_000, "EUR": 100_000_000, "BTC": 100_000_000},
		ByCorridor: map[string]int64{"USD:USDC": 5_000_000_000},
	},
}

func newPayoutService(t testing.TB, store storage.Store) *ownership.Service {
	t.Helper()
	svc, err := ownership.New(ownership.Config{Store: store, Payouts: testPolicy})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// putAccount stores a first-party ETHEREUM_WALLET in USDC, changed by mod.
func putAccount(t testing.TB, store storage.Store, mod func(*storage.ExternalAccount)) storage.ExternalAccount {
	ctx := t.Context()
	t.Helper()
	id, _ := storage.NewID(nil, "ExternalAccount")
	a := storage.ExternalAccount{ID: id, CustomerID: "Customer:1", Status: storage.StatusActive,
		OwnershipType: ownership.FirstParty, Currency: "USDC", AccountType: ownership.AccountEthereum,
		Address: "0x00000000000000000000000000000000000000aa", CreatedAt: time.Unix(0, 0).UTC()}
	if mod != nil {
		mod(&a)
	}
	if err := store.Atomic(ctx, func(tx storage.Tx) error { return tx.ExternalAccounts().Create(ctx, &a) }); err != nil {
		t.Fatal(err)
	}
	return a
}

func status(s storage.AccountStatus) func(*storage.ExternalAccount) {
	return func(a *storage.ExternalAccount) { a.Status = s }
}

// wantRefusal checks status, code, details.reason and details.limit.
func wantRefusal(t *testing.T, err error, code apierror.Code, reason string, limit *ownership.Limit) *apierror.Error {
	t.Helper()
	e := apierrortest.Want(t, err, code, "")
	if e.Reason() == "" || !strings.Contains(e.Reason(), reason) {
		t.Fatalf("reason %q, want it to contain %q", e.Reason(), reason)
	}
	got, has := e.Details["limit"].(ownership.Limit)
	switch {
	case limit == nil && has:
		t.Fatalf("details.limit %+v, want none", got)
	case limit != nil && (!has || got != *limit):
		t.Fatalf("details.limit %+v, want %+v", e.Details["limit"], *limit)
	}
	return e
}

// TestCheckPayoutOutcomes runs every outcome of the gate through CheckPayout
// and CheckPayoutIn: allowed (with its rule and limits), 400 INVALID_AMOUNT,
// 409 CONFLICT, 400 TRANSACTION_SIZE_LIMIT_EXCEEDED and 400
// EXTERNAL_ACCOUNT_VERIFICATION_REQUIRED, each with status, code and reason.
func TestCheckPayoutOutcomes(t *testing.T) {
	ctx := t.Context()
	usdcMax := &ownership.Limit{Scope: ownership.ScopeCurrency, Key: "USDC", Amount: 10_000_000_000}
	usdcThr := &ownership.Limit{Scope: ownership.ScopeCurrency, Key: "USDC", Amount: 1_000_000_000}
	eur := func(a *storage.ExternalAccount) {
		a.Currency = "EUR"
		a.Status = storage.StatusPendingOwnershipVerification
	}
	pov := status(storage.StatusPendingOwnershipVerification)
	cases := []struct {
		name     string
		mod      func(*storage.ExternalAccount)
		pay      ownership.Payout // AccountID is filled in
		code     apierror.Code    // zero: allowed
		reason   string
		limit    *ownership.Limit // details.limit of a refusal
		field    string           // details.field of a refusal, when set
		rule     string           // of an allowed payout
		thr, max *ownership.Limit // of an allowed payout
		gated    bool
	}{
		{name: "active wallet", pay: ownership.Payout{Amount: 9_999_000_000}, rule: ownership.RuleVerified, max: usdcMax, gated: true},
		{name: "active wallet at the maximum", pay: ownership.Payout{Amount: 10_000_000_000, Currency: "USDC"},
			rule: ownership.RuleVerified, max: usdcMax, gated: true},
		{name: "active wallet above the currency maximum", pay: ownership.Payout{Amount: 10_000_000_001},
			code: apierror.TransactionSizeLimitExceeded, reason: "amount 10000000001 USDC is above the single-transaction maximum 10000000000 (currency USDC)", limit: usdcMax},
		{name: "corridor maximum stricter", pay: ownership.Payout{Amount: 6_000_000_000, Corridor: "USD:USDC"},
			code: apierror.TransactionSizeLimitExceeded, reason: "maximum 5000000000 (corridor USD:USDC)",
			limit: &ownership.Limit{Scope: ownership.ScopeCorridor, Key: "USD:USDC", Amount: 5_000_000_000}},
		{name: "currency maximum stricter than an unknown corridor", pay: ownership.Payout{Amount: 10_000_000_001, Corridor: "MXN:USDC"},
			code: apierror.TransactionSizeLimitExceeded, reason: "(currency USDC)", limit: usdcMax},
		{name: "pending wallet below the threshold", mod: pov, pay: ownership.Payout{Amount: 999_999_999},
			rule: ownership.RuleBelowThreshold, thr: usdcThr, max: usdcMax, gated: true},
		{name: "pending wallet at the threshold", mod: pov, pay: ownership.Payout{Amount: 1_000_000_000},
			code: apierror.ExternalAccountVerificationRequired, limit: usdcThr,
			reason: "amount 1000000000 USDC reaches the verification threshold 1000000000 (currency USDC) of a wallet PENDING_OWNERSHIP_VERIFICATION"},
		{name: "pending wallet above the maximum", mod: pov, pay: ownership.Payout{Amount: 20_000_000_000},
			code: apierror.TransactionSizeLimitExceeded, reason: "above the single-transaction maximum", limit: usdcMax},
		{name: "corridor threshold stricter", mod: eur, pay: ownership.Payout{Amount: 50_000, Corridor: "GBP:EUR"},
			code: apierror.ExternalAccountVerificationRequired, reason: "threshold 50000 (corridor GBP:EUR)",
			limit: &ownership.Limit{Scope: ownership.ScopeCorridor, Key: "GBP:EUR", Amount: 50_000}},
		{name: "below the corridor threshold", mod: eur, pay: ownership.Payout{Amount: 49_999, Corridor: "GBP:EUR"},
			rule: ownership.RuleBelowThreshold, thr: &ownership.Limit{Scope: ownership.ScopeCorridor, Key: "GBP:EUR", Amount: 50_000}, gated: true,
			max: &ownership.Limit{Scope: ownership.ScopeCurrency, Key: "EUR", Amount: 100_000_000}},
		{name: "a looser corridor does not loosen the currency", mod: eur, pay: ownership.Payout{Amount: 100_000, Corridor: "USD:EUR"},
			code: apierror.ExternalAccountVerificationRequired, reason: "threshold 100000 (currency EUR)",
			limit: &ownership.Limit{Scope: ownership.ScopeCurrency, Key: "EUR", Amount: 100_000}},
		{name: "no threshold configured fails closed", mod: func(a *storage.ExternalAccount) { pov(a); a.Currency = "BTC" },
			pay: ownership.Payout{Amount: 1}, code: apierror.ExternalAccountVerificationRequired,
			reason: "amount 1 BTC reaches the verification threshold 0 (default: none is configured)", limit: &ownership.Limit{Scope: ownership.ScopeDefault}},
		{name: "payout currency other than the account's", mod: pov, pay: ownership.Payout{Amount: 100_000, Currency: "EUR"},
			code: apierror.InvalidCurrency, field: "currency", reason: "the payout is in EUR but the account receives USDC only"},
		{name: "lowercase currency", pay: ownership.Payout{Amount: 20_000_000_000, Currency: "usdc"},
			code: apierror.InvalidInput, field: "currency", reason: `currency "usdc" is not a currency code`},
		{name: "lowercase currency below every limit", mod: pov, pay: ownership.Payout{Amount: 1, Currency: "Usdc"},
			code: apierror.InvalidInput, field: "currency", reason: `currency "Usdc" is not a currency code`},
		{name: "currency without a configured maximum fails closed", mod: func(a *storage.ExternalAccount) { a.Currency = "GBP" },
			pay: ownership.Payout{Amount: 1}, code: apierror.InvalidCurrency, field: "currency",
			reason: `no single-transaction maximum is configured for "GBP"`},
		{name: "account currency that is not a code fails closed", mod: func(a *storage.ExternalAccount) { a.Currency = "usdc" },
			pay: ownership.Payout{Amount: 1}, code: apierror.InvalidCurrency, field: "currency",
			reason: `no single-transaction maximum is configured for "usdc"`},
		{name: "corridor that is not a currency pair", pay: ownership.Payout{Amount: 1, Corridor: "US-MX"},
			code: apierror.InvalidInput, field: "corridor", reason: `corridor "US-MX" is not a corridor`},
		{name: "corridor receiving another currency", pay: ownership.Payout{Amount: 1, Corridor: "USD:EUR"},
			code: apierror.InvalidInput, field: "corridor", reason: "corridor USD:EUR receives EUR, not the payout's currency USDC"},
		{name: "unknown _ACCOUNT type is gated", mod: func(a *storage.ExternalAccount) { pov(a); a.AccountType = "ETH_ACCOUNT" },
			pay: ownership.Payout{Amount: 1_000_000_000}, code: apierror.ExternalAccountVerificationRequired, reason: "reaches the verification threshold", limit: usdcThr},
		{name: "unverified wallet, any amount", mod: status(storage.StatusUnverified), pay: ownership.Payout{Amount: 1},
			code: apierror.ExternalAccountVerificationRequired, reason: "last ownership verification failed (UNVERIFIED)"},
		{name: "unverified wallet above the maximum", mod: status(storage.StatusUnverified), pay: ownership.Payout{Amount: 10_000_000_001},
			code: apierror.TransactionSizeLimitExceeded, reason: "maximum 10000000000 (currency USDC)", limit: usdcMax},
		{name: "pending account", mod: status(storage.StatusPending), pay: ownership.Payout{Amount: 1},
			code: apierror.Conflict, reason: "the account is PENDING"},
		{name: "account under review", mod: status(storage.StatusUnderReview), pay: ownership.Payout{Amount: 1},
			code: apierror.Conflict, reason: "the account is UNDER_REVIEW"},
		{name: "inactive account", mod: status(storage.StatusInactive), pay: ownership.Payout{Amount: 1},
			code: apierror.Conflict, reason: "the account is INACTIVE"},
		{name: "inactive fiat account", mod: func(a *storage.ExternalAccount) {
			a.Status, a.AccountType, a.Currency = storage.StatusInactive, "USD_ACCOUNT", "USD"
		}, pay: ownership.Payout{Amount: 1}, code: apierror.Conflict, reason: "the account is INACTIVE"},
		{name: "unknown status", mod: status("FROZEN"), pay: ownership.Payout{Amount: 1},
			code: apierror.Conflict, reason: `the account status "FROZEN" allows no payouts`},
		{name: "zero amount", pay: ownership.Payout{Amount: 0}, code: apierror.InvalidAmount, reason: "amount 0 is not a positive integer"},
		{name: "negative amount", mod: status(storage.StatusInactive), pay: ownership.Payout{Amount: -5},
			code: apierror.InvalidAmount, reason: "amount -5 is not a positive integer"},
		{name: "fiat account pending verification is not gated", mod: func(a *storage.ExternalAccount) {
			a.Status, a.AccountType, a.Currency, a.OwnershipType = storage.StatusPendingOwnershipVerification, "USD_ACCOUNT", "USD", ""
		}, pay: ownership.Payout{Amount: 1_000_000}, rule: ownership.RuleNotGated,
			max: &ownership.Limit{Scope: ownership.ScopeCurrency, Key: "USD", Amount: 1_000_000}},
		{name: "fiat account above the maximum", mod: func(a *storage.ExternalAccount) { a.AccountType, a.Currency = "SWIFT_ACCOUNT", "USD" },
			pay: ownership.Payout{Amount: 1_000_001}, code: apierror.TransactionSizeLimitExceeded, reason: "maximum 1000000 (currency USD)",
			limit: &ownership.Limit{Scope: ownership.ScopeCurrency, Key: "USD", Amount: 1_000_000}},
		{name: "third-party wallet is not gated", mod: func(a *storage.ExternalAccount) { pov(a); a.OwnershipType = ownership.ThirdParty },
			pay: ownership.Payout{Amount: 5_000_000_000}, rule: ownership.RuleNotGated, max: usdcMax},
		{name: "custodial wallet is not gated", mod: func(a *storage.ExternalAccount) { a.Status = storage.StatusUnverified; a.VaspName = "Exchange" },
			pay: ownership.Payout{Amount: 5_000_000_000}, rule: ownership.RuleNotGated, max: usdcMax},
		{name: "wallet without ownershipType is gated", mod: func(a *storage.ExternalAccount) { pov(a); a.OwnershipType = "" },
			pay: ownership.Payout{Amount: 1_000_000_000}, code: apierror.ExternalAccountVerificationRequired, reason: "reaches the verification threshold", limit: usdcThr},
		{name: "LIGHTNING_ACCOUNT is a wallet", mod: func(a *storage.ExternalAccount) { pov(a); a.AccountType = ownership.AccountLightningAlias },
			pay: ownership.Payout{Amount: 1_000_000_000}, code: apierror.ExternalAccountVerificationRequired, reason: "reaches the verification threshold", limit: usdcThr},
	}
	store := memory.New()
	svc := newPayoutService(t, store)
	for _, tc := range cases {
		a := putAccount(t, store, tc.mod)
		tc.pay.AccountID = a.ID
		for _, in := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/in=%v", tc.name, in), func(t *testing.T) {
				var d *ownership.Decision
				var err error
				if in {
					if aerr := store.Atomic(ctx, func(tx storage.Tx) error {
						d, err = svc.CheckPayoutIn(ctx, tx, tc.pay)
						return nil
					}); aerr != nil {
						t.Fatal(aerr)
					}
				} else {
					d, err = svc.CheckPayout(ctx, tc.pay)
				}
				if tc.code.IsZero() {
					if err != nil {
						t.Fatalf("refused: %v", err)
					}
					if d.Rule != tc.rule || d.Gated != tc.gated || d.Account.ID != a.ID || d.Account.Status != a.Status {
						t.Fatalf("decision %+v, want rule %s gated %v", d, tc.rule, tc.gated)
					}
					if fmt.Sprint(d.Threshold) != fmt.Sprint(tc.thr) || fmt.Sprint(d.Maximum) != fmt.Sprint(tc.max) {
						t.Fatalf("limits %v %v, want %v %v", d.Threshold, d.Maximum, tc.thr, tc.max)
					}
					return
				}
				if d != nil {
					t.Fatalf("decision %+v with error %v", d, err)
				}
				e := wantRefusal(t, err, tc.code, tc.reason, tc.limit)
				if f, _ := e.Details["field"].(string); tc.field != "" && f != tc.field {
					t.Fatalf("details.field %q, want %q", f, tc.field)
				}
				if e.Details["accountId"] != a.ID || e.Details["status"] != string(a.Status) || e.Details["amount"] != tc.pay.Amount {
					t.Fatalf("details %v", e.Details)
				}
				if !strings.Contains(e.Message, a.ID) || !strings.Contains(e.Message, e.Reason()) {
					t.Fatalf("message %q", e.Message)
				}
				if _, err := json.Marshal(e); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// TestCheckPayoutUnknownAccount: 404 REFERENCE_NOT_FOUND, also inside a
// transaction.
func TestCheckPayoutUnknownAccount(t *testing.T) {
	ctx := t.Context()
	store := memory.New()
	svc := newPayoutService(t, store)
	p := ownership.Payout{AccountID: "ExternalAccount:00000000-0000-4000-8000-000000000000", Amount: 1}
	_, err := svc.CheckPayout(ctx, p)
	wantNotFound := func(err error) {
		t.Helper()
		e := apierror.As(err)
		if e == nil || e.Code != apierror.ReferenceNotFound || e.Status() != 404 || !strings.Contains(e.Message, p.AccountID) {
			t.Fatalf("error %v, want 404 REFERENCE_NOT_FOUND naming the account", err)
		}
	}
	wantNotFound(err)
	err = store.Atomic(ctx, func(tx storage.Tx) error {
		_, err := svc.CheckPayoutIn(ctx, tx, p)
		return err
	})
	wantNotFound(err)
}

// TestPayoutPolicyConfig: New refuses negative limits and keys that are not
// currency codes or corridors, naming the map and key; it copies the maps.
func TestPayoutPolicyConfig(t *testing.T) {
	ctx := t.Context()
	for _, tc := range []struct {
		p    ownership.PayoutPolicy
		want string
	}{
		{ownership.PayoutPolicy{MaxAmounts: ownership.Limits{ByCorridor: map[string]int64{"USD:MXN": -1}}},
			`MaxAmounts.ByCorridor["USD:MXN"] is negative`},
		{ownership.PayoutPolicy{VerificationThresholds: ownership.Limits{ByCurrency: map[string]int64{"USD": -1}}},
			`VerificationThresholds.ByCurrency["USD"] is negative`},
		{ownership.PayoutPolicy{MaxAmounts: ownership.Limits{ByCurrency: map[string]int64{"usdc": 1}}},
			`MaxAmounts.ByCurrency["usdc"] is not a currency code`},
		{ownership.PayoutPolicy{VerificationThresholds: ownership.Limits{ByCurrency: map[string]int64{"US": 1}}},
			`VerificationThresholds.ByCurrency["US"] is not a currency code`},
		{ownership.PayoutPolicy{VerificationThresholds: ownership.Limits{ByCorridor: map[string]int64{"US-MX": 1}}},
			`VerificationThresholds.ByCorridor["US-MX"] is not a corridor`},
		{ownership.PayoutPolicy{MaxAmounts: ownership.Limits{ByCorridor: map[string]int64{"USD:mxn": 1}}},
			`MaxAmounts.ByCorridor["USD:mxn"] is not a corridor`},
	} {
		_, err := ownership.New(ownership.Config{Store: memory.New(), Payouts: tc.p})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New: %v, want %q", err, tc.want)
		}
		if verr := tc.p.Validate(); fmt.Sprint(verr) != fmt.Sprint(err) {
			t.Errorf("Validate: %v, New: %v", verr, err)
		}
	}
	by := map[string]int64{"USDC": 100}
	store := memory.New()
	svc, err := ownership.New(ownership.Config{Store: store, Payouts: ownership.PayoutPolicy{
		VerificationThresholds: ownership.Limits{ByCurrency: by}, MaxAmounts: ownership.Limits{ByCurrency: map[string]int64{"USDC": 1 << 40}}}})
	if err != nil {
		t.Fatal(err)
	}
	by["USDC"] = 1_000_000 // the host's later change does not reach the service
	a := putAccount(t, store, status(storage.StatusPendingOwnershipVerification))
	_, err = svc.CheckPayout(ctx, ownership.Payout{AccountID: a.ID, Amount: 100})
	wantRefusal(t, err, apierror.ExternalAccountVerificationRequired, "threshold 100 (currency USDC)",
		&ownership.Limit{Scope: ownership.ScopeCurrency, Key: "USDC", Amount: 100})
	// The zero policy configures no currency: every payout is refused.
	zero, err := ownership.New(ownership.Config{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	active := putAccount(t, store, nil)
	_, err = zero.CheckPayout(ctx, ownership.Payout{AccountID: active.ID, Amount: 1})
	wantRefusal(t, err, apierror.InvalidCurrency, `no single-transaction maximum is configured for "USDC"`, nil)
}

// TestGated: which accounts the ownership rule applies to.
func TestGated(t *testing.T) {
	for _, tc := range []struct {
		typ, owner, vasp string
		want             bool
	}{
		{ownership.AccountEthereum, ownership.FirstParty, "", true},
		{ownership.AccountBitcoin, "", "", true},
		{ownership.AccountLightning, ownership.FirstParty, "", true},
		{ownership.AccountLightningAlias, ownership.FirstParty, "", true},
		{"CUSTOM_CHAIN", ownership.FirstParty, "", true},
		{"ETH_ACCOUNT", ownership.FirstParty, "", true},
		{"usd_account", ownership.FirstParty, "", true},
		{ownership.AccountSolana, ownership.ThirdParty, "", false},
		{ownership.AccountSolana, ownership.FirstParty, "Exchange", false},
		{"EUR_ACCOUNT", ownership.FirstParty, "", false},
		{"SWIFT_ACCOUNT", "", "", false},
	} {
		if got := ownership.Gated(&storage.ExternalAccount{AccountType: tc.typ, OwnershipType: tc.owner, VaspName: tc.vasp}); got != tc.want {
			t.Errorf("Gated(%s, %q, %q) = %v", tc.typ, tc.owner, tc.vasp, got)
		}
	}
}

// lockingStore wraps a memory store whose ExternalAccounts offer Lock, and
// counts the calls.
type lockingStore struct {
	storage.Store
	locks, updates atomic.Int64
}

type lockingTx struct {
	storage.Tx
	s *lockingStore
}

type lockingRepo struct {
	storage.ExternalAccounts
	s *lockingStore
}

func (s *lockingStore) Atomic(c context.Context, fn func(storage.Tx) error) error {
	return s.Store.Atomic(c, func(tx storage.Tx) error { return fn(lockingTx{tx, s}) })
}
func (t lockingTx) ExternalAccounts() storage.ExternalAccounts {
	return lockingRepo{t.Tx.ExternalAccounts(), t.s}
}
func (r lockingRepo) Lock(c context.Context, id string) (storage.ExternalAccount, error) {
	r.s.locks.Add(1)
	return r.Get(c, id)
}
func (r lockingRepo) Update(c context.Context, a *storage.ExternalAccount) error {
	r.s.updates.Add(1)
	return r.ExternalAccounts.Update(c, a)
}

// TestCheckPayoutInHold: the gate holds the account with Lock and writes
// nothing; an unknown account is 404.
func TestCheckPayoutInHold(t *testing.T) {
	ctx := t.Context()
	var d *ownership.Decision
	ls := &lockingStore{Store: memory.New()}
	svc := newPayoutService(t, ls)
	a := putAccount(t, ls, nil)
	err := ls.Atomic(ctx, func(tx storage.Tx) error {
		var err error
		d, err = svc.CheckPayoutIn(ctx, tx, ownership.Payout{AccountID: a.ID, Amount: 1})
		return err
	})
	if err != nil || d.Account.Version != a.Version || ls.locks.Load() != 1 || ls.updates.Load() != 0 {
		t.Fatalf("decision %+v, %v; %d locks, %d updates", d, err, ls.locks.Load(), ls.updates.Load())
	}
	err = ls.Atomic(ctx, func(tx storage.Tx) error {
		_, err := svc.CheckPayoutIn(ctx, tx, ownership.Payout{AccountID: "ExternalAccount:nope", Amount: 1})
		return err
	})
	if apierror.CodeOf(err) != apierror.ReferenceNotFound {
		t.Fatalf("error %v", err)
	}
}

// TestCheckPayoutInRaceWithFlip: payouts below the threshold race the
// account's flip from PENDING_OWNERSHIP_VERIFICATION to UNVERIFIED (a
// verify with an invalid signature). Every payout that passes the gate
// writes a PAYOUT event in its transaction; the outbox's order is commit
// order, so no PAYOUT event may follow the status event of the flip.
func TestCheckPayoutInRaceWithFlip(t *testing.T) {
	ctx := t.Context()
	store := memory.New()
	svc := newPayoutService(t, store)
	a := putAccount(t, store, status(storage.StatusPendingOwnershipVerification))
	if _, err := svc.StartChallenge(ctx, a.ID, ownership.MethodWalletSignature, ownership.AnyTree); err != nil {
		t.Fatal(err)
	}
	res := racePayouts(t, []storage.Store{store}, []*ownership.Service{svc}, a.ID, 8, 40)
	checkRace(t, store, a.ID, res)
}

// raceResult counts the payouts of a race.
type raceResult struct{ passed, refused int64 }

// racePayouts runs workers goroutines per service, each making n payouts of
// 1 USDC to account id through CheckPayoutIn, while the account is flipped
// to UNVERIFIED by a verify with an invalid signature once a few passed.
func racePayouts(t *testing.T, stores []storage.Store, svcs []*ownership.Service, id string, workers, n int) raceResult {
	ctx := t.Context()
	t.Helper()
	var (
		wg      sync.WaitGroup
		passed  atomic.Int64
		refused atomic.Int64
		start   = make(chan struct{})
	)
	for i, svc := range svcs {
		store := stores[i]
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for range n {
					err := store.Atomic(ctx, func(tx storage.Tx) error {
						if _, err := svc.CheckPayoutIn(ctx, tx, ownership.Payout{AccountID: id, Amount: 1_000_000}); err != nil {
							return err
						}
						time.Sleep(50 * time.Microsecond) // the host's debit
						eid, _ := storage.NewID(nil, "Webhook")
						return tx.Outbox().Append(ctx, &storage.Event{ID: eid, Type: "PAYOUT", AccountID: id, Payload: []byte(`{}`), CreatedAt: time.Now()})
					})
					switch apierror.CodeOf(err) {
					case apierror.Code{}:
						passed.Add(1)
					case apierror.ExternalAccountVerificationRequired:
						refused.Add(1)
					case apierror.Conflict: // the account kept changing: a retry would decide
					default:
						t.Errorf("payout: %v", err)
						return
					}
				}
			}()
		}
	}
	close(start)
	for passed.Load() < 3 {
		time.Sleep(100 * time.Microsecond)
	}
	for i := 0; ; i++ {
		_, err := svcs[i%len(svcs)].Verify(ctx, id, ownership.VerifyRequest{Signature: "0x00"}, ownership.AnyTree)
		if apierror.CodeOf(err) == apierror.InvalidInput {
			break // flipped to UNVERIFIED
		}
		if apierror.CodeOf(err) != apierror.Conflict || i > 10_000 {
			t.Fatalf("flip: %v", err)
		}
	}
	wg.Wait()
	return raceResult{passed.Load(), refused.Load()}
}

// checkRace checks the outbox of the race: every PAYOUT event precedes the
// UNVERIFIED status event, and some payouts passed and some were refused.
func checkRace(t *testing.T, store storage.Store, id string, res raceResult) {
	t.Helper()
	evs := storagetest.Events(t, store, id)
	flipSeq, payouts := int64(-1), int64(0)
	for _, e := range evs {
		switch e.Type {
		case "PAYOUT":
			payouts++
			if flipSeq >= 0 {
				t.Fatalf("a payout (event seq %d) committed after the flip to UNVERIFIED (seq %d)", e.Seq, flipSeq)
			}
		case ownership.EventStatusUpdated:
			if !strings.Contains(string(e.Payload), `"status":"UNVERIFIED"`) {
				t.Fatalf("status event %s", e.Payload)
			}
			flipSeq = e.Seq
		}
	}
	if flipSeq < 0 || payouts != res.passed || res.passed == 0 || res.refused == 0 {
		t.Fatalf("flip seq %d, %d payout events, %+v", flipSeq, payouts, res)
	}
	t.Logf("%d payouts passed before the flip, %d refused after it", res.passed, res.refused)
}

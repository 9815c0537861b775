package policy_test

import (
	"context"
	"testing"
	"time"

	"github.com/walletgate/walletgate/ownership"
	"github.com/walletgate/walletgate/ownership/policy"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/memory"
	"github.com/walletgate/walletgate/storage/postgres"
	"github.com/walletgate/walletgate/storage/postgres/pgtest"
)

// payoutBench is one payout transaction of a host: the gate alone, or the
// gate then the policy (testRules: two windows, a cool-off, a step-up).
type payoutBench struct {
	store storage.Store
	gate  *ownership.Service
	p     *policy.Policy
	w     *world
	dest  string
}

func newPayoutBench(tb testing.TB, store storage.Store) *payoutBench {
	gate, err := ownership.New(ownership.Config{Store: store, Payouts: ownership.PayoutPolicy{
		MaxAmounts: ownership.Limits{ByCurrency: map[string]int64{"USD": 1 << 40}}}})
	if err != nil {
		tb.Fatal(err)
	}
	w := newWorld(tb, store)
	return &payoutBench{store: store, gate: gate, p: newPolicy(tb, testRules), w: w,
		dest: w.destination(tb, "USD_ACCOUNT", t0.Add(-48*time.Hour))}
}

// pay runs payout i: each payout is of another customer's window (the
// customer id changes), so the windows stay as full as a busy day's.
func (b *payoutBench) pay(tb testing.TB, i int, withPolicy bool) {
	ctx := context.Background()
	err := b.store.Atomic(ctx, func(tx storage.Tx) error {
		if _, err := b.gate.CheckPayoutIn(ctx, tx, ownership.Payout{AccountID: b.dest, Amount: 100, Currency: "USD"}); err != nil {
			return err
		}
		if !withPolicy {
			return nil
		}
		a := &signedretry.Authorization{RequestID: newID(tb, "Request"), SessionID: b.w.email.session, CredentialID: b.w.email.cred,
			Now: t0.Add(time.Duration(i) * time.Second)}
		c := customers[i%len(customers)]
		_, err := b.p.Decide(ctx, tx, policy.Payout{CustomerID: c[0], SourceID: c[1],
			DestinationID: b.dest, Amount: 100, Currency: "USD", Authorization: a}, b.w.execute)
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
}

// customers share the payouts of a benchmark, each from a wallet of its
// own: each has at most a few payouts in its windows and events in its
// wallet's outbox, as on a busy day.
var customers = func() [][2]string {
	out := make([][2]string, 4096)
	for i := range out {
		out[i][0], _ = storage.NewID(nil, "Customer")
		out[i][1], _ = storage.NewID(nil, "InternalAccount")
	}
	return out
}()

// BenchmarkPayoutDecision: a payout's transaction with the gate alone and
// with the gate and the policy, on memory and PostgreSQL, alternated in
// one run.
func BenchmarkPayoutDecision(b *testing.B) {
	stores := map[string]func(testing.TB) storage.Store{
		"memory": func(testing.TB) storage.Store { return memory.New() },
		"postgres": func(tb testing.TB) storage.Store {
			return pgtest.Store(tb, pgtest.Pool(tb, pgtest.DSN(tb), 4, nil), postgres.Config{})
		},
	}
	for _, name := range []string{"memory", "postgres"} {
		pb := newPayoutBench(b, stores[name](b))
		for _, withPolicy := range []bool{false, true} {
			label := name + "/gate"
			if withPolicy {
				label += "+policy"
			}
			b.Run(label, func(b *testing.B) {
				for i := 0; b.Loop(); i++ {
					pb.pay(b, i, withPolicy)
				}
			})
		}
	}
}

// TestRoundTripsPostgres pins what the policy adds to a payout's
// transaction on PostgreSQL: the hold with the window's read (one round
// trip), the destination's read (one), and the usage and event, which
// travel with the COMMIT.
func TestRoundTripsPostgres(t *testing.T) {
	pool, f := pgtest.FlightPool(t, pgtest.DSN(t), 1)
	pb := newPayoutBench(t, pgtest.Store(t, pool, postgres.Config{}))
	measure := func(withPolicy bool) (int, int) {
		pb.pay(t, 0, withPolicy) // prepares the statements
		pb.pay(t, 1, withPolicy)
		f.Take()
		pb.pay(t, 2, withPolicy)
		n, stmts, _ := f.Take()
		return n, stmts
	}
	gateFlights, gateStmts := measure(false)
	flights, stmts := measure(true)
	t.Logf("gate: %d round trips, %d statements; gate and policy: %d round trips, %d statements", gateFlights, gateStmts, flights, stmts)
	if added := flights - gateFlights; added > 2 {
		t.Errorf("the policy adds %d round trips, want at most 2", added)
	}
	if added := stmts - gateStmts; added > 6 {
		t.Errorf("the policy adds %d statements, want at most 6", added)
	}
}

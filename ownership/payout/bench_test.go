package payout_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/walletgate/walletgate/ownership"
	"github.com/walletgate/walletgate/ownership/payout"
	"github.com/walletgate/walletgate/ownership/policy"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/memory"
	"github.com/walletgate/walletgate/storage/postgres"
	"github.com/walletgate/walletgate/storage/postgres/pgtest"
)

// benchRules is the policy of the benchmarks: a customer's minute window,
// which every payout is counted in and no payout fills, then ALLOW. The
// clock moves a second per payout, so a decision reads a minute's
// payouts, as on a busy wallet.
const benchRules = `{
	"referenceCurrency": "USD",
	"windows": [{"name": "customer-minute", "scope": "CUSTOMER", "period": "1m", "maxAmount": 1000000000000}],
	"rules": [
		{"name": "window", "match": {"exceedsWindows": ["customer-minute"]}, "action": "BLOCK"},
		{"name": "default", "match": {}, "action": "ALLOW"}
	]
}`

// benchStores runs bench on the memory store and, with a database, on
// PostgreSQL, where every payout runs in a host transaction.
func benchStores(b *testing.B, bench func(b *testing.B, w *world)) {
	b.Run("memory", func(b *testing.B) { bench(b, newWorld(b, memory.New(), nil, nil, benchRules)) })
	b.Run("postgres", func(b *testing.B) {
		pool := pgtest.Pool(b, pgtest.DSN(b), 4, nil)
		s := pgtest.Store(b, pool, postgres.Config{})
		bench(b, newWorld(b, s, s, pool, benchRules))
	})
}

// BenchmarkPayout is the signed retry of an allowed payout through
// Operation: the stamp's check and the request's consumption, the signer's
// locks, the chain (the destination's customer, the gate), the policy's
// decision, the host's record, the host-operation event. The first leg
// and the stamp are made outside the timer.
func BenchmarkPayout(b *testing.B) {
	benchStores(b, func(b *testing.B, w *world) {
		cs := w.benchCustomers()
		loggedIn := make([]time.Time, len(cs))
		for i := range loggedIn {
			loggedIn[i] = w.clock.Now()
		}
		b.ResetTimer()
		for i := range b.N {
			b.StopTimer()
			w.clock.Add(time.Second)
			k := i % len(cs)
			c := cs[k]
			if w.clock.Now().Sub(loggedIn[k]) > 10*time.Minute { // a session lives 15 minutes
				c.key, loggedIn[k] = w.login(c.email), w.clock.Now()
			}
			call := w.signed(c, orderOf(c, 10*usd))
			b.StartTimer()
			if out, err := w.retry(c, call); err != nil || out.Paid == nil {
				b.Fatalf("payout: %+v, %v", out, err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "payouts/s")
	})
}

// BenchmarkPayoutByHand is the same payout written by hand in one
// transaction of the same store, with no signature: the destination's
// and the wallet's reads for the customer check, the gate
// (CheckPayoutIn), the policy's decision with an authorization made up by
// the host, and the same record. What BenchmarkPayout adds to it is the
// signed retry.
func BenchmarkPayoutByHand(b *testing.B) {
	benchStores(b, func(b *testing.B, w *world) {
		cs := w.benchCustomers()
		b.ResetTimer()
		for i := range b.N {
			b.StopTimer()
			w.clock.Add(time.Second)
			c := cs[i%len(cs)]
			id, err := storage.NewID(nil, "Request")
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if err := w.inTx(func(ctx context.Context) error { return w.payByHand(ctx, c, orderOf(c, 10*usd), id) }); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "payouts/s")
	})
}

// benchCustomers are the customers a benchmark's payouts take turns
// among, so that each wallet's windows and outbox hold what a busy day's
// do, not every payout of the run.
func (w *world) benchCustomers() []*customer {
	cs := make([]*customer, 16)
	for i := range cs {
		cs[i] = w.customer()
	}
	return cs
}

// payByHand is the payout of o by c, request id, as a host composes it
// without Operation.
func (w *world) payByHand(ctx context.Context, c *customer, o order, id string) error {
	return w.store.Atomic(ctx, func(tx storage.Tx) error {
		dest, err := tx.ExternalAccounts().Get(ctx, o.To)
		if err != nil {
			return err
		}
		wallet, err := tx.InternalAccounts().Get(ctx, o.Wallet)
		if err != nil {
			return err
		}
		if dest.CustomerID != wallet.CustomerID {
			return errors.New("another customer's account")
		}
		d, err := w.gate.CheckPayoutIn(ctx, tx, ownership.Payout{AccountID: o.To, Amount: o.Amount, Currency: o.Currency})
		if err != nil {
			return err
		}
		now := w.clock.Now()
		a := &signedretry.Authorization{RequestID: id, Type: opPay, AccountID: o.Wallet, SessionID: "Session:by-hand", CredentialID: c.email, Now: now}
		t := payout.Transfer{SourceID: o.Wallet, DestinationID: o.To, Amount: o.Amount, Currency: o.Currency}
		out, err := w.policy.Decide(ctx, tx, policy.Payout{ID: id, CustomerID: wallet.CustomerID, SourceID: o.Wallet, DestinationID: o.To,
			Amount: o.Amount, Currency: o.Currency, Authorization: a},
			func(ctx context.Context, tx storage.Tx, allowed *policy.Allowed) error {
				_, err := w.record(ctx, tx, o, &payout.Payment{Transfer: t, ID: id, CustomerID: wallet.CustomerID, Destination: &d.Account,
					Allowed: allowed, SignedBy: a.CredentialID, Authorization: a, Now: now})
				return err
			})
		if err == nil && out.Executed == nil {
			err = errors.New("the payout was not made")
		}
		return err
	})
}

package policy_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/ownership/policy"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/memory"
	"github.com/walletgate/walletgate/storage/postgres"
	"github.com/walletgate/walletgate/storage/postgres/pgtest"
)

// windowRules allow 7 payouts of 100 a day per customer.
const windowRules = `{"referenceCurrency": "USD",
	"windows": [{"name": "day", "scope": "CUSTOMER", "period": "24h", "maxAmount": 700}],
	"rules": [{"name": "daily-limit", "match": {"exceedsWindows": ["day"]}, "action": "BLOCK"},
		{"name": "default", "match": {}, "action": "ALLOW"}]}`

const windowPayouts = 7

var errHostRollback = errors.New("the host rolls back")

// raceWindow pays one customer from every worker of every store at once,
// each payout deciding in its own transaction (begun by begin, which
// returns the context to run in and how to end it), every third one rolled
// back by the host after the policy allowed it. Exactly the window's
// payouts commit, never more, and the rolled-back ones used nothing.
func raceWindow(t *testing.T, stores []storage.Store, workers int, begin func(s storage.Store) (context.Context, func(commit bool) error)) {
	p := newPolicy(t, windowRules)
	w := newWorld(t, stores[0])
	dest := w.destination(t, "USD_ACCOUNT", t0.Add(-48*time.Hour))
	var committed, rolledBack, blocked atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range len(stores) * workers {
		s := stores[i%len(stores)]
		wg.Go(func() {
			<-start
			for {
				ctx, end := begin(s)
				a := &signedretry.Authorization{RequestID: newID(t, "Request"), SessionID: w.email.session, CredentialID: w.email.cred, Now: t0}
				err := s.Atomic(ctx, func(tx storage.Tx) error {
					_, err := p.Decide(ctx, tx, policy.Payout{CustomerID: w.cust, SourceID: w.wallet, DestinationID: dest,
						Amount: 100, Currency: "USD", Authorization: a}, w.execute)
					if err == nil && i%3 == 0 {
						return errHostRollback
					}
					return err
				})
				commit := err == nil
				if endErr := end(commit); endErr != nil && commit {
					err = endErr
				}
				switch {
				case postgres.Rerunnable(err):
					continue // the host reruns its transaction
				case err == nil:
					committed.Add(1)
				case errors.Is(err, errHostRollback):
					rolledBack.Add(1)
				case apierror.CodeOf(err) == apierror.PayoutBlocked:
					blocked.Add(1)
				default:
					t.Errorf("worker %d: %v", i, err)
				}
				return
			}
		})
	}
	close(start)
	wg.Wait()
	allowedWorkers := int32(len(stores)*workers - (len(stores)*workers+2)/3)
	if want := min(windowPayouts, allowedWorkers); committed.Load() != want {
		t.Fatalf("%d payouts committed (%d rolled back, %d blocked), want %d: the window holds %d", committed.Load(),
			rolledBack.Load(), blocked.Load(), want, windowPayouts)
	}
	ctx := context.Background()
	err := stores[0].Atomic(ctx, func(tx storage.Tx) error {
		used, err := tx.PayoutUsage().Hold(ctx, w.cust, time.Time{})
		if err != nil {
			return err
		}
		if len(used) != int(committed.Load()) {
			t.Errorf("%d usages stored for %d committed payouts", len(used), committed.Load())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// plain runs each payout in a transaction of the store's own.
func plain(storage.Store) (context.Context, func(bool) error) {
	return context.Background(), func(bool) error { return nil }
}

func TestWindowRaceMemory(t *testing.T) {
	raceWindow(t, []storage.Store{memory.New()}, 48, plain)
}

// TestWindowRacePostgres: four replicas of eight connections each.
func TestWindowRacePostgres(t *testing.T) {
	replicas := pgtest.Replicas(t, 4, 8, postgres.Config{})
	stores := make([]storage.Store, len(replicas))
	for i, r := range replicas {
		stores[i] = r
	}
	raceWindow(t, stores, 8, plain)
}

// TestWindowRaceHostTransactions: every payout runs inside a host's own
// transaction bound with WithTx, which the host commits or rolls back.
func TestWindowRaceHostTransactions(t *testing.T) {
	dsn := pgtest.DSN(t)
	replicas := pgtest.Replicas(t, 2, 8, postgres.Config{})
	pools := map[*postgres.Store]*pgxpool.Pool{}
	for _, r := range replicas {
		pools[r] = pgtest.Pool(t, dsn, 8, nil)
	}
	stores := make([]storage.Store, len(replicas))
	for i, r := range replicas {
		stores[i] = r
	}
	raceWindow(t, stores, 8, func(s storage.Store) (context.Context, func(bool) error) {
		ps := s.(*postgres.Store)
		tx, err := pools[ps].BeginTx(context.Background(), pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
		if err != nil {
			t.Error(err)
			return context.Background(), func(bool) error { return nil }
		}
		return ps.WithTx(context.Background(), tx), func(commit bool) error {
			if !commit {
				return tx.Rollback(context.Background())
			}
			return tx.Commit(context.Background())
		}
	})
}

// TestDecideHoldsTheDestination: the destination a decision read (its
// status and when it changed, which a cool-off judges) stays as read until
// the payout commits: a status change waits for it.
func TestDecideHoldsTheDestination(t *testing.T) {
	pool := pgtest.Pool(t, pgtest.DSN(t), 4, nil)
	s := pgtest.Store(t, pool, postgres.Config{})
	p := newPolicy(t, testRules)
	w := newWorld(t, s)
	dest := w.destination(t, "USD_ACCOUNT", t0.Add(-48*time.Hour))
	ctx := context.Background()
	host, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = host.Rollback(ctx) }()
	hctx := s.WithTx(ctx, host)
	err = s.Atomic(hctx, func(tx storage.Tx) error {
		_, err := p.Decide(hctx, tx, policy.Payout{CustomerID: w.cust, SourceID: w.wallet, DestinationID: dest, Amount: 1, Currency: "USD",
			Authorization: &signedretry.Authorization{RequestID: newID(t, "Request"), SessionID: w.email.session, CredentialID: w.email.cred, Now: t0}},
			w.execute)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	changed := make(chan error, 1)
	go func() {
		changed <- s.Atomic(ctx, func(tx storage.Tx) error {
			a, err := tx.ExternalAccounts().Get(ctx, dest)
			if err != nil {
				return err
			}
			a.Status, a.UpdatedAt = storage.StatusUnderReview, t0
			return tx.ExternalAccounts().Update(ctx, &a)
		})
	}()
	pgtest.AwaitLockWait(t, pool, s.Schema())
	select {
	case err := <-changed:
		t.Fatalf("the status change committed while the payout was open: %v", err)
	default:
	}
	if err := host.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-changed; err != nil {
		t.Fatal(err)
	}
}

package ownership_test

import (
	"os"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/walletgate/walletgate/ownership"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/memory"
	"github.com/walletgate/walletgate/storage/postgres"
)

// regStores returns the stores the registration tests run on: memory, and
// PostgreSQL when WALLETGATE_POSTGRES_DSN is set.
func regStores(t *testing.T) map[string]storage.Store {
	t.Helper()
	out := map[string]storage.Store{"memory": memory.New()}
	dsn := os.Getenv("WALLETGATE_POSTGRES_DSN")
	if dsn == "" {
		return out
	}
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := postgres.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	pg, err := postgres.New(pool)
	if err != nil {
		t.Fatal(err)
	}
	out["postgres"] = pg
	return out
}

// Concurrent host-driven changes queue on the held account: every change
// that happened has exactly one event, in order, and the last event carries
// the stored status.
func TestSetStatusConcurrent(t *testing.T) {
	for name, store := range regStores(t) {
		t.Run(name, func(t *testing.T) {
			svc, err := ownership.New(ownership.Config{Store: store})
			if err != nil {
				t.Fatal(err)
			}
			a, err := svc.RegisterAccount(ctx, ownership.NewAccount{CustomerID: "Customer:1", AccountType: ownership.AccountSolana,
				Address: regSolana, Currency: "USDC", OwnershipType: ownership.FirstParty})
			if err != nil {
				t.Fatal(err)
			}
			targets := []storage.AccountStatus{storage.StatusUnderReview, storage.StatusActive, storage.StatusUnverified, storage.StatusPending}
			var wg sync.WaitGroup
			for i := 0; i < 16; i++ {
				wg.Add(1)
				go func(to storage.AccountStatus) {
					defer wg.Done()
					if _, err := svc.SetStatus(ctx, a.ID, to); err != nil {
						t.Errorf("SetStatus(%s): %v", to, err)
					}
				}(targets[i%len(targets)])
			}
			wg.Wait()
			var stored storage.ExternalAccount
			_ = store.Atomic(ctx, func(tx storage.Tx) error { stored, err = tx.ExternalAccounts().Get(ctx, a.ID); return err })
			if err != nil {
				t.Fatal(err)
			}
			ev := eventsOf(t, store, a.ID)
			// One event for the registration plus one per version bump.
			if int64(len(ev)) != stored.Version {
				t.Fatalf("%d events for version %d", len(ev), stored.Version)
			}
			if got := eventStatus(t, ev[len(ev)-1]); got != string(stored.Status) {
				t.Fatalf("last event %s, stored %s", got, stored.Status)
			}
			for i := 1; i < len(ev); i++ {
				if eventStatus(t, ev[i]) == eventStatus(t, ev[i-1]) {
					t.Fatalf("event %d repeats status %s", i, eventStatus(t, ev[i]))
				}
			}
		})
	}
}

package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/postgres"
)

// Example wires the store into a service: the host opens the pool, every
// replica runs Migrate at start-up, and each operation is one Atomic call.
// It needs a database, so it has no checked output.
func Example() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("WALLETGATE_POSTGRES_DSN"))
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	if _, err := postgres.Migrate(ctx, pool, postgres.Config{}); err != nil { // idempotent; replicas may race
		log.Fatal(err)
	}
	store, err := postgres.New(pool, postgres.Config{})
	if err != nil {
		log.Fatal(err)
	}

	id, err := storage.NewID(nil, "Request")
	if err != nil {
		log.Fatal(err)
	}
	now := time.Now()
	req := storage.PendingRequest{ID: id, Kind: "REVOKE_SESSION", AccountID: "InternalAccount:1",
		Method: "DELETE", Path: "/auth/sessions/Session:1", CreatedAt: now, ExpiresAt: now.Add(5 * time.Minute)}
	if err := store.Atomic(ctx, func(tx storage.Tx) error { return tx.PendingRequests().Create(ctx, &req, storage.Quota{Limit: 1000}) }); err != nil {
		log.Fatal(err)
	}
	consume := func() error {
		return store.Atomic(ctx, func(tx storage.Tx) error { return tx.PendingRequests().Consume(ctx, id, time.Now()) })
	}
	fmt.Println(consume())                                 // <nil>
	fmt.Println(errors.Is(consume(), storage.ErrConsumed)) // true, on whichever replica it runs
}

// ExampleNew configures a store for its own schema. New does no I/O, and
// pgxpool connects lazily, so this runs without a database.
func ExampleNew() {
	pool, err := pgxpool.New(context.Background(), "postgres://app@db.internal:5432/payments")
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	store, err := postgres.New(pool, postgres.Config{Schema: "wallet_auth", MaxRetries: 3})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(store.Schema())
	// Output: wallet_auth
}

// ExampleStore_WithTx runs a walletgate write inside the host's own
// transaction: the host's row and walletgate's commit together, or neither
// does. A transaction that lost a conflict with another, in walletgate's
// statements, the host's or its COMMIT (postgres.Rerunnable), is run again
// from its BEGIN. It needs a database, so it has no checked output.
func ExampleStore_WithTx() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("WALLETGATE_POSTGRES_DSN"))
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	store, err := postgres.New(pool, postgres.Config{})
	if err != nil {
		log.Fatal(err)
	}

	payout := func(ctx context.Context) error {
		tx, err := pool.Begin(ctx) // READ COMMITTED
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback(ctx) }() // a no-op after Commit
		hctx := store.WithTx(ctx, tx)
		err = store.Atomic(hctx, func(wt storage.Tx) error {
			// A walletgate step: here an event; in a service, the payout
			// gate (ownership's CheckPayoutIn) or any other operation.
			e := storage.Event{ID: "Webhook:1", Type: "PAYOUT", AccountID: "ExternalAccount:1",
				Payload: []byte(`{}`), CreatedAt: time.Now()}
			if err := wt.Outbox().Append(ctx, &e); err != nil {
				return err
			}
			pg, err := postgres.HostTx(ctx, wt) // the host's tx, for its own rows
			if err != nil {
				return err
			}
			_, err = pg.Exec(ctx, `UPDATE ledger SET balance = balance - 5 WHERE account = 'a'`)
			return err // an error rolls back both writes; tx stays usable
		})
		if err != nil {
			return err // an ErrRerun is rolled back and run again below
		}
		return tx.Commit(ctx) // at SERIALIZABLE the COMMIT may fail with 40001
	}
	const maxReruns = 5
	for run := 0; ; run++ { // a lost run was rolled back by its deferred Rollback
		err := payout(ctx)
		if !postgres.Rerunnable(err) || run == maxReruns {
			if err != nil {
				log.Print(err)
			}
			break
		}
	}
}

package sandbox_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/walletgate/walletgate/sandbox"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/memory"
	"github.com/walletgate/walletgate/storage/sweep"
)

// TestSimulatorSweepsExpiredRecords: a simulator deletes the records of its
// store that expired more than the sweeper's margin ago, when it starts and
// then every interval, and keeps the rest; Close stops the sweeper.
func TestSimulatorSweepsExpiredRecords(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		store := memory.New()
		put := func(id string, expires time.Time) {
			err := store.Atomic(ctx, func(tx storage.Tx) error {
				return tx.PendingRequests().Create(ctx, &storage.PendingRequest{ID: id, Kind: "TEST", AccountID: "InternalAccount:1",
					Method: "POST", Path: "/x", BodyDigest: make([]byte, 32), Payload: []byte(`{}`), SignerRule: "ANY_SESSION",
					Data: []byte(`{}`), CreatedAt: expires.Add(-time.Minute), ExpiresAt: expires}, storage.Quota{Limit: 1000})
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		present := func(id string) bool {
			err := store.Atomic(ctx, func(tx storage.Tx) error {
				_, err := tx.PendingRequests().Get(ctx, id)
				return err
			})
			if err != nil && !errors.Is(err, storage.ErrNotFound) {
				t.Fatal(err)
			}
			return err == nil
		}
		const (
			old    = "Request:00000000-0000-4000-8000-000000000001"
			recent = "Request:00000000-0000-4000-8000-000000000002"
		)
		put(old, time.Now().Add(-sweep.DefaultMargin-time.Second))
		put(recent, time.Now().Add(-time.Second))
		sim, err := sandbox.New(sandbox.Config{Store: store})
		if err != nil {
			t.Fatal(err)
		}
		defer sim.Close()
		synctest.Wait()
		if present(old) || !present(recent) {
			t.Fatalf("after start: old present %v, recent present %v; want only the recent one", present(old), present(recent))
		}
		time.Sleep(sweep.DefaultMargin)
		synctest.Wait()
		if present(recent) {
			t.Fatal("a record expired for longer than the margin survived the sweeps")
		}
	})
}

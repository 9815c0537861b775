package storagetest

import (
	"context"
	"crypto/rand"
	"errors"
	"testing"
	"time"

	"github.com/walletgate/walletgate/storage"
)

// Benchmark measures the operations every request path pays for: creating and
// consuming a pending request (a signed retry) and a compare-and-set state
// transition of an account, each single-threaded and under b.RunParallel.
func Benchmark(b *testing.B, newStore Factory) {
	b.Run("PendingCreateConsume", func(b *testing.B) { benchPending(b, newStore(b), false) })
	b.Run("PendingCreateConsumeParallel", func(b *testing.B) { benchPending(b, newStore(b), true) })
	b.Run("Transition", func(b *testing.B) { benchTransition(b, newStore(b), false) })
	b.Run("TransitionParallel", func(b *testing.B) { benchTransition(b, newStore(b), true) })
}

func benchPending(b *testing.B, s storage.Store, parallel bool) {
	ctx := context.Background()
	acct, _ := storage.NewID(rand.Reader, "InternalAccount")
	payload := make([]byte, 256)
	digest := make([]byte, 32)
	one := func() error {
		rid, err := storage.NewID(rand.Reader, "Request")
		if err != nil {
			return err
		}
		p := storage.PendingRequest{ID: rid, Kind: "REVOKE_SESSION", AccountID: acct, Method: "DELETE",
			Path: "/auth/sessions/x", BodyDigest: digest, Payload: payload, CreatedAt: t0, ExpiresAt: t0.Add(5 * time.Minute)}
		if err := s.Atomic(ctx, func(tx storage.Tx) error { return tx.PendingRequests().Create(ctx, &p, roomy) }); err != nil {
			return err
		}
		return s.Atomic(ctx, func(tx storage.Tx) error { return tx.PendingRequests().Consume(ctx, rid, t0) })
	}
	b.ReportAllocs()
	b.ResetTimer()
	if !parallel {
		for b.Loop() {
			if err := one(); err != nil {
				b.Fatal(err)
			}
		}
		return
	}
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := one(); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// benchTransition flips accounts between PENDING_OWNERSHIP_VERIFICATION and
// ACTIVE with a read and a compare-and-set update in one transaction. Parallel
// workers each own an account, so the store's own contention is measured, not
// conflicts between workers.
func benchTransition(b *testing.B, s storage.Store, parallel bool) {
	ctx := context.Background()
	newAccount := func() (string, error) {
		a := storage.ExternalAccount{Status: storage.StatusPendingOwnershipVerification, CustomerID: "Customer:bench",
			AccountType: "ETHEREUM_WALLET", Address: "0x52908400098527886E0F7030069857D2E4169EE7", CreatedAt: t0, UpdatedAt: t0}
		var err error
		if a.ID, err = storage.NewID(rand.Reader, "ExternalAccount"); err != nil {
			return "", err
		}
		return a.ID, s.Atomic(ctx, func(tx storage.Tx) error { return tx.ExternalAccounts().Create(ctx, &a) })
	}
	flip := func(id string) error {
		return s.Atomic(ctx, func(tx storage.Tx) error {
			a, err := tx.ExternalAccounts().Get(ctx, id)
			if err != nil {
				return err
			}
			switch a.Status {
			case storage.StatusActive:
				a.Status = storage.StatusPendingOwnershipVerification
			case storage.StatusPendingOwnershipVerification:
				a.Status = storage.StatusActive
			default:
				return errors.New("unexpected status " + string(a.Status))
			}
			return tx.ExternalAccounts().Update(ctx, &a)
		})
	}
	b.ReportAllocs()
	if !parallel {
		id, err := newAccount()
		if err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for b.Loop() {
			if err := flip(id); err != nil {
				b.Fatal(err)
			}
		}
		return
	}
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		id, err := newAccount()
		if err != nil {
			b.Error(err)
			return
		}
		for pb.Next() {
			if err := flip(id); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

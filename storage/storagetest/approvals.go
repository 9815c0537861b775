package storagetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/walletgate/walletgate/storage"
)

func newApproval(t *testing.T, required int) storage.PayoutApproval {
	return storage.PayoutApproval{ID: id(t, "PayoutApproval"), CustomerID: id(t, "Customer"), SourceID: id(t, "InternalAccount"),
		DestinationID: id(t, "ExternalAccount"), Amount: 1_000, Currency: "USD", Rule: "approval", RequestID: id(t, "Request"),
		RequestedBy: id(t, "AuthMethod"), Required: required, State: storage.ApprovalWaiting, CreatedAt: t0, UpdatedAt: t0,
		ExpiresAt: t0.Add(time.Hour)}
}

// testPayoutApprovals: an approval is created once, read back under its
// lock as stored, updated by compare-and-set on Version, and swept after
// it expired.
func testPayoutApprovals(t *testing.T, newStore Factory) {
	ctx := t.Context()
	s := newStore(t)
	a := newApproval(t, 2)
	run(t, s, func(tx storage.Tx) error { return tx.PayoutApprovals().Create(ctx, &a) })
	if a.Version != 1 {
		t.Fatalf("created at version %d, want 1", a.Version)
	}
	dup := a
	err := s.Atomic(ctx, func(tx storage.Tx) error { return tx.PayoutApprovals().Create(ctx, &dup) })
	wantErr(t, "creating an id twice", err, storage.ErrDuplicate)

	run(t, s, func(tx storage.Tx) error {
		got, err := tx.PayoutApprovals().Lock(ctx, a.ID)
		diff(t, "locked approval", got, a)
		if err != nil {
			return err
		}
		got.Approvers = append(got.Approvers, "operator:risk")
		got.UpdatedAt = t0.Add(time.Minute)
		if err := tx.PayoutApprovals().Update(ctx, &got); err != nil {
			return err
		}
		if got.Version != 2 {
			return fmt.Errorf("updated to version %d, want 2", got.Version)
		}
		a = got
		return nil
	})
	stale := a
	stale.Version = 1
	err = s.Atomic(ctx, func(tx storage.Tx) error { return tx.PayoutApprovals().Update(ctx, &stale) })
	wantErr(t, "an update at a stale version", err, storage.ErrConflict)
	missing := newApproval(t, 1)
	err = s.Atomic(ctx, func(tx storage.Tx) error { return tx.PayoutApprovals().Update(ctx, &missing) })
	wantErr(t, "updating an unknown approval", err, storage.ErrNotFound)
	err = s.Atomic(ctx, func(tx storage.Tx) error {
		_, err := tx.PayoutApprovals().Lock(ctx, missing.ID)
		return err
	})
	wantErr(t, "locking an unknown approval", err, storage.ErrNotFound)
	run(t, s, func(tx storage.Tx) error {
		got, err := tx.PayoutApprovals().Lock(ctx, a.ID)
		diff(t, "approval after its update", got, a)
		return err
	})

	if _, err := s.Sweep(ctx, a.ExpiresAt.Add(time.Second), 1000); err != nil {
		t.Fatal(err)
	}
	err = s.Atomic(ctx, func(tx storage.Tx) error {
		_, err := tx.PayoutApprovals().Lock(ctx, a.ID)
		return err
	})
	wantErr(t, "an approval swept after its expiry", err, storage.ErrNotFound)
}

var errNotWaiting = errors.New("storagetest: the approval is no longer waiting")

// racePayoutApproval: every worker approves one payout that needs a single
// approval, each locking the approval, checking it is waiting and moving it
// to APPROVED (executing the payout) by compare-and-set; every third rolls
// back after its update. Exactly one approval commits: the payout executes
// once.
func racePayoutApproval(t *testing.T, stores []storage.Store, workers int) {
	ctx := t.Context()
	a := newApproval(t, 1)
	run(t, stores[0], func(tx storage.Tx) error { return tx.PayoutApprovals().Create(ctx, &a) })
	errs := race(t, stores, workers, func(c context.Context, i int, s storage.Store) error {
		return s.Atomic(c, func(tx storage.Tx) error {
			got, err := tx.PayoutApprovals().Lock(c, a.ID)
			if err != nil {
				return err
			}
			if got.State != storage.ApprovalWaiting {
				return errNotWaiting
			}
			pause() // executing the payout
			got.Approvers = append(got.Approvers, fmt.Sprintf("operator:%d", i))
			got.State = storage.ApprovalApproved
			if err := tx.PayoutApprovals().Update(c, &got); err != nil {
				return err
			}
			if i%3 == 0 {
				return errRolledBack
			}
			return nil
		})
	})
	if wins := tally(t, "approval", errs, errNotWaiting, errRolledBack); wins != 1 {
		t.Fatalf("%d approvals executed the payout, want 1", wins)
	}
	run(t, stores[0], func(tx storage.Tx) error {
		got, err := tx.PayoutApprovals().Lock(ctx, a.ID)
		if err == nil && (got.State != storage.ApprovalApproved || len(got.Approvers) != 1) {
			return fmt.Errorf("approval %s with %d approvers after the race, want APPROVED by one", got.State, len(got.Approvers))
		}
		return err
	})
}

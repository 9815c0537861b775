package storagetest

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/walletgate/walletgate/storage"
)

func newUsage(t *testing.T, customer string, amount int64, at time.Time) storage.PayoutUsage {
	return storage.PayoutUsage{ID: id(t, "Payout"), CustomerID: customer, SourceID: "InternalAccount:src",
		DestinationID: "ExternalAccount:dst", Amount: amount, CreatedAt: at, ExpiresAt: at.Add(7 * 24 * time.Hour)}
}

// testPayoutUsage: usages are listed per customer from a time on, oldest
// first; an id is recorded once; a rolled-back record leaves nothing; Sweep
// deletes usages past their expiry and no other.
func testPayoutUsage(t *testing.T, newStore Factory) {
	ctx := t.Context()
	s := newStore(t)
	cust, other := id(t, "Customer"), id(t, "Customer")
	a := newUsage(t, cust, 100, t0.Add(-2*time.Hour))
	b := newUsage(t, cust, 250, t0.Add(-time.Hour))
	c := newUsage(t, other, 7, t0.Add(-time.Hour))
	run(t, s, func(tx storage.Tx) error {
		for _, u := range []storage.PayoutUsage{b, a, c} { // recorded out of order
			if err := tx.PayoutUsage().Record(ctx, &u); err != nil {
				return err
			}
		}
		return nil
	})
	run(t, s, func(tx storage.Tx) error {
		got, err := tx.PayoutUsage().Hold(ctx, cust, t0.Add(-3*time.Hour))
		if err != nil {
			return err
		}
		diff(t, "usages since 3h ago", got, []storage.PayoutUsage{a, b})
		got, err = tx.PayoutUsage().Hold(ctx, cust, b.CreatedAt)
		if err != nil {
			return err
		}
		diff(t, "usages since the second (inclusive)", got, []storage.PayoutUsage{b})
		got, err = tx.PayoutUsage().Hold(ctx, id(t, "Customer"), time.Time{})
		if err != nil {
			return err
		}
		diff(t, "usages of a customer without any", got, []storage.PayoutUsage(nil))
		return nil
	})
	dup := a
	dup.Amount = 1
	err := s.Atomic(ctx, func(tx storage.Tx) error { return tx.PayoutUsage().Record(ctx, &dup) })
	wantErr(t, "recording an id twice", err, storage.ErrDuplicate)

	rolled := newUsage(t, cust, 999, t0)
	errRollback := errors.New("roll back")
	err = s.Atomic(ctx, func(tx storage.Tx) error {
		if err := tx.PayoutUsage().Record(ctx, &rolled); err != nil {
			return err
		}
		return errRollback
	})
	wantErr(t, "a rolled-back record", err, errRollback)
	run(t, s, func(tx storage.Tx) error {
		got, err := tx.PayoutUsage().Hold(ctx, cust, time.Time{})
		diff(t, "usages after a rollback", got, []storage.PayoutUsage{a, b})
		return err
	})

	// Sweep deletes a usage once it expired before the cutoff.
	if _, err := s.Sweep(ctx, a.ExpiresAt.Add(time.Second), 1000); err != nil {
		t.Fatal(err)
	}
	run(t, s, func(tx storage.Tx) error {
		got, err := tx.PayoutUsage().Hold(ctx, cust, time.Time{})
		diff(t, "usages after a sweep past the first's expiry", got, []storage.PayoutUsage{b})
		return err
	})
}

// usageWindow is the window limit of the payout-window race, in amount.
const usageWindow = 10 * usageAmount

const usageAmount = 300

var errWindowFull = errors.New("storagetest: the payout does not fit the window")

// racePayoutWindow: every worker pays one customer at once, each in a
// transaction that holds the customer and reads its window
// ([storage.PayoutUsages.Hold]), sums the window's usages, refuses when the payout does not fit, and records it
// otherwise; every third worker rolls back after recording. The window
// ends exactly full, never over: what committed is the limit (or every
// worker that did not roll back), and a rolled-back payout used nothing.
func racePayoutWindow(t *testing.T, stores []storage.Store, workers int) {
	ctx := t.Context()
	cust := id(t, "Customer")
	var committed atomic.Int32
	errs := race(t, stores, workers, func(c context.Context, i int, s storage.Store) error {
		u := newUsage(t, cust, usageAmount, t0)
		err := s.Atomic(c, func(tx storage.Tx) error {
			used, err := tx.PayoutUsage().Hold(c, cust, t0.Add(-24*time.Hour))
			if err != nil {
				return err
			}
			var sum int64
			for _, x := range used {
				sum += x.Amount
			}
			if sum+usageAmount > usageWindow {
				return errWindowFull
			}
			pause() // paying out, while others wait for the hold
			if err := tx.PayoutUsage().Record(c, &u); err != nil {
				return err
			}
			if i%3 == 0 {
				return errRolledBack
			}
			return nil
		})
		if err == nil {
			committed.Add(1)
		}
		return err
	})
	wins := tally(t, "payout", errs, errWindowFull, errRolledBack)
	want := min(usageWindow/usageAmount, len(errs)-(len(errs)+2)/3)
	if wins != want || committed.Load() != int32(want) {
		t.Fatalf("%d payouts committed, want %d (the window holds %d)", wins, want, usageWindow/usageAmount)
	}
	run(t, stores[0], func(tx storage.Tx) error {
		used, err := tx.PayoutUsage().Hold(ctx, cust, time.Time{})
		if err != nil {
			return err
		}
		if len(used) != want {
			return fmt.Errorf("%d usages stored, want %d: a rolled-back or refused payout left one", len(used), want)
		}
		return nil
	})
}

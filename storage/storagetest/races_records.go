package storagetest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/walletgate/walletgate/storage"
)

// raceRecordCreateOnce: every worker creates the record of one kind and
// key, with a value naming the worker, and holds its transaction open
// after the create; all but every fourth roll back then, so that a create
// refused for a record that did not commit leaves none. Exactly one create
// commits, every other is refused with ErrDuplicate or rolled back, and
// the record stored is the winner's, alone in its group.
func raceRecordCreateOnce(t *testing.T, stores []storage.Store, workers int) {
	ctx := t.Context()
	kind, key, group := id(t, "Kind"), id(t, "Key"), id(t, "Customer")
	var winner atomic.Int64
	winner.Store(-1)
	errs := race(t, stores, workers, func(c context.Context, i int, s storage.Store) error {
		err := s.Atomic(c, func(tx storage.Tx) error {
			r := storage.Record{Kind: kind, Key: key, Group: group, Value: []byte(strconv.Itoa(i)), CreatedAt: t0}
			if err := tx.Records().Create(c, &r); err != nil {
				return err
			}
			pause() // acting on the created record
			if i%4 != 0 {
				return errRolledBack
			}
			return nil
		})
		if err == nil {
			winner.Store(int64(i))
		}
		return err
	})
	if wins := tally(t, "create", errs, storage.ErrDuplicate, errRolledBack); wins != 1 {
		t.Fatalf("%d creates of one kind and key committed, want 1", wins)
	}
	run(t, stores[0], func(tx storage.Tx) error {
		got, err := tx.Records().Get(ctx, kind, key)
		wantErr(t, "Get of the raced record", err, nil)
		if want := strconv.FormatInt(winner.Load(), 10); string(got.Value) != want || got.Version != 1 {
			t.Fatalf("stored record %q at version %d, want the winner's %q at 1", got.Value, got.Version, want)
		}
		list, err := tx.Records().List(ctx, kind, group)
		wantErr(t, "List of the raced record's group", err, nil)
		if len(list) != 1 {
			t.Fatalf("the group holds %d records after the race, want 1", len(list))
		}
		return nil
	})
}

// raceRecordCounter: every worker increments one counter, reading it under
// [storage.Records.Lock] and writing it back with Update in one
// transaction, with a pause between; every fifth rolls back after its
// update. No increment is lost and none rolled back counts: the counter
// ends at the number of commits, every worker that did not roll back, at
// the Version one past it (Create set 1).
func raceRecordCounter(t *testing.T, stores []storage.Store, workers int) {
	ctx := t.Context()
	counter := storage.Record{Kind: id(t, "Kind"), Key: "counter", Value: []byte("0"), CreatedAt: t0}
	run(t, stores[0], func(tx storage.Tx) error { return tx.Records().Create(ctx, &counter) })
	errs := race(t, stores, workers, func(c context.Context, i int, s storage.Store) error {
		return s.Atomic(c, func(tx storage.Tx) error {
			r, err := tx.Records().Lock(c, counter.Kind, counter.Key)
			if err != nil {
				return err
			}
			n, err := strconv.ParseInt(string(r.Value), 10, 64)
			if err != nil {
				return err
			}
			pause() // deciding on the count read
			r.Value = strconv.AppendInt(nil, n+1, 10)
			if err := tx.Records().Update(c, &r); err != nil {
				return err
			}
			if i%5 == 4 {
				return errRolledBack
			}
			return nil
		})
	})
	wins := tally(t, "increment", errs, errRolledBack)
	want := 0
	for i := range errs {
		if i%5 != 4 {
			want++
		}
	}
	got, err := recordIn(ctx, stores[0], counter.Kind, counter.Key)
	wantErr(t, "Get of the counter", err, nil)
	if string(got.Value) != strconv.Itoa(wins) || wins != want || got.Version != int64(wins)+1 {
		t.Fatalf("counter %q at version %d after %d committed increments, want %d (every worker that did not roll back) at version %d",
			got.Value, got.Version, wins, want, want+1)
	}
}

// startBalance is the balance the debits of raceRecordBalance take from.
const startBalance = 1000

var errInsufficient = errors.New("storagetest: the balance is below the debit")

// raceRecordBalance: every worker debits one balance by its own amount,
// more in all than the balance holds: it locks the balance, refuses when
// the balance is below the amount, pauses, writes the balance less the
// amount and creates its debit record in the balance's group, naming the
// amount and the balance after it; every fourth rolls back after its
// writes. The balance is never read below zero, the committed debits sum
// to no more than the start and the balance ends at the start less them,
// every refused debit exceeds the final balance, and List finds exactly the
// committed debits, in the order they were made, each taken from the
// balance the one before it left.
func raceRecordBalance(t *testing.T, stores []storage.Store, workers int) {
	ctx := t.Context()
	kind := id(t, "Kind")
	balance := storage.Record{Kind: kind, Key: id(t, "Balance"), Value: []byte(strconv.Itoa(startBalance)), CreatedAt: t0}
	run(t, stores[0], func(tx storage.Tx) error { return tx.Records().Create(ctx, &balance) })
	amount := func(i int) int { return 60 + 10*(i%5) }
	debitKind := kind + "/debit"
	errs := race(t, stores, workers, func(c context.Context, i int, s storage.Store) error {
		return s.Atomic(c, func(tx storage.Tx) error {
			b, err := tx.Records().Lock(c, balance.Kind, balance.Key)
			if err != nil {
				return err
			}
			have, err := strconv.Atoi(string(b.Value))
			switch {
			case err != nil:
				return err
			case have < 0:
				return fmt.Errorf("the balance was read at %d, below zero", have)
			case have < amount(i):
				return errInsufficient
			}
			pause() // paying out the debit
			left := have - amount(i)
			b.Value = []byte(strconv.Itoa(left))
			if err := tx.Records().Update(c, &b); err != nil {
				return err
			}
			d := storage.Record{Kind: debitKind, Key: strconv.Itoa(i), Group: balance.Key,
				Value: fmt.Appendf(nil, "%d:%d", amount(i), left), CreatedAt: t0}
			if err := tx.Records().Create(c, &d); err != nil {
				return err
			}
			if i%4 == 3 {
				return errRolledBack
			}
			return nil
		})
	})
	tally(t, "debit", errs, errInsufficient, errRolledBack)
	got, err := recordIn(ctx, stores[0], balance.Kind, balance.Key)
	wantErr(t, "Get of the balance", err, nil)
	final, err := strconv.Atoi(string(got.Value))
	if err != nil {
		t.Fatal(err)
	}
	committed := map[string]bool{}
	sum := 0
	for i, err := range errs {
		switch {
		case err == nil:
			committed[strconv.Itoa(i)] = true
			sum += amount(i)
		case errors.Is(err, errInsufficient) && amount(i) <= final:
			t.Fatalf("worker %d's debit of %d was refused, but the balance ends at %d", i, amount(i), final)
		}
	}
	if sum > startBalance || final != startBalance-sum || final < 0 {
		t.Fatalf("committed debits sum to %d of a balance of %d, which ends at %d", sum, startBalance, final)
	}
	var debits []storage.Record
	run(t, stores[0], func(tx storage.Tx) error {
		var err error
		debits, err = tx.Records().List(ctx, debitKind, balance.Key)
		return err
	})
	if len(debits) != len(committed) {
		t.Fatalf("List finds %d debits, want the %d committed", len(debits), len(committed))
	}
	left := startBalance
	for _, d := range debits {
		took, after, ok := strings.Cut(string(d.Value), ":")
		n, err1 := strconv.Atoi(took)
		a, err2 := strconv.Atoi(after)
		switch {
		case !ok || err1 != nil || err2 != nil:
			t.Fatalf("debit %s holds %q", d.Key, d.Value)
		case !committed[d.Key]:
			t.Fatalf("List finds debit %s, which did not commit", d.Key)
		case a != left-n:
			t.Fatalf("debit %s took %d and left %d, after a balance of %d: List is not in creation order, or a debit read a stale balance",
				d.Key, n, a, left)
		}
		left = a
	}
	if left != final {
		t.Fatalf("the debits listed leave %d, the balance is %d", left, final)
	}
}

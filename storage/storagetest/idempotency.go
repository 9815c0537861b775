package storagetest

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/walletgate/walletgate/storage"
)

func newIdem(t *testing.T, scope, key string) storage.IdempotencyRecord {
	t.Helper()
	return storage.IdempotencyRecord{Scope: scope, Key: key, Token: id(t, "Token"), Fingerprint: []byte("fingerprint-1"),
		State: storage.IdempotencyInProgress, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
}

func testIdempotency(t *testing.T, newStore Factory) {
	ctx := t.Context()
	t.Run("Lifecycle", func(t *testing.T) {
		s := newStore(t)
		key := id(t, "Key")
		r := newIdem(t, "Platform:a", key)
		run(t, s, func(tx storage.Tx) error {
			k := tx.Idempotency()
			_, err := k.Get(ctx, r.Scope, r.Key)
			wantErr(t, "Get before Begin", err, storage.ErrNotFound)
			wantErr(t, "Begin", k.Begin(ctx, &r, t0), nil)
			again := newIdem(t, r.Scope, r.Key)
			wantErr(t, "Begin again", k.Begin(ctx, &again, t0.Add(59*time.Minute)), storage.ErrDuplicate)
			got, err := k.Get(ctx, r.Scope, r.Key)
			wantErr(t, "Get", err, nil)
			diff(t, "Get", got, r)
			// The same key in another scope is another record.
			other := newIdem(t, "Platform:b", key)
			wantErr(t, "Begin in another scope", k.Begin(ctx, &other, t0), nil)
			return nil
		})
		done := r
		done.State, done.Status, done.Body = storage.IdempotencyComplete, http.StatusOK, []byte(`{"id":"Quote:1"}`)
		done.Header = map[string][]string{"Content-Type": {"application/json"}}
		done.ExpiresAt = t0.Add(24 * time.Hour)
		run(t, s, func(tx storage.Tx) error {
			k := tx.Idempotency()
			stale := done
			stale.Token = id(t, "Token")
			wantErr(t, "Complete with another token", k.Complete(ctx, &stale), storage.ErrConflict)
			wantErr(t, "Release with another token", k.Release(ctx, r.Scope, r.Key, stale.Token), storage.ErrNotFound)
			unknown := done
			unknown.Key = id(t, "Key")
			wantErr(t, "Complete unknown", k.Complete(ctx, &unknown), storage.ErrNotFound)
			wantErr(t, "Complete", k.Complete(ctx, &done), nil)
			wantErr(t, "Complete twice", k.Complete(ctx, &done), storage.ErrConflict)
			wantErr(t, "Release a completed record", k.Release(ctx, r.Scope, r.Key, r.Token), storage.ErrNotFound)
			got, err := k.Get(ctx, r.Scope, r.Key)
			wantErr(t, "Get completed", err, nil)
			diff(t, "Get completed", got, done)
			// Completion extends the record: still live after the reservation's expiry.
			again := newIdem(t, r.Scope, r.Key)
			wantErr(t, "Begin after the reservation's expiry", k.Begin(ctx, &again, t0.Add(2*time.Hour)), storage.ErrDuplicate)
			return nil
		})
		// From its expiry on, the key is free: Begin replaces the record.
		next := newIdem(t, r.Scope, r.Key)
		next.Fingerprint = []byte("fingerprint-2")
		next.CreatedAt, next.ExpiresAt = done.ExpiresAt, done.ExpiresAt.Add(time.Hour)
		run(t, s, func(tx storage.Tx) error {
			k := tx.Idempotency()
			wantErr(t, "Begin at the expiry", k.Begin(ctx, &next, done.ExpiresAt), nil)
			got, err := k.Get(ctx, r.Scope, r.Key)
			wantErr(t, "Get replaced", err, nil)
			diff(t, "Get replaced", got, next)
			wantErr(t, "Complete the replaced reservation", k.Complete(ctx, &done), storage.ErrConflict)
			wantErr(t, "Release", k.Release(ctx, next.Scope, next.Key, next.Token), nil)
			_, err = k.Get(ctx, r.Scope, r.Key)
			wantErr(t, "Get released", err, storage.ErrNotFound)
			wantErr(t, "Release twice", k.Release(ctx, next.Scope, next.Key, next.Token), storage.ErrNotFound)
			return nil
		})
	})
	t.Run("Rollback", func(t *testing.T) {
		s := newStore(t)
		r := newIdem(t, "Platform:a", id(t, "Key"))
		err := s.Atomic(ctx, func(tx storage.Tx) error {
			wantErr(t, "Begin", tx.Idempotency().Begin(ctx, &r, t0), nil)
			return errRollback
		})
		wantErr(t, "Atomic", err, errRollback)
		run(t, s, func(tx storage.Tx) error {
			_, err := tx.Idempotency().Get(ctx, r.Scope, r.Key)
			wantErr(t, "Get rolled back", err, storage.ErrNotFound)
			return nil
		})
	})
	t.Run("Sweep", func(t *testing.T) {
		s := newStore(t)
		var recs []storage.IdempotencyRecord
		for i := range 4 {
			r := newIdem(t, "Platform:a", id(t, "Key"))
			r.ExpiresAt = t0.Add(time.Duration(i-2) * time.Minute) // 2 expired before t0, 2 not
			if i == 0 {
				r.State, r.Status = storage.IdempotencyComplete, http.StatusCreated
			}
			recs = append(recs, r)
			run(t, s, func(tx storage.Tx) error { return tx.Idempotency().Begin(ctx, &r, r.CreatedAt.Add(-time.Hour)) })
		}
		n, err := s.Sweep(ctx, t0, 100)
		wantErr(t, "Sweep", err, nil)
		if n != 2 {
			t.Fatalf("Sweep removed %d, want the 2 expired idempotency records", n)
		}
		run(t, s, func(tx storage.Tx) error {
			for i, r := range recs {
				_, err := tx.Idempotency().Get(ctx, r.Scope, r.Key)
				want := error(nil)
				if i < 2 {
					want = storage.ErrNotFound
				}
				wantErr(t, fmt.Sprintf("Get record %d after Sweep", i), err, want)
			}
			return nil
		})
	})
}

// raceIdempotencyBeginOnce: concurrent first requests with one key, each
// reserving it with its own token; exactly one Begin commits, and the stored
// reservation is the winner's.
func raceIdempotencyBeginOnce(t *testing.T, stores []storage.Store, workers int) {
	ctx := t.Context()
	key := id(t, "Key")
	recs := make([]storage.IdempotencyRecord, len(stores)*workers)
	for i := range recs {
		recs[i] = newIdem(t, "Platform:race", key)
	}
	errs := race(t, stores, workers, func(c context.Context, i int, s storage.Store) error {
		r := recs[i]
		return s.Atomic(c, func(tx storage.Tx) error {
			if err := tx.Idempotency().Begin(c, &r, t0); err != nil {
				return err
			}
			pause() // the reservation is not committed yet
			return nil
		})
	})
	if wins := tally(t, "begin", errs, storage.ErrDuplicate); wins != 1 {
		t.Fatalf("%d Begins of one key committed, want 1", wins)
	}
	winner := -1
	for i, err := range errs {
		if err == nil {
			winner = i
		}
	}
	run(t, stores[0], func(tx storage.Tx) error {
		got, err := tx.Idempotency().Get(ctx, "Platform:race", key)
		if err == nil && got.Token != recs[winner].Token {
			t.Fatalf("the stored reservation is %s, want the winner's %s", got.Token, recs[winner].Token)
		}
		return err
	})
}

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

// rateLimit is the limit of the rate-limit race: the hits one window allows.
const rateLimit = 7

var errRolledBack = errors.New("storagetest: the transaction rolls back its counted hit")

var errLimited = errors.New("storagetest: the hit was refused")

// raceRateLimit counts hits on one key from every worker at once
// ([storage.RateLimits.Hit]); every third worker rolls its transaction back
// after its hit. A refusal fails the transaction (possibly only at its
// commit). Exactly the limit of hits commit, since a hit counts only when
// its transaction commits and a refusal is decided on committed hits;
// every refusal is a *storage.RateLimitError naming the end of the window,
// and a refused transaction writes nothing; the window refuses another hit
// until it ends and allows one after.
func raceRateLimit(t *testing.T, stores []storage.Store, workers int) {
	ctx := t.Context()
	key := fmt.Sprintf("race:%s", id(t, "Key"))
	const window = time.Hour
	var committed atomic.Int32
	errs := race(t, stores, workers, func(c context.Context, i int, s storage.Store) error {
		err := s.Atomic(c, func(tx storage.Tx) error {
			if err := tx.RateLimits().Hit(c, key, t0, window, rateLimit); err != nil {
				return err
			}
			pause() // acting on the hit, which may still be refused
			if i%3 == 0 {
				return errRolledBack
			}
			return nil
		})
		var limited *storage.RateLimitError
		switch {
		case errors.As(err, &limited):
			if limited.Wait != window {
				return fmt.Errorf("refused with wait %v, want %v (the end of the window)", limited.Wait, window)
			}
			if !errors.Is(err, storage.ErrExhausted) {
				return fmt.Errorf("refusal %v does not wrap ErrExhausted", err)
			}
			return errLimited
		case err == nil:
			committed.Add(1)
		}
		return err
	})
	wins := tally(t, "hit", errs, errLimited, errRolledBack)
	want := min(rateLimit, len(errs)-(len(errs)+2)/3)
	if wins != want || committed.Load() != int32(want) {
		t.Fatalf("%d hits committed (%d counted as committing), want %d", wins, committed.Load(), want)
	}
	if len(errs)-(len(errs)+2)/3 < rateLimit {
		return
	}
	err := stores[len(stores)-1].Atomic(ctx, func(tx storage.Tx) error {
		return tx.RateLimits().Hit(ctx, key, t0.Add(window-time.Second), window, rateLimit)
	})
	if limited := (*storage.RateLimitError)(nil); !errors.As(err, &limited) || limited.Wait != time.Second {
		t.Fatalf("a hit a second before the window ends: %v, want a *storage.RateLimitError of 1s", err)
	}
	run(t, stores[0], func(tx storage.Tx) error {
		return tx.RateLimits().Hit(ctx, key, t0.Add(window), window, rateLimit)
	})
}

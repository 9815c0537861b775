package sweep_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/memory"
	"github.com/walletgate/walletgate/storage/sweep"
)

var t0 = time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)

// counting wraps a store and records each Sweep call; fail, when set, is
// returned instead of sweeping.
type counting struct {
	storage.Store
	mu      sync.Mutex
	cutoffs []time.Time
	limits  []int
	fail    error
}

func (c *counting) Sweep(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	c.mu.Lock()
	c.cutoffs, c.limits = append(c.cutoffs, cutoff), append(c.limits, limit)
	fail := c.fail
	c.mu.Unlock()
	if fail != nil {
		return 0, fail
	}
	return c.Store.Sweep(ctx, cutoff, limit)
}

func (c *counting) calls() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.cutoffs)
}

// pending stores n pending requests that expire at expires.
func pending(t *testing.T, s storage.Store, n int, expires time.Time) []string {
	t.Helper()
	ids := make([]string, n)
	err := s.Atomic(context.Background(), func(tx storage.Tx) error {
		for i := range ids {
			ids[i] = fmt.Sprintf("Request:%08d-0000-4000-8000-%012d", expires.Unix()%1e8, i)
			p := storage.PendingRequest{ID: ids[i], Kind: "TEST", AccountID: "InternalAccount:1", Method: "POST", Path: "/x",
				BodyDigest: make([]byte, 32), Payload: []byte(`{}`), SignerRule: "ANY_SESSION", Data: []byte(`{}`),
				CreatedAt: expires.Add(-time.Minute), ExpiresAt: expires}
			if err := tx.PendingRequests().Create(context.Background(), &p, storage.Quota{Limit: 1000}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func exists(t *testing.T, s storage.Store, id string) bool {
	t.Helper()
	err := s.Atomic(context.Background(), func(tx storage.Tx) error {
		_, err := tx.PendingRequests().Get(context.Background(), id)
		return err
	})
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		t.Fatal(err)
	}
	return err == nil
}

func TestNewChecksConfig(t *testing.T) {
	store := memory.New()
	for name, cfg := range map[string]sweep.Config{
		"Store":    {},
		"Interval": {Store: store, Interval: -time.Second},
		"Margin":   {Store: store, Margin: -time.Second},
		"Batch":    {Store: store, Batch: -1},
	} {
		if s, err := sweep.New(cfg); err == nil || s != nil || !strings.Contains(err.Error(), "Config."+name) {
			t.Errorf("%s: %v, %v; want an error naming Config.%s", name, s, err, name)
		}
	}
	if _, err := sweep.New(sweep.Config{Store: store}); err != nil {
		t.Fatalf("defaults: %v", err)
	}
}

// TestRunOnceSweepsInBatchesWithMargin: one RunOnce deletes every record
// expired before now-Margin, in batches, and keeps the records that expired
// within the margin or are live.
func TestRunOnceSweepsInBatchesWithMargin(t *testing.T) {
	store := &counting{Store: memory.New()}
	old := pending(t, store, 25, t0.Add(-2*time.Hour))
	recent := pending(t, store, 1, t0.Add(-30*time.Minute))
	live := pending(t, store, 1, t0.Add(time.Minute))
	s, err := sweep.New(sweep.Config{Store: store, Batch: 10, Clock: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	n, err := s.RunOnce(context.Background())
	if err != nil || n != 25 {
		t.Fatalf("RunOnce = %d, %v; want 25", n, err)
	}
	// 10, 10, 5: the call that deletes fewer than Batch is the last.
	if store.calls() != 3 {
		t.Fatalf("%d Sweep calls, want 3", store.calls())
	}
	for i, c := range store.cutoffs {
		if !c.Equal(t0.Add(-sweep.DefaultMargin)) || store.limits[i] != 10 {
			t.Fatalf("call %d: cutoff %v limit %d, want %v and 10", i, c, store.limits[i], t0.Add(-sweep.DefaultMargin))
		}
	}
	for _, id := range old {
		if exists(t, store, id) {
			t.Fatalf("%s expired two hours ago and is still there", id)
		}
	}
	if !exists(t, store, recent[0]) || !exists(t, store, live[0]) {
		t.Fatal("a record within the margin or still live was swept")
	}
	if n, err := s.RunOnce(context.Background()); n != 0 || err != nil {
		t.Fatalf("second RunOnce = %d, %v; want 0", n, err)
	}
}

func TestRunOnceReportsStoreAndContextErrors(t *testing.T) {
	boom := errors.New("boom")
	store := &counting{Store: memory.New(), fail: boom}
	s, _ := sweep.New(sweep.Config{Store: store})
	if _, err := s.RunOnce(context.Background()); !errors.Is(err, boom) {
		t.Fatalf("store failure: %v, want boom", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.RunOnce(ctx); !errors.Is(err, context.Canceled) || store.calls() != 1 {
		t.Fatalf("cancelled: %v after %d calls, want context.Canceled and no call", err, store.calls())
	}
}

// TestRunSweepsEveryIntervalUntilCancelled: Run sweeps at once, then once
// per Interval, goes on after a failure (reported to OnError), and returns
// when its context ends. The bubble's clock is the only clock.
func TestRunSweepsEveryIntervalUntilCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &counting{Store: memory.New()}
		ids := pending(t, store, 3, time.Now().Add(-2*time.Hour))
		var mu sync.Mutex
		var failures []error
		s, err := sweep.New(sweep.Config{Store: store, Interval: time.Minute, OnError: func(err error) {
			mu.Lock()
			failures = append(failures, err)
			mu.Unlock()
		}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- s.Run(ctx) }()

		synctest.Wait()
		if store.calls() != 1 || exists(t, store, ids[0]) {
			t.Fatalf("at start: %d calls, record swept: %v", store.calls(), !exists(t, store, ids[0]))
		}
		time.Sleep(59 * time.Second)
		synctest.Wait()
		if store.calls() != 1 {
			t.Fatalf("before the interval: %d calls, want 1", store.calls())
		}
		boom := errors.New("boom")
		store.mu.Lock()
		store.fail = boom
		store.mu.Unlock()
		time.Sleep(time.Second)
		synctest.Wait()
		mu.Lock()
		if store.calls() != 2 || len(failures) != 1 || !errors.Is(failures[0], boom) {
			t.Fatalf("after one interval: %d calls, failures %v", store.calls(), failures)
		}
		mu.Unlock()
		store.mu.Lock()
		store.fail = nil
		store.mu.Unlock()
		time.Sleep(time.Minute)
		synctest.Wait()
		if store.calls() != 3 {
			t.Fatalf("after two intervals: %d calls, want 3 (Run goes on after a failure)", store.calls())
		}
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("Run = %v, want context.Canceled", err)
		}
	})
}

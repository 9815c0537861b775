package memory

import (
	"context"
	"time"

	"github.com/walletgate/walletgate/storage"
)

// Rate limits.

// window is a rate-limit window: hits counted until end.
type window struct {
	end   time.Time
	count int
}

type limitRepo struct{ *tx }

// allow counts one hit on key at now when the window has room and returns
// 0; otherwise it counts nothing and returns how long until the window
// closes.
func (r limitRepo) allow(ctx context.Context, key string, now time.Time, window time.Duration, limit int) (time.Duration, error) {
	if err := r.lockX(ctx, lkLimit, key); err != nil {
		return 0, err
	}
	w, ok := r.s.limits.get(key)
	if !ok || !now.Before(w.end) {
		w = newWindow(now, window)
		tput(r.tx, &r.s.limits, key, w)
		r.watch(kindLimit, key, now.Add(window))
	}
	if w.count >= limit {
		return w.end.Sub(now), nil
	}
	set(r.tx, &w.count, w.count+1)
	return 0, nil
}

func newWindow(now time.Time, d time.Duration) *window {
	return &window{end: now.Add(d)}
}

func (r limitRepo) Hit(ctx context.Context, key string, now time.Time, window time.Duration, limit int) error {
	wait, err := r.allow(ctx, key, now, window, limit)
	if err == nil && wait > 0 {
		return &storage.RateLimitError{Wait: wait}
	}
	return err
}

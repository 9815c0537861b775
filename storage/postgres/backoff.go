package postgres

import (
	"context"
	"math/rand/v2"
	"time"
)

// maxBackoff caps the delay before a retry.
const maxBackoff = 250 * time.Millisecond

// backoff returns the delay before retry number attempt+1: base doubled per
// attempt, capped at maxBackoff, with the upper half jittered so replicas
// that collided do not collide again in step.
func backoff(base time.Duration, attempt int) time.Duration {
	if base <= 0 {
		return 0
	}
	d := base
	for range attempt {
		if d >= maxBackoff/2 {
			d = maxBackoff
			break
		}
		d *= 2
	}
	d = min(d, maxBackoff)
	half := d / 2
	return half + rand.N(d-half+1)
}

// sleep waits d or until ctx is done, returning ctx's error in that case.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

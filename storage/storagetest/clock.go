package storagetest

import (
	"sync"
	"time"
)

// Clock is the settable clock the tests of every walletgate package share.
// Stores never read a clock: callers pass the time from the Clock of their
// Config (a func() time.Time), so a test gives Now as that Clock and moves
// time with Add. Safe for concurrent use, and usable where a
// testing/synctest bubble cannot be (a test whose receiver does real
// network I/O).
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock that reads start until it is moved.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Add moves the clock by d (backwards when d is negative).
func (c *Clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

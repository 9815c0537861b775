package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
)

// Bounds of [Simulator.AdvanceClock].
const (
	// MaxClockAdvance is the most one call of [Simulator.AdvanceClock]
	// (or POST /sandbox/clock/advance) moves the clock: 30 days, so that
	// one call passes any expiry, period or window of the simulator but
	// the 180-day SCA session (six calls pass that).
	MaxClockAdvance = 30 * 24 * time.Hour
	// MaxClockOffset is the most the clock may be moved in all, over every
	// call, past the time Config.Clock gives: about 100 years (36500
	// days). It keeps the sum of the advances far from the range of a
	// time.Duration.
	MaxClockOffset = 36500 * 24 * time.Hour
)

// clock is the simulator's one reading of the current time: the host's
// clock (Config.Clock) plus the offset that AdvanceClock adds to. The
// offset is the store's (a record every simulator on the store shares);
// this copy of it only grows, is read and raised atomically, and is
// brought up to the store's as each HTTP request starts (and by Now), so
// no caller of now waits for a lock or a round trip.
type clock struct {
	base   func() time.Time
	offset atomic.Int64 // nanoseconds, 0..MaxClockOffset
}

// now returns the host's time moved by the offset.
func (c *clock) now() time.Time {
	return c.base().Add(time.Duration(c.offset.Load()))
}

// raise brings the offset up to off, never down.
func (c *clock) raise(off int64) {
	for {
		old := c.offset.Load()
		if off <= old || c.offset.CompareAndSwap(old, off) {
			return
		}
	}
}

// clockOffset is the store's record of the clock: the sum of the
// advances, in nanoseconds.
type clockOffset struct {
	Offset int64 `json:"offset"`
}

// syncClock brings the simulator's clock up to the store's offset.
func (s *Simulator) syncClock(ctx context.Context) error {
	return s.read(ctx, func(st *state) error {
		c, err := load[clockOffset](st, kindClock, "offset")
		if errors.Is(err, storage.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		s.clock.raise(c.Offset)
		return nil
	})
}

// advance moves the clock forward by d, in the store, and returns the new
// now. d must be positive and at most MaxClockAdvance, and the offset may
// not pass MaxClockOffset; a refusal is 400 INVALID_INPUT naming field.
func (s *Simulator) advance(ctx context.Context, d time.Duration, field string) (time.Time, error) {
	if err := checkAdvance(d, field); err != nil {
		return time.Time{}, err
	}
	var off int64
	err := s.atomic(ctx, func(st *state) error {
		c, err := load[clockOffset](st, kindClock, "offset")
		if errors.Is(err, storage.ErrNotFound) {
			c = &clockOffset{}
			add(st, kindClock, "offset", "", c)
			err = nil
		}
		if err != nil {
			return err
		}
		if time.Duration(c.Offset) > MaxClockOffset-d {
			return apierror.InvalidField(field, nil, fmt.Sprintf(
				"would move the clock more than %s in all past the configured clock (already moved %s)", MaxClockOffset, time.Duration(c.Offset)))
		}
		c.Offset += int64(d)
		off = c.Offset
		return nil
	})
	if err != nil {
		return time.Time{}, err
	}
	s.clock.raise(off)
	return s.clock.now(), nil
}

// checkAdvance refuses a step of the clock that is not forward, or longer
// than MaxClockAdvance, naming field.
func checkAdvance(d time.Duration, field string) error {
	switch {
	case d <= 0:
		return apierror.InvalidField(field, nil, "must be positive: the clock only moves forward")
	case d > MaxClockAdvance:
		return apierror.InvalidField(field, nil, fmt.Sprintf("must be at most %d seconds (30 days) per call", int64(MaxClockAdvance/time.Second)))
	}
	return nil
}

// Now returns the simulator's current time, in UTC: Config.Clock moved by
// every [Simulator.AdvanceClock] so far. It is the time every expiry,
// period, window, timed outcome and session lifetime of the simulator, and
// of the services it builds, is judged at. Over HTTP it is GET
// /sandbox/clock.
func (s *Simulator) Now() time.Time {
	_ = s.syncClock(context.Background()) // a failed read keeps the clock as it was: it only grows
	return s.now()
}

// AdvanceClock moves the simulator's clock forward by d and returns the new
// [Simulator.Now], so that a test reaches a time-dependent state without
// sleeping: a quote, an OTP code, a session, a signed-retry challenge or a
// payout approval past its lifetime, a payout window that has rolled, a
// timed transfer or payment outcome that has come, a credential past a
// waiting period. Every reading of time in the simulator and in the
// services it builds (walletauth and its signed retries, ownership, the
// payout policy, Idempotency-Key records, the sweeper, the webhook relay)
// is Config.Clock plus the sum of the advances: there is no other clock.
//
// The clock only moves forward: d must be positive and at most
// [MaxClockAdvance] (30 days), and all the advances of a simulator together
// at most [MaxClockOffset]; otherwise it answers 400 INVALID_INPUT whose
// details.errors names the field "d", and the clock does not move. The
// offset is the store's: simulators sharing a Store (replicas on one
// database) share one clock, which each brings up to date as an HTTP
// request starts and in Now. Nothing is recomputed at the call: each
// record brings its timed outcomes up to the new time when it is next
// read, as it does for the host's clock.
//
// It is for tests, in the sandbox only, and safe for concurrent use:
// concurrent advances add up, none is lost. POST /sandbox/clock/advance is
// the same over HTTP.
func (s *Simulator) AdvanceClock(d time.Duration) (time.Time, error) {
	now, err := s.advance(context.Background(), d, "d")
	if err != nil {
		return time.Time{}, err
	}
	return now.UTC(), nil
}

// clockView is the answer of the clock routes.
type clockView struct {
	Now time.Time `json:"now"`
}

// parseClockAdvance reads the body of POST /sandbox/clock/advance,
// {"seconds": <integer>}, with the package's strict JSON rules (one JSON
// value, no duplicate or case-colliding names, canonical numbers, so 60.0
// is 60) and returns the step as a duration. seconds is required and is
// the only member: a body that is not such an object, another member, a
// value that is not an integer, zero, a negative number or more than
// MaxClockAdvance in seconds is 400 INVALID_INPUT whose details.errors
// names seconds.
func parseClockAdvance(body []byte) (time.Duration, error) {
	const shape = `the body is {"seconds": <integer>}`
	var members map[string]json.RawMessage
	if err := apierror.DecodeBytes(body, &members); err != nil {
		return 0, apierror.InvalidField("seconds", nil, apierror.As(err).Message+"; "+shape)
	}
	if members == nil {
		return 0, apierror.InvalidField("seconds", nil, "is required; "+shape)
	}
	for name := range members {
		if name != "seconds" {
			return 0, apierror.InvalidField("seconds", nil, "unknown member "+strconv.Quote(name)+"; "+shape)
		}
	}
	raw, ok := members["seconds"]
	if !ok {
		return 0, apierror.InvalidField("seconds", nil, "is required; "+shape)
	}
	// The body was canonicalized, so an integral number is spelled as
	// digits alone (1.0 and 1e0 are 1): anything else is not an integer
	// in range.
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return 0, apierror.InvalidField("seconds", nil, "must be an integer number of seconds, not "+truncateValue(string(raw)))
	}
	if limit := int64(MaxClockAdvance / time.Second); n > limit {
		n = limit + 1 // refused below, without overflowing the product
	}
	d := time.Duration(n) * time.Second
	if err := checkAdvance(d, "seconds"); err != nil {
		return 0, err
	}
	return d, nil
}

// truncateValue shortens a JSON value quoted into a message.
func truncateValue(v string) string {
	if len(v) > 64 {
		return v[:64] + "…"
	}
	return v
}

func (s *Simulator) hGetClock(w http.ResponseWriter, _ *http.Request) {
	signedretry.WriteAnswer(w, http.StatusOK, clockView{Now: s.Now()}, nil, nil)
}

func (s *Simulator) hAdvanceClock(w http.ResponseWriter, r *http.Request) {
	body, err := apierror.Decoder{}.ReadBody(r)
	if err != nil {
		apierror.Write(w, apierror.InvalidField("seconds", nil, apierror.As(err).Message))
		return
	}
	d, err := parseClockAdvance(body)
	if err != nil {
		apierror.Write(w, err)
		return
	}
	now, err := s.advance(r.Context(), d, "seconds")
	if err != nil {
		apierror.Write(w, err)
		return
	}
	signedretry.WriteAnswer(w, http.StatusOK, clockView{Now: now.UTC()}, nil, nil)
}

// Package relay delivers outbox events after the transactions that wrote
// them commit: it leases due events from a store ([storage.Outbox.Lease]),
// hands each to a [Publisher] (for webhooks, storage/webhook) and
// records the outcome in the store.
//
// # Guarantees
//
// Delivery is at least once. Every committed event is published until a
// Publish succeeds, or until it has failed for longer than MaxAge, when it
// is parked: it stays in the store, [Parked] lists it and [Redrive] sends it
// again. An event is published twice only when a relay loses its lease
// before it records the outcome: it crashed, or Publish outlasted the lease.
// Receivers deduplicate by the event id.
//
// Any number of relays, in one process or on the replicas of a service, may
// share one store: a lease is held by one relay at a time, so they never
// publish one event at the same time while their leases last. The events of
// one account go out one at a time, in commit order; a parked event stops
// holding back the events after it, which then arrive before it if it is
// re-driven.
//
// A failed Publish is tried again after a backoff that doubles with each
// failure from MinBackoff up to MaxBackoff, with jitter (a random part of up
// to half the delay), so receivers that come back are not hit by every
// relay at once.
//
// # Shutdown
//
// Cancelling the context of [Relay.Run] (or [Relay.RunOnce]) is a graceful
// stop: the relay leases nothing more, starts no further Publish, and gives
// the deliveries in flight up to ShutdownTimeout to finish. Every outcome —
// delivered, failed, or abandoned — is then recorded in the store with a
// context that outlives the cancelled one (bounded by half the lease), so no
// event stays leased after Run returns and the account's later events are
// not held back until the lease ends. A delivery still running at the
// deadline is abandoned: its Publish context is cancelled and the event is
// released, due again at once for any relay, with the attempt counted and
// the reason "relay: shut down before the delivery finished". The receiver
// may have got it already; it deduplicates by the event id, as for any
// retry. Leased events whose Publish had not started are released the same
// way. Only a crash (or a store that cannot be reached) leaves events leased
// until their lease ends.
//
// Expired records, delivered events included, are deleted by a sweeper:
// run a storage/sweep.Sweeper next to the relay rather than a ticker of your
// own.
//
// # Telemetry
//
// With [Config.Telemetry] set, a relay records, under the instrumentation
// scope "github.com/walletgate/walletgate/storage/relay":
//
//   - a span "relay.lease" per lease (walletgate.relay.leased: the events
//     leased; error.type and status Error when the store failed), and a
//     span "relay.publish" per Publish, the parent of the publisher's own
//     spans (walletgate.event.type, walletgate.relay.attempt; error.type and
//     status Error when it failed);
//   - counters walletgate.relay.deliveries (Publish calls by
//     walletgate.outcome ok or error, walletgate.event.type, and error.type
//     for failures), walletgate.relay.retries (failures scheduled for
//     another attempt), walletgate.relay.parked, walletgate.relay.lost_leases
//     (outcomes not recorded because the lease had ended) and
//     walletgate.relay.store_errors (by walletgate.operation: lease, record,
//     backlog);
//   - when the Store implements [BacklogStore], observable gauges
//     walletgate.relay.backlog (events neither delivered nor parked) and
//     walletgate.relay.oldest_age (seconds since the earliest of them was
//     created, 0 when there is none), read from the store at each
//     collection: every relay on a store reports the same values;
//   - log records: Warn for a failed Publish (event_id, event_type,
//     attempt, error) and for outcomes lost with an ended lease; Error for
//     a parked event and for each store error (operation, error), which
//     also goes to [Config.OnStoreError].
//
// No payload is ever recorded; an event's type is, its account never.
package relay

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/walletgate/walletgate/apierror/operation"
	"github.com/walletgate/walletgate/storage"
)

// Defaults of the zero [Config] fields.
const (
	DefaultLease      = time.Minute
	DefaultBatch      = 32
	DefaultWorkers    = 8
	DefaultMinBackoff = time.Second
	DefaultMaxBackoff = 15 * time.Minute
	DefaultMaxAge     = 72 * time.Hour
	DefaultPoll       = time.Second
	// DefaultShutdownTimeout is how long deliveries in flight may run on
	// after Run's context is cancelled.
	DefaultShutdownTimeout = 10 * time.Second
)

// shutdownReason is the failure reason stored with an event released at
// shutdown.
const shutdownReason = "relay: shut down before the delivery finished"

// errShutdown cancels the deliveries still running at the shutdown
// deadline, and marks the events never started at shutdown.
var errShutdown = errors.New(shutdownReason)

// maxReason bounds the failure reason stored with an event.
const maxReason = 512

// Publisher delivers an event to its receivers (a webhook sender, a message
// bus); the host implements it, or uses storage/webhook. A nil error means
// delivered. Publish may be called more than once for an event (delivery is
// at least once): receivers deduplicate by Event.ID.
type Publisher interface {
	Publish(ctx context.Context, e storage.Event) error
}

// Config configures a [Relay]. Store and Publisher are required.
type Config struct {
	Store     storage.Store
	Publisher Publisher
	// Types, when not empty, are the event types the host subscribes to;
	// events of other types are settled without being published (recorded
	// as delivered, so they do not hold back the events after them).
	Types []string
	// Owner names this relay's leases; it must differ between relays that
	// share a store. Empty: a random name.
	Owner string
	// Clock gives the time; nil means time.Now.
	Clock func() time.Time
	// Rand supplies the jitter and the random Owner; nil means crypto/rand.
	Rand io.Reader
	// Lease is how long a relay holds the events it leased. Each Publish
	// gets at most half of it, so the outcome is recorded before the
	// lease ends. Default DefaultLease.
	Lease time.Duration
	// Batch is the most events leased at once; Workers the most Publish
	// calls in flight. Defaults DefaultBatch and DefaultWorkers.
	Batch, Workers int
	// MinBackoff and MaxBackoff bound the wait before a failed event is
	// tried again. Defaults DefaultMinBackoff and DefaultMaxBackoff.
	MinBackoff, MaxBackoff time.Duration
	// MaxAge is how long after its creation an event is tried: a failure
	// after that parks it. Default DefaultMaxAge.
	MaxAge time.Duration
	// Poll is how long [Relay.Run] waits when no event is due. Default
	// DefaultPoll.
	Poll time.Duration
	// ShutdownTimeout is how long the deliveries in flight when Run's
	// context is cancelled may run on before they are abandoned and their
	// events released. Default DefaultShutdownTimeout.
	ShutdownTimeout time.Duration
	// OnFailure, when set, is called with each failed Publish; it must not
	// block. It does not see the errors of the store: OnStoreError does.
	OnFailure func(e storage.Event, err error)
	// OnStoreError, when set, is called with each failed store operation
	// of the relay: op is [OpLease], [OpRecord] or [OpBacklog]. A lease
	// error leaves nothing leased; after a record error the batch's events
	// are published again once their lease ends. It must not block.
	OnStoreError func(op string, err error)
	// Telemetry receives the relay's records, spans and metrics (see the
	// package documentation); the zero value reports nothing. A failed
	// Publish and outcomes lost with an ended lease are logged at Warn,
	// each parked event and each store error at Error, with the event id
	// and type (never the payload). No attribute carries a secret.
	Telemetry operation.Telemetry
}

// Relay delivers the events of one store. Its methods are safe for
// concurrent use, though one Run per process is the normal use.
type Relay struct {
	cfg   Config
	types map[string]bool
	mu    sync.Mutex // guards cfg.Rand
	tel   telemetry
}

// Result counts what one [Relay.RunOnce] did.
type Result struct {
	// Delivered events were published (or settled unpublished, when their
	// type is not subscribed to).
	Delivered int
	// Retried events failed and wait for their next attempt; Parked ones
	// failed after MaxAge.
	Retried, Parked int
	// Lost events were published or failed after the relay's lease ended:
	// another relay owns them now, and may publish them again.
	Lost int
	// Released events were let go at shutdown without an outcome (their
	// Publish had not started, or outlived ShutdownTimeout): they are due
	// again at once, for any relay.
	Released int
}

// New checks cfg and returns a relay. It fails for a missing Store or
// Publisher, MaxBackoff below MinBackoff, a failing Rand, or a
// MeterProvider that refuses the relay's instruments or the backlog
// callback.
func New(cfg Config) (*Relay, error) {
	if cfg.Store == nil || cfg.Publisher == nil {
		return nil, errors.New("relay: Config.Store and Config.Publisher are required")
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Reader
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&cfg.Lease, DefaultLease)
	def(&cfg.MinBackoff, DefaultMinBackoff)
	def(&cfg.MaxBackoff, DefaultMaxBackoff)
	def(&cfg.MaxAge, DefaultMaxAge)
	def(&cfg.Poll, DefaultPoll)
	def(&cfg.ShutdownTimeout, DefaultShutdownTimeout)
	if cfg.Batch <= 0 {
		cfg.Batch = DefaultBatch
	}
	if cfg.Workers <= 0 {
		cfg.Workers = DefaultWorkers
	}
	if cfg.MaxBackoff < cfg.MinBackoff {
		return nil, fmt.Errorf("relay: MaxBackoff %v is below MinBackoff %v", cfg.MaxBackoff, cfg.MinBackoff)
	}
	if cfg.Owner == "" {
		var b [8]byte
		if _, err := io.ReadFull(cfg.Rand, b[:]); err != nil {
			return nil, fmt.Errorf("relay: reading randomness for the owner name: %w", err)
		}
		cfg.Owner = "relay-" + hex.EncodeToString(b[:])
	}
	r := &Relay{cfg: cfg}
	if err := newTelemetry(r); err != nil {
		return nil, err
	}
	if len(cfg.Types) > 0 {
		r.types = make(map[string]bool, len(cfg.Types))
		for _, t := range cfg.Types {
			r.types[t] = true
		}
	}
	return r, nil
}

// Owner returns the name of the relay's leases.
func (r *Relay) Owner() string { return r.cfg.Owner }

// Run delivers events until ctx is done, and then returns ctx's error. It
// leases again at once after a full batch, and waits Poll otherwise. An
// error of the store is reported (see [Config.OnStoreError]) and retried
// after Poll.
//
// Cancelling ctx stops the relay gracefully (see Shutdown in the package
// documentation): Run returns once the deliveries in flight have finished
// or been abandoned after ShutdownTimeout, and every outcome is recorded.
func (r *Relay) Run(ctx context.Context) error {
	for {
		res, err := r.RunOnce(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err == nil && res.Delivered+res.Retried+res.Parked+res.Lost+res.Released >= r.cfg.Batch {
			continue
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(r.cfg.Poll):
		}
	}
}

// outcome is what became of one leased event.
type outcome struct {
	e        storage.Event
	err      error // nil: published
	released bool  // not published at shutdown: release the event
}

// RunOnce leases one batch of due events, publishes them (events of
// distinct accounts in parallel, up to Workers at once) and records every
// outcome in one transaction. It returns what it did; an error is the
// store's, and then the leased events are tried again when their lease
// ends. When ctx is cancelled after the lease, RunOnce shuts down as Run
// does: no further Publish starts, those in flight get ShutdownTimeout, and
// the outcomes are recorded all the same.
func (r *Relay) RunOnce(ctx context.Context) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	batch, err := r.lease(ctx)
	if err != nil || len(batch) == 0 {
		return Result{}, err
	}
	pctx, stop := r.draining(ctx)
	defer stop()
	outs := make([]outcome, len(batch))
	sem := make(chan struct{}, r.cfg.Workers)
	var wg sync.WaitGroup
	for i, e := range batch {
		outs[i].e = e
		if r.types != nil && !r.types[e.Type] {
			continue
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			outs[i].err, outs[i].released = errShutdown, true
			continue
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			err := r.observedPublish(pctx, e)
			outs[i].err = err
			if err != nil && errors.Is(context.Cause(pctx), errShutdown) {
				outs[i].err, outs[i].released = errShutdown, true
				return
			}
			if err != nil && r.cfg.OnFailure != nil {
				r.cfg.OnFailure(e, err)
			}
		}()
	}
	wg.Wait()
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.Lease/2)
	defer cancel()
	res, parked, err := r.record(rctx, outs)
	r.recorded(rctx, res, parked, err)
	return res, err
}

// draining returns the context of the deliveries of one batch: it is not
// cancelled with ctx, but ShutdownTimeout after ctx is done, with cause
// errShutdown. stop releases it.
func (r *Relay) draining(ctx context.Context) (context.Context, func()) {
	pctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		select {
		case <-done:
			return
		case <-ctx.Done():
		}
		t := time.NewTimer(r.cfg.ShutdownTimeout)
		defer t.Stop()
		select {
		case <-done:
		case <-t.C:
			cancel(errShutdown)
		}
	}()
	return pctx, func() { close(done); cancel(nil) }
}

// publish calls the publisher with half the lease as its deadline, and
// turns a panic into an error, so one bad event cannot stop the relay.
func (r *Relay) publish(ctx context.Context, e storage.Event) (err error) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Lease/2)
	defer cancel()
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("relay: the publisher panicked: %v", v)
		}
	}()
	return r.cfg.Publisher.Publish(ctx, e)
}

// record writes the outcomes of one batch in one transaction. An event
// whose lease another relay took (ErrConflict) or that is settled already
// (ErrNotFound) counts as lost; the others are recorded regardless. It
// also returns the events it parked.
func (r *Relay) record(ctx context.Context, outs []outcome) (Result, []storage.Event, error) {
	var res Result
	var parked []storage.Event
	now := r.cfg.Clock()
	var delivered []string
	for _, o := range outs {
		if o.err == nil {
			delivered = append(delivered, o.e.ID)
		}
	}
	err := r.cfg.Store.Atomic(ctx, func(tx storage.Tx) error {
		res, parked = Result{}, parked[:0]
		ob := tx.Outbox()
		if len(delivered) > 0 {
			if err := ob.MarkDelivered(ctx, delivered, now); err != nil {
				return err
			}
			res.Delivered = len(delivered)
		}
		for _, o := range outs {
			if o.err == nil {
				continue
			}
			reason := Reason(o.err)
			var err error
			if o.released {
				switch err = ob.Retry(ctx, o.e.ID, r.cfg.Owner, now, reason); {
				case errors.Is(err, storage.ErrConflict), errors.Is(err, storage.ErrNotFound):
					res.Lost++
				case err != nil:
					return err
				default:
					res.Released++
				}
				continue
			}
			if now.Sub(o.e.CreatedAt) >= r.cfg.MaxAge {
				err = ob.Park(ctx, o.e.ID, r.cfg.Owner, now, reason)
				res.Parked++
			} else {
				err = ob.Retry(ctx, o.e.ID, r.cfg.Owner, now.Add(r.backoff(o.e.Attempts+1)), reason)
				res.Retried++
			}
			switch {
			case errors.Is(err, storage.ErrConflict), errors.Is(err, storage.ErrNotFound):
				res.Lost++
				if now.Sub(o.e.CreatedAt) >= r.cfg.MaxAge {
					res.Parked--
				} else {
					res.Retried--
				}
			case err != nil:
				return err
			case now.Sub(o.e.CreatedAt) >= r.cfg.MaxAge:
				parked = append(parked, o.e)
			}
		}
		return nil
	})
	return res, parked, err
}

// backoff returns the wait before attempt n+1 after n failures: MinBackoff
// doubled n-1 times, at most MaxBackoff, less a random part of up to half.
func (r *Relay) backoff(n int) time.Duration {
	d := r.cfg.MinBackoff
	for i := 1; i < n && d < r.cfg.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, r.cfg.MaxBackoff)
	half := uint64(d / 2)
	if half == 0 {
		return d
	}
	var b [8]byte
	r.mu.Lock()
	_, err := io.ReadFull(r.cfg.Rand, b[:])
	r.mu.Unlock()
	if err != nil {
		return d
	}
	return d - time.Duration(binary.LittleEndian.Uint64(b[:])%(half+1))
}

// Reason is the failure reason the relay stores for err: its message as
// valid UTF-8 without NUL bytes, cut to 512 bytes (a receiver's answer is
// outside input).
func Reason(err error) string {
	s := strings.ToValidUTF8(err.Error(), "\uFFFD")
	s = strings.ReplaceAll(s, "\x00", "")
	if len(s) > maxReason {
		s = s[:maxReason]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
	}
	return s
}

// Parked returns at most limit parked events with Seq greater than after,
// in Seq order: page with the Seq of the last event returned.
func Parked(ctx context.Context, s storage.Store, after int64, limit int) ([]storage.Event, error) {
	var out []storage.Event
	err := s.Atomic(ctx, func(tx storage.Tx) error {
		var err error
		out, err = tx.Outbox().Parked(ctx, after, limit)
		return err
	})
	return out, err
}

// Redrive makes the parked events with the given ids due again at now, with
// their attempts reset; all or none (storage.ErrNotFound when one is not
// parked).
func Redrive(ctx context.Context, s storage.Store, now time.Time, ids ...string) error {
	return s.Atomic(ctx, func(tx storage.Tx) error {
		for _, id := range ids {
			if err := tx.Outbox().Redrive(ctx, id, now); err != nil {
				return fmt.Errorf("relay: re-drive %s: %w", id, err)
			}
		}
		return nil
	})
}

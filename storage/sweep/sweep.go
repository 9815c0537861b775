// Package sweep deletes a store's expired records in the background: a
// [Sweeper] calls [storage.Store.Sweep] in batches, at once and then every
// Interval, until its context ends.
//
// Expired pending requests, OTP issuances, ownership challenges, sessions,
// rate-limit windows, idempotency records and delivered events are of no
// use once expired, but a store keeps them until something sweeps them; a
// host that never sweeps grows without bound. Each host process runs one
// Sweeper (replicas sharing a database may all run one: a record is deleted
// once, whoever sweeps it). A record is swept only Margin after it expired,
// so a client retrying just after an expiry still hears "expired" rather
// than "unknown".
//
// # Telemetry
//
// With [Config.Telemetry] set, a Sweeper records, under the
// instrumentation scope "github.com/walletgate/walletgate/storage/sweep",
// a span "sweep.run" per
// [Sweeper.RunOnce] (walletgate.sweep.deleted; status Error when the store
// failed), the counters walletgate.sweep.deleted (records deleted) and
// walletgate.sweep.failures (sweeps ended by a store error), and an Error
// record (operation, deleted, error) for each failed sweep of
// [Sweeper.Run]. No record's content is recorded.
package sweep

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/walletgate/walletgate/apierror/operation"
	"github.com/walletgate/walletgate/storage"
)

// Defaults of the zero [Config] fields.
const (
	DefaultInterval = time.Minute
	DefaultMargin   = time.Hour
	DefaultBatch    = 1000
)

// Config configures a [Sweeper]. Store is required; zero values of the other
// fields take the defaults, negative ones are an error.
type Config struct {
	// Store is the store swept.
	Store storage.Store
	// Interval is the wait between two sweeps of [Sweeper.Run]; zero means
	// DefaultInterval.
	Interval time.Duration
	// Margin is how long after its expiry a record is kept: a sweep at
	// time t deletes the records that expired before t-Margin. Zero means
	// DefaultMargin.
	Margin time.Duration
	// Batch is the most records one Store.Sweep call deletes, which bounds
	// each of its transactions; zero means DefaultBatch.
	Batch int
	// Clock gives the time the cutoff is computed from; nil means time.Now.
	// Interval is waited in real time whatever Clock says.
	Clock func() time.Time
	// OnError, when set, is called with each failed sweep of [Sweeper.Run]
	// (for logs and metrics); it must not block. Run goes on after it.
	OnError func(error)
	// Telemetry receives the sweeper's records, spans and metrics (see the
	// package documentation); the zero value reports nothing. Each failed
	// sweep of [Sweeper.Run] is logged at Error with the store's error.
	// Nothing secret is reported.
	Telemetry operation.Telemetry
}

// Sweeper deletes the expired records of one store. It is safe for
// concurrent use, though one Run per process is the normal use.
type Sweeper struct {
	cfg Config
	tel telemetry
}

// New checks cfg and returns a sweeper. A nil Store or a negative Interval,
// Margin or Batch is an error naming the field, as is a MeterProvider that
// refuses the sweeper's instruments.
func New(cfg Config) (*Sweeper, error) {
	switch {
	case cfg.Store == nil:
		return nil, errors.New("sweep: Config.Store is required")
	case cfg.Interval < 0:
		return nil, fmt.Errorf("sweep: Config.Interval %v is negative", cfg.Interval)
	case cfg.Margin < 0:
		return nil, fmt.Errorf("sweep: Config.Margin %v is negative", cfg.Margin)
	case cfg.Batch < 0:
		return nil, fmt.Errorf("sweep: Config.Batch %d is negative", cfg.Batch)
	}
	if cfg.Interval == 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Margin == 0 {
		cfg.Margin = DefaultMargin
	}
	if cfg.Batch == 0 {
		cfg.Batch = DefaultBatch
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	tel, err := newTelemetry(cfg)
	if err != nil {
		return nil, err
	}
	return &Sweeper{cfg: cfg, tel: tel}, nil
}

// RunOnce deletes every record that expired before Clock()-Margin, read
// once: it calls Store.Sweep with Batch until a call deletes fewer than
// Batch records. It returns how many it deleted, with the first error of
// the store or of ctx (the batches before it stay deleted).
func (s *Sweeper) RunOnce(ctx context.Context) (total int, err error) {
	ctx, span := s.tel.tracer.Start(ctx, "sweep.run")
	defer func() { s.tel.ended(ctx, span, total, err) }()
	cutoff := s.cfg.Clock().Add(-s.cfg.Margin)
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		n, err := s.cfg.Store.Sweep(ctx, cutoff, s.cfg.Batch)
		total += n
		if err != nil {
			return total, fmt.Errorf("sweep: %w", err)
		}
		if n < s.cfg.Batch {
			return total, nil
		}
	}
}

// Run sweeps at once and then every Interval until ctx is done, and then
// returns ctx's error. A failed sweep is logged at Error, reported to
// OnError and tried again at the next interval.
func (s *Sweeper) Run(ctx context.Context) error {
	t := time.NewTicker(s.cfg.Interval)
	defer t.Stop()
	for {
		if n, err := s.RunOnce(ctx); err != nil && ctx.Err() == nil {
			s.tel.logger.LogAttrs(ctx, slog.LevelError, "sweep: sweeping expired records failed",
				slog.String("operation", "sweep.run"), slog.Int("deleted", n), slog.String("error", err.Error()))
			if s.cfg.OnError != nil {
				s.cfg.OnError(err)
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

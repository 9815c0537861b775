package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/walletgate/walletgate/storage"
)

// scope is the instrumentation scope of the relay's spans and metrics.
const scope = "github.com/walletgate/walletgate/storage/relay"

// Store operations named by [Config.OnStoreError], the store_errors
// counter and the logs.
const (
	// OpLease is leasing a batch of due events.
	OpLease = "lease"
	// OpRecord is recording the outcomes of a batch (delivered, retry,
	// park, release).
	OpRecord = "record"
	// OpBacklog is reading the backlog for the gauges.
	OpBacklog = "backlog"
)

// BacklogStore is a store that reports the relay's backlog; the memory and
// PostgreSQL stores of walletgate implement it. The gauges
// walletgate.relay.backlog and walletgate.relay.oldest_age are reported
// only when [Config.Store] implements it.
type BacklogStore interface {
	// OutboxBacklog returns how many events are neither delivered nor
	// parked, and the earliest CreatedAt among them (zero when there is
	// none). It reads committed state outside any transaction.
	OutboxBacklog(ctx context.Context) (pending int64, oldest time.Time, err error)
}

var (
	keyOutcome   = attribute.Key("walletgate.outcome")
	keyEventType = attribute.Key("walletgate.event.type")
	keyOperation = attribute.Key("walletgate.operation")
	keyErrorType = attribute.Key("error.type")
	keyAttempt   = attribute.Key("walletgate.relay.attempt")
	keyLeased    = attribute.Key("walletgate.relay.leased")
)

// telemetry holds what the relay records with, resolved once in New.
type telemetry struct {
	logger      *slog.Logger
	tracer      trace.Tracer
	deliveries  metric.Int64Counter
	retries     metric.Int64Counter
	parked      metric.Int64Counter
	lost        metric.Int64Counter
	storeErrors metric.Int64Counter
}

func newTelemetry(r *Relay) error {
	cfg := &r.cfg
	t := &r.tel
	var m metric.Meter
	t.logger, t.tracer, m = cfg.Telemetry.Resolve(scope)
	var errs []error
	counter := func(name, unit, desc string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	t.deliveries = counter("walletgate.relay.deliveries", "{event}", "Publish calls of the relay by outcome (ok or error) and event type.")
	t.retries = counter("walletgate.relay.retries", "{event}", "Failed deliveries scheduled for another attempt.")
	t.parked = counter("walletgate.relay.parked", "{event}", "Events parked after failing for longer than MaxAge; they wait for Redrive.")
	t.lost = counter("walletgate.relay.lost_leases", "{event}", "Outcomes not recorded because the relay's lease had ended; another relay may publish the event again.")
	t.storeErrors = counter("walletgate.relay.store_errors", "{error}", "Store errors of the relay by operation (lease, record, backlog).")
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("relay: creating the metrics: %w", err)
	}
	bs, ok := cfg.Store.(BacklogStore)
	if !ok || cfg.Telemetry.MeterProvider == nil {
		return nil
	}
	backlog, err := m.Int64ObservableGauge("walletgate.relay.backlog", metric.WithUnit("{event}"),
		metric.WithDescription("Events neither delivered nor parked."))
	if err != nil {
		return fmt.Errorf("relay: creating the metrics: %w", err)
	}
	oldest, err := m.Float64ObservableGauge("walletgate.relay.oldest_age", metric.WithUnit("s"),
		metric.WithDescription("Age of the oldest event neither delivered nor parked; 0 when there is none."))
	if err != nil {
		return fmt.Errorf("relay: creating the metrics: %w", err)
	}
	// The callback stays registered for the life of the MeterProvider: a
	// Relay is meant to live as long as its process.
	_, err = m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		n, first, err := bs.OutboxBacklog(ctx)
		if err != nil {
			r.storeError(ctx, OpBacklog, err)
			return nil
		}
		age := 0.0
		if !first.IsZero() {
			age = max(0, cfg.Clock().Sub(first).Seconds())
		}
		o.ObserveInt64(backlog, n)
		o.ObserveFloat64(oldest, age)
		return nil
	}, backlog, oldest)
	if err != nil {
		return fmt.Errorf("relay: registering the backlog gauges: %w", err)
	}
	return nil
}

// storeError reports a failed store operation to the logger (Error), the
// store_errors counter and OnStoreError.
func (r *Relay) storeError(ctx context.Context, op string, err error) {
	r.tel.storeErrors.Add(ctx, 1, metric.WithAttributes(keyOperation.String(op)))
	r.tel.logger.LogAttrs(ctx, slog.LevelError, "relay: store operation failed",
		slog.String("operation", "relay."+op), slog.String("owner", r.cfg.Owner), slog.String("error", err.Error()))
	if r.cfg.OnStoreError != nil {
		r.cfg.OnStoreError(op, err)
	}
}

// lease leases one batch inside a "relay.lease" span, reporting a store
// error (not the end of ctx).
func (r *Relay) lease(ctx context.Context) ([]storage.Event, error) {
	ctx, span := r.tel.tracer.Start(ctx, "relay.lease")
	defer span.End()
	var batch []storage.Event
	err := r.cfg.Store.Atomic(ctx, func(tx storage.Tx) error {
		var err error
		batch, err = tx.Outbox().Lease(ctx, r.cfg.Owner, r.cfg.Clock(), r.cfg.Lease, r.cfg.Batch)
		return err
	})
	if err != nil {
		if ctx.Err() == nil {
			span.SetAttributes(keyErrorType.String(errorType(err)))
			span.SetStatus(codes.Error, "the store failed")
			r.storeError(ctx, OpLease, err)
		}
		return nil, err
	}
	span.SetAttributes(keyLeased.Int(len(batch)))
	return batch, nil
}

// observedPublish is publish inside a "relay.publish" span; it counts the
// outcome and logs a failure at Warn.
func (r *Relay) observedPublish(ctx context.Context, e storage.Event) error {
	ctx, span := r.tel.tracer.Start(ctx, "relay.publish",
		trace.WithAttributes(keyEventType.String(e.Type), keyAttempt.Int(e.Attempts+1)))
	defer span.End()
	err := r.publish(ctx, e)
	if err == nil {
		r.tel.deliveries.Add(ctx, 1, metric.WithAttributes(keyOutcome.String("ok"), keyEventType.String(e.Type)))
		return nil
	}
	typ := errorType(err)
	span.SetAttributes(keyErrorType.String(typ))
	span.SetStatus(codes.Error, "the delivery failed")
	r.tel.deliveries.Add(ctx, 1, metric.WithAttributes(keyOutcome.String("error"), keyEventType.String(e.Type), keyErrorType.String(typ)))
	r.tel.logger.LogAttrs(ctx, slog.LevelWarn, "relay: delivery failed", slog.String("operation", "relay.publish"),
		slog.String("event_id", e.ID), slog.String("event_type", e.Type), slog.Int("attempt", e.Attempts+1),
		slog.String("error", Reason(err)))
	return err
}

// recorded counts and logs the outcome of a batch once it is recorded.
func (r *Relay) recorded(ctx context.Context, res Result, parked []storage.Event, err error) {
	if err != nil {
		r.storeError(ctx, OpRecord, err)
		return
	}
	if res.Retried > 0 {
		r.tel.retries.Add(ctx, int64(res.Retried))
	}
	if res.Parked > 0 {
		r.tel.parked.Add(ctx, int64(res.Parked))
	}
	for _, e := range parked {
		r.tel.logger.LogAttrs(ctx, slog.LevelError, "relay: event parked: it failed for longer than MaxAge",
			slog.String("operation", "relay.park"), slog.String("event_id", e.ID), slog.String("event_type", e.Type),
			slog.Int("attempt", e.Attempts+1))
	}
	if res.Lost > 0 {
		r.tel.lost.Add(ctx, int64(res.Lost))
		r.tel.logger.LogAttrs(ctx, slog.LevelWarn, "relay: outcomes not recorded: the lease had ended",
			slog.String("operation", "relay.record"), slog.String("owner", r.cfg.Owner), slog.Int("events", res.Lost))
	}
}

// errorType names the kind of err for the error.type attribute: a few
// known causes, otherwise its Go type.
func errorType(err error) string {
	switch {
	case errors.Is(err, errShutdown):
		return "shutdown"
	case errors.Is(err, context.DeadlineExceeded):
		return "context.DeadlineExceeded"
	case errors.Is(err, context.Canceled):
		return "context.Canceled"
	}
	return fmt.Sprintf("%T", err)
}

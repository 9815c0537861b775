package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/storage"
)

// scope is the instrumentation scope of the store's spans and metrics.
const scope = "github.com/walletgate/walletgate/storage/postgres"

// Names of what the store emits (see the package documentation).
const (
	spanTransaction   = "storage.transaction"
	metricDuration    = "walletgate.storage.transaction.duration"
	metricRetries     = "walletgate.storage.transaction.retries"
	attrRetries       = "walletgate.transaction.retries"
	outcomeOK         = "ok"
	outcomeRefused    = "refused"
	outcomeError      = "error"
	errTypeOther      = "_OTHER"
	errTypeCanceled   = "context.Canceled"
	errTypeDeadline   = "context.DeadlineExceeded"
	logRetriesSpent   = "storage transaction lost conflicts until its retries ran out"
	logUnexpected     = "storage transaction failed"
	logOperationValue = "storage.transaction"
)

// noSpan stands for the span when there is no TracerProvider.
var noSpan trace.Span = tracenoop.Span{}

var (
	attrDBSystem = attribute.String("db.system.name", "postgresql")
	keyOutcome   = attribute.Key("walletgate.outcome")
	keyErrorType = attribute.Key("error.type")
)

// telemetry holds what the store records its transactions with, resolved
// once in New so that a transaction pays no lookup.
type telemetry struct {
	logger    *slog.Logger
	tracer    trace.Tracer // nil without a TracerProvider
	duration  metric.Float64Histogram
	retries   metric.Int64Counter
	spanStart []trace.SpanStartOption
	// The attribute sets of a success and of the retries, as ready
	// option slices: a variadic call with a fresh slice would allocate.
	okOpts    []metric.RecordOption
	retryOpts []metric.AddOption
}

func newTelemetry(cfg Config) (telemetry, error) {
	t := telemetry{logger: cfg.Telemetry.Logger}
	if t.logger == nil {
		t.logger = slog.New(slog.DiscardHandler)
	}
	tp, mp := cfg.Telemetry.TracerProvider, cfg.Telemetry.MeterProvider
	if tp != nil {
		t.tracer = tp.Tracer(scope)
	}
	if mp == nil {
		mp = metricnoop.NewMeterProvider()
	}
	meter := mp.Meter(scope)
	var err1, err2 error
	t.duration, err1 = meter.Float64Histogram(metricDuration, metric.WithUnit("s"),
		metric.WithDescription("Duration of each store transaction, retries and their backoff included."),
		metric.WithExplicitBucketBoundaries(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10))
	t.retries, err2 = meter.Int64Counter(metricRetries, metric.WithUnit("{retry}"),
		metric.WithDescription("Reruns of store transactions after a serialization failure, a deadlock or a connection lost before anything was sent."))
	if err := errors.Join(err1, err2); err != nil {
		return telemetry{}, fmt.Errorf("postgres: creating the metrics: %w", err)
	}
	t.spanStart = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrDBSystem)}
	t.okOpts = []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(attrDBSystem, keyOutcome.String(outcomeOK)))}
	t.retryOpts = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(attrDBSystem))}
	return t, nil
}

// observed runs atomic inside a "storage.transaction" span and records its
// duration, its retries and, for a failure, its error type; it logs retries
// that ran out at Warn and unexpected failures at Error.
func (s *Store) observed(ctx context.Context, fn func(storage.Tx) error) error {
	t := &s.tel
	start := time.Now()
	span := noSpan // without tracing, no context to derive
	if t.tracer != nil {
		ctx, span = t.tracer.Start(ctx, spanTransaction, t.spanStart...)
	}
	retries := 0
	err := s.atomic(ctx, fn, &retries)
	elapsed := time.Since(start).Seconds()
	if retries > 0 {
		t.retries.Add(ctx, int64(retries), t.retryOpts...)
		span.SetAttributes(attribute.Int(attrRetries, retries))
	}
	if err == nil {
		t.duration.Record(ctx, elapsed, t.okOpts...)
		span.End()
		return nil
	}
	outcome, errType := classify(err)
	span.SetAttributes(keyErrorType.String(errType))
	t.duration.Record(ctx, elapsed, metric.WithAttributes(attrDBSystem, keyOutcome.String(outcome), keyErrorType.String(errType)))
	if outcome == outcomeError {
		span.SetStatus(codes.Error, errType)
		switch {
		case errors.Is(err, ErrRerun):
			t.logger.LogAttrs(ctx, slog.LevelWarn, logRetriesSpent, slog.String("operation", logOperationValue),
				slog.String("code", errType), slog.Int("retries", retries), slog.String("error", safeError(err)))
		case errType != errTypeCanceled && errType != errTypeDeadline:
			t.logger.LogAttrs(ctx, slog.LevelError, logUnexpected, slog.String("operation", logOperationValue),
				slog.String("code", errType), slog.Int("retries", retries), slog.String("error", safeError(err)))
		}
	}
	span.End()
	return err
}

// classify sorts a failed transaction: "refused" when the function rolled
// back with an answer of the contract (a storage sentinel such as
// storage.ErrNotFound or storage.ErrConflict, or an *apierror.Error below
// 500), "error" otherwise; and names its error type: the SQLSTATE when the
// database answered, the API error code, the context's error, or "_OTHER".
func classify(err error) (outcome, errType string) {
	outcome = outcomeError
	var c interface{ Conflict() bool }
	switch {
	case errors.Is(err, storage.ErrNotFound), errors.Is(err, storage.ErrExpired),
		errors.Is(err, storage.ErrConsumed), errors.Is(err, storage.ErrExhausted),
		errors.As(err, &c) && c.Conflict() && !errors.Is(err, ErrRerun):
		outcome = outcomeRefused
	}
	var ae *apierror.Error
	if errors.As(err, &ae) && !ae.Code.IsZero() && ae.Status() < 500 {
		outcome = outcomeRefused
	}
	switch {
	case errors.Is(err, context.Canceled):
		return outcomeError, errTypeCanceled
	case errors.Is(err, context.DeadlineExceeded):
		return outcomeError, errTypeDeadline
	}
	if code := pgCode(err); code != "" {
		return outcome, code
	}
	if ae != nil && !ae.Code.IsZero() {
		return outcome, ae.Code.String()
	}
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			return outcome, s.name
		}
	}
	return outcome, errTypeOther
}

var sentinels = []struct {
	err  error
	name string
}{
	{storage.ErrNotFound, "storage.ErrNotFound"},
	{storage.ErrExpired, "storage.ErrExpired"},
	{storage.ErrConsumed, "storage.ErrConsumed"},
	{storage.ErrExhausted, "storage.ErrExhausted"},
	{storage.ErrConflict, "storage.ErrConflict"},
	{storage.ErrDuplicate, "storage.ErrDuplicate"},
	{storage.ErrTxDone, "storage.ErrTxDone"},
}

// safeError is err's message with the server's message text of a
// PostgreSQL error replaced by its SQLSTATE and constraint: that text may
// quote a value of the statement (an invalid input, a key), which must not
// reach a log.
func safeError(err error) string {
	msg := err.Error()
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		repl := "SQLSTATE " + pe.Code
		if pe.ConstraintName != "" {
			repl += " (constraint " + pe.ConstraintName + ")"
		}
		msg = strings.ReplaceAll(msg, pe.Error(), repl)
	}
	return msg
}

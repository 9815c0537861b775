package idempotency

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/walletgate/walletgate/apierror"
)

// scope is the instrumentation scope of the package's spans and metrics.
const scope = "github.com/walletgate/walletgate/storage/idempotency"

// Reasons: what became of a keyed request, the walletgate.reason
// of its metric, span and log records.
const (
	reasonExecuted    = "executed"     // ran; the response is stored for replay
	reasonReleased    = "released"     // ran; failed or not final, the key is free again
	reasonNotStored   = "not_stored"   // ran; storing the response failed
	reasonReplayed    = "replayed"     // answered with the stored response
	reasonMismatch    = "mismatch"     // 409: the key was used for another request
	reasonInProgress  = "in_progress"  // 409: the first request still runs
	reasonInvalidKey  = "invalid_key"  // 400: the header is not one UUID
	reasonInvalidBody = "invalid_body" // 400: the body is too large, unreadable or not JSON
	reasonNoScope     = "no_scope"     // 500: the host gave no scope
	reasonStore       = "store"        // 500: the store (or randomness) failed; nothing ran
)

var (
	keyOutcome = attribute.Key("walletgate.outcome")
	keyReason  = attribute.Key("walletgate.reason")
	keyCode    = attribute.Key("walletgate.code")
)

// telemetry holds what a Once records with, resolved once in New.
type telemetry struct {
	logger   *slog.Logger
	tracer   trace.Tracer
	outcomes metric.Int64Counter
}

func newTelemetry(cfg Config) (telemetry, error) {
	t := telemetry{}
	var m metric.Meter
	t.logger, t.tracer, m = cfg.Telemetry.Resolve(scope)
	var err error
	t.outcomes, err = m.Int64Counter("walletgate.idempotency.outcomes", metric.WithUnit("{request}"),
		metric.WithDescription("Keyed requests by what became of them (walletgate.reason) and their outcome."))
	if err != nil {
		return telemetry{}, fmt.Errorf("idempotency: creating the metrics: %w", err)
	}
	return t, nil
}

// requestID is the id apierror.Observe gave the request, "" when the
// request runs outside it.
func requestID(ctx context.Context) string { return apierror.RequestID(ctx) }

// outcome returns the walletgate.outcome of a reason.
func outcome(reason string) string {
	switch reason {
	case reasonExecuted, reasonReleased, reasonReplayed:
		return "ok"
	case reasonMismatch, reasonInProgress, reasonInvalidKey, reasonInvalidBody:
		return "refused"
	}
	return "error"
}

// record counts a keyed request's reason, sets it on span (when not nil)
// and logs it: Debug for an execution and a 400, Info for a replay and a
// 409, Error with the cause for a 500 or a response that could not be
// stored. err is the package's own error (never fn's).
func (t *telemetry) record(ctx context.Context, span trace.Span, reason string, err error) {
	out := outcome(reason)
	attrs := []attribute.KeyValue{keyOutcome.String(out), keyReason.String(reason)}
	code := ""
	if e := apierror.As(err); e != nil {
		code = e.Code.String()
		attrs = append(attrs, keyCode.String(code))
	}
	t.outcomes.Add(ctx, 1, metric.WithAttributes(attrs...))
	if span != nil {
		span.SetAttributes(attrs...)
		if out == "error" {
			span.SetStatus(codes.Error, reason)
		}
	}
	level := slog.LevelDebug
	switch {
	case out == "error":
		level = slog.LevelError
	case reason == reasonReplayed, reason == reasonMismatch, reason == reasonInProgress:
		level = slog.LevelInfo
	}
	if !t.logger.Enabled(ctx, level) {
		return
	}
	logAttrs := []slog.Attr{slog.String("operation", "idempotency"), slog.String("request_id", requestID(ctx)),
		slog.String("reason", reason)}
	if code != "" {
		logAttrs = append(logAttrs, slog.String("code", code))
	}
	if out == "error" && err != nil {
		logAttrs = append(logAttrs, slog.String("error", cause(err).Error()))
	}
	t.logger.LogAttrs(ctx, level, "idempotency: "+strings.ReplaceAll(reason, "_", " "), logAttrs...)
}

// storeFailed logs a failed bookkeeping write (release) after the request
// ran: the key stays reserved until its lease ends.
func (t *telemetry) storeFailed(ctx context.Context, what string, err error) {
	t.logger.LogAttrs(ctx, slog.LevelError, "idempotency: "+what+" failed", slog.String("operation", "idempotency"),
		slog.String("request_id", requestID(ctx)), slog.String("error", err.Error()))
}

// cause returns what an internal error wraps, the reason a 500 was written.
func cause(err error) error {
	if e := apierror.As(err); e != nil {
		if c := errors.Unwrap(e); c != nil {
			return c
		}
	}
	return err
}

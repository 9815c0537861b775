package sweep

import (
	"context"
	"fmt"
	"log/slog"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// scope is the instrumentation scope of the sweeper's spans and metrics.
const scope = "github.com/walletgate/walletgate/storage/sweep"

var attrDeleted = attribute.Key("walletgate.sweep.deleted")

// telemetry holds what a Sweeper records with, resolved once in New.
type telemetry struct {
	logger  *slog.Logger
	tracer  trace.Tracer
	deleted metric.Int64Counter
	failed  metric.Int64Counter
}

func newTelemetry(cfg Config) (telemetry, error) {
	t := telemetry{}
	var m metric.Meter
	t.logger, t.tracer, m = cfg.Telemetry.Resolve(scope)
	var err error
	if t.deleted, err = m.Int64Counter("walletgate.sweep.deleted", metric.WithUnit("{record}"),
		metric.WithDescription("Expired records deleted by the sweeper.")); err != nil {
		return telemetry{}, fmt.Errorf("sweep: creating the metrics: %w", err)
	}
	if t.failed, err = m.Int64Counter("walletgate.sweep.failures", metric.WithUnit("{sweep}"),
		metric.WithDescription("Sweeps that ended with an error of the store.")); err != nil {
		return telemetry{}, fmt.Errorf("sweep: creating the metrics: %w", err)
	}
	return t, nil
}

// ended records a finished RunOnce on its span.
func (t *telemetry) ended(ctx context.Context, span trace.Span, n int, err error) {
	span.SetAttributes(attrDeleted.Int(n))
	if n > 0 {
		t.deleted.Add(ctx, int64(n))
	}
	if err != nil && ctx.Err() == nil {
		t.failed.Add(ctx, 1)
		span.SetStatus(codes.Error, "the store failed")
	}
	span.End()
}

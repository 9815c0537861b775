package webhook

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/walletgate/walletgate/storage"
)

// scope is the instrumentation scope of the publisher's spans and metrics.
const scope = "github.com/walletgate/walletgate/storage/webhook"

var (
	keyOutcome    = attribute.Key("walletgate.outcome")
	keyEventType  = attribute.Key("walletgate.event.type")
	keyErrorType  = attribute.Key("error.type")
	keyStatus     = attribute.Key("http.response.status_code")
	keyServerAddr = attribute.Key("server.address")
	keyServerPort = attribute.Key("server.port")
	attrMethod    = attribute.String("http.request.method", "POST")
)

// telemetry holds what a Publisher records with, resolved once in
// NewPublisher.
type telemetry struct {
	logger     *slog.Logger
	tracer     trace.Tracer
	deliveries metric.Int64Counter
	duration   metric.Float64Histogram
}

func newTelemetry(cfg PublisherConfig) (telemetry, error) {
	t := telemetry{}
	var m metric.Meter
	t.logger, t.tracer, m = cfg.Telemetry.Resolve(scope)
	var err1, err2 error
	t.deliveries, err1 = m.Int64Counter("walletgate.webhook.deliveries", metric.WithUnit("{delivery}"),
		metric.WithDescription("Webhook deliveries by outcome (ok: 2xx or 409) and receiver status."))
	t.duration, err2 = m.Float64Histogram("walletgate.webhook.delivery.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of each webhook delivery, from signing to the receiver's answer."))
	if err := errors.Join(err1, err2); err != nil {
		return telemetry{}, fmt.Errorf("webhook: creating the metrics: %w", err)
	}
	return t, nil
}

// delivery is one Send being recorded.
type delivery struct {
	t     *telemetry
	ctx   context.Context
	span  trace.Span
	start time.Time
	e     storage.Event
}

// begin starts the "webhook.deliver" client span of e.
func (t *telemetry) begin(ctx context.Context, e storage.Event) (context.Context, *delivery) {
	ctx, span := t.tracer.Start(ctx, "webhook.deliver", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attrMethod, keyEventType.String(e.Type)))
	return ctx, &delivery{t: t, ctx: ctx, span: span, start: time.Now(), e: e}
}

// target records the receiver's host and port (never its path or query,
// which may carry a credential).
func (d *delivery) target(u *url.URL) {
	attrs := []attribute.KeyValue{keyServerAddr.String(u.Hostname())}
	port := u.Port()
	switch {
	case port != "":
	case u.Scheme == "https":
		port = "443"
	default:
		port = "80"
	}
	if n, err := strconv.Atoi(port); err == nil {
		attrs = append(attrs, keyServerPort.Int(n))
	}
	d.span.SetAttributes(attrs...)
}

// answered ends a delivery that got an HTTP answer.
func (d *delivery) answered(status int, delivered bool) {
	d.span.SetAttributes(keyStatus.Int(status))
	if delivered {
		d.end(keyOutcome.String("ok"), keyStatus.Int(status))
		return
	}
	typ := strconv.Itoa(status)
	d.span.SetAttributes(keyErrorType.String(typ))
	d.span.SetStatus(codes.Error, "the receiver answered "+typ)
	d.t.logger.LogAttrs(d.ctx, slog.LevelDebug, "webhook: delivery refused by the receiver", slog.String("operation", "webhook.deliver"),
		slog.String("event_id", d.e.ID), slog.String("event_type", d.e.Type), slog.Int("status", status))
	d.end(keyOutcome.String("error"), keyStatus.Int(status), keyErrorType.String(typ))
}

// failed ends a delivery that got no answer (transport), or was refused
// before sending (level Error: the event or the route is wrong).
func (d *delivery) failed(err error, sent bool) {
	typ := transportErrorType(err)
	level := slog.LevelDebug
	if !sent {
		typ, level = "not_sent", slog.LevelError
	}
	d.span.SetAttributes(keyErrorType.String(typ))
	d.span.SetStatus(codes.Error, typ)
	d.t.logger.LogAttrs(d.ctx, level, "webhook: delivery failed", slog.String("operation", "webhook.deliver"),
		slog.String("event_id", d.e.ID), slog.String("event_type", d.e.Type), slog.String("code", typ),
		slog.String("error", err.Error()))
	d.end(keyOutcome.String("error"), keyErrorType.String(typ))
}

func (d *delivery) end(attrs ...attribute.KeyValue) {
	attrs = append(attrs, keyEventType.String(d.e.Type))
	opt := metric.WithAttributes(attrs...)
	d.t.deliveries.Add(d.ctx, 1, opt)
	d.t.duration.Record(d.ctx, time.Since(d.start).Seconds(), opt)
	d.span.End()
}

// transportErrorType names a failure to get an answer: a timeout, the
// caller's context ending, a refused connection, or the error's Go type.
func transportErrorType(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, context.Canceled):
		return "context.Canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "context.DeadlineExceeded"
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		return "net." + oe.Op
	}
	var ue *url.Error
	if errors.As(err, &ue) && ue.Err != nil {
		return fmt.Sprintf("%T", ue.Err)
	}
	return fmt.Sprintf("%T", err)
}

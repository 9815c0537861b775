package signedretry

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/walletgate/walletgate/apierror"
)

// scope is the instrumentation scope of the package's tracer and meter.
const scope = "github.com/walletgate/walletgate/signedretry"

// Outcomes of an operation, the walletgate.outcome attribute: ok, refused
// (a 4xx answer: a refused signature, code or payout, a validation
// failure) or error (a 5xx answer).
const (
	outcomeOK      = "ok"
	outcomeRefused = "refused"
	outcomeError   = "error"
)

// telemetry is the logger, tracer and instruments of a service, resolved
// once by New. It records operation names, outcomes, error codes and
// durations: never an id, address, key, code, token or body.
type telemetry struct {
	log      *slog.Logger
	tracer   trace.Tracer
	duration metric.Float64Histogram
	attrs    *attrCache
	// noop is set when neither a tracer nor a meter provider was given:
	// operations then skip the clock reads and attribute sets.
	noop bool
}

// newTelemetry resolves the tracer and the meter of the providers (nil:
// no-op, never the global ones) and the operation duration histogram.
func newTelemetry(log *slog.Logger, tp trace.TracerProvider, mp metric.MeterProvider) (telemetry, metric.Meter, error) {
	t := telemetry{log: log, noop: tp == nil && mp == nil, attrs: &attrCache{m: map[attrKey]*attrs{}}}
	if t.log == nil {
		t.log = slog.New(slog.DiscardHandler)
	}
	if tp == nil {
		tp = tracenoop.NewTracerProvider()
	}
	if mp == nil {
		mp = metricnoop.NewMeterProvider()
	}
	t.tracer = tp.Tracer(scope)
	meter := mp.Meter(scope)
	var err error
	t.duration, err = meter.Float64Histogram("walletgate.signedretry.operation.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of signedretry operations, by walletgate.operation and walletgate.outcome."))
	return t, meter, err
}

// op is one operation in progress: its span, start and counter.
type op struct {
	t       *telemetry
	name    string
	counter metric.Int64Counter
	span    trace.Span
	start   time.Time
	// reason, when set, replaces details.reason in the Warn log.
	reason string
	// refused, when set, tells the other refusals worth a Warn log (a
	// wallet signature that does not verify is 400).
	refused func(error) bool
	// quiet leaves the Warn log of a refusal to another operation (the
	// one that reports the same error).
	quiet bool
}

// begin starts the span of the operation name, counted on counter when it
// ends.
func (t *telemetry) begin(ctx context.Context, name string, counter metric.Int64Counter) (context.Context, op) {
	o := op{t: t, name: name, counter: counter}
	if t.noop {
		return ctx, o
	}
	o.start = time.Now()
	ctx, o.span = t.tracer.Start(ctx, name)
	return ctx, o
}

// end records the outcome of the operation: err nil is ok, an error with a
// 4xx code refused, anything else error. extra attributes (low-cardinality
// only; empty strings are left out) go on the counter and the span. A
// refusal of authentication (401, 403, 429, and the 4xx refused tells) logs
// at Warn with the code and reason unless quiet; a 5xx's cause is
// logged by the HTTP adapter (apierror.Observe), once.
func (o *op) end(ctx context.Context, err error, extra ...attribute.KeyValue) {
	outcome, code, reason, status := outcomeOf(err)
	if o.reason != "" {
		reason = o.reason
	}
	if !o.quiet && (status == 401 || status == 403 || status == 429 || status < 500 && o.refused != nil && o.refused(err)) {
		o.t.warn(ctx, o.name, code, reason)
	}
	if o.t.noop {
		return
	}
	a := o.t.attrs.get(o.name, outcome, code, extra)
	if o.counter != nil {
		o.counter.Add(ctx, 1, a.set)
	}
	o.t.duration.Record(ctx, time.Since(o.start).Seconds(), a.set)
	if o.span.IsRecording() {
		o.span.SetAttributes(a.span...)
		if outcome == outcomeError {
			o.span.SetStatus(codes.Error, code)
		}
	}
	o.span.End()
}

// warn logs a refusal of authentication.
func (t *telemetry) warn(ctx context.Context, operation, code, reason string) {
	if !t.log.Enabled(ctx, slog.LevelWarn) {
		return
	}
	attrs := []slog.Attr{slog.String("operation", operation), slog.String("code", code)}
	if reason != "" {
		attrs = append(attrs, slog.String("reason", reason))
	}
	if id := apierror.RequestID(ctx); id != "" {
		attrs = append(attrs, slog.String("request_id", id))
	}
	t.log.LogAttrs(ctx, slog.LevelWarn, "refused", attrs...)
}

// outcomeOf classifies err: the outcome, the API error code, details.reason
// and the HTTP status.
func outcomeOf(err error) (outcome, code, reason string, status int) {
	if err == nil {
		return outcomeOK, "", "", 0
	}
	e := apierror.As(err)
	status = e.Status()
	code = e.Code.String()
	if e.Code.IsZero() {
		code = apierror.InternalError.String()
	}
	if status >= 500 {
		return outcomeError, code, "", status
	}
	reason = e.Reason()
	if reason == "" && e.Code == apierror.WalletSignatureInvalid {
		// The manager's WALLET_SIGNATURE_INVALID messages are fixed texts
		// naming the check that refused (the signature, or a signer that
		// is revoked, expired or not allowed): the reason of the log.
		reason = e.Message
	}
	return outcomeRefused, code, reason, status
}

// Operation names of signedretry: span names and walletgate.operation
// values.
const (
	opIssue    = "signedretry.issue"
	opComplete = "signedretry.complete"
)

// instruments are signedretry's counters.
type instruments struct {
	telemetry
	// outcomes counts issued challenges and completed retries by outcome
	// and code (WALLET_SIGNATURE_INVALID, REQUEST_ID_MISSING, ...).
	outcomes metric.Int64Counter
}

func newInstruments(cfg *Config) (*instruments, error) {
	t, meter, err := newTelemetry(cfg.Logger, cfg.TracerProvider, cfg.MeterProvider)
	if err != nil {
		return nil, err
	}
	in := &instruments{telemetry: t}
	in.outcomes, err = meter.Int64Counter("walletgate.signedretry.outcomes",
		metric.WithDescription("Signed-retry challenges issued and retries completed, by walletgate.operation, walletgate.outcome and walletgate.code."))
	return in, err
}

// attrKey is what the attributes of an outcome are made of.
type attrKey struct {
	name, outcome, code string
	extra               [2]attribute.KeyValue
}

// attrs are the attributes of an outcome: the metric option and the span's
// (error.type included).
type attrs struct {
	set  metric.MeasurementOption
	span []attribute.KeyValue
}

// attrCache keeps the attributes of each outcome seen, made once: their
// values are operation names, outcomes, codes and fixed reasons, so there
// are few. Beyond maxCachedAttrs they are made per call.
type attrCache struct {
	mu sync.RWMutex
	m  map[attrKey]*attrs
}

const maxCachedAttrs = 1024

// get returns the attributes of an outcome; extra attributes with an empty
// string value are left out, and at most two are kept.
func (c *attrCache) get(name, outcome, code string, extra []attribute.KeyValue) *attrs {
	k := attrKey{name: name, outcome: outcome, code: code}
	n := 0
	for _, kv := range extra {
		if (kv.Value.Type() != attribute.STRING || kv.Value.AsString() != "") && n < len(k.extra) {
			k.extra[n] = kv
			n++
		}
	}
	c.mu.RLock()
	a := c.m[k]
	c.mu.RUnlock()
	if a != nil {
		return a
	}
	kvs := []attribute.KeyValue{attribute.String("walletgate.operation", name), attribute.String("walletgate.outcome", outcome)}
	if code != "" {
		kvs = append(kvs, attribute.String("walletgate.code", code))
	}
	kvs = append(kvs, k.extra[:n]...)
	a = &attrs{set: metric.WithAttributeSet(attribute.NewSet(slices.Clone(kvs)...))} // NewSet sorts what it is given
	if code != "" {
		kvs = append(kvs, attribute.String("error.type", code))
	}
	a.span = kvs
	c.mu.Lock()
	if len(c.m) < maxCachedAttrs {
		c.m[k] = a
	}
	c.mu.Unlock()
	return a
}

// Package operation records each operation's outcome — ok, refused (a 4xx
// answer) or error (a 5xx answer), by API error code — as a span, a count
// on the operation's counter, a duration histogram and, for refusals of
// authentication, a Warn log with the request id. An operation begun inside
// another one's span (a signed-retry step of a verification, say) is a step
// of it: an event on that span, with the same attributes, rather than a
// span of its own; it is counted and timed like any other. It records operation
// names, outcomes, error codes, durations and the low-cardinality
// attributes its caller adds: never an id, address, key, code, token or
// body. A [Recorder] without a tracer or meter provider (or with
// OpenTelemetry's no-op ones) costs about nothing: no clock reads, no
// spans, no attribute sets. [Telemetry] is the logger and providers every
// walletgate Config takes in one field.
package operation

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

// Outcomes of an operation, the walletgate.outcome attribute.
const (
	outcomeOK      = "ok"      // the operation returned no error
	outcomeRefused = "refused" // a 4xx answer: a refused signature, code or payout, a validation failure
	outcomeError   = "error"   // a 5xx answer
)

// Telemetry is where a walletgate component reports: every walletgate
// Config takes one. Each field is optional: a nil Logger discards, a nil
// provider is a no-op one, never OpenTelemetry's global, so the zero
// value reports nothing and costs about nothing. Nothing secret reaches
// its logger, spans or metrics.
type Telemetry struct {
	// Logger receives the component's log records.
	Logger *slog.Logger
	// TracerProvider receives its spans.
	TracerProvider trace.TracerProvider
	// MeterProvider receives its metrics.
	MeterProvider metric.MeterProvider
}

// Config configures a [Recorder]. The zero value records nothing but the
// Warn logs, which it discards.
type Config struct {
	// Scope is the instrumentation scope of the tracer and the meter: the
	// import path of the package whose operations are recorded.
	Scope string
	// Telemetry receives the Warn logs of refusals of authentication, the
	// spans and the metrics.
	Telemetry Telemetry
	// Duration and DurationDescription are the name and the description of
	// the histogram of operation durations, in seconds, by
	// walletgate.operation, walletgate.outcome and walletgate.code.
	Duration            string
	DurationDescription string
	// Reason, when set, is the reason a refusal's Warn log gives for e;
	// nil gives details.reason.
	Reason func(e *apierror.Error) string
}

// Recorder is the logger, tracer and duration histogram of a package's
// operations, resolved once by [New]. It is safe for concurrent use.
type Recorder struct {
	log      *slog.Logger
	tracer   trace.Tracer
	meter    metric.Meter
	duration metric.Float64Histogram
	reason   func(*apierror.Error) string
	attrs    attrCache
	// noop is set when neither provider records (each nil or a no-op
	// one): operations then skip the clock reads and attribute sets.
	noop bool
}

// Resolve returns t's logger (never nil: a discarding one for a nil
// Logger) and the tracer and meter of the instrumentation scope (no-op
// ones for a nil provider, never OpenTelemetry's global).
func (t Telemetry) Resolve(scope string) (*slog.Logger, trace.Tracer, metric.Meter) {
	logger, tp, mp := t.Logger, t.TracerProvider, t.MeterProvider
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if tp == nil {
		tp = tracenoop.NewTracerProvider()
	}
	if mp == nil {
		mp = metricnoop.NewMeterProvider()
	}
	return logger, tp.Tracer(scope), mp.Meter(scope)
}

// isNoop reports whether t's providers record nothing: each nil or
// OpenTelemetry's no-op provider.
func (t Telemetry) isNoop() bool {
	switch t.TracerProvider.(type) {
	case nil, tracenoop.TracerProvider, *tracenoop.TracerProvider:
	default:
		return false
	}
	switch t.MeterProvider.(type) {
	case nil, metricnoop.MeterProvider, *metricnoop.MeterProvider:
		return true
	}
	return false
}

// New resolves the tracer and the meter of cfg's providers and the
// duration histogram; it fails when the meter refuses the histogram (the
// SDK refuses an empty or malformed name).
func New(cfg Config) (*Recorder, error) {
	r := &Recorder{reason: cfg.Reason, noop: cfg.Telemetry.isNoop(), attrs: attrCache{m: map[attrKey]*attrs{}}}
	r.log, r.tracer, r.meter = cfg.Telemetry.Resolve(cfg.Scope)
	var err error
	r.duration, err = r.meter.Float64Histogram(cfg.Duration, metric.WithUnit("s"),
		metric.WithDescription(cfg.DurationDescription))
	if err != nil {
		return nil, err
	}
	return r, nil
}

// Records reports whether the Recorder records spans or metrics: false
// when neither provider records (each nil or a no-op one), when Begin and
// End only log.
func (r *Recorder) Records() bool { return !r.noop }

// Meter is the meter of the Recorder's scope, for the package's own
// counters (a no-op meter when no MeterProvider was given).
func (r *Recorder) Meter() metric.Meter { return r.meter }

// Logger is the logger of the Warn logs: Config.Telemetry.Logger, or a
// logger that discards everything when it was nil. It is never nil.
func (r *Recorder) Logger() *slog.Logger { return r.log }

// Op is one operation in progress, from [Recorder.Begin] to [Op.End]. Its
// exported fields tune the Warn log of a refusal; set them before End.
type Op struct {
	r       *Recorder
	name    string
	counter metric.Int64Counter
	span    trace.Span // nil for a step
	parent  trace.Span // the enclosing operation's span, for a step
	start   time.Time
	// Reason, when set, replaces the refusal's reason in the Warn log.
	Reason string
	// Refused, when set, tells the other 4xx refusals worth a Warn log (a
	// wallet signature that does not verify is 400).
	Refused func(error) bool
	// Quiet leaves the Warn log of a refusal to another operation (the one
	// that reports the same error).
	Quiet bool
}

// enclosingKey is the context key of the recording span of the operation
// in progress, which the operations begun inside it are steps of.
type enclosingKey struct{}

// Begin starts the span of the operation name, counted on counter (nil:
// not counted) when it ends. name is the span name and the
// walletgate.operation value: a constant, never a value of the request.
// Inside the recording span of another operation begun by any Recorder,
// the operation is a step of that one: no span of its own starts, and End
// adds an event named name to the enclosing span.
func (r *Recorder) Begin(ctx context.Context, name string, counter metric.Int64Counter) (context.Context, Op) {
	o := Op{r: r, name: name, counter: counter}
	if r.noop {
		return ctx, o
	}
	o.start = time.Now()
	if parent, ok := ctx.Value(enclosingKey{}).(trace.Span); ok {
		o.parent = parent
		return ctx, o
	}
	ctx, o.span = r.tracer.Start(ctx, name)
	if o.span.IsRecording() {
		ctx = context.WithValue(ctx, enclosingKey{}, o.span)
	}
	return ctx, o
}

// End records the outcome of the operation: err nil is ok, an error with a
// 4xx code refused, anything else error. extra attributes (low-cardinality
// only; those with an empty string value are left out, and at most two are
// kept) go on the counter, the histogram and the span; walletgate.code and,
// on the span, error.type carry the code of an error, and the span of an
// error has status Error. A refusal of authentication (401, 403, 429, and
// the 4xx refusals Refused tells) logs at Warn with the code and reason
// unless Quiet; a 5xx's cause is logged by the HTTP adapter
// ([apierror.Observe]), once. A step's attributes go on its event.
func (o *Op) End(ctx context.Context, err error, extra ...attribute.KeyValue) {
	outcome, code, reason, status := o.r.outcomeOf(err)
	if o.Reason != "" {
		reason = o.Reason
	}
	if !o.Quiet && (status == 401 || status == 403 || status == 429 || status < 500 && o.Refused != nil && o.Refused(err)) {
		o.r.Warn(ctx, o.name, code, reason)
	}
	if o.r.noop {
		return
	}
	a := o.r.attrs.get(o.name, outcome, code, extra)
	if o.counter != nil {
		o.counter.Add(ctx, 1, a.add...)
	}
	o.r.duration.Record(ctx, time.Since(o.start).Seconds(), a.record...)
	if o.parent != nil {
		o.parent.AddEvent(o.name, trace.WithAttributes(a.span...))
		return
	}
	if o.span.IsRecording() {
		o.span.SetAttributes(a.span...)
		if outcome == outcomeError {
			o.span.SetStatus(codes.Error, code)
		}
	}
	o.span.End()
}

// Warn logs a refusal of authentication of operation at slog.LevelWarn,
// message "refused", with the API error code, the reason when not empty
// and the request id [apierror.Observe] put in ctx, if any.
func (r *Recorder) Warn(ctx context.Context, operation, code, reason string) {
	if !r.log.Enabled(ctx, slog.LevelWarn) {
		return
	}
	attrs := []slog.Attr{slog.String("operation", operation), slog.String("code", code)}
	if reason != "" {
		attrs = append(attrs, slog.String("reason", reason))
	}
	if id := apierror.RequestID(ctx); id != "" {
		attrs = append(attrs, slog.String("request_id", id))
	}
	r.log.LogAttrs(ctx, slog.LevelWarn, "refused", attrs...)
}

// outcomeOf classifies err: the outcome, the API error code, the reason of
// a refusal and the HTTP status.
func (r *Recorder) outcomeOf(err error) (outcome, code, reason string, status int) {
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
	if r.reason != nil {
		return outcomeRefused, code, r.reason(e), status
	}
	return outcomeRefused, code, e.Reason(), status
}

// attrKey is what the attributes of an outcome are made of.
type attrKey struct {
	name, outcome, code string
	extra               [2]attribute.KeyValue
}

// attrs are the attributes of an outcome: the metric options (made once,
// so that a measurement allocates no option slice) and the span's
// (error.type included).
type attrs struct {
	add    []metric.AddOption
	record []metric.RecordOption
	span   []attribute.KeyValue
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
	set := metric.WithAttributeSet(attribute.NewSet(slices.Clone(kvs)...)) // NewSet sorts what it is given
	a = &attrs{add: []metric.AddOption{set}, record: []metric.RecordOption{set}}
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

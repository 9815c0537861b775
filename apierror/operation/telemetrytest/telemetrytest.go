// Package telemetrytest records everything a walletgate component reports —
// every span, every metric and every log record — so tests can assert on
// it and scan it for secrets.
//
// It is test support: it imports the OpenTelemetry SDK, which walletgate's
// library packages never do (they take an [operation.Telemetry] through
// their Config and depend on the OpenTelemetry API alone). Import it only from _test.go
// files; a test of this package fails when any non-test package of the
// module outside examples imports it or the SDK.
package telemetrytest

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/walletgate/walletgate/apierror/operation"
)

// Capture records the spans, metrics and log records of whatever is given
// its TracerProvider, MeterProvider and Logger: spans through the SDK's
// in-memory span recorder (every span sampled), metrics through a manual
// reader (cumulative, read on demand) and log records through a handler
// that keeps every record at every level. It is safe for concurrent use.
type Capture struct {
	// TracerProvider records every span it starts; Spans and Ended return
	// them once ended.
	TracerProvider *sdktrace.TracerProvider
	// MeterProvider records every measurement; Collect reads them.
	MeterProvider *sdkmetric.MeterProvider
	// Logger keeps every record, Debug included; Logs returns them.
	Logger *slog.Logger

	spans  *tracetest.SpanRecorder
	reader *sdkmetric.ManualReader
	logs   *logStore
}

// New returns a Capture whose providers are shut down when tb ends.
func New(tb testing.TB) *Capture {
	tb.Helper()
	c := &Capture{spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader(), logs: &logStore{}}
	c.TracerProvider = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(c.spans))
	c.MeterProvider = sdkmetric.NewMeterProvider(sdkmetric.WithReader(c.reader))
	c.Logger = slog.New(&handler{store: c.logs})
	tb.Cleanup(func() {
		_ = c.TracerProvider.Shutdown(context.Background())
		_ = c.MeterProvider.Shutdown(context.Background())
	})
	return c
}

// Telemetry is the Capture's Logger, TracerProvider and MeterProvider, for
// the Telemetry field of a walletgate Config.
func (c *Capture) Telemetry() operation.Telemetry {
	return operation.Telemetry{Logger: c.Logger, TracerProvider: c.TracerProvider, MeterProvider: c.MeterProvider}
}

// Discarding returns SDK providers that do all the work of recording —
// every span sampled and exported in batches to an exporter that drops
// them, every measurement aggregated for a manual reader nobody reads — and
// keep nothing, so a benchmark measures what the SDK costs without memory
// growing with b.N. Both are shut down when tb ends.
func Discarding(tb testing.TB) (*sdktrace.TracerProvider, *sdkmetric.MeterProvider) {
	return discarding(tb, sdktrace.WithBatcher(tracetest.NewNoopExporter()))
}

// DiscardingSync is Discarding with each span handed to the exporter by
// the goroutine that ends it (the SDK's WithSyncer) instead of queued for
// the batching processor's goroutine. Beside Discarding, a benchmark tells
// the cost of that queue (the processor's goroutine woken for each span
// that finds it idle) from the cost of the rest of the SDK.
func DiscardingSync(tb testing.TB) (*sdktrace.TracerProvider, *sdkmetric.MeterProvider) {
	return discarding(tb, sdktrace.WithSyncer(tracetest.NewNoopExporter()))
}

// SDKVariant is a configuration of the SDK a benchmark of telemetry's cost
// runs under its Name.
type SDKVariant struct {
	Name      string
	Providers func(testing.TB) (*sdktrace.TracerProvider, *sdkmetric.MeterProvider)
}

// SDKVariants are the SDK configurations a benchmark of telemetry's cost
// runs: sdk (Discarding) and sdk-sync (DiscardingSync).
var SDKVariants = []SDKVariant{{"sdk", Discarding}, {"sdk-sync", DiscardingSync}}

func discarding(tb testing.TB, spans sdktrace.TracerProviderOption) (*sdktrace.TracerProvider, *sdkmetric.MeterProvider) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), spans)
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	tb.Cleanup(func() {
		_ = tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	return tp, mp
}

// Spans returns every span ended so far, in the order they ended.
func (c *Capture) Spans() []sdktrace.ReadOnlySpan { return c.spans.Ended() }

// Ended returns the spans named name ended so far, in the order they ended.
func (c *Capture) Ended(name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range c.spans.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// SpanAttr returns the value of the attribute key of s and whether s has it.
func SpanAttr(s sdktrace.ReadOnlySpan, key attribute.Key) (attribute.Value, bool) {
	for _, kv := range s.Attributes() {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

// Collect reads the metrics recorded so far (cumulative since New), failing
// tb when the reader fails.
func (c *Capture) Collect(tb testing.TB) metricdata.ResourceMetrics {
	tb.Helper()
	var rm metricdata.ResourceMetrics
	if err := c.reader.Collect(context.Background(), &rm); err != nil {
		tb.Fatal(err)
	}
	return rm
}

// Metric returns the metric named name, failing tb when none was recorded.
func (c *Capture) Metric(tb testing.TB, name string) metricdata.Metrics {
	tb.Helper()
	for _, sm := range c.Collect(tb).ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				return m
			}
		}
	}
	tb.Fatalf("no metric %s", name)
	return metricdata.Metrics{}
}

// Sum adds up the points of the int64 counter name whose attributes include
// every one of want. It fails tb when name was not recorded or is not an
// int64 sum.
func (c *Capture) Sum(tb testing.TB, name string, want ...attribute.KeyValue) int64 {
	tb.Helper()
	m := c.Metric(tb, name)
	s, ok := m.Data.(metricdata.Sum[int64])
	if !ok {
		tb.Fatalf("%s is a %T, not an int64 sum", name, m.Data)
	}
	var n int64
	for _, p := range s.DataPoints {
		if hasAll(p.Attributes, want) {
			n += p.Value
		}
	}
	return n
}

// Count returns the number of measurements of the float64 histogram name
// whose attributes include every one of want. It fails tb when name was not
// recorded or is not a float64 histogram, and reports an error when its
// unit is not "s": walletgate records every duration in seconds.
func (c *Capture) Count(tb testing.TB, name string, want ...attribute.KeyValue) uint64 {
	tb.Helper()
	m := c.Metric(tb, name)
	h, ok := m.Data.(metricdata.Histogram[float64])
	if !ok {
		tb.Fatalf("%s is a %T, not a float64 histogram", name, m.Data)
	}
	if m.Unit != "s" {
		tb.Errorf("%s has unit %q, want s", name, m.Unit)
	}
	var n uint64
	for _, p := range h.DataPoints {
		if hasAll(p.Attributes, want) {
			n += p.Count
		}
	}
	return n
}

// Gauge returns the value of the first point of the gauge name (int64 or
// float64) and whether it has one. It fails tb when name is recorded as
// something other than a gauge.
func (c *Capture) Gauge(tb testing.TB, name string) (float64, bool) {
	tb.Helper()
	var m metricdata.Metrics
	for _, sm := range c.Collect(tb).ScopeMetrics {
		for _, x := range sm.Metrics {
			if x.Name == name {
				m = x
			}
		}
	}
	switch g := m.Data.(type) {
	case metricdata.Gauge[int64]:
		if len(g.DataPoints) == 0 {
			return 0, false
		}
		return float64(g.DataPoints[0].Value), true
	case metricdata.Gauge[float64]:
		if len(g.DataPoints) == 0 {
			return 0, false
		}
		return g.DataPoints[0].Value, true
	}
	if m.Data != nil {
		tb.Fatalf("%s is a %T, not a gauge", name, m.Data)
	}
	return 0, false
}

func hasAll(set attribute.Set, want []attribute.KeyValue) bool {
	for _, kv := range want {
		v, ok := set.Value(kv.Key)
		if !ok || v != kv.Value {
			return false
		}
	}
	return true
}

// Records returns everything captured so far as text, one line an item:
//
//	span NAME kind=K status=CODE/DESC scope=S k=v ... event=E k=v ... link.k=v ...
//	metric NAME unit=U desc=D scope=S k=v ...   (one line a data point)
//	log LEVEL MESSAGE k=v ...                    (as [Log.Text])
//
// Attribute values are rendered as the SDK emits them. It fails tb on a
// metric of a data type it does not render, so nothing recorded goes
// unscanned.
func (c *Capture) Records(tb testing.TB) []string {
	tb.Helper()
	var out []string
	for _, s := range c.spans.Ended() {
		var b strings.Builder
		fmt.Fprintf(&b, "span %s kind=%v status=%v/%s scope=%s", s.Name(), s.SpanKind(), s.Status().Code, s.Status().Description, s.InstrumentationScope().Name)
		for _, kv := range s.Attributes() {
			fmt.Fprintf(&b, " %s=%s", kv.Key, kv.Value.Emit())
		}
		for _, ev := range s.Events() {
			fmt.Fprintf(&b, " event=%s", ev.Name)
			for _, kv := range ev.Attributes {
				fmt.Fprintf(&b, " %s=%s", kv.Key, kv.Value.Emit())
			}
		}
		for _, l := range s.Links() {
			for _, kv := range l.Attributes {
				fmt.Fprintf(&b, " link.%s=%s", kv.Key, kv.Value.Emit())
			}
		}
		out = append(out, b.String())
	}
	for _, sm := range c.Collect(tb).ScopeMetrics {
		for _, m := range sm.Metrics {
			head := fmt.Sprintf("metric %s unit=%s desc=%s scope=%s", m.Name, m.Unit, m.Description, sm.Scope.Name)
			sets, ok := attributeSets(m.Data)
			if !ok {
				tb.Fatalf("metric %s: data of type %T is not scanned", m.Name, m.Data)
			}
			if len(sets) == 0 {
				out = append(out, head)
			}
			for _, set := range sets {
				var b strings.Builder
				b.WriteString(head)
				for _, kv := range set.ToSlice() {
					fmt.Fprintf(&b, " %s=%s", kv.Key, kv.Value.Emit())
				}
				out = append(out, b.String())
			}
		}
	}
	for _, l := range c.Lines() {
		out = append(out, "log "+l)
	}
	return out
}

// attributeSets returns the attributes of every data point of d, and false
// for a data type it does not know.
func attributeSets(d metricdata.Aggregation) ([]attribute.Set, bool) {
	var sets []attribute.Set
	switch d := d.(type) {
	case metricdata.Sum[int64]:
		for _, p := range d.DataPoints {
			sets = append(sets, p.Attributes)
		}
	case metricdata.Sum[float64]:
		for _, p := range d.DataPoints {
			sets = append(sets, p.Attributes)
		}
	case metricdata.Gauge[int64]:
		for _, p := range d.DataPoints {
			sets = append(sets, p.Attributes)
		}
	case metricdata.Gauge[float64]:
		for _, p := range d.DataPoints {
			sets = append(sets, p.Attributes)
		}
	case metricdata.Histogram[float64]:
		for _, p := range d.DataPoints {
			sets = append(sets, p.Attributes)
		}
	case metricdata.Histogram[int64]:
		for _, p := range d.DataPoints {
			sets = append(sets, p.Attributes)
		}
	default:
		return nil, false
	}
	return sets, true
}

// NoSecrets fails tb unless something was recorded, and reports an error
// for every secret found in what was: every span's name, kind, status
// message, attributes, events and their attributes and links' attributes;
// every metric's name, unit, description, data points' attributes and
// values (each data point rendered whole); every log record's level,
// message and attributes (its logger's included). An empty secret fails
// tb, as it would match everything.
func (c *Capture) NoSecrets(tb testing.TB, secrets ...string) {
	tb.Helper()
	texts := c.Records(tb)
	for _, sm := range c.Collect(tb).ScopeMetrics {
		for _, m := range sm.Metrics {
			texts = append(texts, fmt.Sprintf("%+v", m.Data))
		}
	}
	if len(texts) == 0 {
		tb.Fatal("nothing recorded to scan")
	}
	for _, secret := range secrets {
		if secret == "" {
			tb.Fatal("empty secret")
		}
		for _, s := range texts {
			if strings.Contains(s, secret) {
				tb.Errorf("secret %q recorded in %q", secret, s)
			}
		}
	}
}

// Leaks returns, for each record that contains a secret (a key of secrets,
// each naming what it is), a line "WHAT in RECORD"; nil when none does.
// Empty secrets are ignored.
func Leaks(records []string, secrets map[string]string) []string {
	var out []string
	for _, r := range records {
		for v, what := range secrets {
			if v != "" && strings.Contains(r, v) {
				out = append(out, fmt.Sprintf("%s in %q", what, r))
			}
		}
	}
	return out
}

// Log is one record the Logger handled.
type Log struct {
	Level   slog.Level
	Message string
	// Attrs maps the key of each attribute of the record and of its logger
	// (With) to its resolved value as text; a key given twice keeps the
	// record's own value. Groups do not prefix the keys.
	Attrs map[string]string
	// Text is "LEVEL MESSAGE" followed by " key=value" for the logger's
	// attributes and groups (" group=NAME") in the order given, then the
	// record's attributes in order.
	Text string
}

// Logs returns every record handled so far, in order.
func (c *Capture) Logs() []Log {
	c.logs.mu.Lock()
	defer c.logs.mu.Unlock()
	return append([]Log(nil), c.logs.recs...)
}

// Lines returns the Text of every record handled so far, in order.
func (c *Capture) Lines() []string {
	var out []string
	for _, l := range c.Logs() {
		out = append(out, l.Text)
	}
	return out
}

// Find returns the records at level whose message contains msg ("" matches
// every message), in order.
func (c *Capture) Find(level slog.Level, msg string) []Log {
	var out []Log
	for _, r := range c.Logs() {
		if r.Level == level && strings.Contains(r.Message, msg) {
			out = append(out, r)
		}
	}
	return out
}

// logStore holds the records of a handler and of the handlers derived from it.
type logStore struct {
	mu   sync.Mutex
	recs []Log
}

// handler is a slog.Handler keeping every record in its store.
type handler struct {
	store  *logStore
	attrs  []slog.Attr // of WithAttrs, in order
	prefix string      // WithAttrs and WithGroup rendered
}

func (h *handler) Enabled(context.Context, slog.Level) bool { return true }

func (h *handler) Handle(_ context.Context, r slog.Record) error {
	l := Log{Level: r.Level, Message: r.Message, Attrs: make(map[string]string, len(h.attrs)+r.NumAttrs())}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s%s", r.Level, r.Message, h.prefix)
	for _, a := range h.attrs {
		l.Attrs[a.Key] = a.Value.Resolve().String()
	}
	r.Attrs(func(a slog.Attr) bool {
		v := a.Value.Resolve().String()
		l.Attrs[a.Key] = v
		fmt.Fprintf(&b, " %s=%s", a.Key, v)
		return true
	})
	l.Text = b.String()
	h.store.mu.Lock()
	h.store.recs = append(h.store.recs, l)
	h.store.mu.Unlock()
	return nil
}

func (h *handler) WithAttrs(as []slog.Attr) slog.Handler {
	p := h.prefix
	for _, a := range as {
		p += fmt.Sprintf(" %s=%s", a.Key, a.Value.Resolve().String())
	}
	return &handler{store: h.store, attrs: append(append([]slog.Attr(nil), h.attrs...), as...), prefix: p}
}

func (h *handler) WithGroup(name string) slog.Handler {
	return &handler{store: h.store, attrs: h.attrs, prefix: h.prefix + " group=" + name}
}

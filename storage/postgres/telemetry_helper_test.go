package postgres_test

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
)

// capture records the spans, metrics and logs a component emits, through
// the OpenTelemetry SDK's in-memory span recorder, a manual metric reader
// and a capturing slog handler.
type capture struct {
	spans  *tracetest.SpanRecorder
	reader *sdkmetric.ManualReader
	logs   *logSink
	tp     *sdktrace.TracerProvider
	mp     *sdkmetric.MeterProvider
	logger *slog.Logger
}

func newCapture(t testing.TB) *capture {
	t.Helper()
	c := &capture{spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader(), logs: &logSink{}}
	c.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(c.spans))
	c.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(c.reader))
	c.logger = slog.New(c.logs)
	t.Cleanup(func() {
		_ = c.tp.Shutdown(context.Background())
		_ = c.mp.Shutdown(context.Background())
	})
	return c
}

// ended returns the ended spans named name.
func (c *capture) ended(name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range c.spans.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// collect reads the metrics recorded so far.
func (c *capture) collect(t testing.TB) metricdata.ResourceMetrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := c.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	return rm
}

// metric returns the metric named name, failing the test when there is none.
func (c *capture) metric(t testing.TB, name string) metricdata.Metrics {
	t.Helper()
	for _, sm := range c.collect(t).ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				return m
			}
		}
	}
	t.Fatalf("no metric %s", name)
	return metricdata.Metrics{}
}

// sum adds up the int64 counter points of name whose attributes include
// every one of want.
func (c *capture) sum(t testing.TB, name string, want ...attribute.KeyValue) int64 {
	t.Helper()
	m := c.metric(t, name)
	s, ok := m.Data.(metricdata.Sum[int64])
	if !ok {
		t.Fatalf("%s is a %T, not an int64 sum", name, m.Data)
	}
	var n int64
	for _, p := range s.DataPoints {
		if hasAll(p.Attributes, want) {
			n += p.Value
		}
	}
	return n
}

// count returns the number of histogram measurements of name whose
// attributes include every one of want.
func (c *capture) count(t testing.TB, name string, want ...attribute.KeyValue) uint64 {
	t.Helper()
	m := c.metric(t, name)
	h, ok := m.Data.(metricdata.Histogram[float64])
	if !ok {
		t.Fatalf("%s is a %T, not a float64 histogram", name, m.Data)
	}
	if m.Unit != "s" {
		t.Errorf("%s has unit %q, want s", name, m.Unit)
	}
	var n uint64
	for _, p := range h.DataPoints {
		if hasAll(p.Attributes, want) {
			n += p.Count
		}
	}
	return n
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

// spanAttr returns the value of attribute key of s.
func spanAttr(s sdktrace.ReadOnlySpan, key attribute.Key) (attribute.Value, bool) {
	for _, kv := range s.Attributes() {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

// noSecrets fails the test when any recorded span (name, attributes,
// events, status), metric (name, attributes) or log record (message,
// attributes) contains one of secrets.
func (c *capture) noSecrets(t testing.TB, secrets ...string) {
	t.Helper()
	var texts []string
	for _, s := range c.spans.Ended() {
		texts = append(texts, s.Name(), s.Status().Description)
		for _, kv := range s.Attributes() {
			texts = append(texts, string(kv.Key)+"="+kv.Value.Emit())
		}
		for _, e := range s.Events() {
			texts = append(texts, e.Name)
			for _, kv := range e.Attributes {
				texts = append(texts, string(kv.Key)+"="+kv.Value.Emit())
			}
		}
	}
	for _, sm := range c.collect(t).ScopeMetrics {
		for _, m := range sm.Metrics {
			texts = append(texts, m.Name)
			texts = append(texts, fmt.Sprintf("%+v", m.Data))
		}
	}
	texts = append(texts, c.logs.texts()...)
	if len(texts) == 0 {
		t.Fatal("nothing recorded to scan")
	}
	for _, secret := range secrets {
		if secret == "" {
			t.Fatal("empty secret")
		}
		for _, s := range texts {
			if strings.Contains(s, secret) {
				t.Errorf("secret %q recorded in %q", secret, s)
			}
		}
	}
}

// logSink is a slog.Handler keeping every record, with the attributes of
// WithAttrs and the groups of WithGroup flattened into it.
type logSink struct {
	mu      sync.Mutex
	records []logRecord
	attrs   []slog.Attr
	parent  *logSink
}

type logRecord struct {
	Level   slog.Level
	Message string
	Attrs   map[string]string
}

func (h *logSink) root() *logSink {
	for h.parent != nil {
		h = h.parent
	}
	return h
}

func (h *logSink) Enabled(context.Context, slog.Level) bool { return true }

func (h *logSink) Handle(_ context.Context, r slog.Record) error {
	rec := logRecord{Level: r.Level, Message: r.Message, Attrs: map[string]string{}}
	for _, a := range h.attrs {
		rec.Attrs[a.Key] = a.Value.String()
	}
	r.Attrs(func(a slog.Attr) bool {
		rec.Attrs[a.Key] = a.Value.Resolve().String()
		return true
	})
	root := h.root()
	root.mu.Lock()
	root.records = append(root.records, rec)
	root.mu.Unlock()
	return nil
}

func (h *logSink) WithAttrs(as []slog.Attr) slog.Handler {
	return &logSink{parent: h, attrs: append(append([]slog.Attr(nil), h.attrs...), as...)}
}

func (h *logSink) WithGroup(string) slog.Handler { return h }

// all returns the records so far.
func (h *logSink) all() []logRecord {
	root := h.root()
	root.mu.Lock()
	defer root.mu.Unlock()
	return append([]logRecord(nil), root.records...)
}

// find returns the records at level whose message contains msg.
func (h *logSink) find(level slog.Level, msg string) []logRecord {
	var out []logRecord
	for _, r := range h.all() {
		if r.Level == level && strings.Contains(r.Message, msg) {
			out = append(out, r)
		}
	}
	return out
}

func (h *logSink) texts() []string {
	var out []string
	for _, r := range h.all() {
		out = append(out, r.Message)
		for k, v := range r.Attrs {
			out = append(out, k+"="+v)
		}
	}
	return out
}

// gauge returns the last value of the gauge name (int64 or float64) and
// whether it has one.
func (c *capture) gauge(t testing.TB, name string) (float64, bool) {
	t.Helper()
	var m metricdata.Metrics
	for _, sm := range c.collect(t).ScopeMetrics {
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
		t.Fatalf("%s is a %T, not a gauge", name, m.Data)
	}
	return 0, false
}

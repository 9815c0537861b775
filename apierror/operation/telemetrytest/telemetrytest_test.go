package telemetrytest_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/operation/telemetrytest"
)

// record reports one of everything: a span with an attribute, an event and
// an error status, a counter, a histogram in seconds, a gauge and a log
// record through a logger with attributes and a group.
func record(c *telemetrytest.Capture, secret string) {
	ctx := context.Background()
	_, span := c.TracerProvider.Tracer("t").Start(ctx, "op.do")
	span.SetAttributes(attribute.String("walletgate.outcome", "refused"))
	span.AddEvent("retry", trace.WithAttributes(attribute.String("walletgate.attempt", secret)))
	span.SetStatus(codes.Error, "refused")
	span.End()
	m := c.MeterProvider.Meter("t")
	n, _ := m.Int64Counter("op.outcomes")
	n.Add(ctx, 2, metric.WithAttributes(attribute.String("walletgate.outcome", "ok")))
	n.Add(ctx, 1, metric.WithAttributes(attribute.String("walletgate.outcome", "refused")))
	d, _ := m.Float64Histogram("op.duration", metric.WithUnit("s"))
	d.Record(ctx, 0.25)
	g, _ := m.Int64Gauge("op.backlog")
	g.Record(ctx, 7)
	c.Logger.With("component", "op").WithGroup("g").Warn("refused", "code", "UNAUTHORIZED")
}

func TestCapture(t *testing.T) {
	c := telemetrytest.New(t)
	record(c, "attempt-1")

	if s := c.Ended("op.do"); len(s) != 1 || len(c.Spans()) != 1 {
		t.Fatalf("spans %v", c.Spans())
	} else if v, ok := telemetrytest.SpanAttr(s[0], "walletgate.outcome"); !ok || v.AsString() != "refused" {
		t.Fatalf("outcome %v %v", v, ok)
	}
	if n := c.Sum(t, "op.outcomes"); n != 3 {
		t.Fatalf("sum %d", n)
	}
	if n := c.Sum(t, "op.outcomes", attribute.String("walletgate.outcome", "ok")); n != 2 {
		t.Fatalf("sum of ok %d", n)
	}
	if n := c.Count(t, "op.duration"); n != 1 {
		t.Fatalf("count %d", n)
	}
	if v, ok := c.Gauge(t, "op.backlog"); !ok || v != 7 {
		t.Fatalf("gauge %v %v", v, ok)
	}
	if _, ok := c.Gauge(t, "op.none"); ok {
		t.Fatal("a gauge never recorded has a value")
	}
	w := c.Find(slog.LevelWarn, "refus")
	if len(w) != 1 || w[0].Attrs["component"] != "op" || w[0].Attrs["code"] != "UNAUTHORIZED" ||
		w[0].Text != "WARN refused component=op group=g code=UNAUTHORIZED" {
		t.Fatalf("records %+v", c.Logs())
	}
	if l := c.Lines(); len(l) != 1 || l[0] != w[0].Text {
		t.Fatalf("lines %q", l)
	}
	if len(c.Find(slog.LevelError, "")) != 0 {
		t.Fatal("an Error record nobody logged")
	}

	records := c.Records(t)
	for _, want := range []string{
		"span op.do kind=internal status=Error/refused scope=t walletgate.outcome=refused event=retry walletgate.attempt=attempt-1",
		"metric op.outcomes unit= desc= scope=t walletgate.outcome=ok",
		"metric op.duration unit=s desc= scope=t",
		"log WARN refused component=op group=g code=UNAUTHORIZED",
	} {
		if !slices.Contains(records, want) {
			t.Errorf("no record %q in\n%s", want, strings.Join(records, "\n"))
		}
	}
	if l := telemetrytest.Leaks(records, map[string]string{"attempt-1": "the attempt", "": "empty"}); len(l) != 1 || !strings.HasPrefix(l[0], "the attempt in ") {
		t.Fatalf("leaks %q", l)
	}
	if l := telemetrytest.Leaks(records, map[string]string{"not-there": "absent"}); l != nil {
		t.Fatalf("leaks %q", l)
	}
	c.NoSecrets(t, "not-there", "UNAUTHORIZEDx")
}

// TestNoSecretsFinds: NoSecrets reports a secret wherever it is recorded —
// in an event attribute, a metric's data point value or a log attribute.
func TestNoSecretsFinds(t *testing.T) {
	for _, secret := range []string{"attempt-1", "UNAUTHORIZED", "op.backlog", "0.25"} {
		c := telemetrytest.New(t)
		record(c, "attempt-1")
		ft := &fakeTB{TB: t}
		c.NoSecrets(ft, secret)
		if ft.errors == 0 {
			t.Errorf("NoSecrets misses %q", secret)
		}
	}
}

// TestDiscarding: the discarding providers take spans and measurements.
func TestDiscarding(t *testing.T) {
	tp, mp := telemetrytest.Discarding(t)
	_, span := tp.Tracer("t").Start(context.Background(), "op.do")
	if !span.SpanContext().IsSampled() {
		t.Fatal("the span is not sampled")
	}
	span.End()
	n, err := mp.Meter("t").Int64Counter("op.outcomes")
	if err != nil {
		t.Fatal(err)
	}
	n.Add(context.Background(), 1)
}

type fakeTB struct {
	testing.TB
	errors int
}

func (f *fakeTB) Helper()                        {}
func (f *fakeTB) Errorf(string, ...any)          { f.errors++ }
func (f *fakeTB) Fatalf(format string, a ...any) { f.TB.Fatalf(format, a...) }

// TestOnlyTestsImportTheSDK: no package of the module that ships as library
// code (every package but this one and the examples, tests excluded)
// imports the OpenTelemetry SDK, an exporter, or this package.
func TestOnlyTestsImportTheSDK(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not available")
	}
	const module = "github.com/walletgate/walletgate"
	out, err := exec.Command(gobin, "list", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, module+"/...").Output()
	if err != nil {
		t.Skipf("go list failed: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 10 {
		t.Fatalf("go list found only %d packages", len(lines))
	}
	for _, line := range lines {
		f := strings.Fields(line)
		pkg := f[0]
		if pkg == module+"/apierror/operation/telemetrytest" || strings.HasPrefix(pkg, module+"/examples/") {
			continue
		}
		for _, dep := range f[1:] {
			if strings.HasPrefix(dep, "go.opentelemetry.io/otel/sdk") || strings.HasPrefix(dep, "go.opentelemetry.io/otel/exporters") ||
				dep == module+"/apierror/operation/telemetrytest" {
				t.Errorf("%s imports %s, which only tests and examples may", pkg, dep)
			}
		}
	}
}

// A component logs through the Capture's Logger (and reports through its
// providers); the test asserts on the records and scans them for secrets.
func Example() {
	// In a test: c := telemetrytest.New(t). An Example has no test, so a
	// zero testing.T stands in; its cleanups (which shut the providers
	// down) never run.
	t := &testing.T{}
	c := telemetrytest.New(t)
	h := apierror.Observe(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		apierror.Write(w, apierror.Unauthenticated("Invalid OTP code"))
	}), c.Logger)
	body := `{"encryptedOtpBundle":"sealed-code-bundle"}`
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/verify", strings.NewReader(body)))

	for _, l := range c.Find(slog.LevelDebug, "refused") {
		fmt.Println(l.Attrs["code"], l.Attrs["reason"])
	}
	fmt.Println(telemetrytest.Leaks(c.Records(t), map[string]string{"sealed-code-bundle": "OTP bundle"}))
	// Output:
	// UNAUTHORIZED Invalid OTP code
	// []
}

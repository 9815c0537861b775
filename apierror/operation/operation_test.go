package operation_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/operation"
)

var errNotMine = errors.New("not mine")

// TestEnd pins what End records for each kind of outcome: the span's name,
// attributes and status, the counter's and histogram's attributes, and the
// Warn log of a refusal of authentication.
func TestEnd(t *testing.T) {
	for _, tc := range []struct {
		name      string
		err       error
		tune      func(*operation.Op)
		extra     []attribute.KeyValue
		wantAttrs string // the span's, in order
		wantError bool   // the span's status
		wantLog   string // "" for none
	}{
		{name: "ok", extra: []attribute.KeyValue{attribute.String("walletgate.rule", "")},
			wantAttrs: "walletgate.operation=test.op walletgate.outcome=ok"},
		{name: "unauthenticated", err: apierror.Unauthenticated("Invalid OTP code"),
			extra:     []attribute.KeyValue{attribute.String("walletgate.reason", "invalid_code"), attribute.Int64("walletgate.leg", 1), attribute.Bool("dropped", true)},
			wantAttrs: "walletgate.operation=test.op walletgate.outcome=refused walletgate.code=UNAUTHORIZED walletgate.reason=invalid_code walletgate.leg=1 error.type=UNAUTHORIZED",
			wantLog:   `level=WARN msg=refused operation=test.op code=UNAUTHORIZED reason="Invalid OTP code"`},
		{name: "reason", err: apierror.Unauthenticated("Invalid OTP code"), tune: func(o *operation.Op) { o.Reason = "lockout" },
			wantAttrs: "walletgate.operation=test.op walletgate.outcome=refused walletgate.code=UNAUTHORIZED error.type=UNAUTHORIZED",
			wantLog:   `level=WARN msg=refused operation=test.op code=UNAUTHORIZED reason=lockout`},
		{name: "quiet", err: apierror.TooManyRequests(0), tune: func(o *operation.Op) { o.Quiet = true },
			wantAttrs: "walletgate.operation=test.op walletgate.outcome=refused walletgate.code=RATE_LIMITED error.type=RATE_LIMITED"},
		{name: "invalid", err: apierror.New(apierror.InvalidInput, "bad"),
			wantAttrs: "walletgate.operation=test.op walletgate.outcome=refused walletgate.code=INVALID_INPUT error.type=INVALID_INPUT"},
		{name: "refused tells", err: apierror.New(apierror.InvalidInput, "bad").WithCause(errNotMine),
			tune:      func(o *operation.Op) { o.Refused = func(err error) bool { return errors.Is(err, errNotMine) } },
			wantAttrs: "walletgate.operation=test.op walletgate.outcome=refused walletgate.code=INVALID_INPUT error.type=INVALID_INPUT",
			wantLog:   `level=WARN msg=refused operation=test.op code=INVALID_INPUT`},
		{name: "hook", err: apierror.New(apierror.WalletSignatureInvalid, "signer revoked"),
			wantAttrs: "walletgate.operation=test.op walletgate.outcome=refused walletgate.code=WALLET_SIGNATURE_INVALID error.type=WALLET_SIGNATURE_INVALID",
			wantLog:   `level=WARN msg=refused operation=test.op code=WALLET_SIGNATURE_INVALID reason="signer revoked"`},
		{name: "internal", err: errors.New("db down: secret dsn"), tune: func(o *operation.Op) { o.Refused = func(error) bool { return true } },
			wantAttrs: "walletgate.operation=test.op walletgate.outcome=error walletgate.code=INTERNAL_ERROR error.type=INTERNAL_ERROR",
			wantError: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spans := tracetest.NewSpanRecorder()
			reader := sdkmetric.NewManualReader()
			var logs bytes.Buffer
			r, err := operation.New(operation.Config{
				Scope: "example.com/test",
				Telemetry: operation.Telemetry{
					Logger:         slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{ReplaceAttr: dropTime})),
					TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)),
					MeterProvider:  sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)),
				},
				Duration: "test.duration", DurationDescription: "Test durations.",
				Reason: func(e *apierror.Error) string {
					if e.Code == apierror.WalletSignatureInvalid {
						return e.Message
					}
					return e.Reason()
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			counter, err := r.Meter().Int64Counter("test.outcomes")
			if err != nil {
				t.Fatal(err)
			}
			ctx, o := r.Begin(context.Background(), "test.op", counter)
			if tc.tune != nil {
				tc.tune(&o)
			}
			o.End(ctx, tc.err, tc.extra...)

			ended := spans.Ended()
			if len(ended) != 1 || ended[0].Name() != "test.op" || ended[0].InstrumentationScope().Name != "example.com/test" {
				t.Fatalf("spans %v", ended)
			}
			var got []string
			for _, kv := range ended[0].Attributes() {
				got = append(got, string(kv.Key)+"="+kv.Value.Emit())
			}
			if strings.Join(got, " ") != tc.wantAttrs {
				t.Errorf("span attributes\n got %s\nwant %s", strings.Join(got, " "), tc.wantAttrs)
			}
			if isError := ended[0].Status().Code == codes.Error; isError != tc.wantError {
				t.Errorf("span status %v", ended[0].Status())
			}
			if got := strings.TrimSpace(logs.String()); got != tc.wantLog {
				t.Errorf("log\n got %s\nwant %s", got, tc.wantLog)
			}
			var rm metricdata.ResourceMetrics
			if err := reader.Collect(context.Background(), &rm); err != nil {
				t.Fatal(err)
			}
			seen := map[string]bool{}
			for _, m := range rm.ScopeMetrics[0].Metrics {
				seen[m.Name] = true
				var set attribute.Set
				switch d := m.Data.(type) {
				case metricdata.Sum[int64]:
					set = d.DataPoints[0].Attributes
				case metricdata.Histogram[float64]:
					set = d.DataPoints[0].Attributes
				}
				if want := strings.ReplaceAll(tc.wantAttrs, " error.type="+apierror.CodeOf(tc.err).String(), ""); set.Len() != len(strings.Fields(want)) {
					t.Errorf("%s attributes %v, want %s", m.Name, set.ToSlice(), want)
				}
			}
			if !seen["test.outcomes"] || !seen["test.duration"] {
				t.Errorf("metrics %v", seen)
			}
		})
	}
}

// TestStep: an operation begun inside another one's span is an event on
// that span, counted and timed like the other; inside a span that is not
// an operation's (the host's), it is a span of its own.
func TestStep(t *testing.T) {
	spans := tracetest.NewSpanRecorder()
	reader := sdkmetric.NewManualReader()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	tel := operation.Telemetry{TracerProvider: tp, MeterProvider: mp}
	outer, err := operation.New(operation.Config{Scope: "example.com/outer", Telemetry: tel, Duration: "outer.duration"})
	if err != nil {
		t.Fatal(err)
	}
	inner, err := operation.New(operation.Config{Scope: "example.com/inner", Telemetry: tel, Duration: "inner.duration"})
	if err != nil {
		t.Fatal(err)
	}
	if !inner.Records() {
		t.Fatal("Records() is false with the SDK's providers")
	}
	counter, err := inner.Meter().Int64Counter("inner.outcomes")
	if err != nil {
		t.Fatal(err)
	}

	ctx, o := outer.Begin(context.Background(), "outer.op", nil)
	sctx, step := inner.Begin(ctx, "inner.step", counter)
	step.End(sctx, apierror.Unauthenticated("wrong"))
	o.End(ctx, nil)
	hostCtx, host := tp.Tracer("host").Start(context.Background(), "host.request")
	ictx, alone := inner.Begin(hostCtx, "inner.step", counter)
	alone.End(ictx, nil)
	host.End()

	var got []string
	for _, s := range spans.Ended() {
		line := s.Name() + " parent=" + s.Parent().SpanID().String()
		for _, ev := range s.Events() {
			line += " event=" + ev.Name
			for _, kv := range ev.Attributes {
				line += " " + string(kv.Key) + "=" + kv.Value.Emit()
			}
		}
		got = append(got, line)
	}
	want := []string{
		"outer.op parent=0000000000000000 event=inner.step walletgate.operation=inner.step walletgate.outcome=refused walletgate.code=UNAUTHORIZED error.type=UNAUTHORIZED",
		"inner.step parent=" + host.SpanContext().SpanID().String(),
		"host.request parent=0000000000000000",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("spans (-want +got):\n%s", diff)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					counts[m.Name] += p.Value
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					counts[m.Name] += int64(p.Count)
				}
			}
		}
	}
	if want := map[string]int64{"inner.outcomes": 2, "inner.duration": 2, "outer.duration": 1}; !cmp.Equal(want, counts) {
		t.Errorf("metric counts %v, want %v", counts, want)
	}
}

// TestWarnRequestID: the Warn log carries the request id apierror.Observe
// gave the request.
func TestWarnRequestID(t *testing.T) {
	var logs bytes.Buffer
	r, err := operation.New(operation.Config{Telemetry: operation.Telemetry{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{ReplaceAttr: dropTime}))}})
	if err != nil {
		t.Fatal(err)
	}
	h := apierror.Observe(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		ctx, o := r.Begin(req.Context(), "test.op", nil)
		o.End(ctx, apierror.Unauthenticated("request id expired"))
	}), nil)
	req := httptest.NewRequest(http.MethodPost, "/", nil)
	req.Header.Set(apierror.RequestIDHeader, "req-1")
	h.ServeHTTP(httptest.NewRecorder(), req)
	want := `level=WARN msg=refused operation=test.op code=UNAUTHORIZED reason="request id expired" request_id=req-1`
	if got := strings.TrimSpace(logs.String()); got != want {
		t.Errorf("log\n got %s\nwant %s", got, want)
	}
}

// TestNoProvidersAllocatesNothing: without providers and logger, or with
// OpenTelemetry's no-op providers, an operation that succeeds allocates
// nothing.
func TestNoProvidersAllocatesNothing(t *testing.T) {
	for name, cfg := range map[string]operation.Config{
		"nil":  {},
		"noop": {Telemetry: operation.Telemetry{TracerProvider: tracenoop.NewTracerProvider(), MeterProvider: metricnoop.NewMeterProvider()}},
	} {
		t.Run(name, func(t *testing.T) {
			r, err := operation.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if r.Records() {
				t.Error("Records() with providers that record nothing")
			}
			ctx := context.Background()
			if n := testing.AllocsPerRun(100, func() {
				ctx, o := r.Begin(ctx, "test.op", nil)
				o.End(ctx, nil, attribute.String("walletgate.reason", ""))
			}); n != 0 {
				t.Fatalf("%v allocations per operation", n)
			}
		})
	}
}

func dropTime(_ []string, a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}

package operation_test

import (
	"context"
	"crypto/sha256"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/walletgate/walletgate/apierror/operation"
)

var workSink [32]byte

// BenchmarkOperation is one recorded operation between two pieces of
// other work (a SHA-256 of 64 KiB, about what a request does besides),
// so that the batching span processor's goroutine sleeps between spans as
// it does under a light load: none records nothing; batched and sync
// record with the OpenTelemetry SDK (spans batched to a discarding
// exporter, or handed to it synchronously, and a manual metric reader);
// raw is the SDK calls Op.End makes (a span with the same attributes, a
// counter and a histogram), made directly, with spans batched. The
// difference between batched and sync is the cost of waking the batching
// processor's goroutine for each span, which no instrumented code avoids
// but by ending fewer spans.
func BenchmarkOperation(b *testing.B) {
	work := make([]byte, 64<<10)
	batched := func() *sdktrace.TracerProvider {
		return sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	}
	sync := func() *sdktrace.TracerProvider {
		return sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewNoopExporter()))
	}
	meter := func() *sdkmetric.MeterProvider {
		return sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	}
	for _, c := range []struct {
		name string
		tp   func() *sdktrace.TracerProvider
	}{{"none", nil}, {"batched", batched}, {"sync", sync}} {
		b.Run(c.name, func(b *testing.B) {
			cfg := operation.Config{Scope: "example.com/bench", Duration: "bench.duration"}
			if c.tp != nil {
				tp, mp := c.tp(), meter()
				b.Cleanup(func() { _ = tp.Shutdown(context.Background()); _ = mp.Shutdown(context.Background()) })
				cfg.Telemetry = operation.Telemetry{TracerProvider: tp, MeterProvider: mp}
			}
			r, err := operation.New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			counter, err := r.Meter().Int64Counter("bench.outcomes")
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				workSink = sha256.Sum256(work)
				ctx, o := r.Begin(ctx, "bench.op", counter)
				o.End(ctx, nil)
			}
		})
	}
	b.Run("raw", func(b *testing.B) {
		tp, mp := batched(), meter()
		b.Cleanup(func() { _ = tp.Shutdown(context.Background()); _ = mp.Shutdown(context.Background()) })
		tracer, m := tp.Tracer("example.com/bench"), mp.Meter("example.com/bench")
		counter, _ := m.Int64Counter("bench.outcomes")
		hist, _ := m.Float64Histogram("bench.duration")
		kvs := []attribute.KeyValue{attribute.String("walletgate.operation", "bench.op"), attribute.String("walletgate.outcome", "ok")}
		set := metric.WithAttributeSet(attribute.NewSet(kvs...))
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			workSink = sha256.Sum256(work)
			_, span := tracer.Start(ctx, "bench.op")
			counter.Add(ctx, 1, set)
			hist.Record(ctx, 0.001, set)
			span.SetAttributes(kvs...)
			span.End()
		}
	})
}

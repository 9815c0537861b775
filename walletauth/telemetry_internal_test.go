package walletauth

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/operation"
	"github.com/walletgate/walletgate/apierror/operation/telemetrytest"
)

// BenchmarkOperationTelemetry is the telemetry of one operation alone (its
// begin and end; ok, or refused with a reason and a Warn record), to set beside
// BenchmarkVerifyOTPLeg1, which runs two such operations (the verification
// and the signed-retry challenge): none is the default (no providers, no
// logger), noop the no-op providers given, sdk the SDK recording every span
// and metric with a JSON logger to io.Discard.
func BenchmarkOperationTelemetry(b *testing.B) {
	refused := apierror.Unauthenticated("Invalid OTP code")
	for _, tc := range []struct {
		name string
		cfg  func(b *testing.B) Config
	}{
		{"none", func(*testing.B) Config { return Config{} }},
		{"noop", func(*testing.B) Config {
			return Config{Telemetry: operation.Telemetry{TracerProvider: tracenoop.NewTracerProvider(), MeterProvider: metricnoop.NewMeterProvider()}}
		}},
		{"sdk", func(b *testing.B) Config {
			tp, mp := telemetrytest.Discarding(b)
			return Config{Telemetry: operation.Telemetry{Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), TracerProvider: tp, MeterProvider: mp}}
		}},
	} {
		for _, outcome := range []struct {
			name string
			err  error
		}{{"ok", nil}, {"refused", refused}} {
			b.Run(tc.name+"/"+outcome.name, func(b *testing.B) {
				cfg := tc.cfg(b)
				in, err := newInstruments(&cfg)
				if err != nil {
					b.Fatal(err)
				}
				ctx := context.Background()
				b.ReportAllocs()
				for b.Loop() {
					ctx, o := in.Begin(ctx, opOTPVerify, in.otp)
					o.End(ctx, outcome.err, otpReason(outcome.err, false), attribute.Int64("walletgate.leg", 1))
				}
			})
		}
	}
}

// TestTelemetryWithoutProvidersAllocatesNothing: with no providers and no
// logger, an operation's telemetry allocates nothing when it succeeds, and
// a verification does not carry a lockout note.
func TestTelemetryWithoutProvidersAllocatesNothing(t *testing.T) {
	in, err := newInstruments(&Config{})
	if err != nil {
		t.Fatal(err)
	}
	s := &Service{tel: in}
	ctx := context.Background()
	if n := testing.AllocsPerRun(100, func() {
		ctx, o := in.Begin(ctx, opOTPStart, in.otp)
		o.End(ctx, nil, otpReason(nil, false))
		vctx, vo, note := s.beginVerify(ctx, "EMAIL_OTP")
		if note != nil {
			t.Fatal("a lockout note with nothing to report it to")
		}
		vo.End(vctx, nil)
	}); n != 0 {
		t.Fatalf("%v allocations per operation", n)
	}
}

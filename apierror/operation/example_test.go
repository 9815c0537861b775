package operation_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/operation"
)

// A package records its operations with one Recorder and its own counter:
// a refused one-time code is counted by outcome, code and reason, and logged
// at Warn without the code the user typed.
func ExampleRecorder() {
	reader := sdkmetric.NewManualReader()
	r, err := operation.New(operation.Config{
		Scope: "example.com/otp",
		Telemetry: operation.Telemetry{
			Logger: slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
				if a.Key == slog.TimeKey {
					return slog.Attr{} // a stable output
				}
				return a
			}})),
			MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)),
		},
		Duration:            "example.otp.operation.duration",
		DurationDescription: "Duration of one-time code operations.",
	})
	if err != nil {
		panic(err)
	}
	verifications, err := r.Meter().Int64Counter("example.otp.outcomes")
	if err != nil {
		panic(err)
	}

	verify := func(ctx context.Context, code string) (err error) {
		ctx, o := r.Begin(ctx, "example.otp.verify", verifications)
		defer func() { o.End(ctx, err, attribute.String("walletgate.reason", "invalid_code")) }()
		if code != "123456" {
			return apierror.Unauthenticated("Invalid OTP code")
		}
		return nil
	}
	_ = verify(context.Background(), "654321")

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		panic(err)
	}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if sum, ok := m.Data.(metricdata.Sum[int64]); ok {
			p := sum.DataPoints[0]
			outcome, _ := p.Attributes.Value("walletgate.outcome")
			code, _ := p.Attributes.Value("walletgate.code")
			fmt.Println(m.Name, outcome.AsString(), code.AsString(), p.Value)
		}
	}
	// Output:
	// level=WARN msg=refused operation=example.otp.verify code=UNAUTHORIZED reason="Invalid OTP code"
	// example.otp.outcomes refused UNAUTHORIZED 1
}

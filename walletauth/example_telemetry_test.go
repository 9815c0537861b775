package walletauth_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/walletgate/walletgate/apierror/operation"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/memory"
	"github.com/walletgate/walletgate/walletauth"
	"github.com/walletgate/walletgate/walletauth/authclient"
)

// The service reports to the host's logger and OpenTelemetry providers: a
// wrong one-time code is a span, a count by reason and a WARN record, none
// of which carries the code, the bundle or an id.
func ExampleConfig_telemetry() {
	ctx := context.Background()
	spans := tracetest.NewSpanRecorder()
	reader := sdkmetric.NewManualReader()
	log := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{} // stable output
		}
		return a
	}}))
	keys, _ := walletauth.EphemeralKeys(nil)
	svc, _ := walletauth.New(walletauth.Config{Store: memory.New(), Sandbox: true, Keys: keys, Telemetry: operation.Telemetry{Logger: log,
		TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)),
		MeterProvider:  sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))}})
	_, email, _ := svc.CreateWallet(ctx, walletauth.NewWallet{CustomerID: "Customer:42", Email: "ada@example.com"})
	m, _ := svc.Challenge(ctx, email.ID, walletauth.ChallengeRequest{})
	key, _ := authclient.NewClientKey()
	wrong, _ := key.SealOTP(m.OTPEncryptionTargetBundle, svc.SigningPublicKey(), "123456", nil) // sandbox codes are 000000
	_, _, err := svc.Verify(ctx, email.ID, walletauth.VerifyRequest{Type: storage.EmailOTP, EncryptedOTPBundle: wrong},
		signedretry.Request{Method: "POST", Path: "/auth/credentials/" + email.ID + "/verify", Body: []byte(`{}`)})
	fmt.Println(err)

	for _, s := range spans.Ended() {
		fmt.Println("span", s.Name())
		for _, ev := range s.Events() {
			fmt.Println("  event", ev.Name) // a step of the span's operation
		}
	}
	var rm metricdata.ResourceMetrics
	_ = reader.Collect(ctx, &rm)
	for _, sm := range rm.ScopeMetrics {
		for _, metric := range sm.Metrics {
			if sum, ok := metric.Data.(metricdata.Sum[int64]); ok {
				for _, p := range sum.DataPoints {
					op, _ := p.Attributes.Value("walletgate.operation")
					reason, _ := p.Attributes.Value("walletgate.reason")
					fmt.Println(metric.Name, op.AsString(), reason.AsString(), p.Value)
				}
			}
		}
	}
	// Unordered output:
	// level=WARN msg=refused operation=walletauth.otp.verify code=UNAUTHORIZED reason="Invalid OTP code"
	// 401 UNAUTHORIZED: authentication failed: Invalid OTP code
	// span walletauth.otp.start
	// span walletauth.otp.verify
	//   event signedretry.issue
	// walletgate.walletauth.otp.outcomes walletauth.otp.start  1
	// walletgate.walletauth.otp.outcomes walletauth.otp.verify invalid_code 1
	// walletgate.signedretry.outcomes signedretry.issue  1
}

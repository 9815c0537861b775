package walletauth_test

import (
	"crypto/ecdh"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"testing"

	metricnoop "go.opentelemetry.io/otel/metric/noop"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/walletgate/walletgate/apierror/operation"
	"github.com/walletgate/walletgate/apierror/operation/telemetrytest"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/walletauth"
	"github.com/walletgate/walletgate/walletauth/envelope"
)

// pendingLogins prepares n wallets, each with an issued code and a sealed
// answer, so a benchmark times only the server's leg 1.
func pendingLogins(b *testing.B, e *env, n int) ([]string, []walletauth.VerifyRequest) {
	ctx := b.Context()
	creds := make([]string, n)
	reqs := make([]walletauth.VerifyRequest, n)
	key := newKey(b)
	for i := range n {
		_, m, err := e.svc.CreateWallet(ctx, walletauth.NewWallet{CustomerID: "Customer:b", Email: "bench@example.com"})
		if err != nil {
			b.Fatal(err)
		}
		ch, err := e.svc.Challenge(ctx, m.ID, walletauth.ChallengeRequest{})
		if err != nil {
			b.Fatal(err)
		}
		bundle, err := key.SealOTP(ch.OTPEncryptionTargetBundle, nil, walletauth.SandboxOTPCode, nil)
		if err != nil {
			b.Fatal(err)
		}
		creds[i], reqs[i] = m.ID, walletauth.VerifyRequest{Type: storage.EmailOTP, EncryptedOTPBundle: bundle}
	}
	return creds, reqs
}

// BenchmarkVerifyOTPLeg1 is leg 1 of a one-time-code verification on the
// memory store: lookups, HPKE open, constant-time compare, consumption and
// the signed-retry challenge.
// The logins are prepared in batches, each on a fresh store, so the heap a
// timed call works beside stays the same size whatever b.N is.
func BenchmarkVerifyOTPLeg1(b *testing.B) { benchVerifyOTPLeg1(b, nil) }

// BenchmarkVerifyOTPLeg1Telemetry is BenchmarkVerifyOTPLeg1 with the
// telemetry on: noop with the no-op providers given explicitly (recognised
// as recording nothing: the path of no providers), sdk with the
// OpenTelemetry SDK recording every span (batched to a discarding exporter)
// and every metric (a manual reader), and a JSON logger to io.Discard;
// sdk-sync is sdk with each span handed to the exporter as it ends, so
// that sdk minus sdk-sync is what the batching processor's queue costs
// (its goroutine woken for each span). BenchmarkVerifyOTPLeg1 itself runs
// with no providers, the default.
func BenchmarkVerifyOTPLeg1Telemetry(b *testing.B) {
	b.Run("noop", func(b *testing.B) {
		benchVerifyOTPLeg1(b, func(c *walletauth.Config) {
			c.Telemetry = operation.Telemetry{TracerProvider: tracenoop.NewTracerProvider(), MeterProvider: metricnoop.NewMeterProvider()}
		})
	})
	for _, sdk := range telemetrytest.SDKVariants {
		b.Run(sdk.Name, func(b *testing.B) {
			tp, mp := sdk.Providers(b)
			benchVerifyOTPLeg1(b, func(c *walletauth.Config) {
				c.Telemetry = operation.Telemetry{Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), TracerProvider: tp, MeterProvider: mp}
			})
		})
	}
}

func benchVerifyOTPLeg1(b *testing.B, mod func(*walletauth.Config)) {
	ctx := b.Context()
	const batch = 256
	c := call("POST", "/auth/credentials/x/verify", `{"type":"EMAIL_OTP"}`)
	var (
		e     *env
		creds []string
		reqs  []walletauth.VerifyRequest
	)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%batch == 0 {
			b.StopTimer()
			e = newEnv(b, func(c *walletauth.Config) {
				c.Sandbox, c.Sender = true, nil
				if mod != nil {
					mod(c)
				}
			})
			creds, reqs = pendingLogins(b, e, batch)
			b.StartTimer()
		}
		if _, _, err := e.svc.Verify(ctx, creds[i%batch], reqs[i%batch], c); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifyOTPLeg1RawOpen is the primitive leg 1 wraps: the HPKE open
// of the same kind of bundle with circl, through envelope.Open.
func BenchmarkVerifyOTPLeg1RawOpen(b *testing.B) {
	target, err := ecdh.P256().GenerateKey(nil)
	if err != nil {
		b.Fatal(err)
	}
	sealed, err := envelope.SealOTP(target.PublicKey(), walletauth.SandboxOTPCode, newKey(b).PublicKeyHex(), nil)
	if err != nil {
		b.Fatal(err)
	}
	var msg struct{ EncappedPublic, Ciphertext string }
	_ = json.Unmarshal([]byte(sealed), &msg)
	enc, _ := hex.DecodeString(msg.EncappedPublic)
	ct, _ := hex.DecodeString(msg.Ciphertext)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := envelope.Open(target, enc, ct); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLogin is a whole one-time-code login as the server sees it:
// challenge, leg 1 and leg 2 (the client's sealing and stamping are not
// timed). Run with -cpu=1 for logins per second on one core.
func BenchmarkLogin(b *testing.B) {
	ctx := b.Context()
	e := newEnv(b, func(c *walletauth.Config) { c.Sandbox, c.Sender = true, nil })
	key := newKey(b)
	c := call("POST", "/auth/credentials/x/verify", `{"type":"EMAIL_OTP"}`)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		_, m, err := e.svc.CreateWallet(ctx, walletauth.NewWallet{CustomerID: "Customer:b", Email: "bench@example.com"})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		ch, err := e.svc.Challenge(ctx, m.ID, walletauth.ChallengeRequest{})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		bundle, _ := key.SealOTP(ch.OTPEncryptionTargetBundle, nil, walletauth.SandboxOTPCode, nil)
		req := walletauth.VerifyRequest{Type: storage.EmailOTP, EncryptedOTPBundle: bundle}
		b.StartTimer()
		_, rc, err := e.svc.Verify(ctx, m.ID, req, c)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		leg2 := c
		leg2.Signature, _ = key.Stamp(rc.PayloadToSign)
		leg2.RequestID = rc.RequestID
		b.StartTimer()
		if _, _, err := e.svc.Verify(ctx, m.ID, req, leg2); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(b.N)/s, "logins/s")
	}
}

package signedretry_test

import (
	"crypto/ecdsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"math"
	"testing"

	metricnoop "go.opentelemetry.io/otel/metric/noop"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/walletgate/walletgate/apierror/operation"
	"github.com/walletgate/walletgate/apierror/operation/telemetrytest"
	"github.com/walletgate/walletgate/signedretry"
)

// BenchmarkComplete measures the server side of a signed retry on the memory
// store: header parsing, request lookup, body canonicalization, signature
// verification, signer check against the sessions and consumption. Challenges
// and stamps are made before the timer starts.
func BenchmarkComplete(b *testing.B) { benchComplete(b, nil) }

// BenchmarkCompleteTelemetry is BenchmarkComplete with the telemetry on:
// noop with the no-op providers given explicitly (recognised as
// recording nothing: the path of no providers), sdk with the OpenTelemetry
// SDK recording every span (batched to a discarding exporter) and every
// metric (a manual reader), and a JSON logger to io.Discard; sdk-sync is
// sdk with each span handed to the exporter as it ends, so that sdk minus
// sdk-sync is what the batching processor's queue costs (its goroutine
// woken for each span). BenchmarkComplete itself runs with no providers,
// the default.
func BenchmarkCompleteTelemetry(b *testing.B) {
	b.Run("noop", func(b *testing.B) {
		benchComplete(b, func(c *signedretry.Config) {
			c.Telemetry = operation.Telemetry{TracerProvider: tracenoop.NewTracerProvider(), MeterProvider: metricnoop.NewMeterProvider()}
		})
	})
	for _, sdk := range telemetrytest.SDKVariants {
		b.Run(sdk.Name, func(b *testing.B) {
			tp, mp := sdk.Providers(b)
			benchComplete(b, func(c *signedretry.Config) {
				c.Telemetry = operation.Telemetry{Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), TracerProvider: tp, MeterProvider: mp}
			})
		})
	}
}

func benchComplete(b *testing.B, mod func(*signedretry.Config)) {
	ctx := b.Context()
	f := newFixture(b, false)
	// Every challenge is live when the timer starts.
	cfg := signedretry.Config{Store: f.store, Clock: f.clock.Now, MaxPending: math.MaxInt}
	if mod != nil {
		mod(&cfg)
	}
	f.mgr = newManager(b, cfg)
	retries := make([]signedretry.Request, b.N)
	for i := range retries {
		c := f.issue(b, signedretry.Signer{Rule: signedretry.AnySession})
		retries[i] = retry(c, stamp(b, f.keyB, c.PayloadToSign))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := f.mgr.Complete(ctx, retries[i], opType, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCompleteRawVerify is the primitive Complete wraps: SHA-256 of the
// same payload and ecdsa.VerifyASN1 of the same signature.
func BenchmarkCompleteRawVerify(b *testing.B) {
	f := newFixture(b, false)
	c := f.issue(b, signedretry.Signer{Rule: signedretry.AnySession})
	raw, _ := base64.RawURLEncoding.DecodeString(stamp(b, f.keyB, c.PayloadToSign))
	var wire struct{ Signature string }
	_ = json.Unmarshal(raw, &wire)
	sig, _ := hex.DecodeString(wire.Signature)
	payload := []byte(c.PayloadToSign)
	pub := &f.keyB.PublicKey
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		h := sha256.Sum256(payload)
		if !ecdsa.VerifyASN1(pub, h[:], sig) {
			b.Fatal("signature does not verify")
		}
	}
}

package oidc

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// scope is the instrumentation scope of the package's tracer and meter.
const scope = "github.com/walletgate/walletgate/walletauth/oidc"

// Outcomes of a key set fetch, the walletgate.outcome attribute.
const (
	fetchOK    = "ok"    // the key set was fetched
	fetchStale = "stale" // the fetch failed; the last good key set stays in use
	fetchError = "error" // the fetch failed and there is no key set: tokens of the issuer cannot verify
)

// telemetry is what a Verifier reports fetches of key sets to, resolved
// once by New. A verification itself is reported by the caller
// (walletauth's "walletauth.oidc.verify").
type telemetry struct {
	log     *slog.Logger
	tracer  trace.Tracer
	fetches metric.Int64Counter
}

func newTelemetry(cfg *Config) (*telemetry, error) {
	t := &telemetry{}
	var meter metric.Meter
	t.log, t.tracer, meter = cfg.Telemetry.Resolve(scope)
	var err error
	t.fetches, err = meter.Int64Counter("walletgate.oidc.jwks.fetches", metric.WithUnit("{fetch}"),
		metric.WithDescription("Fetches of OpenID providers' key sets (with discovery when configured), by walletgate.outcome: ok, stale (failed; the last key set stays in use) or error (failed; no key set)."))
	return t, err
}

// fetched reports the end of a key set fetch for issuer: err nil is ok; a
// failure is stale when a key set stays in use, error otherwise. A failure
// logs at Warn (stale) or Error with the issuer and the cause.
func (t *telemetry) fetched(ctx context.Context, span trace.Span, issuer string, err error, stale bool) {
	outcome := fetchOK
	switch {
	case err != nil && stale:
		outcome = fetchStale
	case err != nil:
		outcome = fetchError
	}
	attr := attribute.String("walletgate.outcome", outcome)
	t.fetches.Add(ctx, 1, metric.WithAttributes(attr))
	if span.IsRecording() {
		span.SetAttributes(attr)
		if err != nil {
			span.SetAttributes(attribute.String("error.type", outcome))
			span.SetStatus(codes.Error, "key set fetch failed")
		}
	}
	span.End()
	switch outcome {
	case fetchStale:
		t.log.LogAttrs(ctx, slog.LevelWarn, "oidc: fetching the key set failed; the last one stays in use",
			slog.String("operation", "oidc.jwks.fetch"), slog.String("issuer", issuer), slog.String("error", err.Error()))
	case fetchError:
		t.log.LogAttrs(ctx, slog.LevelError, "oidc: fetching the key set failed; tokens of the issuer cannot be verified",
			slog.String("operation", "oidc.jwks.fetch"), slog.String("issuer", issuer), slog.String("error", err.Error()))
	}
}

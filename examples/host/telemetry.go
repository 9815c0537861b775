package main

import (
	"errors"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/walletgate/walletgate/apierror/operation"
)

// NewMetrics returns a meter provider whose metrics the returned handler
// serves in the Prometheus text format (GET /metrics), through the
// OpenTelemetry Prometheus exporter on a registry of its own. The exporter
// writes walletgate.walletauth.otp.outcomes as
// walletgate_walletauth_otp_outcomes_total, and attribute keys with dots
// as underscores (walletgate_code).
func NewMetrics() (*sdkmetric.MeterProvider, http.Handler, error) {
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return nil, nil, err
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	return mp, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), nil
}

// checkTelemetry refuses a Telemetry without a logger: the host and every
// walletgate component it builds send their records, spans and metrics to
// it, and a nil provider means none (walletgate never falls back to the
// global providers).
func checkTelemetry(t operation.Telemetry) error {
	if t.Logger == nil {
		return errors.New("host: Telemetry.Logger is required")
	}
	return nil
}

// metricsMux serves metrics at GET /metrics only.
func metricsMux(metrics http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metrics)
	return mux
}

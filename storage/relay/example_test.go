package relay_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/walletgate/walletgate/apierror/operation"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/memory"
	"github.com/walletgate/walletgate/storage/relay"
)

// downPublisher is a receiver that is down.
type downPublisher struct{}

func (downPublisher) Publish(context.Context, storage.Event) error {
	return errors.New("receiver answered 503")
}

// A relay given a logger reports each failed delivery at Warn (and parked
// events and store errors at Error, the latter also to OnStoreError), with
// the event's id and type, never its payload.
func ExampleConfig_logger() {
	ctx := context.Background()
	store := memory.New() // in production: the postgres store of the service
	e := storage.Event{ID: "Webhook:0b5c6f4e-2d3a-4f1b-9c8d-7e6f5a4b3c2d", Type: "EXTERNAL_ACCOUNT.STATUS_UPDATED",
		AccountID: "ExternalAccount:1", Payload: []byte(`{}`), CreatedAt: time.Now()}
	if err := store.Atomic(ctx, func(tx storage.Tx) error { return tx.Outbox().Append(ctx, &e) }); err != nil {
		panic(err)
	}
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{} // for a stable output
			}
			return a
		}}))
	r, err := relay.New(relay.Config{Store: store, Publisher: downPublisher{}, Telemetry: operation.Telemetry{Logger: logger},
		OnStoreError: func(op string, err error) { fmt.Println("store error in", op, err) }})
	if err != nil {
		panic(err)
	}
	res, err := r.RunOnce(ctx)
	fmt.Printf("%+v %v\n", res, err)
	// Output:
	// level=WARN msg="relay: delivery failed" operation=relay.publish event_id=Webhook:0b5c6f4e-2d3a-4f1b-9c8d-7e6f5a4b3c2d event_type=EXTERNAL_ACCOUNT.STATUS_UPDATED attempt=1 error="receiver answered 503"
	// {Delivered:0 Retried:1 Parked:0 Lost:0 Released:0} <nil>
}

// With a Telemetry.MeterProvider and a store that implements BacklogStore (the
// memory and postgres stores do), the relay reports its backlog as gauges,
// read from the store at each collection.
func ExampleBacklogStore() {
	ctx := context.Background()
	store := memory.New()
	for _, id := range []string{"Webhook:0b5c6f4e-2d3a-4f1b-9c8d-7e6f5a4b3c2d", "Webhook:1c6d7f5e-3e4b-4a2c-8d9e-8f7a6b5c4d3e"} {
		e := storage.Event{ID: id, Type: "EXTERNAL_ACCOUNT.STATUS_UPDATED", AccountID: "ExternalAccount:1",
			Payload: []byte(`{}`), CreatedAt: time.Now()}
		if err := store.Atomic(ctx, func(tx storage.Tx) error { return tx.Outbox().Append(ctx, &e) }); err != nil {
			panic(err)
		}
	}
	reader := sdkmetric.NewManualReader() // in production: the Prometheus exporter, or an OTLP reader
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	if _, err := relay.New(relay.Config{Store: store, Publisher: downPublisher{}, Telemetry: operation.Telemetry{MeterProvider: provider}}); err != nil {
		panic(err)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		panic(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if g, ok := m.Data.(metricdata.Gauge[int64]); ok && m.Name == "walletgate.relay.backlog" {
				fmt.Println(m.Name, g.DataPoints[0].Value)
			}
		}
	}
	// Output:
	// walletgate.relay.backlog 2
}

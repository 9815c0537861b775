package sweep_test

import (
	"context"
	"log"
	"log/slog"
	"time"

	"github.com/walletgate/walletgate/apierror/operation"
	"github.com/walletgate/walletgate/storage/memory"
	"github.com/walletgate/walletgate/storage/sweep"
)

// A host starts one sweeper next to its handlers and stops it on shutdown:
// every minute it deletes the records that expired more than an hour ago.
// A failed sweep is logged at Error through the host's logger.
func ExampleSweeper_Run() {
	store := memory.New() // in production: the postgres store of the service
	sw, err := sweep.New(sweep.Config{Store: store, Interval: time.Minute, Margin: time.Hour,
		Telemetry: operation.Telemetry{Logger: slog.Default()}})
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sw.Run(ctx) }()
	// ... serve until shutdown ...
	stop()
	<-done
	// Output:
}

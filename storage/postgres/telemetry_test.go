package postgres_test

import (
	"errors"
	"log/slog"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/walletgate/walletgate/apierror/operation/telemetrytest"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/postgres"
)

var (
	dbSystem   = attribute.String("db.system.name", "postgresql")
	outcomeOK  = attribute.String("walletgate.outcome", "ok")
	outcomeRef = attribute.String("walletgate.outcome", "refused")
	outcomeErr = attribute.String("walletgate.outcome", "error")
)

// TestTransactionTelemetry: every Atomic call is one "storage.transaction"
// client span and one duration measurement, with its outcome and error
// type; reruns are counted; spent retries log at Warn and unexpected
// failures at Error, without the values the statement carried.
func TestTransactionTelemetry(t *testing.T) {
	ctx := t.Context()
	pool := newPool(t, 2)
	c := telemetrytest.New(t)
	s := newStoreWith(t, pool, postgres.WithBackoff(postgres.Config{MaxRetries: 2,
		Telemetry: c.Telemetry()}, time.Millisecond))

	// ok, with one rerun after a serialization failure.
	runs := 0
	err := s.Atomic(ctx, func(tx storage.Tx) error {
		p := storage.PendingRequest{ID: newID(t, "Request"), AccountID: "a", CreatedAt: time.Unix(0, 0).UTC(),
			ExpiresAt: time.Unix(60, 0).UTC()}
		if err := tx.PendingRequests().Create(ctx, &p, storage.Quota{Limit: 1000}); err != nil {
			return err
		}
		if runs++; runs == 1 {
			return raise(ctx, tx, "40001")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// refused: an answer of the contract.
	if err := s.Atomic(ctx, func(tx storage.Tx) error {
		_, err := tx.PendingRequests().Get(ctx, "Request:missing")
		return err
	}); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Atomic: %v, want ErrNotFound", err)
	}
	// retries spent: 1 + 2 reruns.
	if err := s.Atomic(ctx, func(tx storage.Tx) error { return raise(ctx, tx, "40P01") }); !errors.Is(err, postgres.ErrRerun) {
		t.Fatalf("Atomic: %v, want ErrRerun", err)
	}
	// unexpected: the server refuses a value; its message quotes it.
	const secret = "s3cret-not-a-uuid-7f1c"
	if err := s.Atomic(ctx, func(tx storage.Tx) error {
		return postgres.ExecIn(ctx, tx, "SELECT $1::text::uuid", secret)
	}); sqlState(err) != "22P02" {
		t.Fatalf("Atomic: %v, want SQLSTATE 22P02", err)
	}

	spans := c.Ended("storage.transaction")
	if len(spans) != 4 {
		t.Fatalf("%d storage.transaction spans, want 4", len(spans))
	}
	wantType := []string{"", "storage.ErrNotFound", "40P01", "22P02"}
	wantRetries := []int64{1, 0, 2, 0}
	for i, sp := range spans {
		if sp.SpanKind() != trace.SpanKindClient {
			t.Errorf("span %d: kind %v, want client", i, sp.SpanKind())
		}
		if v, ok := telemetrytest.SpanAttr(sp, "db.system.name"); !ok || v.AsString() != "postgresql" {
			t.Errorf("span %d: db.system.name = %v", i, v.Emit())
		}
		v, _ := telemetrytest.SpanAttr(sp, "error.type")
		if v.AsString() != wantType[i] {
			t.Errorf("span %d: error.type %q, want %q", i, v.AsString(), wantType[i])
		}
		r, _ := telemetrytest.SpanAttr(sp, "walletgate.transaction.retries")
		if r.AsInt64() != wantRetries[i] {
			t.Errorf("span %d: retries %d, want %d", i, r.AsInt64(), wantRetries[i])
		}
		wantErr := i >= 2
		if (sp.Status().Code == codes.Error) != wantErr {
			t.Errorf("span %d: status %v", i, sp.Status())
		}
	}

	const dur = "walletgate.storage.transaction.duration"
	if n := c.Count(t, dur, dbSystem, outcomeOK); n != 1 {
		t.Errorf("%d ok transactions measured, want 1", n)
	}
	if n := c.Count(t, dur, dbSystem, outcomeRef, attribute.String("error.type", "storage.ErrNotFound")); n != 1 {
		t.Errorf("%d refused transactions measured, want 1", n)
	}
	if n := c.Count(t, dur, dbSystem, outcomeErr); n != 2 {
		t.Errorf("%d failed transactions measured, want 2", n)
	}
	if n := c.Sum(t, "walletgate.storage.transaction.retries", dbSystem); n != 3 {
		t.Errorf("%d retries counted, want 3", n)
	}

	if w := c.Find(slog.LevelWarn, "retries ran out"); len(w) != 1 || w[0].Attrs["code"] != "40P01" || w[0].Attrs["retries"] != "2" {
		t.Errorf("Warn records %+v, want one with code 40P01 and 2 retries", w)
	}
	if e := c.Find(slog.LevelError, "storage transaction failed"); len(e) != 1 || e[0].Attrs["code"] != "22P02" {
		t.Errorf("Error records %+v, want one with code 22P02", e)
	}
	if n := len(c.Logs()); n != 2 {
		t.Errorf("%d log records, want 2 (no record for a refusal or a success)", n)
	}
	c.NoSecrets(t, secret)
}

// Package storagetest is the conformance suite of the [storage.Store]
// contract. Every store walletgate ships passes it, and a host that writes its
// own store proves it keeps the contract by running it:
//
//	func TestMyStore(t *testing.T) {
//		storagetest.Run(t, func(tb testing.TB) storage.Store { return mystore.New(tb) })
//	}
//
// The [Factory] must return an empty store for each call; the suite calls it
// once per subtest. Times used by the suite are UTC with microsecond precision, so
// stores backed by databases with microsecond timestamps pass unchanged.
//
// [Clock] is the settable clock the tests of every package share: stores
// take their time from callers, and callers from the Clock of their Config.
// [Guard] is their switchable guard of accounts, which records what it was
// asked.
package storagetest

import (
	"context"
	"crypto/rand"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/walletgate/walletgate/storage"
)

// Factory returns a new, empty store. It may register cleanups with tb and
// is used by both [Run] and [Benchmark].
type Factory func(tb testing.TB) storage.Store

// Run runs the whole contract against stores made by newStore.
func Run(t *testing.T, newStore Factory) {
	t.Helper()
	suites := []struct {
		name string
		fn   func(*testing.T, Factory)
	}{
		{"ExternalAccounts", testExternalAccounts},
		{"Challenges", testChallenges},
		{"InternalAccounts", testInternalAccounts},
		{"Credentials", testCredentials},
		{"OTPIssuances", testOTPIssuances},
		{"Sessions", testSessions},
		{"PendingRequests", testPendingRequests},
		{"Outbox", testOutbox},
		{"Backlog", testBacklog},
		{"RateLimits", testRateLimits},
		{"Idempotency", testIdempotency},
		{"PayoutUsage", testPayoutUsage},
		{"PayoutApprovals", testPayoutApprovals},
		{"Records", testRecords},
		{"Atomic", testAtomic},
		{"Deferred", testDeferred},
		{"Concurrency", testConcurrency},
		{"Guards", testGuards},
		{"Signer", testSigner},
		{"Races", testRaces},
		{"Sweep", testSweep},
	}
	for _, s := range suites {
		t.Run(s.name, func(t *testing.T) { s.fn(t, newStore) })
	}
}

// t0 is the suite's reference time.
var t0 = time.Date(2026, 3, 14, 15, 9, 26, 535897000, time.UTC)

// cmpOpts compares records as a store should preserve them: times by instant,
// empty and nil slices alike.
var cmpOpts = []cmp.Option{cmpopts.EquateEmpty()}

func id(t *testing.T, prefix string) string {
	t.Helper()
	s, err := storage.NewID(rand.Reader, prefix)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// run runs fn in a transaction and fails the test on error.
func run(t *testing.T, s storage.Store, fn func(tx storage.Tx) error) {
	t.Helper()
	ctx := t.Context()
	if err := s.Atomic(ctx, fn); err != nil {
		t.Fatalf("Atomic: %v", err)
	}
}

// wantErr fails the test unless errors.Is(err, want) (or err is nil when want is).
func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Fatalf("%s: unexpected error %v", what, err)
		}
		return
	}
	if !errors.Is(err, want) {
		t.Fatalf("%s: error = %v, want %v", what, err, want)
	}
}

func diff(t *testing.T, what string, got, want any) {
	t.Helper()
	if d := cmp.Diff(want, got, cmpOpts...); d != "" {
		t.Fatalf("%s mismatch (-want +got):\n%s", what, d)
	}
}

var errRollback = errors.New("storagetest: roll back")

// roomy is a quota of an account's pending requests that no test reaches:
// a request created within it is refused only for a duplicate id.
var roomy = storage.Quota{Limit: 1000}

// settle makes a call of tx that carries every deferrable write tx made
// before it, so that a failure of one surfaces now, and returns that
// failure.
func settle(ctx context.Context, tx storage.Tx) error {
	_, err := tx.PendingRequests().Get(ctx, "Request:settle")
	var failed *storage.ConsumeError
	if errors.Is(err, storage.ErrNotFound) && !errors.As(err, &failed) {
		return nil // the probe's own answer: nothing failed
	}
	return err
}

// consumeIn runs one consumption in a transaction of its own, made by
// consume, and returns its failure, from the call, a later call or Atomic.
func consumeIn(ctx context.Context, s storage.Store, consume func(tx storage.Tx) error) error {
	return s.Atomic(ctx, func(tx storage.Tx) error {
		if err := consume(tx); err != nil {
			return err
		}
		return settle(ctx, tx)
	})
}

// wantConsumeError fails the test unless err is a [*storage.ConsumeError]
// for id that wraps want, wherever it surfaced; for want ErrNotFound, a
// store that reported the failure after the call may wrap ErrConsumed
// instead (the contract keeps a late failure from reading as not found).
func wantConsumeError(t *testing.T, what string, err error, id string, want error) {
	t.Helper()
	var ce *storage.ConsumeError
	if !errors.As(err, &ce) || ce.ID != id {
		t.Fatalf("%s: error = %v, want a *storage.ConsumeError for %s", what, err, id)
	}
	if !errors.Is(err, want) && !(want == storage.ErrNotFound && errors.Is(err, storage.ErrConsumed)) {
		t.Fatalf("%s: error = %v, want one wrapping %v", what, err, want)
	}
}

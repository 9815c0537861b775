package relay_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

	"github.com/walletgate/walletgate/apierror/webhooksig"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/memory"
	"github.com/walletgate/walletgate/storage/relay"
	"github.com/walletgate/walletgate/storage/storagetest"
	"github.com/walletgate/walletgate/storage/webhook"
)

var t0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

// appendEvents writes n events, spread over accounts, and returns them.
func appendEvents(t testing.TB, s storage.Store, n, accounts int, at time.Time) []storage.Event {
	t.Helper()
	ctx := t.Context()
	out := make([]storage.Event, 0, n)
	err := s.Atomic(ctx, func(tx storage.Tx) error {
		out = out[:0]
		for i := range n {
			e, err := storage.NewEvent(nil, "TEST.EVENT", "ExternalAccount:"+string(rune('a'+i%accounts)), map[string]int{"n": i}, at)
			if err != nil {
				return err
			}
			if err := tx.Outbox().Append(ctx, &e); err != nil {
				return err
			}
			out = append(out, e)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// fake is a publisher whose answer the test sets per call.
type fake struct {
	mu   sync.Mutex
	got  []string
	fail func(storage.Event) error
}

func (f *fake) Publish(_ context.Context, e storage.Event) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		if err := f.fail(e); err != nil {
			return err
		}
	}
	f.got = append(f.got, e.ID)
	return nil
}

func newRelay(t testing.TB, cfg relay.Config) *relay.Relay {
	t.Helper()
	r, err := relay.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func runOnce(t testing.TB, r *relay.Relay) relay.Result {
	t.Helper()
	ctx := t.Context()
	res, err := r.RunOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestNewRefuses(t *testing.T) {
	for name, cfg := range map[string]relay.Config{
		"no store":     {Publisher: &fake{}},
		"no publisher": {Store: memory.New()},
		"backoffs":     {Store: memory.New(), Publisher: &fake{}, MinBackoff: time.Minute, MaxBackoff: time.Second},
	} {
		if _, err := relay.New(cfg); err == nil {
			t.Errorf("%s: New accepted the config", name)
		}
	}
}

// zeros and ones are jitter sources: the least and the most jitter.
type constReader byte

func (c constReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(c)
	}
	return len(p), nil
}

// TestBackoff: the wait doubles from MinBackoff up to MaxBackoff, less a
// jitter of at most half.
func TestBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, jitter := range []constReader{0x00, 0xff} {
			s := memory.New()
			f := &fake{fail: func(storage.Event) error { return errors.New("down") }}
			r := newRelay(t, relay.Config{Store: s, Publisher: f, Rand: jitter, Owner: "r",
				MinBackoff: time.Second, MaxBackoff: 8 * time.Second})
			ev := appendEvents(t, s, 1, 1, time.Now())[0]
			for n, full := range []time.Duration{1, 2, 4, 8, 8, 8} {
				full *= time.Second
				if res := runOnce(t, r); res != (relay.Result{Retried: 1}) {
					t.Fatalf("attempt %d: %+v", n+1, res)
				}
				next := nextAttempt(t, s, ev)
				wait := time.Until(next)
				if wait > full || wait < full/2 {
					t.Fatalf("wait after failure %d = %v, want within [%v, %v]", n+1, wait, full/2, full)
				}
				time.Sleep(wait)
			}
		}
	})
}

func nextAttempt(t testing.TB, s storage.Store, e storage.Event) time.Time {
	t.Helper()
	for _, x := range storagetest.Events(t, s, e.AccountID) {
		if x.ID == e.ID {
			return x.NextAttemptAt
		}
	}
	t.Fatalf("event %s is gone", e.ID)
	return time.Time{}
}

// TestMaxAgeParksAndRedrive: a failure after MaxAge parks the event; it is
// listed, no longer holds back the account, and a re-drive delivers it.
func TestMaxAgeParksAndRedrive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		s := memory.New()
		down := true
		f := &fake{fail: func(storage.Event) error {
			if down {
				return errors.New("HTTP 503 \x00\xff")
			}
			return nil
		}}
		r := newRelay(t, relay.Config{Store: s, Publisher: f, MaxAge: time.Hour, MaxBackoff: time.Minute})
		evs := appendEvents(t, s, 2, 1, time.Now()) // one account: the second waits for the first
		if res := runOnce(t, r); res != (relay.Result{Retried: 1}) {
			t.Fatalf("first attempt: %+v", res)
		}
		time.Sleep(time.Hour)
		if res := runOnce(t, r); res != (relay.Result{Parked: 1}) {
			t.Fatalf("after MaxAge: %+v", res)
		}
		parked, err := relay.Parked(ctx, s, 0, 10)
		if err != nil || len(parked) != 1 || parked[0].ID != evs[0].ID || parked[0].Attempts != 2 {
			t.Fatalf("Parked = %+v, %v", parked, err)
		}
		if r := parked[0].LastError; !utf8.ValidString(r) || strings.Contains(r, "\x00") || !strings.Contains(r, "HTTP 503") {
			t.Fatalf("stored reason %q: want valid UTF-8 without NUL naming the failure", r)
		}
		down = false
		if res := runOnce(t, r); res != (relay.Result{Delivered: 1}) || f.got[0] != evs[1].ID {
			t.Fatalf("the event after the parked one: %+v, delivered %v", res, f.got)
		}
		if err := relay.Redrive(ctx, s, time.Now(), evs[1].ID); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("Redrive of a delivered event: %v, want ErrNotFound", err)
		}
		if err := relay.Redrive(ctx, s, time.Now(), evs[0].ID); err != nil {
			t.Fatal(err)
		}
		if res := runOnce(t, r); res != (relay.Result{Delivered: 1}) || f.got[1] != evs[0].ID {
			t.Fatalf("after Redrive: %+v, delivered %v", res, f.got)
		}
		if parked, _ := relay.Parked(ctx, s, 0, 10); len(parked) != 0 {
			t.Fatalf("still parked: %+v", parked)
		}
	})
}

// TestTypesSettleOthers: events of types the host does not subscribe to
// are settled unpublished.
func TestTypesSettleOthers(t *testing.T) {
	ctx := t.Context()
	s := memory.New()
	f := &fake{}
	r := newRelay(t, relay.Config{Store: s, Publisher: f, Types: []string{"WANTED"}})
	var wanted storage.Event
	_ = s.Atomic(ctx, func(tx storage.Tx) error {
		other, _ := storage.NewEvent(nil, "OTHER", "A", nil, time.Now())
		wanted, _ = storage.NewEvent(nil, "WANTED", "A", nil, time.Now())
		_ = tx.Outbox().Append(ctx, &other)
		return tx.Outbox().Append(ctx, &wanted)
	})
	runOnce(t, r)
	runOnce(t, r)
	if len(f.got) != 1 || f.got[0] != wanted.ID {
		t.Fatalf("published %v, want only the subscribed event", f.got)
	}
}

// TestPublisherPanic: a panicking publisher fails its event, not the relay.
func TestPublisherPanic(t *testing.T) {
	s := memory.New()
	f := &fake{fail: func(storage.Event) error { panic("boom") }}
	var reported error
	r := newRelay(t, relay.Config{Store: s, Publisher: f, OnFailure: func(_ storage.Event, err error) { reported = err }})
	ev := appendEvents(t, s, 1, 1, time.Now())[0]
	if res := runOnce(t, r); res != (relay.Result{Retried: 1}) {
		t.Fatalf("%+v", res)
	}
	if reported == nil || !strings.Contains(reported.Error(), "panicked") {
		t.Fatalf("OnFailure saw %v", reported)
	}
	evs := storagetest.Events(t, s, ev.AccountID)
	if !strings.Contains(evs[0].LastError, "panicked") {
		t.Fatalf("LastError %q", evs[0].LastError)
	}
}

// TestLostLease: a relay whose Publish outlasts its lease finds the event
// taken over; it counts it lost and does not overwrite the new owner's
// outcome.
func TestLostLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		s := memory.New()
		release := make(chan struct{})
		started := make(chan struct{})
		slow := &fake{fail: func(storage.Event) error { close(started); <-release; return errors.New("too late") }}
		fast := &fake{}
		a := newRelay(t, relay.Config{Store: s, Publisher: slow, Owner: "a", Lease: time.Minute})
		b := newRelay(t, relay.Config{Store: s, Publisher: fast, Owner: "b", Lease: time.Minute})
		appendEvents(t, s, 1, 1, time.Now())
		resA := make(chan relay.Result)
		go func() { res, _ := a.RunOnce(ctx); resA <- res }()
		<-started
		time.Sleep(time.Minute)
		if res := runOnce(t, b); res != (relay.Result{Delivered: 1}) {
			t.Fatalf("b: %+v", res)
		}
		close(release)
		if res := <-resA; res != (relay.Result{Lost: 1}) {
			t.Fatalf("a: %+v, want the event lost", res)
		}
		if res := runOnce(t, b); res != (relay.Result{}) {
			t.Fatalf("delivered again: %+v", res)
		}
	})
}

func TestReason(t *testing.T) {
	long := strings.Repeat("é", 400)
	for _, in := range []string{"a\x00b", "\xff\xfe", long} {
		got := relay.Reason(errors.New(in))
		if !utf8.ValidString(got) || strings.Contains(got, "\x00") || len(got) > 512 {
			t.Errorf("Reason(%q) = %q", in, got)
		}
	}
}

// receiver is a loopback webhook receiver that verifies every delivery and
// counts the ids it accepted.
type receiver struct {
	srv      *httptest.Server
	verifier *webhooksig.Verifier
	mode     atomic.Value // func(http.ResponseWriter, *http.Request) bool: true when it answered
	mu       sync.Mutex
	seen     map[string]int
	order    map[string][]int64 // per account, the n of each accepted event
}

func newReceiver(t testing.TB, signer *webhooksig.Signer, now func() time.Time) *receiver {
	t.Helper()
	v, err := webhooksig.NewVerifier(signer.PublicKey(), webhooksig.VerifierConfig{Clock: now})
	if err != nil {
		t.Fatal(err)
	}
	rc := &receiver{verifier: v, seen: map[string]int{}, order: map[string][]int64{}}
	rc.mode.Store(func(http.ResponseWriter, *http.Request) bool { return false })
	rc.srv = httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	if rc.mode.Load().(func(http.ResponseWriter, *http.Request) bool)(w, r) {
		return
	}
	d, err := rc.verifier.Verify(r)
	if err != nil {
		var ve *webhooksig.VerifyError
		errors.As(err, &ve)
		http.Error(w, err.Error(), ve.Status())
		return
	}
	rc.mu.Lock()
	rc.seen[d.ID]++
	rc.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

func (rc *receiver) count(id string) int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.seen[id]
}

func newSigner(t testing.TB) *webhooksig.Signer {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := webhooksig.NewSigner(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestFaultsOnLoopback: the receiver is down, answers 500, is too slow;
// every event still arrives, verified, exactly once.
// switchPublisher publishes through the publisher it holds now.
type switchPublisher struct {
	p atomic.Pointer[webhook.Publisher]
}

func (s *switchPublisher) Publish(ctx context.Context, e storage.Event) error {
	return s.p.Load().Publish(ctx, e)
}

func TestFaultsOnLoopback(t *testing.T) {
	cases := []struct {
		name  string
		fault func(rc *receiver) (restore func())
	}{
		{"down", func(*receiver) func() { return nil }}, // the publisher points at a closed port
		{"500", func(rc *receiver) func() {
			rc.mode.Store(func(w http.ResponseWriter, _ *http.Request) bool {
				http.Error(w, "oops", http.StatusInternalServerError)
				return true
			})
			return func() { rc.mode.Store(func(http.ResponseWriter, *http.Request) bool { return false }) }
		}},
		{"slow", func(rc *receiver) func() {
			// A receiver slower than the sender's timeout: it sees the
			// sender give up and records nothing.
			rc.mode.Store(func(w http.ResponseWriter, r *http.Request) bool {
				select {
				case <-r.Context().Done():
					return true
				case <-time.After(time.Second):
					return false
				}
			})
			return func() { rc.mode.Store(func(http.ResponseWriter, *http.Request) bool { return false }) }
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, clk := memory.New(), storagetest.NewClock(t0)
			signer := newSigner(t)
			rc := newReceiver(t, signer, clk.Now)
			target := rc.srv.URL
			if c.name == "down" {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				target = "http://" + ln.Addr().String()
				ln.Close()
			}
			var url atomic.Value
			url.Store(target)
			// Under the fault the sender gives up after 100 ms (the slow
			// receiver outlasts it); once the fault is over it waits as
			// long as a loaded machine may need, so that what is measured
			// is the relay's recovery, not the machine's speed.
			newPublisher := func(timeout time.Duration) *webhook.Publisher {
				pub, err := webhook.NewPublisher(webhook.PublisherConfig{
					Route:  func(storage.Event) (string, error) { return url.Load().(string), nil },
					Signer: signer, Client: &http.Client{Timeout: timeout}})
				if err != nil {
					t.Fatal(err)
				}
				return pub
			}
			var pub switchPublisher
			pub.p.Store(newPublisher(100 * time.Millisecond))
			var failures atomic.Int64
			r := newRelay(t, relay.Config{Store: s, Publisher: &pub, Clock: clk.Now,
				OnFailure: func(storage.Event, error) { failures.Add(1) }})
			evs := appendEvents(t, s, 20, 4, t0)
			restore := c.fault(rc)
			for range 3 { // three rounds of failures, each after the backoff
				res := runOnce(t, r)
				if res.Delivered != 0 || res.Retried != 4 {
					t.Fatalf("under the fault: %+v", res)
				}
				clk.Add(relay.DefaultMaxBackoff)
			}
			if restore != nil {
				restore()
			}
			url.Store(rc.srv.URL)
			pub.p.Store(newPublisher(30 * time.Second))
			delivered := 0
			for range 10 {
				delivered += runOnce(t, r).Delivered
			}
			if delivered != len(evs) {
				t.Fatalf("delivered %d of %d after the fault", delivered, len(evs))
			}
			for _, e := range evs {
				if n := rc.count(e.ID); n != 1 {
					t.Fatalf("event %s arrived %d times", e.ID, n)
				}
			}
			if failures.Load() != 12 {
				t.Fatalf("OnFailure saw %d failures, want 12", failures.Load())
			}
		})
	}
}

// leaseAll leases every due event for owner at now, to inspect them.
func leaseAll(t testing.TB, s storage.Store, owner string, now time.Time) []storage.Event {
	t.Helper()
	var got []storage.Event
	err := s.Atomic(t.Context(), func(tx storage.Tx) error {
		var err error
		got, err = tx.Outbox().Lease(t.Context(), owner, now, time.Minute, 100)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestShutdownRecordsInFlight cancels Run while a delivery is in flight:
// the delivery finishes, its outcome is recorded although Run's context is
// gone, and the account's next event is due at once for another relay
// instead of waiting for the lease to end.
func TestShutdownRecordsInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := memory.New()
		events := appendEvents(t, s, 2, 1, time.Now())
		started := make(chan struct{})
		var once sync.Once
		slow := &fake{}
		pub := publisherFunc(func(ctx context.Context, e storage.Event) error {
			once.Do(func() { close(started) })
			select {
			case <-time.After(time.Second):
			case <-ctx.Done():
				return ctx.Err()
			}
			return slow.Publish(ctx, e)
		})
		a := newRelay(t, relay.Config{Store: s, Publisher: pub, Owner: "a", ShutdownTimeout: 5 * time.Second})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- a.Run(ctx) }()
		<-started
		time.Sleep(500 * time.Millisecond)
		start := time.Now()
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("Run: %v, want context.Canceled", err)
		}
		if d := time.Since(start); d != 500*time.Millisecond {
			t.Fatalf("Run returned %v after the cancel, want when the delivery finished (500ms)", d)
		}
		if len(slow.got) != 1 || slow.got[0] != events[0].ID {
			t.Fatalf("published %v, want only %s", slow.got, events[0].ID)
		}
		fast := &fake{}
		b := newRelay(t, relay.Config{Store: s, Publisher: fast, Owner: "b"})
		if res := runOnce(t, b); res != (relay.Result{Delivered: 1}) {
			t.Fatalf("b: %+v, want the account's next event due at once", res)
		}
		if len(fast.got) != 1 || fast.got[0] != events[1].ID {
			t.Fatalf("b published %v, want %s", fast.got, events[1].ID)
		}
	})
}

// TestShutdownReleasesAfterDeadline cancels RunOnce while one delivery
// hangs and another has not started: after ShutdownTimeout the hanging one
// is abandoned, both events are released (due at once, the attempt counted
// with the shutdown reason), so another relay need not wait for the lease
// to end.
func TestShutdownReleasesAfterDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := memory.New()
		appendEvents(t, s, 2, 2, time.Now())
		started := make(chan struct{})
		var calls atomic.Int32
		hang := publisherFunc(func(ctx context.Context, e storage.Event) error {
			if calls.Add(1) == 1 {
				close(started)
			}
			<-ctx.Done()
			return ctx.Err()
		})
		var failures atomic.Int32
		a := newRelay(t, relay.Config{Store: s, Publisher: hang, Owner: "a", Workers: 1, ShutdownTimeout: 5 * time.Second,
			OnFailure: func(storage.Event, error) { failures.Add(1) }})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan relay.Result)
		go func() { res, _ := a.RunOnce(ctx); done <- res }()
		<-started
		start := time.Now()
		cancel()
		res := <-done
		if d := time.Since(start); d != 5*time.Second {
			t.Fatalf("RunOnce returned %v after the cancel, want ShutdownTimeout (5s)", d)
		}
		if res != (relay.Result{Released: 2}) {
			t.Fatalf("a: %+v, want both events released", res)
		}
		if n := calls.Load(); n != 1 {
			t.Fatalf("Publish called %d times, want 1 (none started after the cancel)", n)
		}
		if n := failures.Load(); n != 0 {
			t.Fatalf("OnFailure saw %d abandoned deliveries, want 0", n)
		}
		got := leaseAll(t, s, "probe", time.Now())
		if len(got) != 2 {
			t.Fatalf("leased %d events at once after the shutdown, want 2", len(got))
		}
		for _, e := range got {
			if e.Attempts != 1 || !strings.Contains(e.LastError, "shut down") {
				t.Fatalf("event %s: attempts %d, last error %q; want 1 and the shutdown reason", e.ID, e.Attempts, e.LastError)
			}
		}
		if res, err := a.RunOnce(ctx); err == nil || res != (relay.Result{}) {
			t.Fatalf("RunOnce on a cancelled context: %+v, %v; want no lease and the context's error", res, err)
		}
	})
}

// publisherFunc adapts a function to relay.Publisher.
type publisherFunc func(ctx context.Context, e storage.Event) error

func (f publisherFunc) Publish(ctx context.Context, e storage.Event) error { return f(ctx, e) }

package postgres_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/walletgate/walletgate/apierror/webhooksig"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/postgres"
	"github.com/walletgate/walletgate/storage/postgres/pgtest"
	"github.com/walletgate/walletgate/storage/relay"
	"github.com/walletgate/walletgate/storage/webhook"
)

// inbox is a loopback webhook receiver: it verifies each delivery and keeps
// the ids in the order they arrived.
type inbox struct {
	srv *httptest.Server
	mu  sync.Mutex
	ids []string
}

func newInbox(tb testing.TB, signer *webhooksig.Signer) *inbox {
	tb.Helper()
	v, err := webhooksig.NewVerifier(signer.PublicKey(), webhooksig.VerifierConfig{FreshnessWindow: -1})
	if err != nil {
		tb.Fatal(err)
	}
	in := &inbox{}
	in.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d, err := v.Verify(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		in.mu.Lock()
		in.ids = append(in.ids, d.ID)
		in.mu.Unlock()
	}))
	tb.Cleanup(in.srv.Close)
	return in
}

func (in *inbox) received() []string {
	in.mu.Lock()
	defer in.mu.Unlock()
	return slices.Clone(in.ids)
}

func newWebhookSigner(tb testing.TB) *webhooksig.Signer {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	s, err := webhooksig.NewSigner(key)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// replicas returns n stores on one new schema, each with its own pool.
func relayReplicas(tb testing.TB, n int) []*postgres.Store {
	tb.Helper()
	first := newStore(tb, newPool(tb, 4))
	out := []*postgres.Store{first}
	for range n - 1 {
		out = append(out, pgtest.SameSchema(tb, first, newPool(tb, 4), postgres.Config{}))
	}
	return out
}

// appendOutbox writes n events over accounts, in transactions of 100.
func appendOutbox(tb testing.TB, s storage.Store, n, accounts int, now time.Time) []storage.Event {
	tb.Helper()
	ctx := tb.Context()
	var all []storage.Event
	for start := 0; start < n; start += 100 {
		var batch []storage.Event
		mustAtomic(tb, s, func(tx storage.Tx) error {
			batch = batch[:0]
			for i := start; i < min(n, start+100); i++ {
				e, err := storage.NewEvent(nil, "TEST.EVENT", fmt.Sprintf("ExternalAccount:%d", i%accounts), map[string]int{"n": i}, now)
				if err != nil {
					return err
				}
				if err := tx.Outbox().Append(ctx, &e); err != nil {
					return err
				}
				batch = append(batch, e)
			}
			return nil
		})
		all = append(all, batch...)
	}
	return all
}

// deliverAll runs one relay per store until every event is delivered.
func deliverAll(tb testing.TB, stores []*postgres.Store, pub relay.Publisher, total int, clock func() time.Time) {
	tb.Helper()
	ctx := tb.Context()
	c, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var mu sync.Mutex
	delivered := 0
	var wg sync.WaitGroup
	errs := make(chan error, len(stores))
	for i, s := range stores {
		r, err := relay.New(relay.Config{Store: s, Publisher: pub, Clock: clock, Owner: fmt.Sprintf("replica-%d", i), Batch: 64, Workers: 16})
		if err != nil {
			tb.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				done := delivered >= total
				mu.Unlock()
				if done {
					return
				}
				res, err := r.RunOnce(c)
				if err != nil {
					errs <- err
					return
				}
				if res.Retried+res.Parked+res.Lost > 0 {
					errs <- fmt.Errorf("replica %d: %+v with a healthy receiver", i, res)
					return
				}
				mu.Lock()
				delivered += res.Delivered
				mu.Unlock()
				if res.Delivered == 0 { // as Relay.Run, with a short Poll
					time.Sleep(10 * time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		tb.Fatal(err)
	}
}

// TestRelayReplicas: four replicas deliver 1000 events from one database:
// each arrives once, and each account's events in commit order.
func TestRelayReplicas(t *testing.T) {
	stores := relayReplicas(t, 4)
	signer := newWebhookSigner(t)
	in := newInbox(t, signer)
	pub, err := webhook.NewPublisher(webhook.PublisherConfig{Target: in.srv.URL, Signer: signer})
	if err != nil {
		t.Fatal(err)
	}
	evs := appendOutbox(t, stores[0], 1000, 50, time.Now())
	deliverAll(t, stores, pub, len(evs), time.Now)

	got := in.received()
	count := map[string]int{}
	for _, id := range got {
		count[id]++
	}
	seq := map[string]storage.Event{}
	for _, e := range evs {
		seq[e.ID] = e
		if count[e.ID] != 1 {
			t.Fatalf("event %s arrived %d times, want once", e.ID, count[e.ID])
		}
	}
	if len(got) != len(evs) {
		t.Fatalf("%d deliveries of %d events", len(got), len(evs))
	}
	last := map[string]int64{}
	for _, id := range got {
		e := seq[id]
		if e.Seq < last[e.AccountID] {
			t.Fatalf("account %s: event %d arrived after %d", e.AccountID, e.Seq, last[e.AccountID])
		}
		last[e.AccountID] = e.Seq
	}
}

// crashing publishes through next and then, for the first delivery only,
// signals the crash and hangs until dead is closed at the end of the test:
// the replica is gone with the event sent and its outcome unrecorded.
// (Cancelling the relay's context would be a graceful stop, which records
// outcomes.)
type crashing struct {
	next    relay.Publisher
	once    sync.Once
	crashed chan storage.Event
	dead    chan struct{}
}

func (p *crashing) Publish(c context.Context, e storage.Event) error {
	if err := p.next.Publish(c, e); err != nil {
		return err
	}
	crash := false
	p.once.Do(func() { crash = true })
	if crash {
		p.crashed <- e
		<-p.dead
		return errors.New("the replica was dead")
	}
	return nil
}

// TestRelayReplicaKilled: a replica dies after sending an event and before
// recording it. When its lease ends another replica delivers everything;
// only the events the dead replica had in flight arrive twice.
func TestRelayReplicaKilled(t *testing.T) {
	ctx := t.Context()
	stores := relayReplicas(t, 2)
	signer := newWebhookSigner(t)
	in := newInbox(t, signer)
	pub, err := webhook.NewPublisher(webhook.PublisherConfig{Target: in.srv.URL, Signer: signer})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	evs := appendOutbox(t, stores[0], 40, 8, now)

	crash := &crashing{next: pub, crashed: make(chan storage.Event, 1), dead: make(chan struct{})}
	dying, err := relay.New(relay.Config{Store: stores[0], Publisher: crash, Clock: clock, Owner: "dying", Workers: 1, Batch: 4})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _, _ = dying.RunOnce(ctx) }()
	t.Cleanup(func() { close(crash.dead); <-done })
	inFlight := <-crash.crashed // the process hangs dead: nothing it leased is recorded

	// Its leases hold the events until they end; then the survivor
	// delivers them all.
	survivor, err := relay.New(relay.Config{Store: stores[1], Publisher: pub, Clock: clock, Owner: "survivor"})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := survivor.RunOnce(ctx); err != nil || res.Delivered != 4 {
		t.Fatalf("before the lease ended: %+v, %v; want the 4 accounts the dead replica did not lease", res, err)
	}
	mu.Lock()
	now = now.Add(relay.DefaultLease)
	mu.Unlock()
	deliverAll(t, stores[1:], pub, len(evs)-4, clock)

	count := map[string]int{}
	for _, id := range in.received() {
		count[id]++
	}
	for _, e := range evs {
		want := 1
		if e.ID == inFlight.ID {
			want = 2
		}
		if count[e.ID] != want {
			t.Fatalf("event %s arrived %d times, want %d", e.ID, count[e.ID], want)
		}
	}
}

// BenchmarkRelayThroughput: events delivered per second from one database
// to a loopback receiver by 1 and by 4 replicas (each its own pool).
func BenchmarkRelayThroughput(b *testing.B) {
	signer := newWebhookSigner(b)
	in := newInbox(b, signer)
	pub, err := webhook.NewPublisher(webhook.PublisherConfig{Target: in.srv.URL, Signer: signer, Client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}})
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{1, 4} {
		b.Run(fmt.Sprintf("replicas=%d", n), func(b *testing.B) {
			stores := relayReplicas(b, n)
			appendOutbox(b, stores[0], b.N, 256, time.Now())
			b.ResetTimer()
			start := time.Now()
			deliverAll(b, stores, pub, b.N, time.Now)
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
		})
	}
}

// holding publishes through next once proceed is closed, after signalling
// that its first delivery started.
type holding struct {
	next    relay.Publisher
	once    sync.Once
	started chan struct{}
	proceed chan struct{}
}

func (p *holding) Publish(c context.Context, e storage.Event) error {
	p.once.Do(func() { close(p.started); <-p.proceed })
	return p.next.Publish(c, e)
}

// TestRelayGracefulShutdown stops a replica mid-delivery by cancelling its
// Run: the delivery in flight completes and its outcome is recorded
// although the context is gone, the events it leased but had not started
// are released, and another replica delivers the rest at once, without
// waiting for the leases to end: every event arrives exactly once.
func TestRelayGracefulShutdown(t *testing.T) {
	ctx := t.Context()
	stores := relayReplicas(t, 2)
	signer := newWebhookSigner(t)
	in := newInbox(t, signer)
	pub, err := webhook.NewPublisher(webhook.PublisherConfig{Target: in.srv.URL, Signer: signer})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	clock := func() time.Time { return now } // no lease ends during the test
	evs := appendOutbox(t, stores[0], 40, 8, now)

	hold := &holding{next: pub, started: make(chan struct{}), proceed: make(chan struct{})}
	stopping, err := relay.New(relay.Config{Store: stores[0], Publisher: hold, Clock: clock, Owner: "stopping", Workers: 1, Batch: 4, ShutdownTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	run, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- stopping.Run(run) }()
	<-hold.started
	stop()
	close(hold.proceed)
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the stopped replica returned %v, want context.Canceled", err)
	}

	deliverAll(t, stores[1:], pub, len(evs)-1, clock)
	count := map[string]int{}
	for _, id := range in.received() {
		count[id]++
	}
	for _, e := range evs {
		if count[e.ID] != 1 {
			t.Fatalf("event %s arrived %d times, want once", e.ID, count[e.ID])
		}
	}
}

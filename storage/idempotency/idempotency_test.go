package idempotency_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/idempotency"
	"github.com/walletgate/walletgate/storage/memory"
)

const key = "5b0d6a7e-5f38-4e0f-8b0b-0e7c0c0f2a10"

type fixture struct {
	store storage.Store
	once  *idempotency.Once
	runs  atomic.Int32
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{store: memory.New()}
	f.once = newOnce(t, idempotency.Config{Store: f.store, TTL: time.Hour, Lease: time.Minute})
	return f
}

// newOnce returns idempotency.New(cfg) and fails the test on error.
func newOnce(t *testing.T, cfg idempotency.Config) *idempotency.Once {
	t.Helper()
	g, err := idempotency.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func req(body string) idempotency.Request {
	return idempotency.Request{Scope: "Platform:1", Key: key, Method: "POST", Path: "/quotes/Q1/execute", Body: []byte(body)}
}

// respond returns a function that counts its runs and answers status.
func (f *fixture) respond(status int, err error) func(context.Context) (idempotency.Response, error) {
	return func(context.Context) (idempotency.Response, error) {
		n := f.runs.Add(1)
		return idempotency.Response{Status: status, Header: http.Header{"Content-Type": {"application/json"}, "X-Run": {"x"}},
			Body: []byte(`{"run":` + string(rune('0'+n)) + `}`)}, err
	}
}

func TestParseKey(t *testing.T) {
	for _, in := range []string{key, strings.ToUpper(key), "00000000-0000-0000-0000-000000000000"} {
		got, err := idempotency.ParseKey(in)
		if err != nil || got != strings.ToLower(in) {
			t.Errorf("ParseKey(%q) = %q, %v; want the lower-case key", in, got, err)
		}
	}
	for _, in := range []string{"", "abc", key + "0", key[:35], "{" + key[:34] + "}", "urn:uuid:" + key,
		strings.ReplaceAll(key, "-", ""), "5b0d6a7e-5f38-4e0f-8b0b-0e7c0c0f2a1g", "5b0d6a7e_5f38-4e0f-8b0b-0e7c0c0f2a10",
		" " + key[1:], "5b0d6a7e-5f38-4e0f-8b0b0-e7c0c0f2a10"} {
		_, err := idempotency.ParseKey(in)
		e := apierrortest.Want(t, err, apierror.InvalidInput, "")
		if e.Details["field"] != idempotency.Header || !strings.Contains(e.Message, "Idempotency-Key") {
			t.Errorf("ParseKey(%q): %+v does not name the header", in, e)
		}
	}
}

func TestFromHeader(t *testing.T) {
	h := http.Header{}
	if k, err := idempotency.FromHeader(h); k != "" || err != nil {
		t.Fatalf("no header: %q, %v", k, err)
	}
	h.Add(idempotency.Header, "x")
	if k, err := idempotency.FromHeader(h); k != "x" || err != nil {
		t.Fatalf("one header: %q, %v", k, err)
	}
	h.Add(idempotency.Header, "y")
	_, err := idempotency.FromHeader(h)
	apierrortest.Want(t, err, apierror.InvalidInput, "")
}

func TestFingerprintCanonical(t *testing.T) {
	a, err := idempotency.Fingerprint("POST", "/p", "", []byte(`{"a":1,"b":[1.0,2]}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := idempotency.Fingerprint("POST", "/p", "", []byte(" {\"b\":[1,2e0], \"a\":1}\n"))
	c, _ := idempotency.Fingerprint("POST", "/p", "", []byte(`{"a":2,"b":[1,2]}`))
	d, _ := idempotency.Fingerprint("POST", "/pa", "", nil)
	e, _ := idempotency.Fingerprint("POSTa", "/p", "", nil)
	if string(a) != string(b) || string(a) == string(c) || string(d) == string(e) {
		t.Fatal("fingerprints do not follow the canonical body and the method/path boundary")
	}
	// The query is part of the request, and its boundary with the path too.
	q1, _ := idempotency.Fingerprint("GET", "/p", "amount=1", nil)
	q2, _ := idempotency.Fingerprint("GET", "/p", "amount=2", nil)
	q0, _ := idempotency.Fingerprint("GET", "/p", "", nil)
	qp, _ := idempotency.Fingerprint("GET", "/pamount=1", "", nil)
	if string(q1) == string(q2) || string(q1) == string(q0) || string(qp) == string(q1) {
		t.Fatal("fingerprints do not follow the query string")
	}
	_, err = idempotency.Fingerprint("POST", "/p", "", []byte(`{"a":`))
	apierrortest.Want(t, err, apierror.InvalidInput, "")
}

func TestDoWithoutKeyAlwaysExecutes(t *testing.T) {
	ctx := t.Context()
	f := newFixture(t)
	r := req(`{}`)
	r.Key = ""
	for range 2 {
		resp, replayed, err := f.once.Do(ctx, r, f.respond(201, nil))
		if err != nil || replayed || resp.Status != 201 {
			t.Fatalf("Do = %d, %v, %v", resp.Status, replayed, err)
		}
	}
	if f.runs.Load() != 2 {
		t.Fatalf("%d runs, want 2", f.runs.Load())
	}
}

func TestDoRejectsInvalidKeyAndBody(t *testing.T) {
	ctx := t.Context()
	f := newFixture(t)
	r := req(`{}`)
	r.Key = "not-a-uuid"
	_, _, err := f.once.Do(ctx, r, f.respond(200, nil))
	apierrortest.Want(t, err, apierror.InvalidInput, "")
	_, _, err = f.once.Do(ctx, req(`{"a":`), f.respond(200, nil))
	apierrortest.Want(t, err, apierror.InvalidInput, "")
	if f.runs.Load() != 0 {
		t.Fatal("a rejected request executed")
	}
}

func TestDoReplays(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		f := newFixture(t)
		first, replayed, err := f.once.Do(ctx, req(`{"a":1,"b":2}`), f.respond(201, nil))
		if err != nil || replayed || first.Status != 201 {
			t.Fatalf("first: %d, %v, %v", first.Status, replayed, err)
		}
		time.Sleep(59 * time.Minute)
		// The same request, spelled differently, with the key in upper case.
		r := req(` {"b":2, "a":1.0} `)
		r.Key = strings.ToUpper(key)
		again, replayed, err := f.once.Do(ctx, r, f.respond(201, nil))
		if err != nil || !replayed || again.Status != 201 || string(again.Body) != string(first.Body) ||
			again.Header.Get("Content-Type") != "application/json" || again.Header.Get("X-Run") != "" {
			t.Fatalf("replay: %d %s %v, %v, %v", again.Status, again.Body, again.Header, replayed, err)
		}
		if f.runs.Load() != 1 {
			t.Fatalf("%d runs, want 1", f.runs.Load())
		}
		// Another scope is another key.
		r = req(`{"a":1,"b":2}`)
		r.Scope = "Platform:2"
		if _, replayed, err := f.once.Do(ctx, r, f.respond(201, nil)); err != nil || replayed || f.runs.Load() != 2 {
			t.Fatalf("other scope: %v, %v, %d runs", replayed, err, f.runs.Load())
		}
	})
}

// TestDoRequiresScope: a keyed request without a scope never executes and
// never reads another scope's record; without a key it simply runs.
func TestDoRequiresScope(t *testing.T) {
	ctx := t.Context()
	f := newFixture(t)
	if _, _, err := f.once.Do(ctx, req(`{"a":1}`), f.respond(201, nil)); err != nil {
		t.Fatal(err)
	}
	r := req(`{"a":1}`)
	r.Scope = ""
	resp, replayed, err := f.once.Do(ctx, r, f.respond(201, nil))
	apierrortest.Want(t, err, apierror.InternalError, "")
	if !errors.Is(err, idempotency.ErrNoScope) || replayed || resp.Body != nil || f.runs.Load() != 1 {
		t.Fatalf("empty scope: %v replayed=%v body=%s runs=%d", err, replayed, resp.Body, f.runs.Load())
	}
	r.Key = ""
	if _, _, err := f.once.Do(ctx, r, f.respond(201, nil)); err != nil || f.runs.Load() != 2 {
		t.Fatalf("without a key: %v, %d runs", err, f.runs.Load())
	}
}

func TestDoMismatchConflicts(t *testing.T) {
	ctx := t.Context()
	f := newFixture(t)
	if _, _, err := f.once.Do(ctx, req(`{"a":1}`), f.respond(200, nil)); err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]idempotency.Request{
		"body":   req(`{"a":2}`),
		"path":   {Scope: "Platform:1", Key: key, Method: "POST", Path: "/quotes/Q2/execute", Body: []byte(`{"a":1}`)},
		"method": {Scope: "Platform:1", Key: key, Method: "PUT", Path: "/quotes/Q1/execute", Body: []byte(`{"a":1}`)},
		"query":  {Scope: "Platform:1", Key: key, Method: "POST", Path: "/quotes/Q1/execute", Query: "dryRun=true", Body: []byte(`{"a":1}`)},
	} {
		_, _, err := f.once.Do(ctx, r, f.respond(200, nil))
		e := apierrortest.Want(t, err, apierror.Conflict, "")
		if !errors.Is(err, idempotency.ErrMismatch) || !strings.Contains(e.Message, "different request") {
			t.Errorf("%s: %v, want ErrMismatch", name, err)
		}
	}
	if f.runs.Load() != 1 {
		t.Fatalf("%d runs, want 1", f.runs.Load())
	}
}

func TestDoReleasesOnFailure(t *testing.T) {
	ctx := t.Context()
	boom := errors.New("boom")
	for name, fn := range map[string]struct {
		status int
		err    error
	}{
		"error":     {0, boom},
		"apierror":  {0, apierror.New(apierror.InvalidAmount, "too low")},
		"500":       {500, nil},
		"400":       {400, nil},
		"409":       {409, nil},
		"202":       {202, nil},
		"204 keeps": {204, nil},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			resp, replayed, err := f.once.Do(ctx, req(`{}`), f.respond(fn.status, fn.err))
			if !errors.Is(err, fn.err) || replayed || (fn.err == nil && resp.Status != fn.status) {
				t.Fatalf("first: %d, %v, %v", resp.Status, replayed, err)
			}
			// The repeat executes again unless the first response was kept.
			_, replayed, err = f.once.Do(ctx, req(`{}`), f.respond(200, nil))
			kept := fn.status == 204
			if kept != replayed || err != nil {
				t.Fatalf("repeat: replayed %v, %v; want replayed %v", replayed, err, kept)
			}
			if want := map[bool]int32{true: 1, false: 2}[kept]; f.runs.Load() != want {
				t.Fatalf("%d runs, want %d", f.runs.Load(), want)
			}
		})
	}
}

func TestDoInProgressConflicts(t *testing.T) {
	ctx := t.Context()
	f := newFixture(t)
	var inner error
	_, _, err := f.once.Do(ctx, req(`{}`), func(c context.Context) (idempotency.Response, error) {
		_, _, inner = f.once.Do(ctx, req(`{}`), f.respond(200, nil))
		return idempotency.Response{Status: 200}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	e := apierrortest.Want(t, inner, apierror.Conflict, "")
	if !errors.Is(inner, idempotency.ErrInProgress) || e.Message != "a request with this key is in progress" {
		t.Fatalf("inner: %v, want ErrInProgress", inner)
	}
	if f.runs.Load() != 0 {
		t.Fatal("the in-progress repeat executed")
	}
}

func TestDoExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		f := newFixture(t)
		if _, _, err := f.once.Do(ctx, req(`{}`), f.respond(200, nil)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Hour) // the TTL: the key is free again
		if _, replayed, err := f.once.Do(ctx, req(`{"other":1}`), f.respond(200, nil)); err != nil || replayed {
			t.Fatalf("after the TTL: %v, %v", replayed, err)
		}
		time.Sleep(2 * time.Hour)
		n, err := f.store.Sweep(ctx, time.Now(), 100)
		if err != nil || n != 1 {
			t.Fatalf("Sweep: %d, %v; want 1", n, err)
		}
		err = f.store.Atomic(ctx, func(tx storage.Tx) error {
			_, err := tx.Idempotency().Get(ctx, "Platform:1", key)
			return err
		})
		if !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("Get after Sweep: %v", err)
		}
	})
}

// TestDoLeaseLost: a reservation whose lease ended frees the key; the late
// response is returned but not stored.
func TestDoLeaseLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		f := newFixture(t)
		resp, _, err := f.once.Do(ctx, req(`{}`), func(c context.Context) (idempotency.Response, error) {
			time.Sleep(time.Minute) // the lease ends while executing
			synctest.Wait()         // and its timer has cancelled c
			if c.Err() == nil {
				t.Fatal("the function's context outlived the lease")
			}
			if _, replayed, err := f.once.Do(ctx, req(`{}`), f.respond(200, nil)); err != nil || replayed {
				t.Fatalf("after the lease: %v, %v", replayed, err)
			}
			return idempotency.Response{Status: 200, Body: []byte("late")}, nil
		})
		if err != nil || string(resp.Body) != "late" {
			t.Fatalf("late response: %s, %v", resp.Body, err)
		}
		resp, replayed, err := f.once.Do(ctx, req(`{}`), f.respond(200, nil))
		if err != nil || !replayed || string(resp.Body) != `{"run":1}` {
			t.Fatalf("replay: %s, %v, %v; want the second execution's", resp.Body, replayed, err)
		}
	})
}

// TestDoConcurrentFirstRequests: of concurrent first requests with one key,
// exactly one executes; each other one gets 409 in progress or, once the
// first completed, its replay.
func TestDoConcurrentFirstRequests(t *testing.T) {
	ctx := t.Context()
	f := newFixture(t)
	const n = 64
	var wg sync.WaitGroup
	start := make(chan struct{})
	var replays, conflicts atomic.Int32
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			resp, replayed, err := f.once.Do(ctx, req(`{}`), func(c context.Context) (idempotency.Response, error) {
				time.Sleep(5 * time.Millisecond)
				return f.respond(200, nil)(c)
			})
			switch {
			case err == nil && replayed && resp.Status == 200:
				replays.Add(1)
			case err == nil && resp.Status == 200:
			case errors.Is(err, idempotency.ErrInProgress) && apierror.As(err).Status() == 409:
				conflicts.Add(1)
			default:
				t.Errorf("unexpected outcome %d, %v, %v", resp.Status, replayed, err)
			}
		}()
	}
	close(start)
	wg.Wait()
	if f.runs.Load() != 1 || replays.Load()+conflicts.Load() != n-1 {
		t.Fatalf("%d executions, %d replays, %d conflicts; want 1 execution", f.runs.Load(), replays.Load(), conflicts.Load())
	}
}

// failingStore fails every transaction.
type failingStore struct{ storage.Store }

func (failingStore) Atomic(context.Context, func(storage.Tx) error) error {
	return errors.New("db down")
}

func TestDoStoreFailure(t *testing.T) {
	ctx := t.Context()
	f := newFixture(t)
	g := newOnce(t, idempotency.Config{Store: failingStore{f.store}})
	_, _, err := g.Do(ctx, req(`{}`), f.respond(200, nil))
	e := apierrortest.Want(t, err, apierror.InternalError, "")
	if strings.Contains(e.Message, "db down") || f.runs.Load() != 0 {
		t.Fatalf("store failure: %v leaked or executed", e)
	}
}

func TestDoReleasesOnPanic(t *testing.T) {
	ctx := t.Context()
	f := newFixture(t)
	func() {
		defer func() {
			if recover() != "boom" {
				t.Fatal("the panic was not re-raised")
			}
		}()
		_, _, _ = f.once.Do(ctx, req(`{}`), func(context.Context) (idempotency.Response, error) { panic("boom") })
	}()
	if _, replayed, err := f.once.Do(ctx, req(`{}`), f.respond(200, nil)); err != nil || replayed || f.runs.Load() != 1 {
		t.Fatalf("after a panic: %v, %v, %d runs", replayed, err, f.runs.Load())
	}
}

// TestNewRequiresStore: a Once without a store is a configuration error,
// not a panic at the first request.
func TestNewRequiresStore(t *testing.T) {
	if g, err := idempotency.New(idempotency.Config{}); err == nil || g != nil {
		t.Fatalf("New without a store = %v, %v; want an error", g, err)
	}
}

package idempotency_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/storage/idempotency"
	"github.com/walletgate/walletgate/storage/memory"
)

type reply struct {
	status int
	header http.Header
	body   string
}

func send(t *testing.T, h http.Handler, method, path, body string, headers ...string) reply {
	t.Helper()
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	for i := 0; i+1 < len(headers); i += 2 {
		r.Header.Add(headers[i], headers[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return reply{w.Code, w.Header(), w.Body.String()}
}

// wantError decodes r as an error response and asserts it with
// apierrortest.Want; the response status must be status, the code's.
func (r reply) wantError(t *testing.T, status int, code apierror.Code) {
	t.Helper()
	var e apierror.Error
	if err := json.Unmarshal([]byte(r.body), &e); err != nil {
		t.Fatalf("reply %d %s is not an error response: %v", r.status, r.body, err)
	}
	apierrortest.Want(t, &e, code, "")
	if r.status != status || e.Status() != status {
		t.Fatalf("reply status %d (code status %d), want %d", r.status, e.Status(), status)
	}
}

// counter is a handler that echoes its body and counts its runs; a body
// "fail" answers 500.
func counter(runs *atomic.Int32) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := runs.Add(1)
		b, _ := io.ReadAll(r.Body)
		if string(b) == `"fail"` {
			apierror.Write(w, apierror.Internal(fmt.Errorf("failed")))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Run", fmt.Sprint(n))
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"run":%d,"body":%s}`, n, b)
	})
}

// middleware returns g's middleware around next, failing the test when it
// cannot be built.
func middleware(t *testing.T, g *idempotency.Once, scope func(*http.Request) string, next http.Handler) http.Handler {
	t.Helper()
	h, err := g.Middleware(scope, next)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestMiddlewareQueryInFingerprint: the same key and body on another query
// string is another request, never the replay of the first.
func TestMiddlewareQueryInFingerprint(t *testing.T) {
	var runs atomic.Int32
	g := newOnce(t, idempotency.Config{Store: memory.New()})
	h := middleware(t, g, func(*http.Request) string { return "Platform:1" }, counter(&runs))
	k := []string{idempotency.Header, key}
	if r := send(t, h, "POST", "/pay?amount=1", `{}`, k...); r.status != 201 {
		t.Fatalf("first: %+v", r)
	}
	send(t, h, "POST", "/pay?amount=1000", `{}`, k...).wantError(t, 409, apierror.Conflict)
	send(t, h, "POST", "/pay", `{}`, k...).wantError(t, 409, apierror.Conflict)
	if r := send(t, h, "POST", "/pay?amount=1", `{}`, k...); r.status != 201 || r.header.Get(idempotency.ReplayedHeader) != "true" {
		t.Fatalf("same query: %+v, want the replay", r)
	}
	if runs.Load() != 1 {
		t.Fatalf("%d runs, want 1", runs.Load())
	}
}

// TestMiddlewareScopeRequired: without a scope function there is no
// middleware; a scope function that names no scope answers 500 and runs
// nothing, so tenant B never receives tenant A's stored response.
func TestMiddlewareScopeRequired(t *testing.T) {
	var runs atomic.Int32
	g := newOnce(t, idempotency.Config{Store: memory.New()})
	if h, err := g.Middleware(nil, counter(&runs)); !errors.Is(err, idempotency.ErrNoScope) || h != nil {
		t.Fatalf("nil scope: %v, %v; want ErrNoScope", h, err)
	}
	tenant := func(r *http.Request) string {
		if u, _, ok := r.BasicAuth(); ok {
			return "Platform:" + u
		}
		return ""
	}
	h := middleware(t, g, tenant, counter(&runs))
	k := []string{idempotency.Header, key}
	a := send(t, h, "POST", "/pay", `{"a":1}`, append(k, "Authorization", basic("tenant-a"))...)
	b := send(t, h, "POST", "/pay", `{"a":1}`, append(k, "Authorization", basic("tenant-b"))...)
	if a.status != 201 || b.status != 201 || b.header.Get(idempotency.ReplayedHeader) != "" || a.body == b.body {
		t.Fatalf("tenant A %+v, tenant B %+v: B must execute on its own", a, b)
	}
	send(t, h, "POST", "/pay", `{"a":1}`, k...).wantError(t, 500, apierror.InternalError)
	if runs.Load() != 2 {
		t.Fatalf("%d runs, want 2", runs.Load())
	}
	// Without a key the scope is not needed.
	if r := send(t, h, "POST", "/pay", `{"a":1}`); r.status != 201 {
		t.Fatalf("without a key: %+v", r)
	}
}

func basic(user string) string {
	r := httptest.NewRequest("GET", "/", nil)
	r.SetBasicAuth(user, "secret")
	return r.Header.Get("Authorization")
}

func TestMiddleware(t *testing.T) {
	var runs atomic.Int32
	g := newOnce(t, idempotency.Config{Store: memory.New(), MaxBody: 64})
	h := middleware(t, g, func(r *http.Request) string { return "Platform:" + r.Header.Get("X-Platform") }, counter(&runs))
	k := []string{idempotency.Header, key}

	first := send(t, h, "POST", "/pay", `{"a":1}`, k...)
	if first.status != 201 || first.body != `{"run":1,"body":{"a":1}}` || first.header.Get("X-Run") != "1" ||
		first.header.Get(idempotency.ReplayedHeader) != "" {
		t.Fatalf("first: %+v", first)
	}
	again := send(t, h, "POST", "/pay", `{ "a" : 1 }`, k...)
	if again.status != 201 || again.body != first.body || again.header.Get("Content-Type") != "application/json" ||
		again.header.Get("X-Run") != "" || again.header.Get(idempotency.ReplayedHeader) != "true" {
		t.Fatalf("replay: %+v", again)
	}
	send(t, h, "POST", "/pay", `{"a":2}`, k...).wantError(t, 409, apierror.Conflict)
	send(t, h, "POST", "/other", `{"a":1}`, k...).wantError(t, 409, apierror.Conflict)
	// Another scope, another key.
	if r := send(t, h, "POST", "/pay", `{"a":1}`, append(k, "X-Platform", "p2")...); r.status != 201 || r.body != `{"run":2,"body":{"a":1}}` {
		t.Fatalf("other scope: %+v", r)
	}
	send(t, h, "POST", "/pay", `{}`, idempotency.Header, "nope").wantError(t, 400, apierror.InvalidInput)
	send(t, h, "POST", "/pay", `{}`, idempotency.Header, key, idempotency.Header, key).wantError(t, 400, apierror.InvalidInput)
	send(t, h, "POST", "/pay", `{"a":`, k...).wantError(t, 400, apierror.InvalidInput)
	send(t, h, "POST", "/pay", `"`+strings.Repeat("x", 100)+`"`, k...).wantError(t, 400, apierror.InvalidInput)
	if runs.Load() != 2 {
		t.Fatalf("%d runs, want 2", runs.Load())
	}
	// Without the header every request executes.
	for range 2 {
		if r := send(t, h, "POST", "/pay", `{"a":1}`); r.status != 201 || r.header.Get(idempotency.ReplayedHeader) != "" {
			t.Fatalf("without a key: %+v", r)
		}
	}
	if runs.Load() != 4 {
		t.Fatalf("%d runs, want 4", runs.Load())
	}
	// A 500 releases the key: the repeat executes again.
	k2 := []string{idempotency.Header, "11111111-2222-4333-8444-555555555555"}
	send(t, h, "POST", "/pay", `"fail"`, k2...).wantError(t, 500, apierror.InternalError)
	send(t, h, "POST", "/pay", `"fail"`, k2...).wantError(t, 500, apierror.InternalError)
	if runs.Load() != 6 {
		t.Fatalf("%d runs, want 6", runs.Load())
	}
}

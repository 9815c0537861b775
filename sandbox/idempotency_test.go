package sandbox_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/sandbox"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/idempotency"
)

// keyedRoute is one route that takes the Idempotency-Key header, driven
// over HTTP: send makes the request with headers (completing a signed
// retry) and returns the final answer; other is another request under the
// same key; id reads the id of the created record from a final answer;
// effects counts what the route did, so a test sees that nothing ran.
type keyedRoute struct {
	name    string
	status  int
	send    func(headers ...string) resp
	other   func(headers ...string) resp
	id      func(r resp) string
	effects func() int
}

// keyedRoutes returns the four routes of e that take the header, each on
// fresh records.
func keyedRoutes(t *testing.T, e *env) []keyedRoute {
	idOf := func(r resp) string {
		var v struct{ ID string }
		r.ok(t, r.status, &v)
		return v.ID
	}
	var routes []keyedRoute

	// POST /transfer-in: 201 Transaction.
	{
		c, w := e.customer("Keyed In")
		ext := e.external(c.ID, usdAccount("31313101"))
		routes = append(routes, keyedRoute{name: "transfer-in", status: 201,
			send: func(h ...string) resp {
				_, r := e.transfer(true, ext.ID, w, 500, h...)
				return r
			},
			other: func(h ...string) resp {
				_, r := e.transfer(true, ext.ID, w, 501, h...)
				return r
			},
			id:      idOf,
			effects: func() int { return int(e.balance(w, "USD") / 500) }})
	}
	// POST /transfer-out: 202 challenge, then 201 Transaction.
	{
		c, w := e.customer("Keyed Out")
		ext := e.external(c.ID, usdAccount("31313102"))
		_, r := e.transfer(true, ext.ID, w, 100_000)
		r.ok(t, 201, nil)
		routes = append(routes, keyedRoute{name: "transfer-out", status: 201,
			send: func(h ...string) resp {
				_, r := e.transfer(false, ext.ID, w, 500, h...)
				return r
			},
			other: func(h ...string) resp {
				_, r := e.transfer(false, ext.ID, w, 501, h...)
				return r
			},
			id:      idOf,
			effects: func() int { return int((100_000 - e.balance(w, "USD")) / 500) }})
	}
	// POST /quotes: 201 Quote.
	{
		p := e.payer(50_000_000)
		ext := e.external(p.customer.ID, usdAccount("31313103"))
		body := func(amount int64) map[string]any {
			return map[string]any{"source": map[string]any{"accountId": p.wallet},
				"destination":        map[string]any{"accountId": ext.ID},
				"lockedCurrencySide": "SENDING", "lockedCurrencyAmount": amount}
		}
		made := 0
		routes = append(routes, keyedRoute{name: "quotes", status: 201,
			send: func(h ...string) resp {
				r := e.do("POST", "/quotes", body(1_000_000), h...)
				if r.status == 201 && r.header.Get(idempotency.ReplayedHeader) == "" {
					made++
				}
				return r
			},
			other:   func(h ...string) resp { return e.do("POST", "/quotes", body(1_000_001), h...) },
			id:      idOf,
			effects: func() int { return made }})
	}
	// POST /quotes/{id}/execute: 202 challenge, then 200 Quote.
	{
		p := e.payer(50_000_000)
		ext := e.external(p.customer.ID, usdAccount("31313104"))
		q := e.quote(p, map[string]any{"accountId": ext.ID}, 1_000_000)
		q2 := e.quote(p, map[string]any{"accountId": ext.ID}, 1_000_000)
		routes = append(routes, keyedRoute{name: "execute", status: 200,
			send: func(h ...string) resp {
				path := "/quotes/" + q.ID + "/execute"
				if len(h) == 0 { // without a key, a quote executes once
					path = "/quotes/" + e.quote(p, map[string]any{"accountId": ext.ID}, 1_000_000).ID + "/execute"
				}
				r := e.do("POST", path, nil, h...)
				if r.status != 202 {
					return r // a replay answers the first leg
				}
				var ch struct{ PayloadToSign, RequestID string }
				r.ok(t, 202, &ch)
				return e.retryRaw(p, ch.PayloadToSign, ch.RequestID, path, h...)
			},
			other: func(h ...string) resp { return e.do("POST", "/quotes/"+q2.ID+"/execute", nil, h...) },
			id: func(r resp) string {
				var v sandbox.Quote
				r.ok(t, 200, &v)
				return v.TransactionID
			},
			effects: func() int { return int((50_000_000 - e.balance(p.wallet, "USDB")) / 1_000_000) }})
	}
	return routes
}

// retryRaw sends the stamped second leg of a bodiless signed request.
func (e *env) retryRaw(p payer, payload, requestID, path string, headers ...string) resp {
	e.t.Helper()
	sig, err := p.key.Stamp(payload)
	if err != nil {
		e.t.Fatal(err)
	}
	return e.do("POST", path, nil, append([]string{"Service-Wallet-Signature", sig, "Request-Id", requestID}, headers...)...)
}

// TestIdempotencyKeyOneRule: every route that takes the Idempotency-Key
// header follows one rule: the key is a UUID (anything else is 400
// INVALID_INPUT naming the header, nothing runs); the first request runs
// once and its final answer is kept 24 hours; a repeat replays it with
// Idempotent-Replayed: true, without running again; another request under
// the key is 409 CONFLICT. On the memory store and, with
// WALLETGATE_POSTGRES_DSN, on PostgreSQL.
func TestIdempotencyKeyOneRule(t *testing.T) {
	stores := map[string]storage.Store{"memory": nil}
	if pg := payoutPostgres(t); pg != nil {
		stores["postgres"] = pg
	}
	for name, store := range stores {
		t.Run(name, func(t *testing.T) { idempotencyKeyOneRule(t, newEnvWith(t, sandbox.Config{Store: store})) })
	}
}

func idempotencyKeyOneRule(t *testing.T, e *env) {
	for i, rt := range keyedRoutes(t, e) {
		t.Run(rt.name, func(t *testing.T) {
			for _, bad := range []string{"key-1", "5b0d6a7e5f384e0f8b0b0e7c0c0f2a10", strings.Repeat("k", 300)} {
				r := rt.send("Idempotency-Key", bad)
				if f := r.fails(t, 400, apierror.InvalidInput); f.Details["field"] != "Idempotency-Key" {
					t.Fatalf("key %.20q: details %v do not name the header", bad, f.Details)
				}
			}
			if n := rt.effects(); n != 0 {
				t.Fatalf("a refused key ran the request %d times", n)
			}

			key := fmt.Sprintf("6f1d2c3b-4a5e-4f60-8a7b-%012d", i+1)
			first := rt.send("Idempotency-Key", key)
			if first.status != rt.status || first.header.Get(idempotency.ReplayedHeader) != "" {
				t.Fatalf("first: %d %v: %s", first.status, first.header, first.body)
			}
			again := rt.send("Idempotency-Key", strings.ToUpper(key)) // the same key
			if again.status != rt.status || again.header.Get(idempotency.ReplayedHeader) != "true" {
				t.Fatalf("repeat: %d, %s %q: %s", again.status, idempotency.ReplayedHeader,
					again.header.Get(idempotency.ReplayedHeader), again.body)
			}
			if rt.id(first) == "" || rt.id(again) != rt.id(first) {
				t.Fatalf("repeat answered %s, first %s", again.body, first.body)
			}
			if n := rt.effects(); n != 1 {
				t.Fatalf("ran %d times, want once", n)
			}
			f := rt.other("Idempotency-Key", key).fails(t, 409, apierror.Conflict)
			if !strings.Contains(f.Message, "different request") {
				t.Fatalf("409 %q", f.Message)
			}
			// Without a key every request runs.
			rt.send()
			if n := rt.effects(); n != 2 {
				t.Fatalf("ran %d times, want twice", n)
			}
			// Retention: the answer is kept 24 hours from completion.
			rec := idempotencyRecord(t, e.sim, key)
			if rec.State != storage.IdempotencyComplete || rec.Status != rt.status {
				t.Fatalf("record %s %d", rec.State, rec.Status)
			}
			if d := time.Until(rec.ExpiresAt); d < idempotency.DefaultTTL-time.Minute || d > idempotency.DefaultTTL {
				t.Fatalf("record expires in %v, want %v", d, idempotency.DefaultTTL)
			}
		})
	}
}

// TestIdempotencyKeyGoAPI: the Go methods follow the rule of their routes.
func TestIdempotencyKeyGoAPI(t *testing.T) {
	e := newEnv(t)
	c, w := e.customer("Go Keyed")
	ext := e.external(c.ID, usdAccount("31313109"))
	ctx := context.Background()
	req := sandbox.TransferRequest{Source: sandbox.AccountRef{AccountID: ext.ID},
		Destination: sandbox.AccountRef{AccountID: w}, Amount: 700, IdempotencyKey: "not-a-uuid"}
	if _, err := e.sim.TransferIn(ctx, req); apierror.As(err) == nil || apierror.As(err).Code != apierror.InvalidInput {
		t.Fatalf("non-UUID key: %v", err)
	}
	req.IdempotencyKey = "6f1d2c3b-4a5e-4f60-8a7b-0000000000aa"
	first, err := e.sim.TransferIn(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	again, err := e.sim.TransferIn(ctx, req)
	if err != nil || again.ID != first.ID || e.balance(w, "USD") != 700 {
		t.Fatalf("repeat %v %v, balance %d", again, err, e.balance(w, "USD"))
	}
	qr := sandbox.QuoteRequest{Source: sandbox.QuoteSource{AccountID: w}, Destination: sandbox.QuoteDestination{AccountID: ext.ID},
		LockedCurrencySide: "SENDING", LockedCurrencyAmount: 100, IdempotencyKey: "quote-1"}
	if _, err := e.sim.CreateQuote(ctx, qr); apierror.As(err) == nil || apierror.As(err).Code != apierror.InvalidInput {
		t.Fatalf("non-UUID key: %v", err)
	}
}

// idempotencyRecord reads the simulator's record of key.
func idempotencyRecord(t *testing.T, sim *sandbox.Simulator, key string) storage.IdempotencyRecord {
	t.Helper()
	var rec storage.IdempotencyRecord
	err := sim.Store().Atomic(t.Context(), func(tx storage.Tx) error {
		var err error
		rec, err = tx.Idempotency().Get(t.Context(), "Platform:"+sandbox.DefaultClientID, key)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// TestIdempotencyKeyConcurrentTransferIn: the same transfer-in sent
// concurrently under one key moves money once; every other answer is the
// replay of that transfer or 409 CONFLICT (in progress).
func TestIdempotencyKeyConcurrentTransferIn(t *testing.T) {
	e := newEnv(t)
	c, w := e.customer("Concurrent Keyed")
	ext := e.external(c.ID, usdAccount("31313110"))
	key := "6f1d2c3b-4a5e-4f60-8a7b-0000000000bb"
	const n = 16
	out := make([]resp, n)
	var wg sync.WaitGroup
	for i := range out {
		wg.Go(func() { _, out[i] = e.transfer(true, ext.ID, w, 500, "Idempotency-Key", key) })
	}
	wg.Wait()
	ids := map[string]bool{}
	for _, r := range out {
		switch r.status {
		case 201:
			var tx sandbox.Transaction
			r.ok(t, 201, &tx)
			ids[tx.ID] = true
		default:
			if f := r.fails(t, 409, apierror.Conflict); !strings.Contains(f.Message, "in progress") {
				t.Fatalf("409 %q, want in progress", f.Message)
			}
		}
	}
	if len(ids) != 1 || e.balance(w, "USD") != 500 {
		t.Fatalf("%d transactions, balance %d: want one transfer", len(ids), e.balance(w, "USD"))
	}
}

package sandbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/sandbox"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/memory"
	"github.com/walletgate/walletgate/walletauth"
)

// clockBase is the fixed host clock of the clock tests: the simulator's
// time moves only when a test advances it.
var clockBase = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func fixedClock() time.Time { return clockBase }

// clockNow reads GET /sandbox/clock.
func (e *env) clockNow() time.Time {
	e.t.Helper()
	var v struct{ Now time.Time }
	e.do("GET", "/sandbox/clock", nil).ok(e.t, 200, &v)
	return v.Now
}

// advance moves the simulator's clock by seconds over HTTP and returns the
// new now it answers.
func (e *env) advance(seconds int64) time.Time {
	e.t.Helper()
	var v struct{ Now time.Time }
	e.do("POST", "/sandbox/clock/advance", map[string]int64{"seconds": seconds}).ok(e.t, 200, &v)
	return v.Now
}

// TestClockAdvanceMovesNow: GET /sandbox/clock answers the host's clock
// until an advance, then the host's clock plus every advance, in UTC and
// spelled in RFC 3339; the Go API and HTTP read and move the same clock.
func TestClockAdvanceMovesNow(t *testing.T) {
	e := newEnvWith(t, sandbox.Config{Clock: fixedClock})
	var raw struct{ Now string }
	e.do("GET", "/sandbox/clock", nil).ok(t, 200, &raw)
	if raw.Now != "2026-03-01T12:00:00Z" {
		t.Fatalf("now %q, want the host's clock in RFC 3339 UTC", raw.Now)
	}
	if got := e.advance(90); !got.Equal(clockBase.Add(90 * time.Second)) {
		t.Fatalf("advance answered %s", got)
	}
	if got := e.clockNow(); !got.Equal(clockBase.Add(90 * time.Second)) {
		t.Fatalf("GET after the advance: %s", got)
	}
	got, err := e.sim.AdvanceClock(time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	want := clockBase.Add(time.Hour + 90*time.Second)
	if !got.Equal(want) || got.Location() != time.UTC || !e.sim.Now().Equal(want) || !e.clockNow().Equal(want) {
		t.Fatalf("AdvanceClock %s, Now %s, GET %s; want %s", got, e.sim.Now(), e.clockNow(), want)
	}
	// A record made now carries the moved time.
	c, _ := e.customer("Clock Reader")
	if !c.CreatedAt.Equal(want) {
		t.Fatalf("customer created at %s, want %s", c.CreatedAt, want)
	}
	// The routes sit behind the platform credentials like every other.
	anon := *e
	anon.user, anon.pass = "", ""
	anon.do("GET", "/sandbox/clock", nil).fails(t, 401, apierror.Unauthorized)
	anon.do("POST", "/sandbox/clock/advance", `{"seconds":60}`).fails(t, 401, apierror.Unauthorized)
	e.do("DELETE", "/sandbox/clock", nil).fails(t, 405, apierror.MethodNotAllowed)
	if !e.sim.Now().Equal(want) {
		t.Fatal("a refused call moved the clock")
	}
}

// TestClockAdvanceExpiresQuote: a quote made, then the clock advanced past
// DefaultQuoteTTL, reads EXPIRED, and its execution is refused 409
// CONFLICT with the quote's expiry in the message; the wallet is not
// debited. Just before its expiry it still executes.
func TestClockAdvanceExpiresQuote(t *testing.T) {
	e := newEnvWith(t, sandbox.Config{Clock: fixedClock})
	p := e.payer(5_000_000)
	ext := e.external(p.customer.ID, usdAccount("66666611"))
	q := e.quote(p, map[string]any{"accountId": ext.ID}, 1_000_000)
	if !q.ExpiresAt.Equal(clockBase.Add(sandbox.DefaultQuoteTTL)) {
		t.Fatalf("quote expires at %s", q.ExpiresAt)
	}
	e.advance(int64(sandbox.DefaultQuoteTTL / time.Second))
	if s := e.getQuote(q.ID).Status; s != sandbox.QuoteExpired {
		t.Fatalf("quote reads %s after its lifetime", s)
	}
	f := e.do("POST", "/quotes/"+q.ID+"/execute", nil).fails(t, 409, apierror.Conflict)
	if want := fmt.Sprintf("quote %s expired at %s; request a new quote", q.ID, q.ExpiresAt.Format(time.RFC3339)); f.Message != want {
		t.Fatalf("message %q, want %q", f.Message, want)
	}
	if got := e.balance(p.wallet, "USDB"); got != 5_000_000 {
		t.Fatalf("balance %d after a refused execution", got)
	}

	// A quote one second short of its lifetime still executes.
	q2 := e.quote(p, map[string]any{"accountId": ext.ID}, 1_000_000)
	e.advance(int64(sandbox.DefaultQuoteTTL/time.Second) - 1)
	e.execute(p, q2.ID).ok(t, 200, nil)
	if got := e.balance(p.wallet, "USDB"); got != 4_000_000 {
		t.Fatalf("balance %d after the execution", got)
	}
}

// TestClockAdvanceExpiresSession: a session signs until the clock passes
// its lifetime (walletauth.DefaultSessionTTL); then a signed retry stamped
// with its key is 401 WALLET_SIGNATURE_INVALID and changes nothing.
func TestClockAdvanceExpiresSession(t *testing.T) {
	e := newEnvWith(t, sandbox.Config{Clock: fixedClock})
	_, wallet := e.customer("Session Ender")
	key := e.login(wallet)
	path := "/internal-accounts/" + wallet
	e.signed(key, "PATCH", path, map[string]bool{"privateEnabled": true}).ok(t, 200, nil)

	e.advance(int64(walletauth.DefaultSessionTTL / time.Second))
	e.signed(key, "PATCH", path, map[string]bool{"privateEnabled": false}).fails(t, 401, apierror.WalletSignatureInvalid)
	if a := get[sandbox.InternalAccount](e, path); !a.PrivateEnabled {
		t.Fatal("a retry signed by an expired session changed the wallet")
	}
	// A new login signs again.
	e.signed(e.login(wallet), "PATCH", path, map[string]bool{"privateEnabled": false}).ok(t, 200, nil)
}

// TestClockAdvanceRefusals: every body of POST /sandbox/clock/advance other
// than {"seconds": n} with n from 1 to MaxClockAdvance in seconds is 400
// INVALID_INPUT naming seconds, and leaves the clock where it was; the Go
// API refuses the same steps naming d, and the advances of a simulator
// add up to MaxClockOffset at most.
func TestClockAdvanceRefusals(t *testing.T) {
	e := newEnvWith(t, sandbox.Config{Clock: fixedClock})
	maxSeconds := int64(sandbox.MaxClockAdvance / time.Second)
	for _, body := range []string{
		``, `{`, `[]`, `null`, `"60"`, `60`, `{}`,
		`{"seconds":60,"minutes":1}`, `{"Seconds":60}`, `{"secs":60}`, `{"seconds":60,"seconds":60}`,
		`{"seconds":"60"}`, `{"seconds":1.5}`, `{"seconds":true}`, `{"seconds":null}`, `{"seconds":{}}`,
		`{"seconds":0}`, `{"seconds":-0}`, `{"seconds":-5}`, fmt.Sprintf(`{"seconds":%d}`, maxSeconds+1),
		`{"seconds":9223372036854775807}`, `{"seconds":1e30}`, `{"seconds":60}{}`,
	} {
		f := e.do("POST", "/sandbox/clock/advance", body).fails(t, 400, apierror.InvalidInput)
		apierrortest.WantFields(t, f, apierror.InvalidInput, "seconds")
	}
	if got := e.clockNow(); !got.Equal(clockBase) {
		t.Fatalf("a refused advance moved the clock to %s", got)
	}
	// Numbers are read in canonical form: 60.0 is 60.
	if got := e.advance(maxSeconds); !got.Equal(clockBase.Add(sandbox.MaxClockAdvance)) {
		t.Fatalf("the largest advance answered %s", got)
	}
	var v struct{ Now time.Time }
	e.do("POST", "/sandbox/clock/advance", `{"seconds":60.0}`).ok(t, 200, &v)
	at := clockBase.Add(sandbox.MaxClockAdvance + time.Minute)
	if !v.Now.Equal(at) {
		t.Fatalf("60.0 seconds moved the clock to %s", v.Now)
	}

	for _, d := range []time.Duration{0, -time.Second, sandbox.MaxClockAdvance + 1} {
		_, err := e.sim.AdvanceClock(d)
		apierrortest.WantFields(t, err, apierror.InvalidInput, "d")
	}
	if !e.sim.Now().Equal(at) {
		t.Fatal("a refused AdvanceClock moved the clock")
	}

	// The sum of the advances stops at MaxClockOffset.
	sim := newSim(t, sandbox.Config{Clock: fixedClock})
	var moved time.Duration
	for moved+sandbox.MaxClockAdvance <= sandbox.MaxClockOffset {
		if _, err := sim.AdvanceClock(sandbox.MaxClockAdvance); err != nil {
			t.Fatal(err)
		}
		moved += sandbox.MaxClockAdvance
	}
	_, err := sim.AdvanceClock(sandbox.MaxClockAdvance)
	apierrortest.WantFields(t, err, apierror.InvalidInput, "d")
	rest := sandbox.MaxClockOffset - moved
	if got, err := sim.AdvanceClock(rest); err != nil || !got.Equal(clockBase.Add(sandbox.MaxClockOffset)) {
		t.Fatalf("advancing the rest: %s %v", got, err)
	}
	_, err = sim.AdvanceClock(time.Nanosecond)
	apierrortest.WantFields(t, err, apierror.InvalidInput, "d")
	if !sim.Now().Equal(clockBase.Add(sandbox.MaxClockOffset)) {
		t.Fatalf("now %s past the largest offset", sim.Now())
	}
}

// newSim is a simulator without a server.
func newSim(t *testing.T, cfg sandbox.Config) *sandbox.Simulator {
	t.Helper()
	sim, err := sandbox.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Close)
	return sim
}

// TestClockAdvanceConcurrent: advances made at once, in Go and over HTTP,
// all count: the clock ends at the host's clock plus their sum, and every
// answer is a time no advance went beyond.
func TestClockAdvanceConcurrent(t *testing.T) {
	e := newEnvWith(t, sandbox.Config{Clock: fixedClock})
	const workers, each = 8, 25
	end := clockBase.Add(2 * workers * each * (each + 1) / 2 * time.Second)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := 1; i <= each; i++ {
				now, err := e.sim.AdvanceClock(time.Duration(i) * time.Second)
				if err != nil || now.Before(clockBase.Add(time.Duration(i)*time.Second)) || now.After(end) {
					t.Errorf("worker %d: AdvanceClock answered %s, %v", w, now, err)
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			for i := 1; i <= each; i++ {
				status, body := postAdvance(e, i)
				var v struct{ Now time.Time }
				if status != 200 || json.Unmarshal(body, &v) != nil || v.Now.After(end) {
					t.Errorf("worker %d: POST answered %d %s", w, status, body)
					return
				}
			}
		}()
	}
	wg.Wait()
	if got := e.clockNow(); !got.Equal(end) {
		t.Fatalf("now %s after every advance, want %s (%s lost)", got, end, end.Sub(got))
	}
}

// postAdvance posts an advance from a goroutine other than the test's,
// reporting instead of failing.
func postAdvance(e *env, seconds int) (int, []byte) {
	req, err := http.NewRequest("POST", e.srv.URL+e.base+"/sandbox/clock/advance", strings.NewReader(fmt.Sprintf(`{"seconds":%d}`, seconds)))
	if err != nil {
		return 0, []byte(err.Error())
	}
	req.SetBasicAuth(e.user, e.pass)
	res, err := e.srv.Client().Do(req)
	if err != nil {
		return 0, []byte(err.Error())
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, body
}

// lockDelayStore wraps a store. Once armed, the first time a transaction
// is granted the locks of a signing session (LockSigner or
// LockSignersByKey, what a signed retry takes before it reads the time of
// its decision), it runs fire: a lock wait during which the clock moved.
type lockDelayStore struct {
	storage.Store
	fire  atomic.Pointer[func()]
	fired atomic.Bool
}

func (s *lockDelayStore) arm(fire func()) { s.fire.Store(&fire) }

func (s *lockDelayStore) Atomic(ctx context.Context, fn func(storage.Tx) error) error {
	return s.Store.Atomic(ctx, func(tx storage.Tx) error { return fn(lockDelayTx{tx, s}) })
}

func (s *lockDelayStore) granted() {
	if f := s.fire.Swap(nil); f != nil {
		(*f)()
		s.fired.Store(true)
	}
}

type lockDelayTx struct {
	storage.Tx
	s *lockDelayStore
}

func (t lockDelayTx) Sessions() storage.Sessions { return lockDelaySessions{t.Tx.Sessions(), t.s} }

type lockDelaySessions struct {
	storage.Sessions
	s *lockDelayStore
}

func (r lockDelaySessions) LockSigner(ctx context.Context, accountID, id string) (storage.Session, error) {
	sess, err := r.Sessions.LockSigner(ctx, accountID, id)
	r.s.granted()
	return sess, err
}

func (r lockDelaySessions) LockSignersByKey(ctx context.Context, accountID string, publicKey []byte) ([]storage.Session, error) {
	sess, err := r.Sessions.LockSignersByKey(ctx, accountID, publicKey)
	r.s.granted()
	return sess, err
}

// TestExecuteQuoteExpiryDecidedAfterLocks: the retry of a quote execution
// judges the quote's expiry at the time its transaction read once the
// signer's locks were granted (signedretry.Authorization.Now), not at the
// time the call began. The challenge is issued a second before the quote
// expires; the retry starts then too, and its transaction waits two
// seconds for the session's locks: the quote has expired when the retry is
// decided, so it is refused exactly as an expired quote is (409 CONFLICT,
// the same message as the first leg's), nothing is debited, the quote
// reads EXPIRED and the request stays unconsumed.
func TestExecuteQuoteExpiryDecidedAfterLocks(t *testing.T) {
	store := &lockDelayStore{Store: memory.New()}
	e := newEnvWith(t, sandbox.Config{Clock: fixedClock, Store: store})
	p := e.payer(5_000_000)
	ext := e.external(p.customer.ID, usdAccount("66666612"))
	q := e.quote(p, map[string]any{"accountId": ext.ID}, 1_000_000)
	path := "/quotes/" + q.ID + "/execute"

	e.advance(int64(sandbox.DefaultQuoteTTL/time.Second) - 1)
	ch := e.challenge("POST", path, nil)
	store.arm(func() {
		if _, err := e.sim.AdvanceClock(2 * time.Second); err != nil {
			panic(err)
		}
	})
	f := e.retry(p.key, ch, "POST", path, nil).fails(t, 409, apierror.Conflict)
	if !store.fired.Load() {
		t.Fatal("the retry took no signer lock: the test proves nothing")
	}
	want := fmt.Sprintf("quote %s expired at %s; request a new quote", q.ID, q.ExpiresAt.Format(time.RFC3339))
	if f.Message != want {
		t.Fatalf("message %q, want %q", f.Message, want)
	}
	if got := e.balance(p.wallet, "USDB"); got != 5_000_000 {
		t.Fatalf("balance %d: the expired quote was paid", got)
	}
	if got := e.getQuote(q.ID); got.Status != sandbox.QuoteExpired || got.TransactionID != "" {
		t.Fatalf("quote %s, transaction %q", got.Status, got.TransactionID)
	}
	// The refusal left the request usable: the same retry is refused for
	// the quote again, not for a spent request id.
	e.retry(p.key, ch, "POST", path, nil).fails(t, 409, apierror.Conflict)
	// The first leg answers the same.
	if g := e.do("POST", path, nil).fails(t, 409, apierror.Conflict); g.Message != want {
		t.Fatalf("first leg %q, retry %q", g.Message, want)
	}
}

// Package idempotency makes a request carrying an Idempotency-Key header
// execute at most once per key, and answers repeats with the first response.
// Records live in a [storage.Store] ([storage.IdempotencyKeys]), so the
// guarantee holds across the replicas of a service that share a database.
//
// # Outcomes
//
// A request names a key, a scope (whose keys they are: the authenticated
// platform, a customer) and a fingerprint: the SHA-256 of its method, path,
// raw query string and the SHA-256 of its canonical body
// ([apierror.Canonicalize], so bodies that differ only in whitespace, member
// order or number spelling are the same request; queries are compared byte
// for byte, so the same parameters in another order are another request).
// Keys of different scopes never meet: the scope is required, and a keyed
// request with an empty scope is refused before anything executes. With the
// key K in scope S:
//
//   - no request without a key is affected: it simply executes;
//   - a key with an empty scope is 500 INTERNAL_ERROR (the host did not say
//     whose keys they are), and nothing executes;
//   - a key that is not a UUID is 400 INVALID_INPUT naming the
//     Idempotency-Key header, and nothing executes;
//   - the first request reserves K (a record IN_PROGRESS) and executes;
//   - a final response of it (by default any 2xx except 202 Accepted, see
//     [Config.Keep]) is stored with the selected headers and its body, and
//     kept for [Config.TTL] (default 24 hours) from completion;
//   - any other outcome (an error, a 4xx, a 5xx, a 202 challenge) deletes
//     the reservation: nothing was done that a repeat must not redo, and
//     the client may retry with the same key, even with another body;
//   - a repeat with the same fingerprint after completion replays the stored
//     response, status, headers and body, without executing (the HTTP
//     middleware adds "Idempotent-Replayed: true");
//   - a request with another fingerprint while K is live is 409 CONFLICT
//     ("the Idempotency-Key was used for a different request");
//   - a request with the same fingerprint while the first still executes is
//     409 CONFLICT "a request with this key is in progress": concurrent
//     requests never wait for each other, and exactly one executes. The
//     client retries later and then gets the replay (or executes, when the
//     first failed and released the key).
//
// # Leases
//
// A reservation lives for [Config.Lease] (default five minutes), so a
// process that dies while executing does not block its key for the whole
// TTL. The function executing the request gets a context that ends when the
// lease does (Lease of real time after it started, also when [Config.Clock]
// is a test clock); it must not start effects after that. A function that
// outlives its lease anyway may run twice: the key is free again, and its
// late response is returned to its caller but not stored (the Complete
// compare-and-set on the reservation's token fails).
//
// # Expiry
//
// From ExpiresAt on, a key is free and the next request with it executes
// again. [storage.Store.Sweep] deletes expired records.
//
// # Telemetry
//
// With [Config.Telemetry] set, every keyed request is recorded, under the
// instrumentation scope "github.com/walletgate/walletgate/storage/idempotency",
// with what became of it as walletgate.reason: executed (the response is
// stored), released (the request failed or its response was not final: the
// key is free), not_stored (storing the response failed: a repeat may execute
// again once the lease ends), replayed, mismatch and in_progress (409),
// invalid_key and invalid_body (400), no_scope and store (500, nothing
// executed). Each is:
//
//   - a count of walletgate.idempotency.outcomes with walletgate.reason,
//     walletgate.outcome (ok for executed, released and replayed; refused
//     for a 409 or 400; error otherwise) and walletgate.code (the API error
//     code of a 409, 400 or 500 the package answers itself);
//   - the same attributes on a span "idempotency.do" (by [Once.Do]; the
//     function it runs is its child), with status Error for outcome error;
//   - a log record with request_id (the id [apierror.Observe] gave the
//     request, when it runs behind Observe), reason and code: Info for a
//     replay and a 409, Debug for an execution and a 400, Error with the
//     cause (error) for a 500 and for not_stored; a failed release logs at
//     Error too.
//
// A replay also carries "Idempotent-Replayed: true", which an access log
// can show. No key, body, fingerprint or stored response is ever recorded.
package idempotency

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/operation"
	"github.com/walletgate/walletgate/storage"
)

// Header is the request header that carries the key.
const Header = "Idempotency-Key"

// ReplayedHeader is set to "true" on responses the middleware replays.
const ReplayedHeader = "Idempotent-Replayed"

// Defaults of [Config].
const (
	DefaultTTL     = 24 * time.Hour
	DefaultLease   = 5 * time.Minute
	DefaultMaxBody = 1 << 20
)

// Config configures a [Once]. Store is required; the zero value of every
// other field gives its default.
type Config struct {
	// Store keeps the records ([storage.IdempotencyKeys]); share it between
	// replicas to keep the guarantee across them.
	Store storage.Store
	// TTL is how long a completed record is kept and replayed, from
	// completion; zero means DefaultTTL.
	TTL time.Duration
	// Lease is how long a reservation (a request still executing) holds
	// its key; zero means DefaultLease. See the package documentation.
	Lease time.Duration
	// Clock returns the current time; nil means time.Now.
	Clock func() time.Time
	// Rand supplies reservation tokens; nil means crypto/rand.
	Rand io.Reader
	// Headers lists the response headers stored with a response and
	// replayed; nil means Content-Type alone.
	Headers []string
	// Keep reports whether a response with that status is final and is
	// stored; nil means 2xx except 202 Accepted. A response not kept
	// releases the key.
	Keep func(status int) bool
	// MaxBody bounds the request body the middleware reads; zero means
	// DefaultMaxBody. A larger body is 400 INVALID_INPUT.
	MaxBody int64
	// Telemetry receives the records, spans and metrics of the keyed
	// requests (see the package documentation); the zero value reports
	// nothing. Each keyed request's outcome (replay, conflict, bad key, in
	// progress, execution) is logged with the request id, and the cause of
	// each 500 answer and failed store write at Error; no record or
	// attribute carries a key, a body or a stored response.
	Telemetry operation.Telemetry
}

// Once runs each request at most once per Idempotency-Key and answers its
// repeats with the first response. It is safe for concurrent use, also by
// several processes sharing one store.
type Once struct {
	cfg Config // normalized
	tel telemetry
}

// New returns a Once keeping its records in cfg.Store. It fails only when
// cfg.Store is nil or cfg.Telemetry.MeterProvider refuses its instruments.
func New(cfg Config) (*Once, error) {
	if cfg.Store == nil {
		return nil, errors.New("idempotency: Config.Store is required")
	}
	if cfg.TTL <= 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.Lease <= 0 {
		cfg.Lease = DefaultLease
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Reader
	}
	if cfg.Headers == nil {
		cfg.Headers = []string{"Content-Type"}
	}
	if cfg.Keep == nil {
		cfg.Keep = func(status int) bool { return status >= 200 && status < 300 && status != http.StatusAccepted }
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	tel, err := newTelemetry(cfg)
	if err != nil {
		return nil, err
	}
	return &Once{cfg: cfg, tel: tel}, nil
}

// Request is what identifies a request: the caller's Scope, the Key as the
// client sent it (Idempotency-Key), and the Method, Path, Query and Body the
// fingerprint is made of.
type Request struct {
	// Scope names whose keys these are, typically the authenticated
	// platform; required with a Key, so that one caller never receives
	// another's stored response.
	Scope string
	Key   string
	// Method and Path are the request's; Query is its raw query string
	// (URL.RawQuery, without "?").
	Method string
	Path   string
	Query  string
	Body   []byte
}

// Response is a response as it is stored and replayed.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// ParseKey checks an Idempotency-Key value: a UUID in its 36-character
// hyphenated form (any version, hex digits in either case). It returns the
// key in lower case, so keys that differ only in case are one key, or a 400
// INVALID_INPUT *apierror.Error whose details name the header.
func ParseKey(v string) (string, error) {
	if len(v) != 36 {
		return "", invalidKey()
	}
	out := make([]byte, 36)
	for i := range 36 {
		c := v[i]
		switch {
		case i == 8 || i == 13 || i == 18 || i == 23:
			if c != '-' {
				return "", invalidKey()
			}
		case '0' <= c && c <= '9', 'a' <= c && c <= 'f':
		case 'A' <= c && c <= 'F':
			c += 'a' - 'A'
		default:
			return "", invalidKey()
		}
		out[i] = c
	}
	return string(out), nil
}

func invalidKey() *apierror.Error {
	return apierror.New(apierror.InvalidInput, "the %s header must be a UUID such as 5b0d6a7e-5f38-4e0f-8b0b-0e7c0c0f2a10", Header).
		WithDetail("field", Header)
}

// FromHeader returns the Idempotency-Key of h: "" when there is none, and
// 400 INVALID_INPUT when it is given more than once. It does not validate
// the value; [Once.Do] does.
func FromHeader(h http.Header) (string, error) {
	vs := h.Values(Header)
	switch len(vs) {
	case 0:
		return "", nil
	case 1:
		return vs[0], nil
	}
	return "", apierror.New(apierror.InvalidInput, "the %s header must be given once", Header).WithDetail("field", Header)
}

// Fingerprint returns the fingerprint of a request: the SHA-256 of the
// method, the path, the raw query string (each length-prefixed, so no two
// splits of one string collide) and the SHA-256 of the canonical body. Two
// requests that differ in any of them have different fingerprints. A body
// that is not acceptable JSON is 400 INVALID_INPUT (an empty body is
// acceptable).
func Fingerprint(method, path, query string, body []byte) ([]byte, error) {
	canon, err := apierror.Canonicalize(body)
	if err != nil {
		return nil, err
	}
	digest := sha256.Sum256(canon)
	h := sha256.New()
	for _, part := range [][]byte{[]byte(method), []byte(path), []byte(query)} {
		var n [8]byte
		for i, l := 0, uint64(len(part)); i < 8; i++ {
			n[i] = byte(l >> (8 * i))
		}
		h.Write(n[:])
		h.Write(part)
	}
	h.Write(digest[:])
	return h.Sum(nil), nil
}

// Causes of the 409 CONFLICT errors of [Once.Do]: the *apierror.Error it
// returns wraps one of them, so errors.Is tells them apart.
var (
	// ErrInProgress: the first request with the key is still executing.
	ErrInProgress = errors.New("a request with this key is in progress")
	// ErrMismatch: the key was used for a different request.
	ErrMismatch = errors.New("the Idempotency-Key was used for a different request")
	// ErrNoScope: a keyed request without a scope, a host's mistake that
	// would let callers share keys (the cause of a 500 INTERNAL_ERROR, and
	// of the error of [Once.Middleware] without a scope function).
	ErrNoScope = errors.New("idempotency: a keyed request needs a scope")
)

func conflict(cause error) *apierror.Error {
	return apierror.New(apierror.Conflict, "%s", cause.Error()).WithDetail("field", Header).WithCause(cause)
}

// Do runs fn at most once for req.Key in req.Scope, as the package
// documentation describes. It returns fn's response and error, or the
// stored response with replayed true. When req.Key is empty fn simply runs.
// Errors of its own are *apierror.Error values: 400 INVALID_INPUT (key or
// body), 409 CONFLICT (wrapping [ErrInProgress] or [ErrMismatch]) and 500
// INTERNAL_ERROR (a key with an empty req.Scope, wrapping [ErrNoScope], or
// the store failed; nothing executed).
//
// fn receives a context that ends with the reservation's lease. When fn
// returns an error, or a response [Config.Keep] rejects, or panics (the
// panic is re-raised), the reservation is released. When storing the response fails, the response is still
// returned (what fn did is done); a repeat may then execute again once the
// lease ends.
func (o *Once) Do(ctx context.Context, req Request, fn func(context.Context) (Response, error)) (resp Response, replayed bool, err error) {
	if req.Key == "" {
		resp, err = fn(ctx)
		return resp, false, err
	}
	ctx, span := o.tel.tracer.Start(ctx, "idempotency.do")
	reason, own := reasonReleased, error(nil) // a panic of fn releases the key
	defer func() {
		o.tel.record(ctx, span, reason, own)
		span.End()
	}()
	if req.Scope == "" {
		reason, own = reasonNoScope, apierror.Internal(ErrNoScope)
		return Response{}, false, own
	}
	key, err := ParseKey(req.Key)
	if err != nil {
		reason, own = reasonInvalidKey, err
		return Response{}, false, err
	}
	fp, err := Fingerprint(req.Method, req.Path, req.Query, req.Body)
	if err != nil {
		reason, own = reasonInvalidBody, err
		return Response{}, false, err
	}
	var tok [16]byte
	if _, err := io.ReadFull(o.cfg.Rand, tok[:]); err != nil {
		reason, own = reasonStore, apierror.Internal(err)
		return Response{}, false, own
	}
	now := o.cfg.Clock()
	rec := storage.IdempotencyRecord{Scope: req.Scope, Key: key, Token: hex.EncodeToString(tok[:]), Fingerprint: fp,
		State: storage.IdempotencyInProgress, CreatedAt: now, ExpiresAt: now.Add(o.cfg.Lease)}
	var prior storage.IdempotencyRecord
	won := false
	err = o.cfg.Store.Atomic(ctx, func(tx storage.Tx) error {
		won = false
		err := tx.Idempotency().Begin(ctx, &rec, now)
		if err == nil {
			won = true
			return nil
		}
		if !errors.Is(err, storage.ErrDuplicate) {
			return err
		}
		prior, err = tx.Idempotency().Get(ctx, rec.Scope, rec.Key)
		if errors.Is(err, storage.ErrNotFound) {
			// Released between the two statements: as good as in
			// progress a moment ago; the client retries.
			prior = storage.IdempotencyRecord{Fingerprint: fp, State: storage.IdempotencyInProgress}
			return nil
		}
		return err
	})
	if err != nil {
		reason = reasonStore
		if e := apierror.As(err); e != nil && e.Status() < 500 {
			own = e
			return Response{}, false, e
		}
		own = apierror.Internal(err)
		return Response{}, false, own
	}
	if !won {
		switch {
		case !bytes.Equal(prior.Fingerprint, fp):
			reason, own = reasonMismatch, conflict(ErrMismatch)
			return Response{}, false, own
		case prior.State != storage.IdempotencyComplete:
			reason, own = reasonInProgress, conflict(ErrInProgress)
			return Response{}, false, own
		}
		reason = reasonReplayed
		return Response{Status: prior.Status, Header: http.Header(prior.Header), Body: prior.Body}, true, nil
	}

	// The bookkeeping below runs even when the caller's context ended: the
	// effects of fn happened either way.
	bg := context.WithoutCancel(ctx)
	release := func() {
		if err := o.cfg.Store.Atomic(bg, func(tx storage.Tx) error {
			return tx.Idempotency().Release(bg, rec.Scope, rec.Key, rec.Token)
		}); err != nil {
			// The reservation left behind ends with its lease.
			o.tel.storeFailed(bg, "releasing the key", err)
		}
	}
	fnCtx, cancel := context.WithTimeout(ctx, o.cfg.Lease) // real time, whatever Config.Clock says
	func() {
		defer func() {
			if p := recover(); p != nil {
				cancel()
				release()
				panic(p)
			}
		}()
		resp, err = fn(fnCtx)
	}()
	cancel()
	if err != nil || !o.cfg.Keep(resp.Status) {
		release()
		return resp, false, err
	}
	done := rec
	done.State, done.Status, done.Body = storage.IdempotencyComplete, resp.Status, resp.Body
	done.Header = o.selected(resp.Header)
	done.ExpiresAt = o.cfg.Clock().Add(o.cfg.TTL)
	reason = reasonExecuted
	if err := o.cfg.Store.Atomic(bg, func(tx storage.Tx) error { return tx.Idempotency().Complete(bg, &done) }); err != nil {
		// A repeat may execute again once the lease ends.
		reason, own = reasonNotStored, err
	}
	return resp, false, nil
}

// selected returns the headers of h that are stored, or nil.
func (o *Once) selected(h http.Header) map[string][]string {
	var out map[string][]string
	for _, name := range o.cfg.Headers {
		if vs := h.Values(name); len(vs) > 0 {
			if out == nil {
				out = map[string][]string{}
			}
			out[http.CanonicalHeaderKey(name)] = append([]string(nil), vs...)
		}
	}
	return out
}

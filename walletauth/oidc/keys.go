package oidc

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwk"
	"go.opentelemetry.io/otel/trace"
)

// keySource holds the signing keys of one JWKS URL (one issuer, or several
// configured with the same URL) in a jwk.Cache and decides when verification
// may fetch them.
//
// Rules: the cache refreshes on its own in the background (Cache-Control
// max-age, at least every 15 minutes); beyond that, verification triggers at
// most one fetch per key source per refetchInterval (the first fetch, a retry
// after failures, or a refetch for an unknown kid); callers that need a
// fetch while one is running wait for it and share its result; a failed
// fetch leaves the last good key set in place.
type keySource struct {
	// issuer is the first issuer configured with this source; discovery
	// checks its ID.
	issuer   Issuer
	cache    *jwk.Cache
	getter   *httpGetter
	clock    func() time.Time
	lifetime context.Context
	tel      *telemetry

	mu sync.Mutex
	// url is the JWKS URL: configured, or found by discovery ("" until then).
	url string
	// primed is true once a fetch of url has succeeded.
	primed bool
	// last is when the last fetch triggered by verification started.
	last     time.Time
	inflight *fetchCall

	// index is the keyIndex of the last key set verification used.
	index atomic.Pointer[keyIndex]
}

// fetchCall is one fetch shared by every caller that waits for it.
type fetchCall struct {
	done chan struct{}
	set  jwk.Set
	err  error
}

// newKeySource registers the issuer's configured JWKS URL with the cache.
func newKeySource(lifetime context.Context, is Issuer, cache *jwk.Cache, g *httpGetter, clock func() time.Time, tel *telemetry) (*keySource, error) {
	k := &keySource{issuer: is, cache: cache, getter: g, clock: clock, lifetime: lifetime, tel: tel}
	if is.JWKSURL != "" {
		if err := k.register(is.JWKSURL); err != nil {
			return nil, err
		}
		k.url = is.JWKSURL
	}
	return k, nil
}

// register adds u to the cache unless another issuer already did.
func (k *keySource) register(u string) error {
	if k.cache.IsRegistered(u) {
		return nil
	}
	err := k.cache.Register(u,
		jwk.WithHTTPClient(k.getter),
		jwk.WithMinRefreshInterval(backgroundRefresh))
	if err != nil {
		return fmt.Errorf("oidc: register JWKS %s: %w", u, err)
	}
	return nil
}

// keys returns the cached key set, fetching it when none was fetched yet.
func (k *keySource) keys(ctx context.Context) (jwk.Set, error) {
	k.mu.Lock()
	primed, u := k.primed, k.url
	k.mu.Unlock()
	if primed {
		return k.cache.Get(ctx, u)
	}
	return k.refetch(ctx)
}

// refetch fetches the key set unless a fetch started less than
// refetchInterval ago, in which case it returns the cached set unchanged; a
// caller arriving during a fetch waits for that fetch instead. It returns an
// error only when no key set was ever fetched.
func (k *keySource) refetch(ctx context.Context) (jwk.Set, error) {
	k.mu.Lock()
	if c := k.inflight; c != nil {
		k.mu.Unlock()
		select {
		case <-c.done:
			return c.set, c.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	now := k.clock()
	if !k.last.IsZero() && now.Before(k.last.Add(refetchInterval)) {
		primed, u, next := k.primed, k.url, k.last.Add(refetchInterval)
		k.mu.Unlock()
		if !primed {
			return nil, fmt.Errorf("no key set for issuer %s; next fetch allowed at %s", k.issuer.ID, next.Format(time.RFC3339))
		}
		return k.cache.Get(ctx, u)
	}
	k.last = now
	c := &fetchCall{done: make(chan struct{})}
	k.inflight = c
	k.mu.Unlock()

	c.set, c.err = k.fetch()

	k.mu.Lock()
	k.inflight = nil
	k.mu.Unlock()
	close(c.done)
	return c.set, c.err
}

// fetch resolves the JWKS URL (by discovery when needed) and refreshes the
// cache. It runs under the verifier's lifetime, not a caller's context, since
// other callers share its result. When the refresh fails after an earlier
// success it returns the last good set.
func (k *keySource) fetch() (set jwk.Set, err error) {
	ctx, cancel := context.WithTimeout(k.lifetime, fetchTimeout)
	defer cancel()
	ctx, span := k.tel.tracer.Start(ctx, "oidc.jwks.fetch", trace.WithSpanKind(trace.SpanKindClient))
	var stale error // a failed refresh answered with the last good set
	defer func() {
		if stale != nil {
			k.tel.fetched(ctx, span, k.issuer.ID, stale, true)
			return
		}
		k.tel.fetched(ctx, span, k.issuer.ID, err, false)
	}()
	k.mu.Lock()
	u, primed := k.url, k.primed
	k.mu.Unlock()
	if u == "" {
		found, err := discover(ctx, k.getter, k.issuer)
		if err != nil {
			return nil, err
		}
		if err := k.register(found); err != nil {
			return nil, err
		}
		u = found
		k.mu.Lock()
		k.url = found
		k.mu.Unlock()
	}
	set, err = k.cache.Refresh(ctx, u)
	if err != nil {
		if primed {
			if last, gerr := k.cache.Get(ctx, u); gerr == nil {
				stale = err
				return last, nil
			}
		}
		return nil, err
	}
	k.mu.Lock()
	k.primed = true
	k.mu.Unlock()
	return set, nil
}

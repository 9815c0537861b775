package oidc_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/storage/storagetest"
	"github.com/walletgate/walletgate/walletauth/oidc"
)

// verifyOK fails the test unless tok verifies.
func verifyOK(t *testing.T, v *oidc.Verifier, tok string) {
	t.Helper()
	if _, err := v.Verify(context.Background(), tok, oidc.Expect{}); err != nil {
		t.Fatal(err)
	}
}

func hits(t *testing.T, srv *keyServer, want int64) {
	t.Helper()
	if n := srv.jwksHits.Load(); n != want {
		t.Fatalf("%d JWKS fetches, want %d", n, want)
	}
}

func TestKeyRotationOneRefetch(t *testing.T) {
	clk := storagetest.NewClock(t0)
	old, next := rs256("k-old"), rs256Second("k-new")
	srv := newKeyServer(t, jwksOf(t, publicJWK(t, old, nil)))
	v := newVerifier(t, srv, clk, nil)

	verifyOK(t, v, mint(t, old, claims(clk.Now()), nil))
	hits(t, srv, 1)

	// The provider rotates; a minute later the first token with the new kid
	// causes exactly one refetch, and later ones none.
	srv.serve(jwksOf(t, publicJWK(t, next, nil)), http.StatusOK)
	clk.Add(61 * time.Second)
	verifyOK(t, v, mint(t, next, claims(clk.Now()), nil))
	hits(t, srv, 2)
	verifyOK(t, v, mint(t, next, claims(clk.Now()), nil))
	hits(t, srv, 2)

	// The retired kid is now unknown, and a second unknown kid within the
	// minute causes no fetch.
	_, err := v.Verify(context.Background(), mint(t, old, claims(clk.Now()), nil), oidc.Expect{})
	wantErr(t, err, apierror.Unauthorized, "signing key not found")
	hits(t, srv, 2)

	// After the minute, an unknown kid may fetch again.
	clk.Add(time.Minute)
	_, err = v.Verify(context.Background(), mint(t, rs256("k-other"), claims(clk.Now()), nil), oidc.Expect{})
	wantErr(t, err, apierror.Unauthorized, "signing key not found")
	hits(t, srv, 3)
}

func TestConcurrentUnknownKidOneFetch(t *testing.T) {
	clk := storagetest.NewClock(t0)
	old, next := rs256("k-old"), es256("k-new")
	srv := newKeyServer(t, jwksOf(t, publicJWK(t, old, nil)))
	v := newVerifier(t, srv, clk, nil)
	verifyOK(t, v, mint(t, old, claims(clk.Now()), nil))
	hits(t, srv, 1)

	srv.serve(jwksOf(t, publicJWK(t, old, nil), publicJWK(t, next, nil)), http.StatusOK)
	srv.setDelay(100 * time.Millisecond) // every caller arrives while the fetch runs
	clk.Add(61 * time.Second)
	tok := mint(t, next, claims(clk.Now()), nil)
	unknown := mint(t, rs256("k-unknown"), claims(clk.Now()), nil)

	const n = 100
	errs := make([]error, 2*n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, errs[i] = v.Verify(context.Background(), tok, oidc.Expect{})
		}()
		go func() {
			defer wg.Done()
			_, errs[n+i] = v.Verify(context.Background(), unknown, oidc.Expect{})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if i < n && err != nil {
			t.Fatalf("new kid, caller %d: %v", i, err)
		}
		if i >= n {
			wantErr(t, err, apierror.Unauthorized, "signing key not found")
		}
	}
	hits(t, srv, 2)
}

func TestFailingEndpointKeepsKeys(t *testing.T) {
	for name, fail := range map[string]func(*keyServer){
		"500":            func(s *keyServer) { s.serve([]byte("oops"), http.StatusInternalServerError) },
		"HTML 200":       func(s *keyServer) { s.serve([]byte("<html>maintenance</html>"), http.StatusOK) },
		"empty key list": func(s *keyServer) { s.serve([]byte(`{"keys":[{"kty":"nope"}]}`), http.StatusOK) },
		"too large":      func(s *keyServer) { s.serve(make([]byte, 2<<20), http.StatusOK) },
	} {
		t.Run(name, func(t *testing.T) {
			clk := storagetest.NewClock(t0)
			k := rs256("k1")
			srv := newKeyServer(t, jwksOf(t, publicJWK(t, k, nil)))
			v := newVerifier(t, srv, clk, nil)
			verifyOK(t, v, mint(t, k, claims(clk.Now()), nil))

			fail(srv)
			clk.Add(61 * time.Second)
			_, err := v.Verify(context.Background(), mint(t, rs256("k2"), claims(clk.Now()), nil), oidc.Expect{})
			wantErr(t, err, apierror.Unauthorized, "signing key not found")
			hits(t, srv, 2)
			verifyOK(t, v, mint(t, k, claims(clk.Now()), nil))
		})
	}
}

func TestUnreachableKeysAreInternal(t *testing.T) {
	clk := storagetest.NewClock(t0)
	k := rs256("k1")
	srv := newKeyServer(t, []byte("down"))
	srv.serve([]byte("down"), http.StatusServiceUnavailable)
	v := newVerifier(t, srv, clk, nil)

	_, err := v.Verify(context.Background(), mint(t, k, claims(clk.Now()), nil), oidc.Expect{})
	wantErr(t, err, apierror.InternalError, "")
	hits(t, srv, 1)
	// No second fetch within the minute, even for a known kid.
	_, err = v.Verify(context.Background(), mint(t, k, claims(clk.Now()), nil), oidc.Expect{})
	wantErr(t, err, apierror.InternalError, "")
	hits(t, srv, 1)

	srv.serve(jwksOf(t, publicJWK(t, k, nil)), http.StatusOK)
	clk.Add(61 * time.Second)
	verifyOK(t, v, mint(t, k, claims(clk.Now()), nil))
	hits(t, srv, 2)
}

func TestDiscovery(t *testing.T) {
	clk := storagetest.NewClock(t0)
	k := es256("ec-1")
	srv := newKeyServer(t, jwksOf(t, publicJWK(t, k, nil)))
	iss := srv.URL
	v := newVerifier(t, srv, clk, func(c *oidc.Config) {
		c.Issuers = []oidc.Issuer{{ID: iss, Audiences: []string{testAud}}}
	})
	c := claims(clk.Now())
	c["iss"] = iss
	id, err := v.Verify(context.Background(), mint(t, k, c, nil), oidc.Expect{})
	if err != nil {
		t.Fatal(err)
	}
	if id.Issuer != iss {
		t.Fatalf("issuer %q", id.Issuer)
	}
	verifyOK(t, v, mint(t, k, c, nil))
	if d := srv.discoHits.Load(); d != 1 {
		t.Fatalf("%d discovery fetches, want 1", d)
	}
	hits(t, srv, 1)
}

func TestDiscoveryExplicitURLAndIssuerMismatch(t *testing.T) {
	clk := storagetest.NewClock(t0)
	k := rs256("k1")
	srv := newKeyServer(t, jwksOf(t, publicJWK(t, k, nil)))
	srv.mu.Lock()
	srv.issuer = "https://someone-else.test"
	srv.mu.Unlock()
	v := newVerifier(t, srv, clk, func(c *oidc.Config) {
		c.Issuers[0].JWKSURL = ""
		c.Issuers[0].DiscoveryURL = srv.URL + "/.well-known/openid-configuration"
	})
	_, err := v.Verify(context.Background(), mint(t, k, claims(clk.Now()), nil), oidc.Expect{})
	wantErr(t, err, apierror.InternalError, "")
	if d := srv.discoHits.Load(); d != 1 {
		t.Fatalf("%d discovery fetches, want 1", d)
	}
	hits(t, srv, 0)

	// Once the document names the configured issuer, a minute later, the
	// keys are found through it.
	srv.mu.Lock()
	srv.issuer = testIssuer
	srv.mu.Unlock()
	clk.Add(61 * time.Second)
	verifyOK(t, v, mint(t, k, claims(clk.Now()), nil))
	hits(t, srv, 1)
}

func TestCanceledWaiter(t *testing.T) {
	clk := storagetest.NewClock(t0)
	k := rs256("k1")
	srv := newKeyServer(t, jwksOf(t, publicJWK(t, k, nil)))
	srv.setDelay(300 * time.Millisecond)
	v := newVerifier(t, srv, clk, nil)
	tok := mint(t, k, claims(clk.Now()), nil)

	done := make(chan error, 1)
	go func() {
		_, err := v.Verify(context.Background(), tok, oidc.Expect{})
		done <- err
	}()
	for srv.jwksHits.Load() == 0 { // the fetch is under way
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := v.Verify(ctx, tok, oidc.Expect{})
	wantErr(t, err, apierror.InternalError, "")
	if err := <-done; err != nil {
		t.Fatalf("the fetching caller: %v", err)
	}
	hits(t, srv, 1)
}

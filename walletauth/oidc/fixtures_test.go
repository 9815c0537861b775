package oidc_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwk"
	"github.com/lestrrat-go/jwx/v2/jws"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/storage/storagetest"
	"github.com/walletgate/walletgate/walletauth/oidc"
)

// t0 is the fixed start of every test clock: 2026-01-01T00:00:00Z.
var t0 = time.Unix(1767225600, 0).UTC()

const (
	testIssuer = "https://issuer.test"
	testAlias  = "issuer.test"
	testAud    = "walletgate-web"
	testSub    = "user-1"
)

// signingKey is a private key with the kid and alg it signs under.
type signingKey struct {
	kid  string
	alg  jwa.SignatureAlgorithm
	priv crypto.Signer
}

var (
	keysOnce sync.Once
	rsaKey   *rsa.PrivateKey
	rsaKey2  *rsa.PrivateKey
	ecKey    *ecdsa.PrivateKey
)

// testKeys returns two RSA keys and an EC key, generated once per test
// binary (RSA generation is slow under -race).
func testKeys() (*rsa.PrivateKey, *rsa.PrivateKey, *ecdsa.PrivateKey) {
	keysOnce.Do(func() {
		var err error
		if rsaKey, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			panic(err)
		}
		if rsaKey2, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			panic(err)
		}
		if ecKey, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
			panic(err)
		}
	})
	return rsaKey, rsaKey2, ecKey
}

func rs256(kid string) signingKey {
	k, _, _ := testKeys()
	return signingKey{kid: kid, alg: jwa.RS256, priv: k}
}

func rs256Second(kid string) signingKey {
	_, k, _ := testKeys()
	return signingKey{kid: kid, alg: jwa.RS256, priv: k}
}

func es256(kid string) signingKey {
	_, _, k := testKeys()
	return signingKey{kid: kid, alg: jwa.ES256, priv: k}
}

// publicJWK returns the JWK of k's public key with kid, alg and use "sig";
// edit sets extra fields or removes them (nil value).
func publicJWK(t testing.TB, k signingKey, edit map[string]any) jwk.Key {
	t.Helper()
	key, err := jwk.FromRaw(k.priv.Public())
	if err != nil {
		t.Fatal(err)
	}
	must(t, key.Set(jwk.KeyIDKey, k.kid))
	must(t, key.Set(jwk.AlgorithmKey, k.alg))
	must(t, key.Set(jwk.KeyUsageKey, "sig"))
	for name, v := range edit {
		if v == nil {
			must(t, key.Remove(name))
			continue
		}
		must(t, key.Set(name, v))
	}
	return key
}

// jwksOf serializes keys as a JWK Set.
func jwksOf(t testing.TB, keys ...jwk.Key) []byte {
	t.Helper()
	set := jwk.NewSet()
	for _, k := range keys {
		must(t, set.AddKey(k))
	}
	b, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// claims returns a valid claim set at now for the test issuer.
func claims(now time.Time) map[string]any {
	return map[string]any{
		"iss":            testIssuer,
		"aud":            testAud,
		"sub":            testSub,
		"email":          "alice@example.com",
		"email_verified": true,
		"iat":            now.Unix() - 5,
		"exp":            now.Unix() + 3600,
		"nonce":          oidc.NonceFor(clientKey),
	}
}

// clientKey is a compressed P-256 public key as a client sends it.
const clientKey = "0394e549b7f5d3e8b7c0a5d24a0e0c4a0c9d0d8e6f1f2a3b4c5d6e7f8091a2b3c4"

// mint signs the JSON of payload (a map or raw bytes) under k; header adds
// or, with a nil value, removes protected header fields (kid included).
func mint(t testing.TB, k signingKey, payload any, header map[string]any) string {
	t.Helper()
	raw, ok := payload.([]byte)
	if !ok {
		var err error
		if raw, err = json.Marshal(payload); err != nil {
			t.Fatal(err)
		}
	}
	hdrs := jws.NewHeaders()
	must(t, hdrs.Set(jws.KeyIDKey, k.kid))
	must(t, hdrs.Set(jws.TypeKey, "JWT"))
	for name, v := range header {
		if v == nil {
			must(t, hdrs.Remove(name))
			continue
		}
		must(t, hdrs.Set(name, v))
	}
	out, err := jws.Sign(raw, jws.WithKey(k.alg, k.priv, jws.WithProtectedHeaders(hdrs)))
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// unsigned builds a compact token from a header and payload given as JSON
// text, with sig as the signature segment, without signing anything.
func unsigned(header, payload, sig string) string {
	enc := base64.RawURLEncoding
	return enc.EncodeToString([]byte(header)) + "." + enc.EncodeToString([]byte(payload)) + "." + sig
}

// keyServer is an httptest TLS server serving a JWKS and an OpenID
// configuration, counting requests per path.
type keyServer struct {
	*httptest.Server
	mu        sync.Mutex
	jwks      []byte
	status    int
	issuer    string
	delay     time.Duration
	jwksHits  atomic.Int64
	discoHits atomic.Int64
}

func newKeyServer(t testing.TB, jwks []byte) *keyServer {
	s := &keyServer{jwks: jwks, status: http.StatusOK}
	mux := http.NewServeMux()
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		s.jwksHits.Add(1)
		s.mu.Lock()
		body, status, delay := s.jwks, s.status, s.delay
		s.mu.Unlock()
		time.Sleep(delay)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(body)
	})
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		s.discoHits.Add(1)
		s.mu.Lock()
		iss := s.issuer
		s.mu.Unlock()
		if iss == "" {
			iss = s.URL
		}
		_ = json.NewEncoder(w).Encode(map[string]string{"issuer": iss, "jwks_uri": s.URL + "/jwks"})
	})
	s.Server = httptest.NewTLSServer(mux)
	t.Cleanup(s.Close)
	return s
}

func (s *keyServer) serve(jwks []byte, status int) {
	s.mu.Lock()
	s.jwks, s.status = jwks, status
	s.mu.Unlock()
}

func (s *keyServer) setDelay(d time.Duration) {
	s.mu.Lock()
	s.delay = d
	s.mu.Unlock()
}

// newVerifier returns a production verifier for the test issuer whose keys
// come from srv, closed when the test ends.
func newVerifier(t testing.TB, srv *keyServer, clk *storagetest.Clock, edit func(*oidc.Config)) *oidc.Verifier {
	t.Helper()
	cfg := oidc.Config{
		Issuers: []oidc.Issuer{{
			ID:        testIssuer,
			Aliases:   []string{testAlias},
			Audiences: []string{testAud, "walletgate-ios"},
			JWKSURL:   srv.URL + "/jwks",
		}},
		Clock:      clk.Now,
		HTTPClient: srv.Client(),
	}
	if edit != nil {
		edit(&cfg)
	}
	v, err := oidc.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(v.Close)
	return v
}

// wantErr is apierrortest.Want with the reason compared exactly: an empty
// reason asserts that the error carries none.
func wantErr(t testing.TB, err error, code apierror.Code, reason string) {
	t.Helper()
	if e := apierrortest.Want(t, err, code, reason); e.Reason() != reason {
		t.Fatalf("%s reason %q, want none (%v)", code, e.Reason(), err)
	}
}

var (
	extraOnce sync.Once
	small     *rsa.PrivateKey
	otherECK  *ecdsa.PrivateKey
	edKey     ed25519.PrivateKey
	otherEdK  ed25519.PrivateKey
)

func extraKeys() {
	extraOnce.Do(func() {
		var err error
		if small, err = rsa.GenerateKey(rand.Reader, 1024); err != nil {
			panic(err)
		}
		if otherECK, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
			panic(err)
		}
		if _, edKey, err = ed25519.GenerateKey(rand.Reader); err != nil {
			panic(err)
		}
		if _, otherEdK, err = ed25519.GenerateKey(rand.Reader); err != nil {
			panic(err)
		}
	})
}

// smallRSA is a 1024-bit RS256 key with kid "rs-small", too small to trust.
func smallRSA(testing.TB) signingKey {
	extraKeys()
	return signingKey{kid: "rs-small", alg: jwa.RS256, priv: small}
}

// otherEC is a P-256 key that no JWKS serves.
func otherEC() *ecdsa.PrivateKey {
	extraKeys()
	return otherECK
}

// ps256 is the second RSA key used with PS256.
func ps256(kid string) signingKey {
	_, k, _ := testKeys()
	return signingKey{kid: kid, alg: jwa.PS256, priv: k}
}

// eddsa is an Ed25519 key.
func eddsa(kid string) signingKey {
	extraKeys()
	return signingKey{kid: kid, alg: jwa.EdDSA, priv: edKey}
}

// otherEd is an Ed25519 key that no JWKS serves.
func otherEd() ed25519.PrivateKey {
	extraKeys()
	return otherEdK
}

// mintHMAC signs claims with HS256 under secret, with kid.
func mintHMAC(t testing.TB, kid string, secret []byte, claims map[string]any) string {
	t.Helper()
	raw, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	hdrs := jws.NewHeaders()
	must(t, hdrs.Set(jws.KeyIDKey, kid))
	out, err := jws.Sign(raw, jws.WithKey(jwa.HS256, secret, jws.WithProtectedHeaders(hdrs)))
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

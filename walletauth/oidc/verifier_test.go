package oidc_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwk"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/storage/storagetest"
	"github.com/walletgate/walletgate/walletauth/oidc"
)

// standardJWKS serves rs-1 (RS256), ec-1 (ES256) and a few keys that must be
// refused for one reason each.
func standardJWKS(t testing.TB) []byte {
	small := smallRSA(t)
	return jwksOf(t,
		publicJWK(t, rs256("rs-1"), nil),
		publicJWK(t, es256("ec-1"), nil),
		publicJWK(t, rs256Second("rs-noalg"), map[string]any{jwk.AlgorithmKey: nil}),
		publicJWK(t, rs256Second("rs-enc"), map[string]any{jwk.KeyUsageKey: "enc"}),
		publicJWK(t, rs256Second("rs-ops"), map[string]any{jwk.KeyOpsKey: jwk.KeyOperationList{jwk.KeyOpEncrypt}}),
		publicJWK(t, small, nil),
		publicJWK(t, ps256("ps-1"), nil),
		publicJWK(t, eddsa("ed-1"), nil),
	)
}

func TestVerifyValid(t *testing.T) {
	clk := storagetest.NewClock(t0)
	srv := newKeyServer(t, standardJWKS(t))
	v := newVerifier(t, srv, clk, nil)
	for _, k := range []signingKey{rs256("rs-1"), es256("ec-1"), ps256("ps-1"), eddsa("ed-1")} {
		t.Run(k.alg.String(), func(t *testing.T) {
			c := claims(clk.Now())
			c["aud"] = []string{"walletgate-ios"}
			tok := mint(t, k, c, nil)
			id, err := v.Verify(context.Background(), tok, oidc.Expect{Nonce: oidc.NonceFor(clientKey)})
			if err != nil {
				t.Fatal(err)
			}
			want := oidc.Identity{
				Issuer: testIssuer, Audience: "walletgate-ios", Subject: testSub, Email: "alice@example.com",
				EmailVerified: true, IssuedAt: clk.Now().Add(-5 * time.Second), ExpiresAt: clk.Now().Add(time.Hour),
			}
			if *id != want {
				t.Fatalf("identity %+v, want %+v", *id, want)
			}
			again, err := v.Verify(context.Background(), tok, oidc.Expect{Identity: id, Nonce: oidc.NonceFor(clientKey)})
			if err != nil || *again != want {
				t.Fatalf("verify with the expected identity: %v %+v", err, again)
			}
		})
	}
	if n := srv.jwksHits.Load(); n != 1 {
		t.Errorf("%d JWKS fetches, want 1 (the cache serves the later tokens)", n)
	}
}

func TestVerifyAliasIsCanonical(t *testing.T) {
	clk := storagetest.NewClock(t0)
	srv := newKeyServer(t, standardJWKS(t))
	v := newVerifier(t, srv, clk, nil)
	c := claims(clk.Now())
	c["iss"] = testAlias
	id, err := v.Verify(context.Background(), mint(t, rs256("rs-1"), c, nil), oidc.Expect{})
	if err != nil {
		t.Fatal(err)
	}
	if id.Issuer != testIssuer {
		t.Fatalf("issuer %q, want the canonical %q", id.Issuer, testIssuer)
	}
	// A credential stored with the alias matches a canonical token and back.
	stored := *id
	stored.Issuer = testAlias
	if _, err := v.Verify(context.Background(), mint(t, rs256("rs-1"), claims(clk.Now()), nil), oidc.Expect{Identity: &stored}); err != nil {
		t.Fatal(err)
	}
}

// check is one rejection: a token built at now, what Verify expects and
// the answer.
type check struct {
	name   string
	token  func(t *testing.T, now time.Time) string
	expect oidc.Expect
	code   apierror.Code
	reason string
}

// withClaims signs the standard claims at now changed by edit (a nil value
// removes the claim) under k.
func withClaims(k signingKey, edit map[string]any) func(*testing.T, time.Time) string {
	return func(t *testing.T, now time.Time) string {
		c := claims(now)
		for name, v := range edit {
			if v == nil {
				delete(c, name)
				continue
			}
			c[name] = v
		}
		return mint(t, k, c, nil)
	}
}

// withRawPayload signs payload text as is.
func withRawPayload(k signingKey, payload string) func(*testing.T, time.Time) string {
	return func(t *testing.T, _ time.Time) string { return mint(t, k, []byte(payload), nil) }
}

// withHeader signs the standard claims with header changes.
func withHeader(k signingKey, header map[string]any) func(*testing.T, time.Time) string {
	return func(t *testing.T, now time.Time) string { return mint(t, k, claims(now), header) }
}

func literal(s string) func(*testing.T, time.Time) string {
	return func(*testing.T, time.Time) string { return s }
}

// validJSON returns the standard claims at now as JSON text.
func validJSON(t *testing.T, now time.Time) string {
	b, err := json.Marshal(claims(now))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func rejections() []check {
	rs, ec := rs256("rs-1"), es256("ec-1")
	unauth := apierror.Unauthorized
	bad := apierror.InvalidInput
	hmac := signingKey{kid: "rs-1", alg: jwa.HS256}
	return []check{
		// Shape: 400.
		{name: "empty", token: literal(""), code: bad, reason: "not a JWT"},
		{name: "sandbox literal", token: literal("sandbox-valid-oidc-token"), code: bad, reason: "not a JWT"},
		{name: "two segments", token: func(t *testing.T, now time.Time) string {
			return strings.Join(strings.Split(mint(t, rs, claims(now), nil), ".")[:2], ".")
		}, code: bad, reason: "not a JWT"},
		{name: "four segments", token: func(t *testing.T, now time.Time) string { return mint(t, rs, claims(now), nil) + ".x" }, code: bad, reason: "not a JWT"},
		{name: "padding", token: func(t *testing.T, now time.Time) string {
			p := strings.Split(mint(t, rs, claims(now), nil), ".")
			return p[0] + "." + p[1] + "==." + p[2]
		}, code: bad, reason: "not a JWT"},
		{name: "JSON serialization", token: literal(`{"payload":"e30","protected":"eyJhbGciOiJSUzI1NiJ9","signature":"AA"}`), code: bad, reason: "not a JWT"},
		{name: "header not JSON", token: literal(unsigned(`not json`, `{}`, "AA")), code: bad, reason: "not a JWT"},
		{name: "payload array", token: withRawPayload(rs, `["iss"]`), code: bad, reason: "not a JWT"},
		{name: "payload null", token: withRawPayload(rs, `null`), code: bad, reason: "not a JWT"},
		{name: "payload trailing data", token: withRawPayload(rs, `{} {}`), code: bad, reason: "not a JWT"},
		{name: "signature not base64", token: func(t *testing.T, now time.Time) string {
			p := strings.Split(mint(t, rs, claims(now), nil), ".")
			return p[0] + "." + p[1] + ".A"
		}, code: bad, reason: "not a JWT"},
		{name: "too long", token: withClaims(rs, map[string]any{"pad": strings.Repeat("x", 16<<10)}), code: bad, reason: "not a JWT"},

		// Header.
		{name: "alg none", token: func(t *testing.T, now time.Time) string {
			return unsigned(`{"alg":"none","kid":"rs-1"}`, validJSON(t, now), "")
		}, code: unauth, reason: "alg none not allowed"},
		{name: "HS256 keyed with the public key", token: func(t *testing.T, now time.Time) string {
			pub, err := json.Marshal(publicJWK(t, rs, nil))
			if err != nil {
				t.Fatal(err)
			}
			k := hmac
			k.priv = nil
			return mintHMAC(t, k.kid, pub, claims(now))
		}, code: unauth, reason: "HMAC alg not allowed"},
		{name: "ES256K", token: func(t *testing.T, now time.Time) string {
			return unsigned(`{"alg":"ES256K","kid":"ec-1"}`, validJSON(t, now), "AA")
		}, code: unauth, reason: "alg not supported"},
		{name: "alg unknown", token: func(t *testing.T, now time.Time) string {
			return unsigned(`{"alg":"XS999","kid":"rs-1"}`, validJSON(t, now), "AA")
		}, code: unauth, reason: "alg not supported"},
		{name: "alg not a string", token: func(t *testing.T, now time.Time) string {
			return unsigned(`{"alg":7,"kid":"rs-1"}`, validJSON(t, now), "AA")
		}, code: bad, reason: "not a JWT"},
		{name: "kid not a string", token: func(t *testing.T, now time.Time) string {
			return unsigned(`{"alg":"RS256","kid":7}`, validJSON(t, now), "AA")
		}, code: bad, reason: "not a JWT"},
		{name: "alg missing", token: func(t *testing.T, now time.Time) string {
			return unsigned(`{"kid":"rs-1"}`, validJSON(t, now), "AA")
		}, code: unauth, reason: "alg not supported"},
		{name: "kid missing", token: withHeader(rs, map[string]any{"kid": nil}), code: unauth, reason: "kid missing"},
		{name: "crit", token: withHeader(rs, map[string]any{"crit": []string{"exp"}}), code: unauth, reason: "crit header not supported"},
		{name: "b64", token: withHeader(rs, map[string]any{"b64": true}), code: unauth, reason: "crit header not supported"},

		// iss, read before the signature to pick the keys.
		{name: "iss missing", token: withClaims(rs, map[string]any{"iss": nil}), code: unauth, reason: "iss missing"},
		{name: "iss empty", token: withClaims(rs, map[string]any{"iss": ""}), code: unauth, reason: "iss missing"},
		{name: "iss not a string", token: withClaims(rs, map[string]any{"iss": 7}), code: unauth, reason: "iss missing"},
		{name: "iss not registered", token: withClaims(rs, map[string]any{"iss": "https://evil.test"}), code: unauth, reason: "iss not registered"},
		{name: "iss with trailing slash", token: withClaims(rs, map[string]any{"iss": testIssuer + "/"}), code: unauth, reason: "iss not registered"},

		// Signature.
		{name: "unknown kid", token: withHeader(rs256("rs-9"), nil), code: unauth, reason: "signing key not found"},
		{name: "tampered payload", token: func(t *testing.T, now time.Time) string {
			p := strings.Split(mint(t, rs, claims(now), nil), ".")
			forged := strings.Split(unsigned(`{}`, strings.Replace(validJSON(t, now), testSub, "user-2", 1), ""), ".")
			return p[0] + "." + forged[1] + "." + p[2]
		}, code: unauth, reason: "signature invalid"},
		{name: "RS256 by another key", token: withHeader(rs256Second("rs-1"), nil), code: unauth, reason: "signature invalid"},
		{name: "ES256 by another key", token: withHeader(signingKey{kid: "ec-1", alg: jwa.ES256, priv: otherEC()}, nil), code: unauth, reason: "signature invalid"},
		{name: "ES256 signature of wrong length", token: func(t *testing.T, now time.Time) string {
			p := strings.Split(mint(t, ec, claims(now), nil), ".")
			return p[0] + "." + p[1] + ".AAAA"
		}, code: unauth, reason: "signature invalid"},
		{name: "PS256 on an RS256 key", token: withHeader(signingKey{kid: "rs-1", alg: jwa.PS256, priv: rs.priv}, nil), code: unauth, reason: "signing key does not allow alg"},
		{name: "ES256 on an RSA key", token: withHeader(signingKey{kid: "rs-1", alg: jwa.ES256, priv: ec.priv}, nil), code: unauth, reason: "signing key does not allow alg"},
		{name: "EdDSA on an RSA key", token: withHeader(signingKey{kid: "rs-1", alg: jwa.EdDSA, priv: eddsa("").priv}, nil), code: unauth, reason: "signing key does not allow alg"},
		{name: "EdDSA by another key", token: withHeader(signingKey{kid: "ed-1", alg: jwa.EdDSA, priv: otherEd()}, nil), code: unauth, reason: "signature invalid"},
		{name: "RS256 on an EC key", token: withHeader(signingKey{kid: "ec-1", alg: jwa.RS256, priv: rs.priv}, nil), code: unauth, reason: "signing key does not allow alg"},
		{name: "key without alg, issuer does not infer", token: withHeader(rs256Second("rs-noalg"), nil), code: unauth, reason: "signing key does not allow alg"},
		{name: "key for encryption", token: withHeader(rs256Second("rs-enc"), nil), code: unauth, reason: "signing key does not allow alg"},
		{name: "key_ops without verify", token: withHeader(rs256Second("rs-ops"), nil), code: unauth, reason: "signing key does not allow alg"},
		{name: "RSA key of 1024 bits", token: withHeader(smallRSA(nil), nil), code: unauth, reason: "signing key does not allow alg"},

		// aud.
		{name: "aud missing", token: withClaims(rs, map[string]any{"aud": nil}), code: unauth, reason: "aud missing"},
		{name: "aud empty string", token: withClaims(rs, map[string]any{"aud": ""}), code: unauth, reason: "aud malformed"},
		{name: "aud empty array", token: withClaims(rs, map[string]any{"aud": []string{}}), code: unauth, reason: "aud malformed"},
		{name: "aud two elements", token: withClaims(rs, map[string]any{"aud": []string{testAud, "walletgate-ios"}}), code: unauth, reason: "aud malformed"},
		{name: "aud array of empty string", token: withClaims(rs, map[string]any{"aud": []string{""}}), code: unauth, reason: "aud malformed"},
		{name: "aud array of number", token: withClaims(rs, map[string]any{"aud": []int{1}}), code: unauth, reason: "aud malformed"},
		{name: "aud number", token: withClaims(rs, map[string]any{"aud": 5}), code: unauth, reason: "aud malformed"},
		{name: "aud of another app", token: withClaims(rs, map[string]any{"aud": "other-app"}), code: unauth, reason: "aud not accepted"},

		// sub.
		{name: "sub missing", token: withClaims(rs, map[string]any{"sub": nil}), code: unauth, reason: "sub missing"},
		{name: "sub empty", token: withClaims(rs, map[string]any{"sub": ""}), code: unauth, reason: "sub malformed"},
		{name: "sub number", token: withClaims(rs, map[string]any{"sub": 42}), code: unauth, reason: "sub malformed"},

		// iat.
		{name: "iat missing", token: withClaims(rs, map[string]any{"iat": nil}), code: unauth, reason: "iat missing"},
		{name: "iat string", token: withClaims(rs, map[string]any{"iat": "1767225595"}), code: unauth, reason: "iat not numeric"},
		{name: "iat bool", token: withClaims(rs, map[string]any{"iat": true}), code: unauth, reason: "iat not numeric"},
		{name: "iat 66 s old", token: func(t *testing.T, now time.Time) string {
			return withClaims(rs, map[string]any{"iat": now.Unix() - 66})(t, now)
		}, code: unauth, reason: "iat too old"},
		{name: "iat negative", token: withClaims(rs, map[string]any{"iat": -1}), code: unauth, reason: "iat too old"},
		{name: "iat 6 s ahead", token: func(t *testing.T, now time.Time) string {
			return withClaims(rs, map[string]any{"iat": now.Unix() + 6})(t, now)
		}, code: unauth, reason: "iat in the future"},
		{name: "iat 1e400", token: withRawPayload(rs, `{"iss":"`+testIssuer+`","aud":"`+testAud+`","sub":"u","iat":1e400,"exp":1e400}`), code: unauth, reason: "iat in the future"},

		// exp.
		{name: "exp missing", token: withClaims(rs, map[string]any{"exp": nil}), code: unauth, reason: "exp missing"},
		{name: "exp string", token: withClaims(rs, map[string]any{"exp": "never"}), code: unauth, reason: "exp not numeric"},
		{name: "exp now", token: func(t *testing.T, now time.Time) string {
			return withClaims(rs, map[string]any{"exp": now.Unix()})(t, now)
		}, code: unauth, reason: "exp in the past"},

		// nbf, when present.
		{name: "nbf string", token: withClaims(rs, map[string]any{"nbf": "0"}), code: unauth, reason: "nbf not numeric"},
		{name: "nbf 10 s ahead", token: func(t *testing.T, now time.Time) string {
			return withClaims(rs, map[string]any{"nbf": now.Unix() + 10})(t, now)
		}, code: unauth, reason: "nbf in the future"},

		// What the caller expects.
		{name: "iss mismatch", token: withClaims(rs, nil), expect: oidc.Expect{Identity: &oidc.Identity{Issuer: "https://other.test", Audience: testAud, Subject: testSub}}, code: unauth, reason: "iss mismatch"},
		{name: "aud mismatch", token: withClaims(rs, nil), expect: oidc.Expect{Identity: &oidc.Identity{Issuer: testIssuer, Audience: "walletgate-ios", Subject: testSub}}, code: unauth, reason: "aud mismatch"},
		{name: "sub mismatch", token: withClaims(rs, nil), expect: oidc.Expect{Identity: &oidc.Identity{Issuer: testIssuer, Audience: testAud, Subject: "user-2"}}, code: unauth, reason: "sub mismatch"},
		{name: "nonce missing", token: withClaims(rs, map[string]any{"nonce": nil}), expect: oidc.Expect{Nonce: oidc.NonceFor(clientKey)}, code: unauth, reason: "nonce missing"},
		{name: "nonce number", token: withClaims(rs, map[string]any{"nonce": 1}), expect: oidc.Expect{Nonce: oidc.NonceFor(clientKey)}, code: unauth, reason: "nonce missing"},
		{name: "nonce of another key", token: withClaims(rs, nil), expect: oidc.Expect{Nonce: oidc.NonceFor(strings.ToUpper(clientKey))}, code: unauth, reason: "nonce mismatch"},
	}
}

func TestVerifyRejects(t *testing.T) {
	clk := storagetest.NewClock(t0)
	srv := newKeyServer(t, standardJWKS(t))
	v := newVerifier(t, srv, clk, nil)
	for _, c := range rejections() {
		t.Run(c.name, func(t *testing.T) {
			_, err := v.Verify(context.Background(), c.token(t, clk.Now()), c.expect)
			wantErr(t, err, c.code, c.reason)
		})
	}
}

// TestVerifyBoundaries checks that each time limit is inclusive where the
// rules say so.
func TestVerifyBoundaries(t *testing.T) {
	clk := storagetest.NewClock(t0)
	srv := newKeyServer(t, standardJWKS(t))
	v := newVerifier(t, srv, clk, nil)
	now := clk.Now().Unix()
	for name, edit := range map[string]map[string]any{
		"iat 65 s old":        {"iat": now - 65},
		"iat 5 s ahead":       {"iat": now + 5},
		"iat fractional":      {"iat": float64(now) - 0.5},
		"exp 1 s ahead":       {"exp": now + 1},
		"nbf 5 s ahead":       {"nbf": now + 5},
		"nonce absent":        {"nonce": nil},
		"email not a string":  {"email": 5},
		"email_verified junk": {"email_verified": "yes"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := v.Verify(context.Background(), withClaims(rs256("rs-1"), edit)(t, clk.Now()), oidc.Expect{}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestMaxAgeAndSkewConfigurable(t *testing.T) {
	clk := storagetest.NewClock(t0)
	srv := newKeyServer(t, standardJWKS(t))
	v := newVerifier(t, srv, clk, func(c *oidc.Config) { c.MaxAge = 10 * time.Minute; c.Skew = time.Second })
	now := clk.Now().Unix()
	if _, err := v.Verify(context.Background(), withClaims(rs256("rs-1"), map[string]any{"iat": now - 600})(t, clk.Now()), oidc.Expect{}); err != nil {
		t.Fatal(err)
	}
	_, err := v.Verify(context.Background(), withClaims(rs256("rs-1"), map[string]any{"iat": now + 2})(t, clk.Now()), oidc.Expect{})
	wantErr(t, err, apierror.Unauthorized, "iat in the future")
}

func TestInferAlgorithm(t *testing.T) {
	clk := storagetest.NewClock(t0)
	srv := newKeyServer(t, standardJWKS(t))
	v := newVerifier(t, srv, clk, func(c *oidc.Config) { c.Issuers[0].InferAlgorithm = true })
	noalg := rs256Second("rs-noalg")
	if _, err := v.Verify(context.Background(), withHeader(noalg, nil)(t, clk.Now()), oidc.Expect{}); err != nil {
		t.Fatalf("RS256 on a key without alg: %v", err)
	}
	ps := signingKey{kid: "rs-noalg", alg: jwa.PS256, priv: noalg.priv}
	if _, err := v.Verify(context.Background(), withHeader(ps, nil)(t, clk.Now()), oidc.Expect{}); err != nil {
		t.Fatalf("PS256 on an RSA key without alg: %v", err)
	}
	es := signingKey{kid: "rs-noalg", alg: jwa.ES256, priv: es256("").priv}
	_, err := v.Verify(context.Background(), withHeader(es, nil)(t, clk.Now()), oidc.Expect{})
	wantErr(t, err, apierror.Unauthorized, "signing key does not allow alg")
	_, err = v.Verify(context.Background(), mintHMAC(t, "rs-noalg", []byte("secret"), claims(clk.Now())), oidc.Expect{})
	wantErr(t, err, apierror.Unauthorized, "HMAC alg not allowed")
	// A key that has an alg is still held to it.
	pss := signingKey{kid: "rs-1", alg: jwa.PS256, priv: rs256("").priv}
	_, err = v.Verify(context.Background(), withHeader(pss, nil)(t, clk.Now()), oidc.Expect{})
	wantErr(t, err, apierror.Unauthorized, "signing key does not allow alg")
}

func TestSandbox(t *testing.T) {
	clk := storagetest.NewClock(t0)
	srv := newKeyServer(t, standardJWKS(t))
	v := newVerifier(t, srv, clk, func(c *oidc.Config) { c.Sandbox = true })
	if !v.Sandbox() {
		t.Fatal("Sandbox() is false")
	}
	ctx := context.Background()
	for _, sig := range []string{"", "dummy", "c2lnbmF0dXJl", "A"} {
		tok := unsigned(`{"alg":"RS256","kid":"any"}`, validJSON(t, clk.Now()), sig)
		id, err := v.Verify(ctx, tok, oidc.Expect{Nonce: oidc.NonceFor(clientKey)})
		if err != nil {
			t.Fatalf("dummy signature %q: %v", sig, err)
		}
		if id.Subject != testSub || id.Issuer != testIssuer {
			t.Fatalf("identity %+v", id)
		}
	}
	// A real token verifies too.
	if _, err := v.Verify(ctx, mint(t, rs256("rs-1"), claims(clk.Now()), nil), oidc.Expect{}); err != nil {
		t.Fatal(err)
	}
	// Every other check still runs, header included.
	for _, c := range []struct {
		tok    string
		code   apierror.Code
		reason string
	}{
		{"sandbox-valid-oidc-token", apierror.InvalidInput, "not a JWT"},
		{unsigned(`{"alg":"none","kid":"k"}`, validJSON(t, clk.Now()), ""), apierror.Unauthorized, "alg none not allowed"},
		{unsigned(`{"alg":"HS256","kid":"k"}`, validJSON(t, clk.Now()), "x"), apierror.Unauthorized, "HMAC alg not allowed"},
		{unsigned(`{"alg":"RS256"}`, validJSON(t, clk.Now()), "x"), apierror.Unauthorized, "kid missing"},
		{unsigned(`{"alg":"RS256","kid":"k"}`, strings.Replace(validJSON(t, clk.Now()), testIssuer, "https://evil.test", 1), "x"), apierror.Unauthorized, "iss not registered"},
		{withClaims(rs256("rs-1"), map[string]any{"iat": clk.Now().Unix() - 120})(t, clk.Now()), apierror.Unauthorized, "iat too old"},
		{withClaims(rs256("rs-1"), map[string]any{"aud": []string{"a", "b"}})(t, clk.Now()), apierror.Unauthorized, "aud malformed"},
		{withClaims(rs256("rs-1"), map[string]any{"nonce": "00"})(t, clk.Now()), apierror.Unauthorized, "nonce mismatch"},
	} {
		_, err := v.Verify(ctx, c.tok, oidc.Expect{Nonce: oidc.NonceFor(clientKey)})
		wantErr(t, err, c.code, c.reason)
	}
	if n := srv.jwksHits.Load() + srv.discoHits.Load(); n != 0 {
		t.Errorf("sandbox made %d key requests", n)
	}
	// The production verifier never accepts the dummy.
	prod := newVerifier(t, srv, clk, nil)
	_, err := prod.Verify(ctx, unsigned(`{"alg":"RS256","kid":"rs-1"}`, validJSON(t, clk.Now()), "c2lnbmF0dXJl"), oidc.Expect{})
	wantErr(t, err, apierror.Unauthorized, "signature invalid")
}

func TestNonceFor(t *testing.T) {
	// SHA-256 of the UTF-8 text of the key, lowercase hex.
	if got, want := oidc.NonceFor("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"; got != want {
		t.Fatalf("NonceFor(abc) = %s", got)
	}
	if oidc.NonceFor(clientKey) == oidc.NonceFor(strings.ToUpper(clientKey)) {
		t.Fatal("two encodings of a key give one nonce")
	}
}

func TestPresets(t *testing.T) {
	aud := []string{"web-client"}
	g := oidc.Google(aud...)
	aud[0] = "changed"
	if g.ID != "https://accounts.google.com" || len(g.Aliases) != 1 || g.Aliases[0] != "accounts.google.com" ||
		g.JWKSURL != "https://www.googleapis.com/oauth2/v3/certs" || g.Audiences[0] != "web-client" {
		t.Fatalf("Google() = %+v", g)
	}
	a := oidc.Apple("com.example.app")
	if a.ID != "https://appleid.apple.com" || a.JWKSURL != "https://appleid.apple.com/auth/keys" || len(a.Aliases) != 0 {
		t.Fatalf("Apple() = %+v", a)
	}
	v, err := oidc.New(context.Background(), oidc.Config{Issuers: []oidc.Issuer{g, a}})
	if err != nil {
		t.Fatal(err)
	}
	v.Close()
}

func TestConfigErrors(t *testing.T) {
	good := oidc.Issuer{ID: testIssuer, Audiences: []string{testAud}, JWKSURL: "https://issuer.test/jwks"}
	for name, cfg := range map[string]oidc.Config{
		"no issuers":           {},
		"empty ID":             {Issuers: []oidc.Issuer{{Audiences: []string{"a"}, JWKSURL: good.JWKSURL}}},
		"no audiences":         {Issuers: []oidc.Issuer{{ID: testIssuer, JWKSURL: good.JWKSURL}}},
		"empty audience":       {Issuers: []oidc.Issuer{{ID: testIssuer, Audiences: []string{""}, JWKSURL: good.JWKSURL}}},
		"empty alias":          {Issuers: []oidc.Issuer{{ID: testIssuer, Aliases: []string{""}, Audiences: []string{"a"}, JWKSURL: good.JWKSURL}}},
		"http JWKS":            {Issuers: []oidc.Issuer{{ID: testIssuer, Audiences: []string{"a"}, JWKSURL: "http://issuer.test/jwks"}}},
		"http discovery":       {Issuers: []oidc.Issuer{{ID: testIssuer, Audiences: []string{"a"}, DiscoveryURL: "http://issuer.test/x"}}},
		"ID not a URL":         {Issuers: []oidc.Issuer{{ID: "issuer", Audiences: []string{"a"}}}},
		"duplicate ID":         {Issuers: []oidc.Issuer{good, good}},
		"alias claims another": {Issuers: []oidc.Issuer{good, {ID: "https://b.test", Aliases: []string{testIssuer}, Audiences: []string{"a"}, JWKSURL: good.JWKSURL}}},
		"negative MaxAge":      {Issuers: []oidc.Issuer{good}, MaxAge: -time.Second},
		"negative Skew":        {Issuers: []oidc.Issuer{good}, Skew: -time.Second},
	} {
		if v, err := oidc.New(context.Background(), cfg); err == nil {
			v.Close()
			t.Errorf("%s: New accepted %+v", name, cfg)
		}
	}
}

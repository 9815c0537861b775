package oidc_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/walletauth/oidc"
)

// FuzzVerify feeds arbitrary tokens to a production verifier (keys of the
// jose vectors from a local server, fixed clock) and to a sandbox verifier.
// Neither may panic; every rejection is a typed 400 or 401; the production
// verifier never accepts what the sandbox one rejects; an accepted token has
// a registered issuer and a subject.
func FuzzVerify(f *testing.F) {
	vec := loadJoseVectors(f)
	srv := newKeyServer(f, vec.JWKS)
	cfg := joseConfig(vec, srv.URL+"/jwks")
	cfg.HTTPClient = srv.Client()
	prod, err := oidc.New(context.Background(), cfg)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(prod.Close)
	cfg.Sandbox = true
	sandbox, err := oidc.New(context.Background(), cfg)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(sandbox.Close)
	issuers := map[string]bool{}
	for _, is := range vec.Issuers {
		issuers[is.ID] = true
	}

	for _, c := range vec.Valid {
		f.Add(c.Token)
		p := strings.Split(c.Token, ".")
		f.Add(p[0] + "." + p[1] + ".")
		f.Add(p[0] + "." + p[1] + ".dummy")
	}
	for _, c := range vec.Invalid {
		f.Add(c.Token)
	}
	now := time.Unix(vec.Now, 0)
	for _, s := range []string{
		"", ".", "..", "...", "a.b.c", "sandbox-valid-oidc-token", "{}", "{\"payload\":\"\"}",
		unsigned(`{"alg":"RS256","kid":"rsa-1"}`, `{"iss":"https://accounts.google.com","aud":[],"iat":1e999}`, "AA"),
		unsigned(`{"alg":"ES256","kid":"ec-1","crit":["b64"],"b64":false}`, `{}`, ""),
		unsigned(`{"alg":"RS256","kid":"rsa-1"}`, `{"iss":"https://accounts.google.com","aud":"1234567890-web.apps.googleusercontent.com","sub":"s","iat":-1e308,"exp":"1"}`, "x"),
		unsigned(`{"alg":"RS256","kid":"rsa-1"}`, `{"iss":"https://accounts.google.com","iss":"accounts.google.com"}`, "x"),
		unsigned(`{"alg":"EdDSA","kid":"rsa-1"}`, `{"iss":"https://id.example.com"}`, "x"),
		unsigned(`{"alg":"RS256","kid":"nope"}`, `{"iss":"https://id.example.com","aud":["walletgate-ios"],"sub":"a","iat":`+strconv.FormatInt(now.Unix(), 10)+`,"exp":`+strconv.FormatInt(now.Unix()+9, 10)+`}`, "x"),
	} {
		f.Add(s)
	}

	f.Fuzz(func(t *testing.T, tok string) {
		ctx := context.Background()
		for _, v := range []*oidc.Verifier{sandbox, prod} {
			for _, expect := range []oidc.Expect{{}, {Nonce: vec.Nonce}} {
				id, err := v.Verify(ctx, tok, expect)
				if err != nil {
					var e *apierror.Error
					if !errors.As(err, &e) {
						t.Fatalf("untyped error %T %v", err, err)
					}
					if code := apierror.CodeOf(err); code != apierror.InvalidInput && code != apierror.Unauthorized || e.Reason() == "" {
						t.Fatalf("rejection %v", err)
					}
					continue
				}
				if id == nil || id.Subject == "" || !issuers[id.Issuer] || id.Audience == "" {
					t.Fatalf("accepted with identity %+v", id)
				}
				if v == prod {
					if _, err := sandbox.Verify(ctx, tok, expect); err != nil {
						t.Fatalf("production accepts what sandbox rejects: %v", err)
					}
				}
			}
		}
	})
}

package oidc_test

import (
	"context"
	"strings"
	"testing"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/storage/storagetest"
	"github.com/walletgate/walletgate/walletauth/oidc"
)

// TestVerifyRejectsWithHeadersCached runs the rejection table on a verifier
// that has already verified a token of every signing key, so that the header
// segments of the table's tokens are served from the verifier's header cache
// instead of being parsed again: every check must still answer the same.
func TestVerifyRejectsWithHeadersCached(t *testing.T) {
	clk := storagetest.NewClock(t0)
	srv := newKeyServer(t, standardJWKS(t))
	v := newVerifier(t, srv, clk, nil)
	warm := func(t *testing.T) {
		t.Helper()
		for _, k := range []signingKey{rs256("rs-1"), es256("ec-1"), eddsa("ed-1")} {
			if _, err := v.Verify(context.Background(), withClaims(k, nil)(t, clk.Now()), oidc.Expect{}); err != nil {
				t.Fatalf("warming with %s: %v", k.kid, err)
			}
		}
	}
	warm(t)
	for _, c := range rejections() {
		t.Run(c.name, func(t *testing.T) {
			_, err := v.Verify(context.Background(), c.token(t, clk.Now()), c.expect)
			wantErr(t, err, c.code, c.reason)
		})
	}
	// A cached header with a payload segment that is base64url text but not
	// base64 (one character left over) is still not a JWT.
	p := strings.Split(withClaims(rs256("rs-1"), nil)(t, clk.Now()), ".")
	_, err := v.Verify(context.Background(), p[0]+".A."+p[2], oidc.Expect{})
	wantErr(t, err, apierror.InvalidInput, "not a JWT")
	warm(t)
}

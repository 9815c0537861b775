package oidc_test

import (
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/lestrrat-go/jwx/v2/jwk"

	"github.com/walletgate/walletgate/walletauth/oidc"
)

// BenchmarkVerifyRS256 verifies the jose RS256 vector with its keys cached:
// shape, header, key selection, signature, claims and nonce.
func BenchmarkVerifyRS256(b *testing.B) {
	vec := loadJoseVectors(b)
	srv := newKeyServer(b, vec.JWKS)
	cfg := joseConfig(vec, srv.URL+"/jwks")
	cfg.HTTPClient = srv.Client()
	v, err := oidc.New(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer v.Close()
	tok := vec.Valid[0].Token
	expect := oidc.Expect{Nonce: vec.Nonce}
	ctx := context.Background()
	if _, err := v.Verify(ctx, tok, expect); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := v.Verify(ctx, tok, expect); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRawRS256 is the primitive BenchmarkVerifyRS256 wraps: SHA-256 and
// rsa.VerifyPKCS1v15 over the same token's signing input.
func BenchmarkRawRS256(b *testing.B) {
	vec := loadJoseVectors(b)
	set, err := jwk.Parse(vec.JWKS)
	if err != nil {
		b.Fatal(err)
	}
	key, _ := set.LookupKeyID("rsa-1")
	var pub rsa.PublicKey
	if err := key.Raw(&pub); err != nil {
		b.Fatal(err)
	}
	tok := vec.Valid[0].Token
	dot := strings.LastIndexByte(tok, '.')
	input := []byte(tok[:dot])
	sig, err := base64.RawURLEncoding.DecodeString(tok[dot+1:])
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		h := sha256.Sum256(input)
		if err := rsa.VerifyPKCS1v15(&pub, crypto.SHA256, h[:], sig); err != nil {
			b.Fatal(err)
		}
	}
}

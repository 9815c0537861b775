package oidc_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/walletauth/oidc"
)

// joseVectors is testdata/jose/vectors.json, made by generate.mjs with the
// jose npm library.
type joseVectors struct {
	Now             int64           `json:"now"`
	ClientPublicKey string          `json:"clientPublicKey"`
	Nonce           string          `json:"nonce"`
	JWKS            json.RawMessage `json:"jwks"`
	Issuers         []struct {
		ID             string   `json:"id"`
		Aliases        []string `json:"aliases"`
		Audiences      []string `json:"audiences"`
		InferAlgorithm bool     `json:"inferAlgorithm"`
	} `json:"issuers"`
	Valid []struct {
		Name          string `json:"name"`
		Token         string `json:"token"`
		Issuer        string `json:"issuer"`
		Audience      string `json:"audience"`
		EmailVerified bool   `json:"emailVerified"`
	} `json:"valid"`
	Invalid []struct {
		Name   string `json:"name"`
		Token  string `json:"token"`
		Code   string `json:"code"`
		Reason string `json:"reason"`
	} `json:"invalid"`
}

func loadJoseVectors(t testing.TB) joseVectors {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "jose", "vectors.json"))
	if err != nil {
		t.Fatal(err)
	}
	var v joseVectors
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// joseConfig returns the vectors' issuers with keys from jwksURL, at the
// vectors' fixed time.
func joseConfig(v joseVectors, jwksURL string) oidc.Config {
	cfg := oidc.Config{Clock: func() time.Time { return time.Unix(v.Now, 0) }}
	for _, is := range v.Issuers {
		cfg.Issuers = append(cfg.Issuers, oidc.Issuer{
			ID: is.ID, Aliases: is.Aliases, Audiences: is.Audiences,
			JWKSURL: jwksURL, InferAlgorithm: is.InferAlgorithm,
		})
	}
	return cfg
}

func TestJoseVectors(t *testing.T) {
	vec := loadJoseVectors(t)
	if got := oidc.NonceFor(vec.ClientPublicKey); got != vec.Nonce {
		t.Fatalf("NonceFor = %s, jose side computed %s", got, vec.Nonce)
	}
	srv := newKeyServer(t, vec.JWKS)
	cfg := joseConfig(vec, srv.URL+"/jwks")
	cfg.HTTPClient = srv.Client()
	v, err := oidc.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	expect := oidc.Expect{Nonce: vec.Nonce}
	if len(vec.Valid) < 4 || len(vec.Invalid) < 15 {
		t.Fatalf("only %d valid and %d invalid vectors", len(vec.Valid), len(vec.Invalid))
	}
	for _, c := range vec.Valid {
		t.Run(c.Name, func(t *testing.T) {
			id, err := v.Verify(context.Background(), c.Token, expect)
			if err != nil {
				t.Fatal(err)
			}
			if id.Issuer != c.Issuer || id.Audience != c.Audience || id.Subject != "110169484474386276334" ||
				id.Email != "alice@example.com" || id.EmailVerified != c.EmailVerified ||
				id.IssuedAt.Unix() != vec.Now-10 || id.ExpiresAt.Unix() != vec.Now+3600 {
				t.Fatalf("identity %+v", id)
			}
			if _, err := v.Verify(context.Background(), c.Token, oidc.Expect{Identity: id, Nonce: vec.Nonce}); err != nil {
				t.Fatalf("again with the identity: %v", err)
			}
		})
	}
	for _, c := range vec.Invalid {
		t.Run(c.Name, func(t *testing.T) {
			code, ok := apierror.LookupCode(c.Code)
			if !ok {
				t.Fatalf("unknown code %s", c.Code)
			}
			_, err := v.Verify(context.Background(), c.Token, expect)
			wantErr(t, err, code, c.Reason)
		})
	}
	// One fetch for the whole run: no vector is signed under an unknown kid.
	hits(t, srv, 1)
}

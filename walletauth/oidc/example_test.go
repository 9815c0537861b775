package oidc_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwk"
	"github.com/lestrrat-go/jwx/v2/jwt"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/walletauth/oidc"
)

// A provider publishes its keys; the client started sign-in with the nonce
// of its session key; the server verifies the ID token it got back, first
// when adding the credential and then on every sign-in with that identity.
func ExampleVerifier_Verify() {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

	// The provider: a signing key and its JWKS endpoint.
	priv, _ := rsa.GenerateKey(rand.Reader, 2048)
	pub, _ := jwk.FromRaw(priv.Public())
	_ = pub.Set(jwk.KeyIDKey, "key-1")
	_ = pub.Set(jwk.AlgorithmKey, jwa.RS256)
	set := jwk.NewSet()
	_ = set.AddKey(pub)
	idp := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(set)
	}))
	defer idp.Close()

	// The service.
	v, err := oidc.New(context.Background(), oidc.Config{
		Issuers: []oidc.Issuer{{
			ID:        "https://id.example.com",
			Audiences: []string{"walletgate-web"},
			JWKSURL:   idp.URL,
		}},
		Clock:      func() time.Time { return now },
		HTTPClient: idp.Client(),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer v.Close()

	// The client's session key and the token the provider issued for it.
	clientPublicKey := "02c6047f9441ed7d6d3045406e95c07cd85c778e4b8cef3ca7abac09b95c709ee5"
	tok, _ := jwt.NewBuilder().
		Issuer("https://id.example.com").Audience([]string{"walletgate-web"}).Subject("248289761001").
		IssuedAt(now.Add(-2*time.Second)).Expiration(now.Add(time.Hour)).
		Claim("email", "alice@example.com").Claim("nonce", oidc.NonceFor(clientPublicKey)).Build()
	signer, _ := jwk.FromRaw(priv)
	_ = signer.Set(jwk.KeyIDKey, "key-1") // jwx copies the kid into the header
	signed, _ := jwt.Sign(tok, jwt.WithKey(jwa.RS256, signer))

	id, err := v.Verify(context.Background(), string(signed), oidc.Expect{Nonce: oidc.NonceFor(clientPublicKey)})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(id.Issuer, id.Audience, id.Subject, id.Email)

	// Signing in later as the same identity, but from another client key.
	_, err = v.Verify(context.Background(), string(signed), oidc.Expect{Identity: id, Nonce: oidc.NonceFor("03aa")})
	fmt.Println(apierror.CodeOf(err), apierror.As(err).Reason())
	// Output:
	// https://id.example.com walletgate-web 248289761001 alice@example.com
	// UNAUTHORIZED nonce mismatch
}

// In sandbox mode the signature segment may be a placeholder; every claim
// is still checked.
func ExampleConfig_sandbox() {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	v, _ := oidc.New(context.Background(), oidc.Config{
		Issuers: []oidc.Issuer{oidc.Google("web-client.apps.googleusercontent.com")},
		Clock:   func() time.Time { return now },
		Sandbox: true,
	})
	defer v.Close()
	claims := fmt.Sprintf(`{"iss":"accounts.google.com","aud":"web-client.apps.googleusercontent.com","sub":"42","iat":%d,"exp":%d}`,
		now.Unix(), now.Unix()+600)
	id, err := v.Verify(context.Background(), unsigned(`{"alg":"RS256","kid":"sandbox"}`, claims, "dummy"), oidc.Expect{})
	fmt.Println(id.Issuer, id.Subject, err)

	_, err = v.Verify(context.Background(), "sandbox-valid-oidc-token", oidc.Expect{})
	fmt.Println(apierror.CodeOf(err))
	// Output:
	// https://accounts.google.com 42 <nil>
	// INVALID_INPUT
}

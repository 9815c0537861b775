package oidc

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// Issuer is one OpenID Provider whose ID tokens the [Verifier] accepts.
//
// A token is attributed to an Issuer when its iss claim equals ID or one of
// Aliases, compared byte for byte (a trailing slash matters). The resulting
// [Identity] always carries ID, so a credential registered from a token with
// an alias matches later tokens with the canonical spelling and vice versa.
type Issuer struct {
	// ID is the canonical issuer identifier, for example
	// "https://accounts.google.com".
	ID string
	// Aliases are other iss values the provider emits for the same
	// identities, for example "accounts.google.com".
	Aliases []string
	// Audiences are the client IDs this service accepts in aud (web, iOS and
	// Android client IDs differ). At least one is required: a token for some
	// other application is never accepted.
	Audiences []string
	// JWKSURL is the https URL of the provider's JSON Web Key Set.
	JWKSURL string
	// DiscoveryURL is the https URL of the provider's OpenID configuration
	// document, read once to find jwks_uri when JWKSURL is empty. When both are
	// empty it defaults to ID + "/.well-known/openid-configuration". The
	// document's issuer must equal ID.
	DiscoveryURL string
	// InferAlgorithm accepts keys that carry no alg by inferring it from the
	// key type (RSA: RS*/PS*; EC: the ES* of its curve; Ed25519: EdDSA). It
	// exists for providers such as Microsoft Entra whose JWKS omit alg; an
	// HMAC algorithm is never inferred.
	InferAlgorithm bool
}

// Google returns the Google issuer accepting both spellings of its iss,
// "https://accounts.google.com" (canonical) and "accounts.google.com", with
// Google's JWKS URL and the given OAuth client IDs as audiences.
func Google(audiences ...string) Issuer {
	return Issuer{
		ID:        "https://accounts.google.com",
		Aliases:   []string{"accounts.google.com"},
		Audiences: slices.Clone(audiences),
		JWKSURL:   "https://www.googleapis.com/oauth2/v3/certs",
	}
}

// Apple returns the Sign in with Apple issuer "https://appleid.apple.com" with
// Apple's JWKS URL and the given Services IDs or bundle IDs as audiences.
func Apple(audiences ...string) Issuer {
	return Issuer{
		ID:        "https://appleid.apple.com",
		Audiences: slices.Clone(audiences),
		JWKSURL:   "https://appleid.apple.com/auth/keys",
	}
}

// names returns ID followed by the aliases.
func (is Issuer) names() []string {
	return append([]string{is.ID}, is.Aliases...)
}

// discoveryURL returns the configured or derived discovery document URL.
func (is Issuer) discoveryURL() string {
	if is.DiscoveryURL != "" {
		return is.DiscoveryURL
	}
	return strings.TrimSuffix(is.ID, "/") + "/.well-known/openid-configuration"
}

// validate reports a configuration error of the issuer.
func (is Issuer) validate() error {
	if is.ID == "" {
		return fmt.Errorf("oidc: issuer with an empty ID")
	}
	for _, a := range is.Aliases {
		if a == "" {
			return fmt.Errorf("oidc: issuer %q has an empty alias", is.ID)
		}
	}
	if len(is.Audiences) == 0 {
		return fmt.Errorf("oidc: issuer %q has no audiences", is.ID)
	}
	for _, a := range is.Audiences {
		if a == "" {
			return fmt.Errorf("oidc: issuer %q has an empty audience", is.ID)
		}
	}
	if is.JWKSURL != "" {
		return checkHTTPS("JWKS URL of issuer "+is.ID, is.JWKSURL)
	}
	return checkHTTPS("discovery URL of issuer "+is.ID, is.discoveryURL())
}

// checkHTTPS reports an error unless raw is an absolute https URL with a host.
func checkHTTPS(what, raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("oidc: %s: %w", what, err)
	}
	if u.Scheme != "https" || u.Host == "" {
		return fmt.Errorf("oidc: %s %q is not an absolute https URL", what, raw)
	}
	return nil
}

package oidc

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
)

// discoveryDocument is the part of an OpenID Provider configuration that
// key selection needs.
type discoveryDocument struct {
	Issuer  string `json:"issuer"`
	JWKSURI string `json:"jwks_uri"`
}

// discover reads the issuer's OpenID configuration and returns its jwks_uri.
// The document must name the configured issuer and an https jwks_uri.
func discover(ctx context.Context, g *httpGetter, is Issuer) (string, error) {
	u := is.discoveryURL()
	res, body, err := g.fetch(ctx, u)
	if err != nil {
		return "", fmt.Errorf("discovery: %w", err)
	}
	if res.StatusCode != http.StatusOK {
		return "", fmt.Errorf("discovery %s: status %s", u, res.Status)
	}
	var doc discoveryDocument
	if err := json.Unmarshal(body, &doc); err != nil {
		return "", fmt.Errorf("discovery %s: %w", u, err)
	}
	if doc.Issuer != is.ID {
		return "", fmt.Errorf("discovery %s: issuer %q, want %q", u, doc.Issuer, is.ID)
	}
	if err := checkHTTPS("jwks_uri of "+u, doc.JWKSURI); err != nil {
		return "", err
	}
	return doc.JWKSURI, nil
}

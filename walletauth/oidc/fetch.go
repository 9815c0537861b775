package oidc

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
)

// httpGetter performs the GET requests of discovery and of the JWKS cache.
// Every request carries a deadline derived from the verifier's lifetime, the
// body is read whole (at most maxDocumentBytes) and the connection released,
// which the cache's own client interface (Get(url), no context) cannot do.
type httpGetter struct {
	client *http.Client
	ctx    context.Context
}

// Get implements jwk.HTTPClient. The returned response's body is already in
// memory.
func (g *httpGetter) Get(u string) (*http.Response, error) {
	res, body, err := g.fetch(g.ctx, u)
	if err != nil {
		return nil, err
	}
	res.Body = io.NopCloser(bytes.NewReader(body))
	res.ContentLength = int64(len(body))
	return res, nil
}

// fetch GETs u within fetchTimeout and returns the response (its Body
// closed) and the body read.
func (g *httpGetter) fetch(ctx context.Context, u string) (*http.Response, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Accept", "application/json")
	res, err := g.client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, maxDocumentBytes+1))
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", u, err)
	}
	if len(body) > maxDocumentBytes {
		return nil, nil, fmt.Errorf("%s: body larger than %d bytes", u, maxDocumentBytes)
	}
	return res, body, nil
}

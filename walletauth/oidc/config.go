package oidc

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/walletgate/walletgate/apierror/operation"
)

// Default limits applied when the corresponding [Config] field is zero.
const (
	// DefaultMaxAge is how old an iat may be.
	DefaultMaxAge = 60 * time.Second
	// DefaultSkew is the clock skew allowed on iat and nbf.
	DefaultSkew = 5 * time.Second
)

// Fixed limits of key fetching and token size.
const (
	// refetchInterval is the least time between two key fetches that
	// verification triggers for one issuer.
	refetchInterval = time.Minute
	// backgroundRefresh is the least interval of the cache's own refresh,
	// which otherwise follows the JWKS response's Cache-Control max-age.
	backgroundRefresh = 15 * time.Minute
	// fetchTimeout bounds one discovery or JWKS request.
	fetchTimeout = 10 * time.Second
	// maxDocumentBytes bounds a discovery or JWKS response body.
	maxDocumentBytes = 1 << 20
	// maxTokenBytes bounds the token; real ID tokens are around 1 KiB.
	maxTokenBytes = 16 << 10
)

// Config configures a [Verifier].
type Config struct {
	// Issuers are the accepted providers. Their IDs and aliases must be
	// distinct across all issuers.
	Issuers []Issuer
	// Clock returns the current time; nil means time.Now.
	Clock func() time.Time
	// HTTPClient fetches discovery documents and key sets; nil means a client
	// with a 10 s timeout. Every request is also bounded by a 10 s deadline
	// and a 1 MiB body.
	HTTPClient *http.Client
	// Sandbox skips the signature check, and only that: the token must still
	// be a well-formed JWS with an asymmetric alg and a kid, and every claim
	// check runs. No key is ever fetched. It is an explicit switch and never
	// a fallback after a failed verification.
	Sandbox bool
	// MaxAge is how old iat may be (plus Skew); zero means DefaultMaxAge.
	MaxAge time.Duration
	// Skew is the clock skew allowed on iat (both ways) and nbf; zero means
	// DefaultSkew.
	Skew time.Duration
	// Telemetry receives the verifier's records, spans and metrics; the
	// zero value reports nothing. Each failed fetch of a key set is logged
	// with the issuer and the cause: at slog.LevelWarn when the last good
	// key set stays in use, at slog.LevelError when there is none (the
	// issuer's tokens cannot be verified). Each key set fetch is a client
	// span "oidc.jwks.fetch" with its outcome, counted by
	// walletgate.oidc.jwks.fetches by outcome (ok, stale, error).
	// Verifications are traced by the caller (walletauth's
	// "walletauth.oidc.verify"). No token or claim is reported.
	Telemetry operation.Telemetry
}

// withDefaults returns c with zero fields replaced by their defaults, or an
// error when c cannot work.
func (c Config) withDefaults() (Config, error) {
	if len(c.Issuers) == 0 {
		return c, errors.New("oidc: no issuers configured")
	}
	if c.MaxAge < 0 || c.Skew < 0 {
		return c, fmt.Errorf("oidc: negative MaxAge %s or Skew %s", c.MaxAge, c.Skew)
	}
	if c.MaxAge == 0 {
		c.MaxAge = DefaultMaxAge
	}
	if c.Skew == 0 {
		c.Skew = DefaultSkew
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Timeout: fetchTimeout}
	}
	seen := map[string]string{}
	for _, is := range c.Issuers {
		if err := is.validate(); err != nil {
			return c, err
		}
		for _, name := range is.names() {
			if other, dup := seen[name]; dup {
				return c, fmt.Errorf("oidc: iss %q is claimed by issuers %q and %q", name, other, is.ID)
			}
			seen[name] = is.ID
		}
	}
	return c, nil
}

package oidc

import (
	"context"
	"crypto/subtle"
	"slices"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwk"

	"github.com/walletgate/walletgate/apierror"
)

// Verifier verifies ID tokens of a fixed set of issuers. It is safe for
// concurrent use. Its key cache refreshes in the background until the context
// given to [New] ends or [Verifier.Close] is called.
type Verifier struct {
	cfg Config // normalized by New
	// byName maps every accepted iss value (IDs and aliases) to its issuer.
	byName map[string]*registered
	cancel context.CancelFunc
	// headers holds the parsed headers of verified tokens; nil in sandbox
	// mode, where nothing is verified.
	headers *headerCache
}

// registered is a configured issuer with its key source.
type registered struct {
	Issuer
	// keys is nil in sandbox mode.
	keys *keySource
}

// New returns a Verifier for cfg, or an error when cfg is invalid (no
// issuers, an issuer without audiences, a non-https key or discovery URL, an
// iss value claimed twice, a negative duration). It makes no network request:
// keys are fetched when a token first needs them. ctx bounds the lifetime of
// the background key refresh.
func New(ctx context.Context, cfg Config) (*Verifier, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	tel, err := newTelemetry(&cfg)
	if err != nil {
		return nil, err
	}
	lifetime, cancel := context.WithCancel(ctx)
	v := &Verifier{
		cfg:    cfg,
		byName: map[string]*registered{},
		cancel: cancel,
	}
	var cache *jwk.Cache
	var getter *httpGetter
	if !cfg.Sandbox {
		v.headers = &headerCache{}
		cache = jwk.NewCache(lifetime)
		getter = &httpGetter{client: cfg.HTTPClient, ctx: lifetime}
	}
	// Issuers with the same JWKS URL share one key source, so one fetch and
	// one refetch limit serve them all.
	sources := map[string]*keySource{}
	for _, is := range cfg.Issuers {
		is.Aliases = slices.Clone(is.Aliases)
		is.Audiences = slices.Clone(is.Audiences)
		r := &registered{Issuer: is}
		if !cfg.Sandbox {
			where := "jwks " + is.JWKSURL
			if is.JWKSURL == "" {
				where = "discovery " + is.ID + " " + is.discoveryURL()
			}
			if r.keys = sources[where]; r.keys == nil {
				if r.keys, err = newKeySource(lifetime, is, cache, getter, cfg.Clock, tel); err != nil {
					cancel()
					return nil, err
				}
				sources[where] = r.keys
			}
		}
		for _, name := range is.names() {
			v.byName[name] = r
		}
	}
	return v, nil
}

// Close stops the background key refresh. Verification keeps working with
// the keys already fetched but fetches no more.
func (v *Verifier) Close() { v.cancel() }

// Sandbox reports whether v skips signature checks.
func (v *Verifier) Sandbox() bool { return v.cfg.Sandbox }

// Verify checks token and returns the identity it asserts, or an
// *apierror.Error naming the first failed check:
//
//   - 400 INVALID_INPUT (reason "not a JWT") when token is not a compact JWS
//     of three unpadded base64url segments with a JSON header and a JSON
//     object payload, or is longer than 16 KiB;
//   - 401 UNAUTHORIZED with details.reason, in this order: header (alg none,
//     HMAC or another unsupported alg, kid missing, crit or b64 present), iss
//     (missing, not registered; read before the signature check only to pick
//     the key set), signature (key not found after the allowed refetch, key
//     does not allow the alg, signature invalid; skipped in sandbox mode),
//     aud, sub, iat, exp, nbf, then expect's identity and nonce;
//   - 500 INTERNAL_ERROR when the issuer's keys cannot be fetched at all.
//
// See the package documentation for every reason string.
func (v *Verifier) Verify(ctx context.Context, token string, expect Expect) (*Identity, error) {
	t, aerr := parseToken(token, v.cfg.Sandbox, v.headers)
	if aerr != nil {
		return nil, aerr
	}
	iss, isString := t.claims.str("iss")
	if !isString || iss == "" {
		return nil, rejected(reasonIssMissing)
	}
	r, ok := v.byName[iss]
	if !ok {
		return nil, rejected(reasonIssNotRegistered)
	}
	if !v.cfg.Sandbox {
		if aerr := r.keys.verify(ctx, t, r.InferAlgorithm); aerr != nil {
			return nil, aerr
		}
		v.headers.put(t.header, t.headers)
	}
	id, aerr := v.checkClaims(r, t.claims, v.cfg.Clock())
	if aerr != nil {
		return nil, aerr
	}
	if aerr := v.checkExpect(id, t.claims, expect); aerr != nil {
		return nil, aerr
	}
	return id, nil
}

// checkClaims checks aud, sub, iat, exp and nbf at now and builds the
// identity.
func (v *Verifier) checkClaims(r *registered, c claimSet, now time.Time) (*Identity, *apierror.Error) {
	aud, aerr := c.audience()
	if aerr != nil {
		return nil, aerr
	}
	if !slices.Contains(r.Audiences, aud) {
		return nil, rejected(reasonAudNotAccepted)
	}
	if !c.present("sub") {
		return nil, rejected(reasonSubMissing)
	}
	sub, isString := c.str("sub")
	if !isString || sub == "" {
		return nil, rejected(reasonSubMalformed)
	}
	if !c.present("iat") {
		return nil, rejected(reasonIatMissing)
	}
	iat, ok := c.numericDate("iat")
	if !ok {
		return nil, rejected(reasonIatNotNumeric)
	}
	if iat.After(now.Add(v.cfg.Skew)) {
		return nil, rejected(reasonIatFuture)
	}
	if now.Sub(iat) > v.cfg.MaxAge+v.cfg.Skew {
		return nil, rejected(reasonIatTooOld)
	}
	if !c.present("exp") {
		return nil, rejected(reasonExpMissing)
	}
	exp, ok := c.numericDate("exp")
	if !ok {
		return nil, rejected(reasonExpNotNumeric)
	}
	if !exp.After(now) {
		return nil, rejected(reasonExpPast)
	}
	if c.present("nbf") {
		nbf, ok := c.numericDate("nbf")
		if !ok {
			return nil, rejected(reasonNbfNotNumeric)
		}
		if nbf.After(now.Add(v.cfg.Skew)) {
			return nil, rejected(reasonNbfFuture)
		}
	}
	email, _ := c.str("email")
	return &Identity{
		Issuer:        r.ID,
		Audience:      aud,
		Subject:       sub,
		Email:         email,
		EmailVerified: c.emailVerified(),
		IssuedAt:      iat,
		ExpiresAt:     exp,
	}, nil
}

// checkExpect compares the identity and the nonce with what the caller
// expects.
func (v *Verifier) checkExpect(id *Identity, c claimSet, expect Expect) *apierror.Error {
	if want := expect.Identity; want != nil {
		wantIss := want.Issuer
		if r, ok := v.byName[wantIss]; ok {
			wantIss = r.ID
		}
		switch {
		case wantIss != id.Issuer:
			return rejected(reasonIssMismatch)
		case want.Audience != id.Audience:
			return rejected(reasonAudMismatch)
		case want.Subject != id.Subject:
			return rejected(reasonSubMismatch)
		}
	}
	if expect.Nonce != "" {
		nonce, ok := c.str("nonce")
		if !ok || nonce == "" {
			return rejected(reasonNonceMissing)
		}
		if subtle.ConstantTimeCompare([]byte(nonce), []byte(expect.Nonce)) != 1 {
			return rejected(reasonNonceMismatch)
		}
	}
	return nil
}

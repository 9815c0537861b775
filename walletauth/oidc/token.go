package oidc

import (
	"encoding/base64"
	"strings"
	"sync"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jws"

	"github.com/walletgate/walletgate/apierror"
)

// token is a compact JWS whose shape and header passed, with its claims
// decoded but not yet checked.
type token struct {
	// signingInput is "header.payload" exactly as received: the bytes the
	// signature covers.
	signingInput []byte
	// signature is the decoded signature segment; nil in sandbox mode, where
	// the segment is not decoded at all.
	signature []byte
	alg       jwa.SignatureAlgorithm
	kid       string
	claims    claimSet
	// header is the header segment as received; headers is its parse.
	header  string
	headers jws.Headers
}

// maxCachedHeaders bounds a headerCache; when full it starts over.
const maxCachedHeaders = 256

// headerCache maps header segments to their parsed protected headers. Only
// headers of tokens whose signature verified are added, so what it holds
// are the few headers the configured issuers sign with (one per key and
// algorithm, typically), not whatever a caller sends. The parsed headers
// are shared read-only.
type headerCache struct {
	mu sync.RWMutex
	m  map[string]jws.Headers
}

func (c *headerCache) get(segment string) (jws.Headers, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.RLock()
	h, ok := c.m[segment]
	c.mu.RUnlock()
	return h, ok
}

func (c *headerCache) put(segment string, h jws.Headers) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[segment]; ok {
		return
	}
	if c.m == nil || len(c.m) >= maxCachedHeaders {
		c.m = make(map[string]jws.Headers)
	}
	c.m[segment] = h
}

// asymmetric lists the algorithms an ID token may use. HMAC is excluded
// because the verifier only holds the provider's public keys; none is
// excluded because it is no signature.
var asymmetric = map[jwa.SignatureAlgorithm]bool{
	jwa.RS256: true, jwa.RS384: true, jwa.RS512: true,
	jwa.PS256: true, jwa.PS384: true, jwa.PS512: true,
	jwa.ES256: true, jwa.ES384: true, jwa.ES512: true,
	jwa.EdDSA: true,
}

// parseToken checks the token's shape (400 when it is not a JWT) and then its
// header (401), and decodes its claim set. In sandbox mode the signature
// segment may be any base64url text, including empty, and is not decoded.
// A header segment found in known (see [headerCache]) is not decoded again:
// its parsed header is the one jws.Parse gave for the same bytes before.
func parseToken(raw string, sandbox bool, known *headerCache) (*token, *apierror.Error) {
	if raw == "" {
		return nil, notJWT("empty")
	}
	if len(raw) > maxTokenBytes {
		return nil, notJWT("longer than 16 KiB")
	}
	header, rest, ok1 := strings.Cut(raw, ".")
	payload, sig, ok2 := strings.Cut(rest, ".")
	if !ok1 || !ok2 || strings.Contains(sig, ".") {
		return nil, notJWT("not three dot-separated segments")
	}
	if header == "" || payload == "" || !isBase64URL(header) || !isBase64URL(payload) || !isBase64URL(sig) {
		return nil, notJWT("segments are not unpadded base64url")
	}
	// The signature is decoded here, not by jws.Parse, so that sandbox mode
	// can carry a dummy segment that is not valid base64: jws.Parse gets
	// "header.payload." (a prefix of raw, copied once), and the signing
	// input is that copy without its last dot.
	input := []byte(raw[:len(header)+1+len(payload)+1])
	t := &token{signingInput: input[:len(input)-1], header: header}
	var claimBytes []byte
	if h, ok := known.get(header); ok {
		// A cached header passed checkHeader, so it has no b64 member and
		// jws.Parse would decode the payload with its default base64
		// decoder, which for unpadded base64url text is RawURLEncoding.
		var err error
		if claimBytes, err = base64.RawURLEncoding.DecodeString(payload); err != nil {
			return nil, notJWT("header or payload does not decode")
		}
		t.headers = h
	} else {
		msg, err := jws.Parse(input, jws.WithCompact())
		if err != nil {
			return nil, notJWT("header or payload does not decode")
		}
		sigs := msg.Signatures()
		if len(sigs) != 1 {
			return nil, notJWT("not a single-signature compact JWS")
		}
		claimBytes, t.headers = msg.Payload(), sigs[0].ProtectedHeaders()
	}
	if !sandbox {
		var err error
		t.signature, err = base64.RawURLEncoding.Strict().DecodeString(sig)
		if err != nil {
			return nil, notJWT("signature segment does not decode")
		}
	}
	claims, cerr := parseClaims(claimBytes)
	if cerr != nil {
		return nil, cerr
	}
	t.claims = claims
	if rerr := t.checkHeader(t.headers); rerr != nil {
		return nil, rerr
	}
	return t, nil
}

// checkHeader rejects alg none, HMAC and other algorithms, a missing kid and
// critical extensions (including b64), and records alg and kid.
func (t *token) checkHeader(h jws.Headers) *apierror.Error {
	alg := h.Algorithm()
	switch {
	case alg == jwa.NoSignature:
		return rejected(reasonAlgNone)
	case alg.IsSymmetric():
		return rejected(reasonAlgHMAC)
	case !asymmetric[alg]:
		return rejected(reasonAlgUnsupported)
	}
	if h.KeyID() == "" {
		return rejected(reasonKidMissing)
	}
	if len(h.Critical()) > 0 {
		return rejected(reasonCritUnsupported)
	}
	if _, ok := h.Get("b64"); ok {
		return rejected(reasonCritUnsupported)
	}
	t.alg, t.kid = alg, h.KeyID()
	return nil
}

// isBase64URL reports whether s uses only the unpadded base64url alphabet.
func isBase64URL(s string) bool {
	for i := 0; i < len(s); i++ {
		if !base64URLAlphabet[s[i]] {
			return false
		}
	}
	return true
}

// base64URLAlphabet marks the bytes of the base64url alphabet: A-Z a-z 0-9 - _.
var base64URLAlphabet = func() (t [256]bool) {
	for c := 0; c < 256; c++ {
		t[c] = 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_'
	}
	return t
}()

package oidc

import (
	"encoding/base64"
	"strings"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jws"

	"github.com/walletgate/walletgate/apierror"
)

// token is a compact JWS whose shape and header passed, with its claims
// decoded but not yet checked.
type token struct {
	// signingInput is "header.payload" exactly as received: the bytes the
	// signature covers.
	signingInput string
	// signature is the decoded signature segment; nil in sandbox mode, where
	// the segment is not decoded at all.
	signature []byte
	alg       jwa.SignatureAlgorithm
	kid       string
	claims    claimSet
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
func parseToken(raw string, sandbox bool) (*token, *apierror.Error) {
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
	// can carry a dummy segment that is not valid base64.
	msg, err := jws.Parse([]byte(header+"."+payload+"."), jws.WithCompact())
	if err != nil {
		return nil, notJWT("header or payload does not decode")
	}
	sigs := msg.Signatures()
	if len(sigs) != 1 {
		return nil, notJWT("not a single-signature compact JWS")
	}
	t := &token{signingInput: header + "." + payload}
	if !sandbox {
		t.signature, err = base64.RawURLEncoding.Strict().DecodeString(sig)
		if err != nil {
			return nil, notJWT("signature segment does not decode")
		}
	}
	claims, cerr := parseClaims(msg.Payload())
	if cerr != nil {
		return nil, cerr
	}
	t.claims = claims
	if rerr := t.checkHeader(sigs[0].ProtectedHeaders()); rerr != nil {
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
		c := s[i]
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

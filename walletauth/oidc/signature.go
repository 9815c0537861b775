package oidc

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"slices"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwk"
	"github.com/lestrrat-go/jwx/v2/jws"

	"github.com/walletgate/walletgate/apierror"
)

// minRSABits is the smallest RSA modulus accepted for a signing key.
const minRSABits = 2048

// verify checks t's signature with the issuer's key named by t.kid, fetching
// the key set again (within the refetch limits) when the kid is unknown. The
// algorithm is the token's, used only when the key allows it: the key's alg
// when it has one, otherwise (with infer) the algorithms of its type and
// curve; HMAC never qualifies.
func (k *keySource) verify(ctx context.Context, t *token, infer bool) *apierror.Error {
	set, err := k.keys(ctx)
	if err != nil {
		return internal("key set of issuer "+k.issuer.ID+" unavailable", err)
	}
	found := withKeyID(set, t.kid)
	if len(found) == 0 {
		if set, err = k.refetch(ctx); err != nil {
			return internal("key set of issuer "+k.issuer.ID+" unavailable", err)
		}
		found = withKeyID(set, t.kid)
		if len(found) == 0 {
			return rejected(reasonKeyNotFound)
		}
	}
	var usable []any
	for _, key := range found {
		if raw, ok := allows(key, t.alg, infer); ok {
			usable = append(usable, raw)
		}
	}
	if len(usable) == 0 {
		return rejected(reasonKeyAlgRefused)
	}
	verifier, err := jws.NewVerifier(t.alg)
	if err != nil {
		return internal("no verifier for "+t.alg.String(), err)
	}
	for _, raw := range usable {
		if verifier.Verify([]byte(t.signingInput), t.signature, raw) == nil {
			return nil
		}
	}
	return rejected(reasonSignature)
}

// withKeyID returns the keys of set whose kid is kid.
func withKeyID(set jwk.Set, kid string) []jwk.Key {
	var out []jwk.Key
	for i := 0; i < set.Len(); i++ {
		if key, ok := set.Key(i); ok && key.KeyID() == kid {
			out = append(out, key)
		}
	}
	return out
}

// allows returns the raw public key of key when key may verify alg: its use
// (when set) is "sig", its key_ops (when set) include "verify", its alg equals
// alg (or it has none and infer is set), and alg fits its type, curve and
// size.
func allows(key jwk.Key, alg jwa.SignatureAlgorithm, infer bool) (any, bool) {
	if use := key.KeyUsage(); use != "" && use != string(jwk.ForSignature) {
		return nil, false
	}
	if ops := key.KeyOps(); len(ops) > 0 && !slices.Contains(ops, jwk.KeyOpVerify) {
		return nil, false
	}
	if ka := key.Algorithm().String(); ka != "" {
		if ka != alg.String() {
			return nil, false
		}
	} else if !infer {
		return nil, false
	}
	raw, err := jwk.PublicRawKeyOf(key)
	if err != nil {
		return nil, false
	}
	return raw, fits(raw, alg)
}

// fits reports whether a raw public key can verify alg.
func fits(raw any, alg jwa.SignatureAlgorithm) bool {
	switch pub := raw.(type) {
	case *rsa.PublicKey:
		switch alg {
		case jwa.RS256, jwa.RS384, jwa.RS512, jwa.PS256, jwa.PS384, jwa.PS512:
			return pub.N.BitLen() >= minRSABits
		}
	case *ecdsa.PublicKey:
		switch alg {
		case jwa.ES256:
			return pub.Curve == elliptic.P256()
		case jwa.ES384:
			return pub.Curve == elliptic.P384()
		case jwa.ES512:
			return pub.Curve == elliptic.P521()
		}
	case ed25519.PublicKey:
		return alg == jwa.EdDSA && len(pub) == ed25519.PublicKeySize
	}
	return false
}

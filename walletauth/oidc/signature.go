package oidc

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"reflect"
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
	found := k.prepared(set).byKid[t.kid]
	if len(found) == 0 {
		if set, err = k.refetch(ctx); err != nil {
			return internal("key set of issuer "+k.issuer.ID+" unavailable", err)
		}
		found = k.prepared(set).byKid[t.kid]
		if len(found) == 0 {
			return rejected(reasonKeyNotFound)
		}
	}
	var buf [4]any
	usable := buf[:0]
	for i := range found {
		if raw, ok := found[i].allows(t.alg, infer); ok {
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
		if verifier.Verify(t.signingInput, t.signature, raw) == nil {
			return nil
		}
	}
	return rejected(reasonSignature)
}

// keyIndex is a key set read once for verification: its keys grouped by
// kid, in set order, each with what allows needs already extracted. It
// belongs to one jwk.Set value; the cache replaces the set (a new value) on
// every fetch, so an index is rebuilt exactly when the keys can change.
type keyIndex struct {
	set   jwk.Set
	byKid map[string][]indexedKey
}

// indexedKey is one key of a keyIndex.
type indexedKey struct {
	// use is the key's "use" ("" when absent); verifyOp is false when its
	// key_ops are set without "verify"; alg is its "alg" ("" when absent).
	use      string
	verifyOp bool
	alg      string
	// raw is the raw public key, nil when jwk.PublicRawKeyOf failed.
	raw any
}

// prepared returns the index of set, building it when set is not the one
// indexed last. Sets that are not pointers (never the cache's own) are
// indexed on every call.
func (k *keySource) prepared(set jwk.Set) *keyIndex {
	if set == nil {
		return &keyIndex{}
	}
	cacheable := reflect.TypeOf(set).Kind() == reflect.Pointer
	if cacheable {
		if x := k.index.Load(); x != nil && x.set == set {
			return x
		}
	}
	x := &keyIndex{set: set, byKid: map[string][]indexedKey{}}
	for i := 0; i < set.Len(); i++ {
		key, ok := set.Key(i)
		if !ok {
			continue
		}
		ops := key.KeyOps()
		ik := indexedKey{
			use:      key.KeyUsage(),
			verifyOp: len(ops) == 0 || slices.Contains(ops, jwk.KeyOpVerify),
			alg:      key.Algorithm().String(),
		}
		if raw, err := jwk.PublicRawKeyOf(key); err == nil {
			ik.raw = raw
		}
		x.byKid[key.KeyID()] = append(x.byKid[key.KeyID()], ik)
	}
	if cacheable {
		k.index.Store(x)
	}
	return x
}

// allows returns the raw public key of key when key may verify alg: its use
// (when set) is "sig", its key_ops (when set) include "verify", its alg equals
// alg (or it has none and infer is set), and alg fits its type, curve and
// size.
func (key *indexedKey) allows(alg jwa.SignatureAlgorithm, infer bool) (any, bool) {
	if key.use != "" && key.use != string(jwk.ForSignature) {
		return nil, false
	}
	if !key.verifyOp {
		return nil, false
	}
	if key.alg != "" {
		if key.alg != alg.String() {
			return nil, false
		}
	} else if !infer {
		return nil, false
	}
	if key.raw == nil {
		return nil, false
	}
	return key.raw, fits(key.raw, alg)
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

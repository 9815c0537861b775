// Package oidc verifies OpenID Connect ID tokens for the OAUTH credential
// type of walletauth.
//
// A [Verifier] is built from a [Config] listing the accepted [Issuer]s
// ([Google] and [Apple] presets, or custom ones with audiences and a JWKS or
// discovery URL). [Verifier.Verify] checks a token and returns the
// [Identity] it asserts; [Expect] adds the credential's identity and the
// nonce ([NonceFor] of the client's public key) on sign-in. JWS parsing,
// signature verification and JWK handling are github.com/lestrrat-go/jwx/v2;
// claims are decoded with encoding/json so that their JSON types are checked
// exactly.
//
// # Checks and reasons
//
// Checks run in this order and the first failure is returned. A token that
// is not a JWT answers 400 INVALID_INPUT with details.reason "not a JWT"
// (and details.errors on the field oidcToken): not three unpadded base64url
// segments, longer than 16 KiB, a header that jwx cannot parse (alg or kid
// not strings), a payload that is not one JSON object, or a signature segment
// that is not base64url. The literal "sandbox-valid-oidc-token" is such a
// token. Every other failure answers 401 UNAUTHORIZED with details.reason:
//
//	header     "alg none not allowed", "HMAC alg not allowed",
//	           "alg not supported" (missing, unknown, ES256K), "kid missing",
//	           "crit header not supported" (crit or b64 present)
//	iss        "iss missing" (absent, empty or not a string),
//	           "iss not registered" (compared exactly with IDs and aliases)
//	signature  "signing key not found" (no key with the kid, after the
//	           allowed refetch), "signing key does not allow alg",
//	           "signature invalid"
//	aud        "aud missing", "aud malformed" (not a non-empty string or an
//	           array of exactly one), "aud not accepted"
//	sub        "sub missing", "sub malformed" (empty or not a string)
//	iat        "iat missing", "iat not numeric" (a JSON string is not),
//	           "iat in the future" (beyond Skew), "iat too old" (older than
//	           MaxAge + Skew; defaults 60 s and 5 s)
//	exp        "exp missing", "exp not numeric", "exp in the past" (exp must
//	           be after now; no skew)
//	nbf        optional; "nbf not numeric", "nbf in the future" (beyond Skew)
//	expect     "iss mismatch", "aud mismatch", "sub mismatch",
//	           "nonce missing", "nonce mismatch"
//
// iss is read from the still unverified payload, but only to choose the key
// set; nothing else is trusted before the signature check. A key allows the
// token's alg when its use (if set) is "sig", its key_ops (if set) include
// "verify", its alg equals the token's, and the alg fits the key (RSA of at
// least 2048 bits for RS*/PS*, the matching curve for ES256/384/512, Ed25519
// for EdDSA). A key without alg is used only for an issuer with
// InferAlgorithm, and then only for the algorithms of its type: a token can
// never make a public key act as an HMAC secret. The signature is verified
// over the header and payload segments exactly as received. jku, x5u, jwk and
// x5c headers are ignored: keys come only from the configured issuer.
//
// A failure to obtain any key set for the issuer (endpoint down at first use,
// discovery document naming another issuer) answers 500 INTERNAL_ERROR with
// the cause kept for logs.
//
// # Keys
//
// Each JWKS URL has one entry in a jwk.Cache, which refreshes in the
// background (Cache-Control max-age, at least every 15 minutes) until the
// context given to [New] ends or [Verifier.Close] is called. Verification
// itself triggers at most one fetch per JWKS per minute of the injected
// clock: the first fetch, a retry after a failure, or a refetch because a
// token names an unknown kid. Callers that need a fetch while one is running
// wait for it and share its result, and a fetch that fails (network error,
// non-200, a body that is not a JWK set or larger than 1 MiB) leaves the last
// good keys in place. With an empty JWKSURL the issuer's discovery document
// is read once to find jwks_uri; its issuer must equal the configured ID.
// Every URL must be https.
//
// # Sandbox
//
// With Config.Sandbox the signature check is skipped, and nothing else: the
// signature segment may be any base64url text (or empty), but the header must
// parse and pass the same header checks as in production (an asymmetric alg,
// a kid, so alg none is still rejected), and every claim and expectation
// check runs. A sandbox token thus differs from a production one only in its
// signature. No key is ever fetched in sandbox mode. Sandbox is explicit
// configuration; a production Verifier never falls back to it.
package oidc

package oidc

import (
	"crypto/sha256"
	"encoding/hex"
	"time"
)

// Identity is what a verified ID token says about its subject.
//
// (Issuer, Audience, Subject) is the identity of an OAUTH credential: a
// credential registered from one token matches a later token exactly when the
// three are equal.
type Identity struct {
	// Issuer is the canonical ID of the matched [Issuer], even when the token
	// used one of its aliases.
	Issuer string
	// Audience is the single aud value, one of the issuer's Audiences.
	Audience string
	// Subject is the sub claim, never empty.
	Subject string
	// Email is the email claim, or "" when it is absent or not a string. It
	// is informative (a credential's nickname), never an identity.
	Email string
	// EmailVerified is true when email_verified is the boolean true or the
	// string "true" (Apple sends the string form).
	EmailVerified bool
	// IssuedAt and ExpiresAt are the iat and exp claims, in UTC.
	IssuedAt  time.Time
	ExpiresAt time.Time
}

// Expect holds what a token must additionally match on Verify. The zero
// value expects nothing beyond the token checks themselves (adding a new
// credential).
type Expect struct {
	// Identity, when non-nil, must have the token's issuer (aliases of the
	// same Issuer are equal), audience and subject.
	Identity *Identity
	// Nonce, when non-empty, must equal the token's nonce claim; see
	// [NonceFor].
	Nonce string
}

// NonceFor returns the nonce that binds an ID token to a client key: the
// lowercase hex SHA-256 of clientPublicKey exactly as the client sent it (the
// UTF-8 bytes of the hex string, not the decoded key bytes), so two encodings
// of the same key give different nonces.
func NonceFor(clientPublicKey string) string {
	sum := sha256.Sum256([]byte(clientPublicKey))
	return hex.EncodeToString(sum[:])
}

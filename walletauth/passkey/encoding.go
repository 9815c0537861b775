package passkey

import (
	"crypto/sha256"
	"encoding/base64"
	"strings"

	"github.com/walletgate/walletgate/apierror"
)

// Upper bounds on decoded field sizes. They are far above what authenticators
// produce and keep hostile inputs from reaching the CBOR and JSON decoders.
const (
	maxCredentialID      = 1023 // WebAuthn: credential ids are at most 1023 bytes
	maxClientDataJSON    = 16 << 10
	maxAttestationObject = 64 << 10
	maxAuthenticatorData = 16 << 10
	maxSignature         = 8 << 10
	maxUserHandle        = 64 // WebAuthn: user.id is at most 64 bytes
)

// fields decodes the base64url members of a request, collecting every
// malformed one so the client learns about all of them at once.
type fields struct {
	v apierror.Validation
}

// b64 decodes value as base64url (unpadded, or padded correctly). An empty
// value is reported when required and decodes to nil otherwise.
func (f *fields) b64(field, value string, required bool, maxLen int) []byte {
	if value == "" {
		if required {
			f.v.Add(field, apierror.Format("base64url"), "is required")
		}
		return nil
	}
	b, ok := decodeB64URL(value)
	switch {
	case !ok:
		f.v.Add(field, apierror.Format("base64url"), "is not base64url")
		return nil
	case len(b) == 0:
		f.v.Add(field, apierror.Format("base64url"), "decodes to no bytes")
		return nil
	case len(b) > maxLen:
		f.v.Add(field, apierror.Length(-1, maxLen), "is too long")
		return nil
	}
	return b
}

func (f *fields) err() error { return f.v.Err() }

// decodeB64URL decodes base64url strictly: only the URL alphabet (the
// standard decoder silently skips CR and LF), canonical trailing bits, and
// padding either absent or complete.
func decodeB64URL(s string) ([]byte, bool) {
	if len(s) > 4*(maxAttestationObject/3+1) {
		return nil, false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '=') {
			return nil, false
		}
	}
	enc := base64.RawURLEncoding
	if strings.HasSuffix(s, "=") {
		enc = base64.URLEncoding
	}
	b, err := enc.Strict().DecodeString(s)
	return b, err == nil
}

func b64url(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func sha256Sum(b []byte) [32]byte { return sha256.Sum256(b) }

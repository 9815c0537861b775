package authclient

import (
	"encoding/base64"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/walletgate/walletgate/apierror"
)

// Attestation is the browser's registration response, each binary member
// base64url encoded.
type Attestation struct {
	// CredentialID is the credential's rawId.
	CredentialID string `json:"credentialId"`
	// ClientDataJSON is the exact clientDataJSON bytes.
	ClientDataJSON string `json:"clientDataJson"`
	// AttestationObject is the CBOR attestation object.
	AttestationObject string `json:"attestationObject"`
	// Transports are the transport hints (WebAuthn AuthenticatorTransport:
	// usb, nfc, ble, smart-card, hybrid, internal); optional.
	Transports []string `json:"transports,omitempty"`
}

// Assertion is the browser's authentication response, each binary member
// base64url encoded.
type Assertion struct {
	CredentialID      string `json:"credentialId"`
	ClientDataJSON    string `json:"clientDataJson"`
	AuthenticatorData string `json:"authenticatorData"`
	Signature         string `json:"signature"`
	// UserHandle is present for discoverable credentials. It is checked for
	// encoding only: the credential is identified by its id and its key.
	UserHandle string `json:"userHandle,omitempty"`
}

// ClientDataChallenge returns the challenge member clientDataJSON carries for
// a passkey login challenge (the lowercase hex [ChallengeResponse].Challenge):
// the unpadded base64url encoding of the hex string's bytes. It is also the
// challenge of the browser's request options.
func ClientDataChallenge(challengeHex string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(challengeHex))
}

// Nickname length bounds, in characters (Unicode code points), after trimming.
const (
	NicknameMinLength = 1
	NicknameMaxLength = 100
)

// NicknamePattern describes the characters a nickname may hold; it is
// reported as the constraint of a rejected nickname.
const NicknamePattern = `^[\p{L}\p{M}\p{Nd} ._\-'()]{1,100}$`

// NormalizeNickname trims surrounding white space from a passkey nickname and
// checks the result: 1 to 100 characters, each a Unicode letter, a combining
// mark following a letter (so decomposed accents and scripts such as
// Devanagari are accepted), a decimal digit, a space (U+0020) or one of
// . _ - ' ( ). It returns the trimmed nickname, or 400 INVALID_INPUT naming
// the field "nickname".
func NormalizeNickname(nickname string) (string, error) {
	s, fe := checkNickname(nickname)
	if fe != nil {
		return "", apierror.InvalidField(fe.Field, fe.Constraint, fe.Message)
	}
	return s, nil
}

func checkNickname(nickname string) (string, *apierror.FieldError) {
	bad := func(c *apierror.Constraint, msg string) (string, *apierror.FieldError) {
		return "", &apierror.FieldError{Field: "nickname", Constraint: c, Message: msg}
	}
	if !utf8.ValidString(nickname) {
		return bad(apierror.Pattern(NicknamePattern), "is not valid UTF-8")
	}
	s := strings.TrimSpace(nickname)
	switch n := utf8.RuneCountInString(s); {
	case n < NicknameMinLength:
		return bad(apierror.Length(NicknameMinLength, NicknameMaxLength), "is empty")
	case n > NicknameMaxLength:
		return bad(apierror.Length(NicknameMinLength, NicknameMaxLength), "is longer than 100 characters")
	}
	prevLetter := false
	for _, r := range s {
		switch {
		case unicode.IsLetter(r):
			prevLetter = true
		case unicode.IsMark(r) && prevLetter:
		case unicode.Is(unicode.Nd, r), strings.ContainsRune(" ._-'()", r):
			prevLetter = false
		default:
			return bad(apierror.Pattern(NicknamePattern), "may hold only letters, digits, spaces and . _ - ' ( )")
		}
	}
	return s, nil
}

// ValidNickname reports whether NormalizeNickname accepts nickname.
func ValidNickname(nickname string) bool {
	_, err := NormalizeNickname(nickname)
	return err == nil
}

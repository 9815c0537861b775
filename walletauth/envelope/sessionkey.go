package envelope

import (
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"errors"
	"io"
	"strconv"

	"github.com/walletgate/walletgate/apierror"
)

// Sizes of an encryptedSessionSigningKey.
const (
	// sessionKeyPayloadLen is compressed enc (33) || AES-GCM(32-byte scalar) (32 + 16).
	sessionKeyPayloadLen = compressedKeyLen + scalarLen + tagLen
	// MaxSessionKeyLen bounds the encryptedSessionSigningKey string
	// [OpenSessionKey] reads. A real one is about 116 characters.
	MaxSessionKeyLen = 256
)

// reasonSessionKeyNotSealedToClient is details.reason of the 401 of
// [OpenSessionKey].
const reasonSessionKeyNotSealedToClient = "encryptedSessionSigningKey was not sealed to this client key"

// SealSessionKey makes the encryptedSessionSigningKey of a new session (the
// OAUTH and PASSKEY legacy flow).
//
// It draws a fresh P-256 session key from rand (crypto/rand when nil), then
// HPKE-seals its 32-byte private scalar to clientPublicKeyHex (hex, 33-byte
// compressed or 65-byte uncompressed) with the profile of [Seal], drawing the
// ephemeral seed from rand as well. The result is
// base58check(compressed encapsulated key (33 B) || ciphertext and tag (48 B)),
// which @turnkey/crypto's decryptCredentialBundle opens. The AAD and the KEM
// context always use the uncompressed encodings of both keys, whatever
// encoding the client sent, which is what the client computes from its own
// private key. Only the public half of the session key is returned; the
// private scalar exists in memory only while sealing.
//
// A clientPublicKeyHex that is not such a key is 400 INVALID_INPUT (field
// clientPublicKey); a failing rand is 500 INTERNAL_ERROR.
func SealSessionKey(clientPublicKeyHex string, rand io.Reader) (encryptedSessionSigningKey string, sessionPublic *ecdsa.PublicKey, err error) {
	client, problem := parsePublicKeyHex(clientPublicKeyHex)
	if problem != "" {
		return "", nil, invalid(fieldClientPublicKey, fieldClientPublicKey+" "+problem)
	}
	recipient, err := client.ECDH()
	if err != nil {
		return "", nil, internal("converting the client key", err)
	}
	session, err := generateKey(rand)
	if err != nil {
		return "", nil, err
	}
	scalar, err := session.Bytes()
	if err != nil {
		return "", nil, internal("encoding the session key", err)
	}
	enc, ct, err := seal(recipient, scalar, rand)
	clear(scalar)
	if err != nil {
		return "", nil, err
	}
	payload := make([]byte, 0, sessionKeyPayloadLen)
	payload = append(append(payload, compressPoint(enc)...), ct...)
	return base58CheckEncode(payload), &session.PublicKey, nil
}

// OpenSessionKey is the client side of [SealSessionKey]: it opens an
// encryptedSessionSigningKey with the private key whose public half was sent
// as clientPublicKey, and returns the session signing key.
//
// It guarantees on success: the string is base58check with a valid
// checksum; the payload is exactly 81 bytes, a compressed P-256 point
// followed by a 48-byte ciphertext; it decrypts under client (AAD built from
// the decompressed encapsulated key and client's uncompressed public key);
// the plaintext is a valid P-256 private scalar.
//
// A string that fails a format check, or a plaintext that is not a scalar,
// is 400 INVALID_INPUT (field encryptedSessionSigningKey); one whose tag does
// not verify under client is 401 UNAUTHORIZED; a nil client is 500
// INTERNAL_ERROR.
func OpenSessionKey(client *ecdh.PrivateKey, encryptedSessionSigningKey string) (*ecdsa.PrivateKey, error) {
	const f = fieldSessionKey
	if client == nil || client.Curve() != ecdh.P256() {
		return nil, internal("OpenSessionKey needs a P-256 client key", nil)
	}
	s := encryptedSessionSigningKey
	if s == "" {
		return nil, invalid(f, f+" is required")
	}
	if len(s) > MaxSessionKeyLen {
		return nil, invalid(f, f+" exceeds "+strconv.Itoa(MaxSessionKeyLen)+" characters")
	}
	payload, problem := base58CheckDecode(s)
	if problem != "" {
		return nil, invalid(f, f+" "+problem)
	}
	if len(payload) != sessionKeyPayloadLen {
		return nil, invalid(f, f+" payload must be 81 bytes: a 33-byte compressed key and a 48-byte ciphertext")
	}
	// decompressPoint yields only points on the curve (it solves for Y), so
	// its output needs no second check before the HPKE open.
	enc, ok := decompressPoint(payload[:compressedKeyLen])
	if !ok {
		return nil, invalid(f, "encapsulated key is not a compressed P-256 point")
	}
	skR, err := recipientKey(client.Bytes())
	if err != nil {
		return nil, err
	}
	scalar, err := openWith(skR, enc, payload[compressedKeyLen:])
	if errors.Is(err, errNotSealedToKey) {
		return nil, apierror.Unauthenticated(reasonSessionKeyNotSealedToClient)
	}
	if err != nil {
		return nil, err
	}
	defer clear(scalar)
	key, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), scalar)
	if err != nil {
		return nil, invalid(f, "decrypted session key is not a valid P-256 private scalar")
	}
	return key, nil
}

package authclient

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"io"

	"github.com/walletgate/walletgate/signedretry/stamper"
	"github.com/walletgate/walletgate/walletauth/envelope"
)

// ClientKey is a P-256 key pair held by a client (a browser, an app, a
// platform backend's test): it seals one-time codes, stamps signed retries and
// opens sealed session keys. It is what a client does with @turnkey/crypto
// and @turnkey/api-key-stamper, in Go.
type ClientKey struct {
	key *ecdsa.PrivateKey
}

// NewClientKey generates a fresh key.
func NewClientKey() (*ClientKey, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	return &ClientKey{key: k}, nil
}

// ClientKeyFrom wraps an existing P-256 private key.
func ClientKeyFrom(k *ecdsa.PrivateKey) *ClientKey { return &ClientKey{key: k} }

// PrivateKey returns the private key.
func (k *ClientKey) PrivateKey() *ecdsa.PrivateKey { return k.key }

// PublicKeyHex returns the public key as compressed hex (66 lowercase
// characters), the form of the clientPublicKey members of requests. It is
// empty for a key that is not on P-256.
func (k *ClientKey) PublicKeyHex() string {
	h, _ := stamper.CompressedHex(&k.key.PublicKey)
	return h
}

// SealOTP answers an otpEncryptionTargetBundle: it checks the bundle's
// signature (against trustedSigner when not nil) and seals {otp_code,
// public_key} to its target key, public_key being this key. The result is the
// encryptedOtpBundle of the verify request.
func (k *ClientKey) SealOTP(targetBundle string, trustedSigner *ecdsa.PublicKey, code string, r io.Reader) (string, error) {
	return envelope.SealOTPForBundle(targetBundle, trustedSigner, code, k.PublicKeyHex(), r)
}

// Stamp signs payloadToSign and returns the Service-Wallet-Signature value.
// It signs whatever it is given: a client checks the payload is the
// operation it started before stamping it, with
// [stamper.Expectation.Stamp] (which stamps only after its checks) or
// [stamper.Expectation.Check].
func (k *ClientKey) Stamp(payloadToSign string) (string, error) {
	return stamper.NewStamp(k.key, []byte(payloadToSign))
}

// OpenSessionKey decrypts an encryptedSessionSigningKey sealed to this key
// and returns the session key.
func (k *ClientKey) OpenSessionKey(encryptedSessionSigningKey string) (*ClientKey, error) {
	priv, err := k.key.ECDH()
	if err != nil {
		return nil, err
	}
	s, err := envelope.OpenSessionKey(priv, encryptedSessionSigningKey)
	if err != nil {
		return nil, err
	}
	return &ClientKey{key: s}, nil
}

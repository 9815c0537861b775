package stamper

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"

	"github.com/walletgate/walletgate/apierror"
)

// SchemeP256 is the stamp scheme: ECDSA over P-256 with SHA-256, as
// produced by @turnkey/api-key-stamper. It is the only scheme the service
// accepts.
const SchemeP256 = "SIGNATURE_SCHEME_TK_API_P256"

// stampJSON is the JSON object inside the header, with the members in the
// order @turnkey/api-key-stamper writes them.
type stampJSON struct {
	PublicKey string `json:"publicKey"`
	Scheme    string `json:"scheme"`
	Signature string `json:"signature"`
}

// NewStamp signs payload with key and returns the Service-Wallet-Signature
// header value: unpadded base64url of the compact JSON
// {"publicKey":<compressed hex>,"scheme":"SIGNATURE_SCHEME_TK_API_P256","signature":<DER hex>},
// byte for byte what @turnkey/api-key-stamper produces. The signature is over
// SHA-256 of payload exactly as given. key must be a P-256 private key;
// otherwise the error is 400 INVALID_INPUT.
//
// NewStamp signs whatever it is given; [Expectation.Stamp] signs a
// payloadToSign only once it is the operation the client expects.
func NewStamp(key *ecdsa.PrivateKey, payload []byte) (string, error) {
	if key == nil || key.Curve != elliptic.P256() {
		return "", apierror.New(apierror.InvalidInput, "stamp signing key must be a P-256 private key")
	}
	pub, err := CompressedHex(&key.PublicKey)
	if err != nil {
		return "", err
	}
	digest := sha256.Sum256(payload)
	sig, err := ecdsa.SignASN1(rand.Reader, key, digest[:])
	if err != nil {
		return "", apierror.Internal(err)
	}
	body, err := json.Marshal(stampJSON{PublicKey: pub, Scheme: SchemeP256, Signature: hex.EncodeToString(sig)})
	if err != nil {
		return "", apierror.Internal(err)
	}
	return base64.RawURLEncoding.EncodeToString(body), nil
}

// CompressedHex returns the compressed SEC1 encoding of a P-256 public key as
// 66 lowercase hex characters, the form stamps carry and the form of the
// clientPublicKey members of requests. A nil key, a key on another curve or
// an invalid point is 400 INVALID_INPUT.
func CompressedHex(pub *ecdsa.PublicKey) (string, error) {
	if pub == nil || pub.Curve != elliptic.P256() {
		return "", apierror.New(apierror.InvalidInput, "public key must be a P-256 key")
	}
	u, err := pub.Bytes()
	if err != nil || len(u) != 65 {
		return "", apierror.New(apierror.InvalidInput, "public key is not a valid P-256 point")
	}
	c := make([]byte, 33)
	c[0] = 0x02 | u[64]&1
	copy(c[1:], u[1:33])
	return hex.EncodeToString(c), nil
}

package webhooksig

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"

	"golang.org/x/crypto/cryptobyte"
	"golang.org/x/crypto/cryptobyte/asn1"

	"github.com/walletgate/walletgate/apierror"
)

// Header names of a delivery.
const (
	// SignatureHeader carries {"version":1,"signature":"<base64 DER>"}.
	SignatureHeader = "X-Grid-Signature"
	// IDHeader repeats the envelope id for deduplication; it is not signed.
	IDHeader = "X-Grid-Webhook-Id"
)

// SignatureVersion is the only version of the signature header there is.
const SignatureVersion = 1

// maxHeaderLen bounds the signature header value before it is parsed. A
// P-256 DER signature is at most 72 bytes, 96 in base64; the JSON around it
// is about 35 bytes, so 512 leaves room for whitespace and nothing else.
const maxHeaderLen = 512

// Signer signs webhook bodies with a P-256 key. It is safe for concurrent
// use.
type Signer struct {
	key *ecdsa.PrivateKey
	pem []byte
}

// NewSigner returns a Signer for key. It refuses a nil key, a curve other
// than P-256 and a key whose scalar is not a valid P-256 private key.
func NewSigner(key *ecdsa.PrivateKey) (*Signer, error) {
	if key == nil {
		return nil, errors.New("webhook: signer key is nil")
	}
	if key.Curve != elliptic.P256() {
		return nil, fmt.Errorf("webhook: signer key must be P-256, not %s", curveName(key.Curve))
	}
	if _, err := key.ECDH(); err != nil {
		return nil, fmt.Errorf("webhook: signer key is not a valid P-256 private key: %w", err)
	}
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("webhook: encoding the signer's public key: %w", err)
	}
	return &Signer{key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})}, nil
}

// Sign returns the X-Grid-Signature value for body: {"version":1,
// "signature":"<standard padded base64 of the DER ECDSA signature over
// SHA-256(body)>"}. Signatures are randomized (crypto/rand); S is not
// normalized, as the real service does not normalize it either. The value
// is accepted by [Verifier.VerifyBytes] for the same body.
func (s *Signer) Sign(body []byte) (string, error) {
	digest := sha256.Sum256(body)
	der, err := ecdsa.SignASN1(rand.Reader, s.key, digest[:])
	if err != nil {
		return "", fmt.Errorf("webhook: signing: %w", err)
	}
	return formatHeader(der), nil
}

// PublicKeyPEM returns the signer's public key as an SPKI PEM block
// ("-----BEGIN PUBLIC KEY-----"), the form receivers configure. The caller
// may modify the returned slice.
func (s *Signer) PublicKeyPEM() []byte { return bytes.Clone(s.pem) }

// PublicKey returns the signer's public key.
func (s *Signer) PublicKey() *ecdsa.PublicKey { return &s.key.PublicKey }

func formatHeader(der []byte) string {
	// Hand-built: the only variable part is base64, which needs no JSON
	// escaping, so the value is always exactly this shape.
	return `{"version":1,"signature":"` + base64.StdEncoding.EncodeToString(der) + `"}`
}

// ParsePublicKeyPEM parses a sender's public key: exactly one PEM block of
// type "PUBLIC KEY" holding a PKIX (SPKI) P-256 ECDSA key, with nothing but
// whitespace around it.
func ParsePublicKeyPEM(data []byte) (*ecdsa.PublicKey, error) {
	block, rest := pem.Decode(data)
	if block == nil {
		return nil, errors.New("webhook: public key: no PEM block found")
	}
	if block.Type != "PUBLIC KEY" {
		return nil, fmt.Errorf("webhook: public key: PEM block is %q, want \"PUBLIC KEY\"", block.Type)
	}
	if len(bytes.TrimSpace(rest)) != 0 {
		return nil, errors.New("webhook: public key: data after the PEM block")
	}
	key, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("webhook: public key: %w", err)
	}
	pub, ok := key.(*ecdsa.PublicKey)
	if !ok {
		return nil, fmt.Errorf("webhook: public key is %T, want an ECDSA P-256 key", key)
	}
	if pub.Curve != elliptic.P256() {
		return nil, fmt.Errorf("webhook: public key must be P-256, not %s", curveName(pub.Curve))
	}
	return pub, nil
}

func curveName(c elliptic.Curve) string {
	if c == nil || c.Params() == nil {
		return "no curve"
	}
	return c.Params().Name
}

// parseHeader reads an X-Grid-Signature value strictly (see the package
// documentation) and returns the DER signature it carries.
func parseHeader(value string) ([]byte, *VerifyError) {
	if len(value) > maxHeaderLen {
		return nil, verifyErr(ReasonHeaderMalformed, fmt.Sprintf("longer than %d bytes", maxHeaderLen), nil)
	}
	var members map[string]json.RawMessage
	if err := apierror.DecodeBytes([]byte(value), &members); err != nil {
		msg := err.Error()
		if e := apierror.As(err); e != nil {
			msg = e.Message
		}
		return nil, verifyErr(ReasonHeaderMalformed, "not a JSON object: "+msg, err)
	}
	if members == nil { // the JSON value null
		return nil, verifyErr(ReasonHeaderMalformed, "not a JSON object", nil)
	}
	for name := range members {
		if name != "version" && name != "signature" {
			return nil, verifyErr(ReasonHeaderMalformed, fmt.Sprintf("unknown member %q", name), nil)
		}
	}
	rawVersion, ok := members["version"]
	if !ok {
		return nil, verifyErr(ReasonHeaderMalformed, `member "version" is missing`, nil)
	}
	rawSig, ok := members["signature"]
	if !ok {
		return nil, verifyErr(ReasonHeaderMalformed, `member "signature" is missing`, nil)
	}
	// DecodeBytes decoded the canonical form, where the number 1 (however
	// it was spelled) is exactly "1".
	if string(rawVersion) != "1" {
		return nil, verifyErr(ReasonVersionUnsupported, fmt.Sprintf("version %s, want 1", rawVersion), nil)
	}
	var sig string
	if len(rawSig) == 0 || rawSig[0] != '"' || json.Unmarshal(rawSig, &sig) != nil {
		return nil, verifyErr(ReasonHeaderMalformed, `member "signature" is not a string`, nil)
	}
	der, err := base64.StdEncoding.Strict().DecodeString(sig)
	if err != nil || base64.StdEncoding.EncodeToString(der) != sig {
		return nil, verifyErr(ReasonSignatureEncoding, "signature is not padded standard base64", err)
	}
	if _, _, err := parseDER(der); err != nil {
		return nil, verifyErr(ReasonSignatureDER, err.Error(), nil)
	}
	return der, nil
}

// p256N is the order of the P-256 group.
var p256N = elliptic.P256().Params().N

// parseDER parses an ECDSA signature that must be the one DER encoding of
// its (r, s), with 1 <= r, s < n.
func parseDER(der []byte) (r, s *big.Int, err error) {
	r, s = new(big.Int), new(big.Int)
	in := cryptobyte.String(der)
	var seq cryptobyte.String
	if !in.ReadASN1(&seq, asn1.SEQUENCE) || !in.Empty() {
		return nil, nil, errors.New("signature is not one DER SEQUENCE")
	}
	if !seq.ReadASN1Integer(r) || !seq.ReadASN1Integer(s) || !seq.Empty() {
		return nil, nil, errors.New("signature SEQUENCE is not two DER INTEGERs")
	}
	if r.Sign() <= 0 || s.Sign() <= 0 || r.Cmp(p256N) >= 0 || s.Cmp(p256N) >= 0 {
		return nil, nil, errors.New("signature r or s is outside [1, n-1]")
	}
	var b cryptobyte.Builder
	b.AddASN1(asn1.SEQUENCE, func(b *cryptobyte.Builder) {
		b.AddASN1BigInt(r)
		b.AddASN1BigInt(s)
	})
	again, err := b.Bytes()
	if err != nil || !bytes.Equal(again, der) {
		return nil, nil, errors.New("signature is not in its one DER encoding")
	}
	return r, s, nil
}

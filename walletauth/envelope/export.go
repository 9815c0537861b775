package envelope

import (
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"encoding/hex"
	"errors"
	"io"

	"github.com/walletgate/walletgate/apierror"
)

// MaxExportBundleLen is the longest export bundle [OpenExportBundle] reads,
// in bytes.
const MaxExportBundleLen = 64 << 10

// reasonExportNotSealedToClient is details.reason of the 401 of
// [OpenExportBundle] for a ciphertext sealed to another key.
const reasonExportNotSealedToClient = "encryptedWalletCredentials was not sealed to this client key"

// exportData is the signed payload of an export bundle; field order is the
// order of the JSON members.
type exportData struct {
	EncappedPublic string `json:"encappedPublic"`
	Ciphertext     string `json:"ciphertext"`
	OrganizationID string `json:"organizationId"`
}

// NewExportBundle makes the export bundle (encryptedWalletCredentials) of a
// wallet export: secret HPKE-sealed to clientPublicKeyHex (hex, 33-byte
// compressed or 65-byte uncompressed) in a signed envelope
//
//	{"version":"v1.0.0","data":hex(D),"dataSignature":hex(DER),"enclaveQuorumPublic":hex(signer, 65 B)}
//
// where D is the JSON {"encappedPublic":hex(65 B),"ciphertext":hex,"organizationId":...}
// and the signature is ECDSA-P256-SHA256 over D's bytes by signer (RFC 6979,
// as [NewTargetBundle] signs). @turnkey/crypto's decryptExportBundle opens
// it when given the signer's uncompressed public key hex as
// dangerouslyOverrideSignerPublicKey, organizationID, and the client's
// private key; with returnMnemonic it returns a UTF-8 secret as text. The
// HPKE ephemeral key is drawn from rand (crypto/rand when nil); the AAD and
// KEM context use the uncompressed encoding of the client key whatever
// encoding was sent.
//
// A clientPublicKeyHex that is not such a key is 400 INVALID_INPUT (field
// clientPublicKey); a nil or non-P-256 signer, or a failing rand, is 500
// INTERNAL_ERROR.
func NewExportBundle(signer *ecdsa.PrivateKey, organizationID, clientPublicKeyHex string, secret []byte, rand io.Reader) (string, error) {
	if signer == nil || signer.Curve != elliptic.P256() {
		return "", internal("NewExportBundle needs a P-256 signing key", nil)
	}
	client, problem := parsePublicKeyHex(clientPublicKeyHex)
	if problem != "" {
		return "", invalid(fieldClientPublicKey, fieldClientPublicKey+" "+problem)
	}
	recipient, err := client.ECDH()
	if err != nil {
		return "", internal("converting the client key", err)
	}
	enc, ct, err := seal(recipient, secret, rand)
	if err != nil {
		return "", err
	}
	data, err := marshalCompact(exportData{
		EncappedPublic: hex.EncodeToString(enc),
		Ciphertext:     hex.EncodeToString(ct),
		OrganizationID: organizationID,
	})
	if err != nil {
		return "", internal("encoding the export bundle data", err)
	}
	return signEnvelope(signer, data, "export bundle")
}

// OpenExportBundle is the client side of [NewExportBundle], the checks of
// @turnkey/crypto's decryptExportBundle: the envelope is a v1 envelope
// whose enclaveQuorumPublic is trustedSigner (compared as points; nil checks
// only the bundle's own signature, which proves integrity but not origin)
// and whose dataSignature verifies over the data bytes; the data's
// organizationId is organizationID and not empty; the ciphertext opens
// under client. It returns the secret.
//
// A bundle that does not have this shape, or a wrong organizationId, is 400
// INVALID_INPUT (field encryptedWalletCredentials); an untrusted signer, a
// signature that does not verify or a ciphertext sealed to another key is
// 401 UNAUTHORIZED; a nil client is 500 INTERNAL_ERROR.
func OpenExportBundle(client *ecdh.PrivateKey, bundle string, trustedSigner *ecdsa.PublicKey, organizationID string) ([]byte, error) {
	const f = fieldExportBundle
	if client == nil || client.Curve() != ecdh.P256() {
		return nil, internal("OpenExportBundle needs a P-256 client key", nil)
	}
	if len(bundle) > MaxExportBundleLen {
		return nil, invalid(f, f+" exceeds 65536 bytes")
	}
	data, _, err := verifyEnvelope(f, bundle, trustedSigner)
	if err != nil {
		return nil, err
	}
	var ed exportData
	if !decodeObject(data, &ed) {
		return nil, invalid(f, "data is not a JSON object with string members encappedPublic, ciphertext and organizationId")
	}
	if ed.OrganizationID == "" || ed.OrganizationID != organizationID {
		return nil, invalid(f, "organizationId is not the expected organization")
	}
	rawEnc, err := hex.DecodeString(ed.EncappedPublic)
	if err != nil {
		return nil, invalid(f, "encappedPublic is not hex")
	}
	enc, problem := parseUncompressedPoint(rawEnc)
	if problem != "" {
		return nil, invalid(f, "encappedPublic "+problem)
	}
	ct, err := hex.DecodeString(ed.Ciphertext)
	if err != nil {
		return nil, invalid(f, "ciphertext is not hex")
	}
	if len(ct) < tagLen {
		return nil, invalid(f, "ciphertext is shorter than the 16-byte AES-GCM tag")
	}
	pt, err := open(client, enc, ct)
	if errors.Is(err, errNotSealedToKey) {
		return nil, apierror.Unauthenticated(reasonExportNotSealedToClient)
	}
	return pt, err
}

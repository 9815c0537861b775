package envelope

import (
	"crypto"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/hex"
	"io"
)

// TargetBundleVersion is the envelope version this package writes and
// accepts.
const TargetBundleVersion = "v1.0.0"

// MaxTargetBundleLen is the longest otpEncryptionTargetBundle
// [ParseTargetBundle] reads, in bytes.
const MaxTargetBundleLen = 16 << 10

// signedEnvelope is the wire form of a v1 signed envelope; field order is the
// order of the JSON members.
type signedEnvelope struct {
	Version             string `json:"version"`
	Data                string `json:"data"`
	DataSignature       string `json:"dataSignature"`
	EnclaveQuorumPublic string `json:"enclaveQuorumPublic"`
}

// targetData is the signed payload of a target bundle.
type targetData struct {
	TargetPublic   string `json:"targetPublic"`
	OrganizationID string `json:"organizationId"`
	UserID         string `json:"userId"`
}

// NewTargetBundle makes the otpEncryptionTargetBundle of one OTP issuance.
//
// It draws a fresh P-256 target key from rand (crypto/rand when nil) and
// returns the bundle, a JSON string
//
//	{"version":"v1.0.0","data":hex(D),"dataSignature":hex(DER),"enclaveQuorumPublic":hex(signer, 65 B)}
//
// where D is the JSON {"targetPublic":hex(65 B),"organizationId":...,"userId":...}
// and the signature is ECDSA-P256-SHA256 over D's bytes by signer, made
// deterministically (RFC 6979). All hex is lowercase; targetPublic and the
// signer key are uncompressed, as @turnkey/crypto requires. The target's
// private half is returned for the caller to keep server-side (persist it
// with Bytes and restore it with ecdh.P256().NewPrivateKey) and to pass to
// [OpenOTP]; it is meant for exactly one attempt's bundle. A nil or
// non-P-256 signer, or a failing rand, is 500 INTERNAL_ERROR.
func NewTargetBundle(signer *ecdsa.PrivateKey, organizationID, userID string, rand io.Reader) (bundle string, target *ecdh.PrivateKey, err error) {
	if signer == nil || signer.Curve != elliptic.P256() {
		return "", nil, internal("NewTargetBundle needs a P-256 signing key", nil)
	}
	key, err := generateKey(rand)
	if err != nil {
		return "", nil, err
	}
	target, err = key.ECDH()
	if err != nil {
		return "", nil, internal("converting the target key", err)
	}
	data, err := marshalCompact(targetData{
		TargetPublic:   hex.EncodeToString(target.PublicKey().Bytes()),
		OrganizationID: organizationID,
		UserID:         userID,
	})
	if err != nil {
		return "", nil, internal("encoding the target bundle data", err)
	}
	out, err := signEnvelope(signer, data, "target bundle")
	if err != nil {
		return "", nil, err
	}
	return out, target, nil
}

// signEnvelope wraps data in a v1 signed envelope: data's bytes signed by
// signer with ECDSA-P256-SHA256, deterministically (RFC 6979), and the
// signer's uncompressed public key as enclaveQuorumPublic, all hex
// lowercase. what names the envelope in internal errors.
func signEnvelope(signer *ecdsa.PrivateKey, data []byte, what string) (string, error) {
	signerPublic, err := signer.PublicKey.Bytes()
	if err != nil {
		return "", internal("encoding the "+what+" signer key", err)
	}
	digest := sha256.Sum256(data)
	// A nil random source selects RFC 6979 deterministic ECDSA.
	sig, err := signer.Sign(nil, digest[:], crypto.SHA256)
	if err != nil {
		return "", internal("signing the "+what, err)
	}
	out, err := marshalCompact(signedEnvelope{
		Version:             TargetBundleVersion,
		Data:                hex.EncodeToString(data),
		DataSignature:       hex.EncodeToString(sig),
		EnclaveQuorumPublic: hex.EncodeToString(signerPublic),
	})
	if err != nil {
		return "", internal("encoding the "+what, err)
	}
	return string(out), nil
}

package envelope

import (
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/sha256"
	"encoding/hex"

	"github.com/walletgate/walletgate/apierror"
)

// TargetBundle is a verified otpEncryptionTargetBundle.
type TargetBundle struct {
	// TargetPublic is the key the OTP attempt is sealed to.
	TargetPublic *ecdh.PublicKey
	// OrganizationID and UserID are the signed data's members ("" when absent).
	OrganizationID string
	UserID         string
	// Signer is the enclaveQuorumPublic key whose signature verified.
	Signer *ecdsa.PublicKey
}

// ParseTargetBundle checks an otpEncryptionTargetBundle the way a client
// must before sealing to it, and returns its contents.
//
// It guarantees: version is "v1.0.0"; enclaveQuorumPublic is a 65-byte
// uncompressed P-256 point and, when trustedSigner is not nil, the same point
// as trustedSigner (compared as points, not strings); dataSignature is a DER
// ECDSA-P256-SHA256 signature over the hex-decoded data bytes by that key
// (high-S accepted, as Turnkey's signer emits it); data is a JSON object whose
// targetPublic is a 65-byte uncompressed P-256 point (a compressed target
// would make @turnkey/crypto produce ciphertexts no RFC 9180 receiver opens).
// With a nil trustedSigner only the bundle's own signature is checked, which
// proves integrity but not origin.
//
// A bundle that does not have this shape is 400 INVALID_INPUT; an untrusted
// signer or a signature that does not verify is 401 UNAUTHORIZED; the failed
// check is in details.reason.
func ParseTargetBundle(bundle string, trustedSigner *ecdsa.PublicKey) (*TargetBundle, error) {
	if len(bundle) > MaxTargetBundleLen {
		return nil, invalid(fieldTargetBundle, fieldTargetBundle+" exceeds 16384 bytes")
	}
	data, signer, err := verifyEnvelope(fieldTargetBundle, bundle, trustedSigner)
	if err != nil {
		return nil, err
	}
	var td targetData
	if !decodeObject(data, &td) {
		return nil, invalid(fieldTargetBundle, "data is not a JSON object with string members targetPublic, organizationId and userId")
	}
	if td.TargetPublic == "" {
		return nil, invalid(fieldTargetBundle, "targetPublic is required")
	}
	rawTarget, err := hex.DecodeString(td.TargetPublic)
	if err != nil {
		return nil, invalid(fieldTargetBundle, "targetPublic is not hex")
	}
	target, problem := parseUncompressedPoint(rawTarget)
	if problem != "" {
		return nil, invalid(fieldTargetBundle, "targetPublic "+problem)
	}
	return &TargetBundle{
		TargetPublic:   target,
		OrganizationID: td.OrganizationID,
		UserID:         td.UserID,
		Signer:         signer,
	}, nil
}

// parseSignerHex parses the enclaveQuorumPublic member: hex of a 65-byte
// uncompressed P-256 point.
func parseSignerHex(s string) (*ecdsa.PublicKey, string) {
	if s == "" {
		return nil, "is required"
	}
	raw, err := hex.DecodeString(s)
	if err != nil {
		return nil, "is not hex"
	}
	if len(raw) != uncompressedKeyLen {
		return nil, "must be a 65-byte uncompressed P-256 point"
	}
	return parsePublicKeyBytes(raw)
}

// verifyEnvelope checks a v1 signed envelope read from the wire field and
// returns its verified data bytes and signer: version "v1.0.0";
// enclaveQuorumPublic a 65-byte uncompressed P-256 point, the same point as
// trustedSigner when that is not nil (401 otherwise); dataSignature a DER
// ECDSA-P256-SHA256 signature over the hex-decoded data by that key (high-S
// accepted; 401 when it does not verify). Shape failures are 400 naming
// field.
func verifyEnvelope(field, bundle string, trustedSigner *ecdsa.PublicKey) ([]byte, *ecdsa.PublicKey, error) {
	if bundle == "" {
		return nil, nil, invalid(field, field+" is required")
	}
	var env signedEnvelope
	if !decodeObject([]byte(bundle), &env) {
		return nil, nil, invalid(field, field+" is not a JSON object with string members version, data, dataSignature and enclaveQuorumPublic")
	}
	if env.Version != TargetBundleVersion {
		return nil, nil, invalid(field, `version must be "v1.0.0"`)
	}
	signer, problem := parseSignerHex(env.EnclaveQuorumPublic)
	if problem != "" {
		return nil, nil, invalid(field, "enclaveQuorumPublic "+problem)
	}
	if trustedSigner != nil && !signer.Equal(trustedSigner) {
		return nil, nil, apierror.Unauthenticated("enclaveQuorumPublic is not the trusted signer key")
	}
	if env.Data == "" {
		return nil, nil, invalid(field, "data is required")
	}
	data, err := hex.DecodeString(env.Data)
	if err != nil {
		return nil, nil, invalid(field, "data is not hex")
	}
	if env.DataSignature == "" {
		return nil, nil, invalid(field, "dataSignature is required")
	}
	sig, err := hex.DecodeString(env.DataSignature)
	if err != nil {
		return nil, nil, invalid(field, "dataSignature is not hex")
	}
	digest := sha256.Sum256(data)
	if !ecdsa.VerifyASN1(signer, digest[:], sig) {
		return nil, nil, apierror.Unauthenticated("dataSignature does not verify under enclaveQuorumPublic")
	}
	return data, signer, nil
}

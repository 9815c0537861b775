package envelope

import (
	"crypto/ecdh"
	"encoding/hex"
	"errors"
	"strconv"

	"github.com/walletgate/walletgate/apierror"
)

// OpenOTP decrypts an encryptedOtpBundle with the private target key of the
// issuance it answers, given as its 32-byte scalar: the Bytes of the key
// [NewTargetBundle] returned, which is what a server stores. Taking the
// scalar lets the key be loaded once, where rebuilding an *ecdh.PrivateKey
// first would cost a second scalar multiplication on every attempt.
//
// It guarantees on success: the bundle is a JSON object whose encappedPublic
// is hex of a 65-byte uncompressed P-256 point and whose ciphertext is hex
// of at least the 16-byte tag; it decrypts under target with the profile of
// [Seal]; the plaintext is a JSON object with a non-empty otp_code of at most
// [MaxOTPCodeLen] bytes and a public_key that is hex of a P-256 point in
// either encoding. The code is returned, not judged: comparing it (in
// constant time) and counting attempts is the caller's job.
//
// Failures: a malformed bundle or plaintext is 400 INVALID_INPUT (field
// encryptedOtpBundle, details.reason naming the check). A well-formed bundle
// whose tag does not verify under target is 401 UNAUTHORIZED with reason
// "encryptedOtpBundle was not sealed to this challenge's target key": it was
// sealed to another issuance's target or altered, and it should count as a
// failed attempt. A target that is not a valid P-256 scalar is 500
// INTERNAL_ERROR.
func OpenOTP(targetKey []byte, encryptedOtpBundle string) (OTPAttempt, error) {
	skR, err := recipientKey(targetKey)
	if err != nil {
		return OTPAttempt{}, err
	}
	enc, ct, err := parseClientMessage(encryptedOtpBundle)
	if err != nil {
		return OTPAttempt{}, err
	}
	pt, err := openWith(skR, enc.Bytes(), ct)
	if errors.Is(err, errNotSealedToKey) {
		return OTPAttempt{}, apierror.Unauthenticated(reasonOTPNotSealedToTarget)
	}
	if err != nil {
		return OTPAttempt{}, err
	}
	return parseOTPPayload(pt)
}

// reasonOTPNotSealedToTarget is details.reason of the 401 of [OpenOTP].
const reasonOTPNotSealedToTarget = "encryptedOtpBundle was not sealed to this challenge's target key"

// parseClientMessage checks the outer JSON of an encryptedOtpBundle.
func parseClientMessage(s string) (*ecdh.PublicKey, []byte, error) {
	const f = fieldEncryptedOTPBundle
	if s == "" {
		return nil, nil, invalid(f, f+" is required")
	}
	if len(s) > MaxEncryptedOTPBundleLen {
		return nil, nil, invalid(f, f+" exceeds "+strconv.Itoa(MaxEncryptedOTPBundleLen)+" bytes")
	}
	var msg clientMessage
	if !decodeObject([]byte(s), &msg) {
		return nil, nil, invalid(f, f+" is not a JSON object with string members encappedPublic and ciphertext")
	}
	if msg.EncappedPublic == "" {
		return nil, nil, invalid(f, "encappedPublic is required")
	}
	rawEnc, err := hex.DecodeString(msg.EncappedPublic)
	if err != nil {
		return nil, nil, invalid(f, "encappedPublic is not hex")
	}
	enc, problem := parseUncompressedPoint(rawEnc)
	if problem != "" {
		return nil, nil, invalid(f, "encappedPublic "+problem)
	}
	if msg.Ciphertext == "" {
		return nil, nil, invalid(f, "ciphertext is required")
	}
	ct, err := hex.DecodeString(msg.Ciphertext)
	if err != nil {
		return nil, nil, invalid(f, "ciphertext is not hex")
	}
	if len(ct) < tagLen {
		return nil, nil, invalid(f, "ciphertext is shorter than the 16-byte AES-GCM tag")
	}
	return enc, ct, nil
}

// parseOTPPayload checks the decrypted {"otp_code","public_key"} object.
func parseOTPPayload(pt []byte) (OTPAttempt, error) {
	const f = fieldEncryptedOTPBundle
	var p otpPayload
	if !decodeObject(pt, &p) {
		return OTPAttempt{}, invalid(f, "decrypted payload is not a JSON object with string members otp_code and public_key")
	}
	if p.OTPCode == "" {
		return OTPAttempt{}, invalid(f, "otp_code is required")
	}
	if len(p.OTPCode) > MaxOTPCodeLen {
		return OTPAttempt{}, invalid(f, "otp_code exceeds "+strconv.Itoa(MaxOTPCodeLen)+" bytes")
	}
	pub, raw, problem := parsePublicKeyHexRaw(p.PublicKey)
	if problem != "" {
		return OTPAttempt{}, invalid(f, "public_key "+problem)
	}
	// raw is a validated point, so its compressed form is its prefix's
	// parity and X, read off the bytes without encoding the point again.
	compressed := raw
	if len(raw) == uncompressedKeyLen {
		compressed = compressPoint(raw)
	}
	return OTPAttempt{Code: p.OTPCode, PublicKey: pub, PublicKeyHex: p.PublicKey,
		PublicKeyCompressedHex: hex.EncodeToString(compressed)}, nil
}

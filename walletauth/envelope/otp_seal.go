package envelope

import (
	"crypto/ecdh"
	"crypto/ecdsa"
	"encoding/hex"
	"io"
)

// SealOTP makes an encryptedOtpBundle as a browser client does with
// @turnkey/crypto's encryptOtpCodeToBundle: it HPKE-seals the JSON
// {"otp_code":otpCode,"public_key":publicKeyHex} (compact, members in that
// order) to target and returns the JSON string
// {"encappedPublic":hex(65 B),"ciphertext":hex}.
//
// The code and key are sealed exactly as given, without validation, so test
// suites can also send what a server must reject. The ephemeral key comes
// from rand (crypto/rand when nil). A nil or non-P-256 target, or a failing
// rand, is 500 INTERNAL_ERROR.
func SealOTP(target *ecdh.PublicKey, otpCode, publicKeyHex string, rand io.Reader) (string, error) {
	if target == nil || target.Curve() != ecdh.P256() {
		return "", internal("SealOTP needs a P-256 target key", nil)
	}
	pt, err := marshalCompact(otpPayload{OTPCode: otpCode, PublicKey: publicKeyHex})
	if err != nil {
		return "", internal("encoding the OTP payload", err)
	}
	enc, ct, err := seal(target, pt, rand)
	if err != nil {
		return "", err
	}
	out, err := marshalCompact(clientMessage{
		EncappedPublic: hex.EncodeToString(enc),
		Ciphertext:     hex.EncodeToString(ct),
	})
	if err != nil {
		return "", internal("encoding the encrypted OTP bundle", err)
	}
	return string(out), nil
}

// SealOTPForBundle checks an otpEncryptionTargetBundle with
// [ParseTargetBundle] (pinning trustedSigner when it is not nil) and seals
// the attempt to its target with [SealOTP]: the whole client step of OTP
// verification in one call. Errors are those of the two functions.
func SealOTPForBundle(targetBundle string, trustedSigner *ecdsa.PublicKey, otpCode, publicKeyHex string, rand io.Reader) (string, error) {
	tb, err := ParseTargetBundle(targetBundle, trustedSigner)
	if err != nil {
		return "", err
	}
	return SealOTP(tb.TargetPublic, otpCode, publicKeyHex, rand)
}

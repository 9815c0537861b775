package envelope

import (
	"encoding/hex"
	"errors"
	"strconv"
	"strings"

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
	pt, err := openWith(skR, enc, ct)
	switch {
	case errors.Is(err, errNotSealedToKey):
		return OTPAttempt{}, apierror.Unauthenticated(reasonOTPNotSealedToTarget)
	case err != nil:
		// The decapsulation parses enc with crypto/ecdh, which refuses a
		// point off the curve: that refusal is the client's, named here.
		if perr := encPointError(enc); perr != nil {
			return OTPAttempt{}, perr
		}
		return OTPAttempt{}, err
	}
	return parseOTPPayload(pt)
}

// reasonOTPNotSealedToTarget is details.reason of the 401 of [OpenOTP].
const reasonOTPNotSealedToTarget = "encryptedOtpBundle was not sealed to this challenge's target key"

// parseClientMessage checks the outer JSON of an encryptedOtpBundle and
// returns its members decoded: enc, 65 bytes, and the ciphertext, at least
// a tag long. Whether enc is a point on the curve is checked where it is
// parsed, by the decapsulation of [openWith] ([OpenOTP] names its
// refusal), and here only when the ciphertext is refused, so that a point
// off the curve is named first, as the members come.
func parseClientMessage(s string) (enc, ct []byte, err error) {
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
	// One buffer holds both members decoded.
	buf := make([]byte, hex.DecodedLen(len(msg.EncappedPublic))+hex.DecodedLen(len(msg.Ciphertext)))
	enc, ct = buf[:hex.DecodedLen(len(msg.EncappedPublic))], buf[hex.DecodedLen(len(msg.EncappedPublic)):]
	if _, err := hex.Decode(enc, []byte(msg.EncappedPublic)); err != nil {
		return nil, nil, invalid(f, "encappedPublic is not hex")
	}
	if len(enc) != uncompressedKeyLen {
		return nil, nil, invalid(f, "encappedPublic must be a 65-byte uncompressed P-256 point")
	}
	if err := checkCiphertext(msg.Ciphertext, ct); err != nil {
		if perr := encPointError(enc); perr != nil {
			return nil, nil, perr
		}
		return nil, nil, err
	}
	return enc, ct, nil
}

// checkCiphertext refuses the ciphertext member s, decoded into ct.
func checkCiphertext(s string, ct []byte) error {
	const f = fieldEncryptedOTPBundle
	if s == "" {
		return invalid(f, "ciphertext is required")
	}
	if _, err := hex.Decode(ct, []byte(s)); err != nil {
		return invalid(f, "ciphertext is not hex")
	}
	if len(ct) < tagLen {
		return invalid(f, "ciphertext is shorter than the 16-byte AES-GCM tag")
	}
	return nil
}

// encPointError refuses enc, 65 bytes, when it is not a P-256 point.
func encPointError(enc []byte) error {
	if _, problem := parseUncompressedPoint(enc); problem != "" {
		return invalid(fieldEncryptedOTPBundle, "encappedPublic "+problem)
	}
	return nil
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
	return OTPAttempt{Code: p.OTPCode, PublicKey: pub, PublicKeyHex: p.PublicKey,
		PublicKeyCompressedHex: compressedHexOf(raw, p.PublicKey)}, nil
}

// compressedHexOf is the compressed form of raw, a validated point decoded
// from s, in lowercase hex: s itself when it is that already, otherwise the
// prefix's parity and X read off the bytes, without encoding the point
// again.
func compressedHexOf(raw []byte, s string) string {
	if len(raw) == compressedKeyLen && !strings.ContainsAny(s, "ABCDEF") {
		return s
	}
	var c [compressedKeyLen]byte
	c[0] = 2 | raw[len(raw)-1]&1
	if len(raw) == compressedKeyLen {
		c[0] = raw[0]
	}
	copy(c[1:], raw[1:compressedKeyLen])
	return hex.EncodeToString(c[:])
}

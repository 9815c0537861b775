package envelope

import "crypto/ecdsa"

// Limits of [OpenOTP], in bytes.
const (
	// MaxEncryptedOTPBundleLen bounds the encryptedOtpBundle string. A real
	// bundle is about 330 bytes.
	MaxEncryptedOTPBundleLen = 4096
	// MaxOTPCodeLen bounds the decrypted otp_code.
	MaxOTPCodeLen = 64
)

// clientMessage is the client → server HPKE message ("ClientSendMsg"):
// both members are lowercase hex, encappedPublic of a 65-byte uncompressed
// point.
type clientMessage struct {
	EncappedPublic string `json:"encappedPublic"`
	Ciphertext     string `json:"ciphertext"`
}

// otpPayload is the plaintext of an encryptedOtpBundle, members in the order
// @turnkey/crypto writes them.
type otpPayload struct {
	OTPCode   string `json:"otp_code"`
	PublicKey string `json:"public_key"`
}

// OTPAttempt is a decrypted encryptedOtpBundle.
type OTPAttempt struct {
	// Code is otp_code exactly as sent (non-empty, at most MaxOTPCodeLen
	// bytes). Compare it in constant time.
	Code string
	// PublicKey is public_key parsed as a P-256 point: the key the client
	// will sign the second leg with and that becomes the session key.
	PublicKey *ecdsa.PublicKey
	// PublicKeyHex is public_key exactly as sent (66 or 130 hex characters).
	PublicKeyHex string
	// PublicKeyCompressedHex is the same key's compressed SEC 1 encoding
	// (02|03 || X) in 66 lowercase hex characters, whichever encoding was
	// sent: the form signedretry binds a key by (signedretry/stamper.CompressedHex
	// of PublicKey gives the same string).
	PublicKeyCompressedHex string
}

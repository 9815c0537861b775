// Package envelope holds the HPKE and signed-envelope wire formats of
// embedded-wallet authentication, both the server half (which walletauth
// calls) and the client half (which Go test suites use to talk to a server
// the way a browser does with @turnkey/crypto).
//
// # HPKE profile
//
// One suite everywhere: RFC 9180 base mode, DHKEM(P-256, HKDF-SHA256),
// HKDF-SHA256, AES-256-GCM, info = ASCII "turnkey_hpke", and the
// non-standard but mandatory AAD = encapsulated key (65-byte uncompressed) ||
// recipient public key (65-byte uncompressed). [Seal] and [Open] implement it
// on top of github.com/cloudflare/circl/hpke.
//
// # Formats
//
//   - otpEncryptionTargetBundle (server → client): [NewTargetBundle] makes it,
//     [ParseTargetBundle] checks it. A signed envelope
//     {"version":"v1.0.0","data":hex(D),"dataSignature":hex(DER),"enclaveQuorumPublic":hex(65 B)}
//     with D = {"targetPublic":hex(65 B),"organizationId":...,"userId":...}.
//   - encryptedOtpBundle (client → server): [SealOTP] (or [SealOTPForBundle])
//     makes it, [OpenOTP] opens it. {"encappedPublic":hex(65 B),"ciphertext":hex}
//     sealing {"otp_code":...,"public_key":...}.
//   - encryptedWalletCredentials (server → client, wallet export):
//     [NewExportBundle] makes it, [OpenExportBundle] opens it (the checks of
//     @turnkey/crypto's decryptExportBundle). The same signed envelope, by the
//     same signer, with D = {"encappedPublic":hex(65 B),"ciphertext":hex,"organizationId":...}
//     sealing the wallet's secret to the client's key.
//   - encryptedSessionSigningKey (server → client, OAUTH and PASSKEY legacy
//     flow): [SealSessionKey] makes it, [OpenSessionKey] opens it.
//     base58check(compressed encapsulated key (33 B) || ciphertext and tag of
//     the 32-byte session private scalar).
//
// # Randomness and determinism
//
// Every function that makes a key or an HPKE ephemeral key takes an
// io.Reader; nil means crypto/rand. Keys are drawn from it by rejection
// sampling 32-byte candidates and HPKE ephemeral keys by circl's
// DeriveKeyPair over a 32-byte seed read from it, so a deterministic reader
// gives byte-identical outputs. Envelope signatures are deterministic
// (RFC 6979) and need no randomness at all.
//
// # Errors
//
// Every failure is an *apierror.Error. Input that does not have the format's
// shape (not JSON, bad hex, wrong lengths, points not on the curve, missing
// fields, oversized values, a decrypted payload that is not what the format
// says) is 400 INVALID_INPUT whose details.errors names the wire field and
// whose details.reason names the failed check. Input that is well formed but
// fails a cryptographic check is 401 UNAUTHORIZED (apierror.Unauthenticated)
// with details.reason:
//
//   - a ciphertext whose AEAD tag does not verify under the recipient's key.
//     The bundle was sealed to another key (for an OTP, most often the target
//     of a superseded challenge) or altered on the way. The encoding is right,
//     so 400 would tell the client to fix something that is not broken; what
//     failed is that the attempt does not authenticate against the live
//     challenge, so callers count it as a failed attempt like a wrong code;
//   - a target or export bundle whose signature does not verify or whose
//     signer is not the trusted one, or an export bundle sealed to another
//     client key.
//
// A nil key or a failing randomness source is a programming or platform fault
// and is 500 INTERNAL_ERROR. No function panics on any input.
package envelope

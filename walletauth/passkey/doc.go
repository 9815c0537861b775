// Package passkey is the WebAuthn (PASSKEY) protocol of embedded-wallet
// authentication, built on github.com/go-webauthn/webauthn.
//
// A [Verifier] is made from one relying-party configuration ([RelyingParty]):
// the RP id, the web origins and the Android and iOS apps allowed to use
// passkeys of that RP id. From the same configuration it generates the
// association files a platform publishes under /.well-known/ ([Verifier.Handler]).
//
// Registration is two calls. [Verifier.IssueRegistrationChallenge] stores a
// single-use, expiring challenge for an account in the caller's transaction;
// [Verifier.VerifyRegistration] consumes it and verifies the browser's
// attestation (every attestation format go-webauthn supports, "none"
// included), returning the credential record to store. A registration that
// a later transaction completes (after a signed retry) checks with
// [Verifier.CheckRegistration] and consumes with
// [Verifier.ConsumeRegistration], which takes the caller's clock and
// decides the challenge's expiry on a reading taken after the
// consumption's lock was granted.
//
// Authentication binds a session key to the ceremony: the WebAuthn challenge is
// the lowercase hex SHA-256 of a payload naming the client public key, the
// credential and the request id ([Verifier.AssertionChallenge]), and the browser
// signs the UTF-8 bytes of that hex string. [Verifier.VerifyAssertion] checks
// the assertion against the stored credential and returns the record with its
// sign counter and flags advanced; the caller stores it in the transaction that
// creates the session. The pending request that remembers the challenge is the
// caller's.
//
// Every failure a client can act on is an *apierror.Error: 400 INVALID_INPUT
// naming the malformed field, 400 PASSKEY_CREDENTIAL_ALREADY_EXISTS, or
// 401 UNAUTHORIZED whose details.reason is one of the Reason constants.
package passkey

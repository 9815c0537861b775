// Package authclient is what a client of the embedded-wallet auth API links:
// the P-256 key it holds ([ClientKey]: it seals one-time codes, opens sealed
// session keys and stamps signed retries), the bodies of the requests it
// sends and of the answers it reads ([AddCredentialRequest], [AuthSession],
// [ChallengeResponse], [WalletExport], ...), the parameters and operation
// types the payloads of its signed retries carry ([AddParams],
// [OpRefreshSession], ...), and the passkey members and rules a client
// computes before the service checks them ([Attestation], [Assertion],
// [ClientDataChallenge], [NormalizeNickname]).
//
// A client checks every payloadToSign before it stamps it, with
// signedretry/stamper's Expectation built from the operation types and
// parameters here; [ClientKey.Stamp] signs whatever it is given.
//
// The package imports the standard library, golang.org/x/crypto, HPKE
// (github.com/cloudflare/circl, through walletauth/envelope) and this
// module's error, id and wire packages (apierror, storage,
// signedretry/stamper, walletauth/envelope), and none of the service's
// machinery: no store backend, no telemetry, no WebAuthn, TPM or OpenID
// Connect verification. Package walletauth, the service, uses these
// definitions: its names for the wire types are aliases of the ones here.
package authclient

// Package stamper is the client's half of the signed retry of package
// signedretry: what a client reads in a 202 challenge, what it checks before
// it signs, and the stamp and headers it sends back.
//
// A sensitive call answers its first leg 202 with a [Challenge]. The client
// checks that the challenge's payloadToSign is the operation it started
// ([Expectation.Check]: the operation type of the route, the account, the
// [BodyDigest] of the body sent, every parameter, an expiry still ahead),
// signs it byte for byte with its session key ([NewStamp], or both steps in
// one with [Expectation.Stamp]) and repeats the same request with the stamp
// in [HeaderSignature] and the payload's requestId in [HeaderRequestID].
//
// A stamp authorizes whatever operation the payload names, whoever relayed
// the challenge: a client that stamps the payload it is handed lets a relay
// (a proxy, a compromised backend, a man in the middle) answer one call
// with the challenge of another operation and use the stamp there, say
// answer a session refresh with the wallet export of the relay's own key.
// [Expectation.Stamp] stamps nothing it has not checked.
//
// The package is what a client links: it imports the standard library and
// the error and id types of this module (apierror, storage), and no server
// machinery (no store backend, no telemetry, no WebAuthn or OpenID Connect
// verification). Its errors are *apierror.Error values.
// The server side, which issues challenges, parses stamps and verifies
// them, is package signedretry; both use the one definition of the wire
// forms here.
package stamper

// Package signedretry authorizes sensitive requests with a session key, in two
// legs.
//
// The first call of an operation (revoke a credential, export a wallet, ...)
// does nothing but answer 202 with a challenge:
//
//	{"payloadToSign": "{\"type\":\"REVOKE_CREDENTIAL\",...}", "requestId": "Request:<uuid>", "expiresAt": "..."}
//
// The client signs payloadToSign byte for byte with its session key and
// repeats the same request with two headers: Service-Wallet-Signature (the
// stamp: base64url JSON of the public key, the scheme and a DER ECDSA P-256
// signature, as @turnkey/api-key-stamper makes it) and Request-Id. The retry
// is accepted once, before expiresAt, when:
//
//   - its method, path and operation are those the challenge was issued for;
//   - its body is the first call's body as a JSON value (key order and
//     whitespace may differ; any changed value is a mismatch);
//   - the stamp verifies over the stored payload;
//   - the key is allowed to sign under the operation's [Rule], checked
//     against the sessions in storage when the retry arrives.
//
// [Run] runs an operation written as its two legs ([Steps]): on the first
// call, what it binds, in the transaction that issues the challenge; on the
// retry, what it does. The retry's steps get the parameters the first call
// stored, decoded strictly into the operation's own type, never values read
// again from the retry: a signed retry executes exactly the parameters the
// user signed. The lock step hands what it read to the effect, and the
// effect's result is what Run returns, so no step keeps state in Go
// variables across the store's reruns of a transaction.
// The retry consumes the request, checks the signer and runs the
// operation's effect in one store transaction: either all of it happens or
// none does, and a failed retry leaves the request usable. The signing
// session and its credential are checked under row locks held to the commit
// (after the operation's account, in the store's lock order), so a revoke of
// either commits before the check, and the retry is refused, or waits for
// the operation: an operation never commits after its signer's revoke.
// Expiry is judged after those locks: the request's expiresAt and the signing
// session's expiry are compared with a time read from the manager's clock
// once the request's consumption and the signer's locks are granted, and read
// again whenever the store runs the transaction again. A retry that waited
// for a lock past either expiry (behind a revoke that then rolled back, say)
// is refused as expired, and the effect receives the time of the decision as
// [Authorization].Now.
// A host that writes its own rows with the operation (a debit, an audit row
// naming the signer) runs both legs inside its own database transaction: on
// PostgreSQL it binds the transaction to the context (Store.WithTx of
// storage/postgres) and the effect reaches it with postgres.HostTx; the read
// of the retry's request and its consumption then run in that transaction,
// and nothing commits until the host commits. See the storage/postgres
// documentation for the pattern, the same for every operation.
// An account holds at most [Config].MaxPending live challenges; a first leg
// beyond it is 429 RATE_LIMITED with Retry-After. The challenge of a login
// by one-time code ([BoundKey]), which only a caller who proved the code can
// create, is kept apart, among the account's MaxPending newest of its
// kind, so first legs of other operations never lock the owner out of a
// login. Failures are the 401s of the service:
// WALLET_SIGNATURE_MISSING, REQUEST_ID_MISSING, WALLET_SIGNATURE_MALFORMED,
// WALLET_SIGNATURE_BODY_MISMATCH, WALLET_SIGNATURE_INVALID, and UNAUTHORIZED
// with details.reason for a Request-Id that is unknown, expired, already used
// or bound to another operation.
//
// A client must not stamp whatever payload it is handed: a stamp authorizes
// the operation the payload names, so whoever relays the challenge could
// answer one call with the challenge of another (a session refresh answered
// with the wallet export of the relay's own key). The client's half of the
// protocol is package signedretry/stamper, which links none of this
// package's server machinery: [stamper.Expectation] is the client's check
// before stamping ([stamper.ParsePayload] reads the payload strictly, and
// [stamper.Expectation.Check] requires the operation type of the route
// called, the account, the digest of the body sent, exactly the parameters
// expected and an expiry still ahead; [stamper.Expectation.Stamp] stamps
// only then), [stamper.NewStamp] makes the stamp, and the wire forms both
// halves use are defined there once: the [Challenge], the header names
// [stamper.HeaderSignature] and [stamper.HeaderRequestID], and the body
// digest [stamper.BodyDigest], over the canonical form of
// [apierror.Canonicalize].
//
// The stamp's parsing and verification ([ParseStamp], [Stamp.Verify]) are
// usable on their own; http.go has the few lines a net/http route needs
// ([RequestFrom], [WriteAnswer]).
package signedretry

// Package webhooksig is the signature of walletgate's webhooks: a [Signer]
// for the sender and a [Verifier] for the receiver. It imports nothing of
// the storage tree, so a receiver verifies a delivery with this package
// alone; storage/webhook sends outbox events with a Signer from here.
//
// # Wire format
//
// A delivery is an HTTP POST whose body is exactly the outbox event's JSON
// envelope
//
//	{"id": "Webhook:<uuid>", "type": "EXTERNAL_ACCOUNT.STATUS_UPDATED", "timestamp": "<RFC 3339>", "data": {...}}
//
// with Content-Type application/json and two headers:
//
//   - X-Grid-Signature: the JSON object {"version":1,"signature":"<sig>"},
//     where <sig> is standard base64 (padded) of the ASN.1 DER ECDSA P-256
//     signature over SHA-256 of the raw body bytes. The receiver verifies it
//     with the sender's public key, distributed as an SPKI PEM
//     ("-----BEGIN PUBLIC KEY-----"). This is the real service's format.
//   - X-Grid-Webhook-Id: the envelope's id, repeated so that a receiver can
//     deduplicate before it reads the body. Our addition: the reference
//     names no such header. It is not signed, so [Verifier] checks that it
//     equals the signed id when present and accepts its absence (the real
//     service does not send it).
//
// # Decisions where the reference is silent
//
// The signature header is read strictly, so that one header value means one
// thing: the JSON must pass [apierror.DecodeBytes] (valid UTF-8, no duplicate
// or case-colliding member names), hold exactly the members "version" and
// "signature" (an unknown member is refused: a future version would change
// "version"), version must be the JSON number 1 (1.0 and 1e0 are the same
// number, as DecodeBytes reads numbers), and signature a string in
// padded standard base64 that re-encodes to itself (no line breaks, no
// non-zero padding bits). The DER must be exactly SEQUENCE { INTEGER r,
// INTEGER s } with minimal lengths and integers, nothing after it, 1 <= r,s
// < n; it is re-marshalled and compared byte for byte, so only one encoding
// of a given (r, s) is accepted. High-S signatures ((r, n-s) beside (r, s))
// are accepted: the real service signs with Java's SHA256withECDSA and
// WebCrypto, neither of which normalizes S, so refusing high S would refuse
// about half of genuine deliveries. The malleability this leaves is
// harmless here because a signature is never an identifier: receivers
// deduplicate by the signed envelope id, and a second valid signature over
// the same body delivers the same event.
//
// The envelope is decoded with [apierror.DecodeBytes] (duplicates and
// case-colliding names refused); id must be "Webhook:" followed by a UUID,
// type a non-empty string, timestamp RFC 3339, data a JSON object. Unknown
// envelope members are ignored: the service adds fields without a version
// change and receivers must tolerate them. The signature is checked before
// the envelope is decoded, so unauthenticated JSON is never parsed beyond
// the header.
//
// Freshness bounds replays: the envelope's timestamp must be at most
// FreshnessWindow old (default 72 hours) and at most MaxClockSkew (5
// minutes) ahead of the receiver's clock. The timestamp is the event's time,
// not the send time, and a retried delivery carries the same body, so the
// default window is as long as storage/relay tries an event: a delivery
// retried after a receiver outage still verifies. Within the window a
// captured delivery can be replayed; receivers keep the ids they processed
// at least as long as the window and answer a repeated id without acting on
// it again (409 or 2xx). A receiver with a narrower window refuses late
// retries for good (a re-driven parked event, for one).
//
// # Interop vectors
//
// testdata/webcrypto/generate.mjs signs sample bodies with Node's WebCrypto
// and verifies the bodies the Go [Signer] signed; regenerate with
//
//	WALLETGATE_WRITE_VECTORS=1 go test -run TestWriteGoSignedVectors ./apierror/webhooksig/
//	node apierror/webhooksig/testdata/webcrypto/generate.mjs
//	go test ./apierror/webhooksig
package webhooksig

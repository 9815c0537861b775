// Package webhook sends outbox events ([storage.Event]) as signed webhooks,
// the way the real service sends them, and verifies them on receipt.
//
// # Wire format
//
// A delivery is an HTTP POST whose body is exactly Event.Payload, the JSON
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
// A [Publisher] treats 2xx and 409 as delivered (the reference lets a
// receiver answer 409 for an id it has already processed), everything else
// (including 3xx: redirects are not followed, so a signed body never goes to
// a host the sender did not name) as a [*DeliveryError] carrying the status.
// It never retries: retries and backoff belong to the relay that calls it.
//
// # Interop vectors
//
// testdata/webcrypto/generate.mjs signs sample bodies with Node's WebCrypto
// and verifies the bodies the Go [Signer] signed; regenerate with
//
//	WALLETGATE_WRITE_VECTORS=1 go test -run TestWriteGoSignedVectors ./storage/webhook/
//	node storage/webhook/testdata/webcrypto/generate.mjs
//	go test ./storage/webhook/
//
// # Telemetry
//
// A [Publisher] given the providers of [PublisherConfig] records, under the
// instrumentation scope "github.com/walletgate/walletgate/storage/webhook",
// for each delivery ([Publisher.Send], and so [Publisher.Publish]):
//
//   - a client span "webhook.deliver" with http.request.method (POST),
//     server.address and server.port of the receiver,
//     http.response.status_code, walletgate.event.type, and on failure
//     error.type (the status code, a transport failure such as timeout or
//     net.dial, or not_sent when the event or its route was refused before
//     sending) with status Error;
//   - walletgate.webhook.deliveries, a counter by walletgate.outcome (ok for
//     2xx and 409, error otherwise), http.response.status_code,
//     walletgate.event.type and error.type;
//   - walletgate.webhook.delivery.duration, a histogram in seconds with the
//     same attributes;
//   - a Debug record for each delivery refused or unanswered, an Error
//     record for an event refused before sending.
//
// The body, the signature header, the response body and the URL's path and
// query (which may carry a credential) are never recorded, and the errors a
// Publisher returns do not quote the URL either.
package webhook

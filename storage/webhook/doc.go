// Package webhook sends outbox events ([storage.Event]) as signed webhooks,
// the way the real service sends them: a [Publisher] for storage/relay. The
// wire format, the [webhooksig.Signer] it signs with and the
// [webhooksig.Verifier] a receiver checks deliveries with live in
// apierror/webhooksig, which a receiver imports without the storage tree.
//
// A delivery is an HTTP POST whose body is exactly Event.Payload, with
// Content-Type application/json, the signature in X-Grid-Signature
// ([webhooksig.SignatureHeader]) and the envelope's id in X-Grid-Webhook-Id
// ([webhooksig.IDHeader]).
//
// A [Publisher] treats 2xx and 409 as delivered (the reference lets a
// receiver answer 409 for an id it has already processed), everything else
// (including 3xx: redirects are not followed, so a signed body never goes to
// a host the sender did not name) as a [*DeliveryError] carrying the status.
// It never retries: retries and backoff belong to the relay that calls it.
//
// # Telemetry
//
// A [Publisher] given [PublisherConfig.Telemetry] records, under the
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

package webhook_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/walletgate/walletgate/apierror/webhooksig"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/webhook"
)

// A Publisher delivers an outbox event to a receiver that verifies it with
// Verifier.Verify; a receiver's failure comes back as a *DeliveryError for
// the relay to log and retry.
func ExamplePublisher_Publish() {
	signer, _ := webhooksig.NewSigner(exampleKey())
	verifier, _ := webhooksig.NewVerifierPEM(signer.PublicKeyPEM(), webhooksig.VerifierConfig{
		Clock: func() time.Time { return time.Date(2026, 11, 23, 12, 0, 3, 0, time.UTC) },
	})
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d, err := verifier.Verify(r)
		var ve *webhooksig.VerifyError
		if errors.As(err, &ve) {
			http.Error(w, string(ve.Reason), ve.Status())
			return
		}
		fmt.Println("received", d.ID, d.Timestamp.Format(time.RFC3339), string(d.Data))
	}))
	defer receiver.Close()

	pub, _ := webhook.NewPublisher(webhook.PublisherConfig{Target: receiver.URL, Signer: signer, Client: &http.Client{Timeout: 5 * time.Second}})
	e := storage.Event{
		ID:      "Webhook:0b5c6f4e-2d3a-4f1b-9c8d-7e6f5a4b3c2d",
		Type:    "EXTERNAL_ACCOUNT.STATUS_UPDATED",
		Payload: []byte(`{"id":"Webhook:0b5c6f4e-2d3a-4f1b-9c8d-7e6f5a4b3c2d","type":"EXTERNAL_ACCOUNT.STATUS_UPDATED","timestamp":"2026-11-23T12:00:00Z","data":{"status":"ACTIVE"}}`),
	}
	fmt.Println("publish:", pub.Publish(context.Background(), e))

	// An event older than the receiver's freshness window.
	e.Payload = []byte(`{"id":"Webhook:0b5c6f4e-2d3a-4f1b-9c8d-7e6f5a4b3c2d","type":"EXTERNAL_ACCOUNT.STATUS_UPDATED","timestamp":"2026-11-19T12:00:00Z","data":{"status":"ACTIVE"}}`)
	err := pub.Publish(context.Background(), e)
	var de *webhook.DeliveryError
	if errors.As(err, &de) {
		fmt.Println("publish:", de.Status, de.Body)
	}
	// Output:
	// received Webhook:0b5c6f4e-2d3a-4f1b-9c8d-7e6f5a4b3c2d 2026-11-23T12:00:00Z {"status":"ACTIVE"}
	// publish: <nil>
	// publish: 400 timestamp outside freshness window
}

// exampleKey is the fixed key of the examples (never use a fixed key).
func exampleKey() *ecdsa.PrivateKey {
	d, _ := hex.DecodeString("c9afa9d845ba75166b5c215767b1d6934e50c3db36e89b127b8a622b120f6721")
	k, _ := ecdsa.ParseRawPrivateKey(elliptic.P256(), d)
	return k
}

package webhook_test

import (
	"testing"

	"github.com/walletgate/walletgate/apierror/webhooksig"
	"github.com/walletgate/walletgate/storage"
)

// TestVerifierIDRuleIsStorages checks that a receiver accepts exactly the
// envelope ids the store writes: the verifier, which does not import
// storage, restates storage.ValidID for the "Webhook" prefix, and the two
// must not drift apart.
func TestVerifierIDRuleIsStorages(t *testing.T) {
	v := testVerifier(t, webhooksig.VerifierConfig{})
	for _, id := range []string{
		testID,
		"Webhook:0B5C6F4E-2D3A-4F1B-9C8D-7E6F5A4B3C2D",
		"Webhook:0b5c6f4e-2d3a-4f1b-9c8d-7e6f5a4b3c2",
		"Webhook:0b5c6f4e-2d3a-4f1b-9c8d-7e6f5a4b3c2dd",
		"Webhook:0b5c6f4e2d3a-4f1b-9c8d-7e6f5a4b3c2d-",
		"Webhook:0b5c6f4e-2d3a-4f1b-9c8d-7e6f5a4b3c2g",
		"Webhook:",
		"webhook:0b5c6f4e-2d3a-4f1b-9c8d-7e6f5a4b3c2d",
		"Event:0b5c6f4e-2d3a-4f1b-9c8d-7e6f5a4b3c2d",
		"0b5c6f4e-2d3a-4f1b-9c8d-7e6f5a4b3c2d",
	} {
		body := []byte(`{"id":"` + id + `","type":"EXTERNAL_ACCOUNT.STATUS_UPDATED","timestamp":"2026-11-23T12:00:00Z","data":{}}`)
		_, err := v.VerifyBytes(sign(t, body), body, t0)
		if got, want := err == nil, storage.ValidID(id, "Webhook"); got != want {
			t.Errorf("id %q: verifier accepts %v (err %v), storage.ValidID says %v", id, got, err, want)
		}
	}
}

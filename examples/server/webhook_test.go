package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/walletgate/walletgate/apierror/webhooksig"
	"github.com/walletgate/walletgate/sandbox"
)

// TestWebhookFlags: -webhook-url sends the sandbox's webhooks to a
// receiver, which verifies them with the key -webhook-public-key wrote.
func TestWebhookFlags(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "sender.pem")
	var mu sync.Mutex
	var got []webhooksig.Delivery
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pem, err := os.ReadFile(keyFile)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		v, err := webhooksig.NewVerifierPEM(pem, webhooksig.VerifierConfig{})
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		d, err := v.Verify(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		mu.Lock()
		got = append(got, d)
		mu.Unlock()
	}))
	defer recv.Close()

	base := serve(t, "-webhook-url", recv.URL, "-webhook-public-key", keyFile)
	req, _ := http.NewRequest("POST", base+"/sandbox/webhooks/test", nil)
	req.SetBasicAuth(sandbox.DefaultClientID, sandbox.DefaultClientSecret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var res sandbox.WebhookTestResult
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil || resp.StatusCode != 200 || res.ResponseStatus != 200 {
		t.Fatalf("test webhook: %d %+v %v", resp.StatusCode, res, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || got[0].Type != sandbox.EventTest {
		t.Fatalf("the receiver verified %+v", got)
	}
}

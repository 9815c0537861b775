package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/walletgate/walletgate/apierror/webhooksig"
)

func TestHandler(t *testing.T) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	s, _ := webhooksig.NewSigner(key)
	v, err := webhooksig.NewVerifierPEM(s.PublicKeyPEM(), webhooksig.VerifierConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	h := handler(v, &out)
	body := []byte(`{"id":"Webhook:0b5c6f4e-2d3a-4f1b-9c8d-7e6f5a4b3c2d","type":"EXTERNAL_ACCOUNT.STATUS_UPDATED","timestamp":"` +
		time.Now().UTC().Format(time.RFC3339) + `","data":{"status":"ACTIVE"}}`)
	sig, _ := s.Sign(body)
	post := func(sig string) int {
		r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
		r.Header.Set(webhooksig.SignatureHeader, sig)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	if c := post(sig); c != 200 || !strings.HasPrefix(out.String(), "Webhook:0b5c6f4e-2d3a-4f1b-9c8d-7e6f5a4b3c2d EXTERNAL_ACCOUNT.STATUS_UPDATED ") ||
		!strings.HasSuffix(out.String(), ` {"status":"ACTIVE"}`+"\n") {
		t.Fatalf("status %d, printed %q", c, out.String())
	}
	if c := post(sig); c != 409 {
		t.Fatalf("duplicate: status %d", c)
	}
	if c := post(""); c != 401 {
		t.Fatalf("unsigned: status %d", c)
	}
	if c := post(`{"version":2,"signature":""}`); c != 400 {
		t.Fatalf("version 2: status %d", c)
	}
}

package webhooksig_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/walletgate/walletgate/apierror/webhooksig"
)

// The sender signs a body; the receiver, configured with the sender's
// public key, verifies it and refuses it once the body is changed.
func Example() {
	signer, _ := webhooksig.NewSigner(exampleKey())
	body := []byte(`{"id":"Webhook:0b5c6f4e-2d3a-4f1b-9c8d-7e6f5a4b3c2d","type":"EXTERNAL_ACCOUNT.STATUS_UPDATED","timestamp":"2026-11-23T12:00:00Z","data":{"status":"ACTIVE"}}`)
	header, _ := signer.Sign(body)

	verifier, _ := webhooksig.NewVerifierPEM(signer.PublicKeyPEM(), webhooksig.VerifierConfig{})
	now := time.Date(2026, 11, 23, 12, 1, 0, 0, time.UTC)
	d, err := verifier.VerifyBytes(header, body, now)
	fmt.Println(d.ID, d.Type, string(d.Data), err)

	body[len(body)-4] = 'X'
	_, err = verifier.VerifyBytes(header, body, now)
	var ve *webhooksig.VerifyError
	errors.As(err, &ve)
	fmt.Println(ve.Status(), ve.Reason)
	// Output:
	// Webhook:0b5c6f4e-2d3a-4f1b-9c8d-7e6f5a4b3c2d EXTERNAL_ACCOUNT.STATUS_UPDATED {"status":"ACTIVE"} <nil>
	// 401 signature invalid
}

// A receiver configures the sender's key in this form.
func ExampleSigner_PublicKeyPEM() {
	signer, _ := webhooksig.NewSigner(exampleKey())
	fmt.Print(string(signer.PublicKeyPEM()))
	// Output:
	// -----BEGIN PUBLIC KEY-----
	// MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEYP7UuiVanTHJYet0xjVtaMBJuJI7
	// Yfps5mliLmDyn7Z5A/4QCLi8maQa6elWKLxk8vGyDC1+n1F3o8KU1EYimQ==
	// -----END PUBLIC KEY-----
}

// exampleKey is the fixed key of the examples (never use a fixed key).
func exampleKey() *ecdsa.PrivateKey {
	d, _ := hex.DecodeString("c9afa9d845ba75166b5c215767b1d6934e50c3db36e89b127b8a622b120f6721")
	k, _ := ecdsa.ParseRawPrivateKey(elliptic.P256(), d)
	return k
}

package webhook_test

import (
	"testing"
	"time"

	"github.com/walletgate/walletgate/apierror/webhooksig"
)

// t0 is the time every test envelope carries and the verifiers' clock.
var t0 = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

const testID = "Webhook:0b5c6f4e-2d3a-4f1b-9c8d-7e6f5a4b3c2d"

var testBody = []byte(`{"id":"` + testID + `","type":"EXTERNAL_ACCOUNT.STATUS_UPDATED","timestamp":"2026-11-23T12:00:00Z","data":{"id":"ExternalAccount:1","status":"ACTIVE","amount":1.50}}`)

func testSigner(tb testing.TB) *webhooksig.Signer {
	tb.Helper()
	s, err := webhooksig.NewSigner(exampleKey())
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

func testVerifier(tb testing.TB, cfg webhooksig.VerifierConfig) *webhooksig.Verifier {
	tb.Helper()
	if cfg.Clock == nil {
		cfg.Clock = func() time.Time { return t0 }
	}
	v, err := webhooksig.NewVerifierPEM(testSigner(tb).PublicKeyPEM(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return v
}

func sign(tb testing.TB, body []byte) string {
	tb.Helper()
	h, err := testSigner(tb).Sign(body)
	if err != nil {
		tb.Fatal(err)
	}
	return h
}

package signedretry_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/signedretry/stamper"
)

// expectation is what the client of fixture.issue knows: it called the
// ADD_CREDENTIAL route of f.account with body, expecting those parameters.
func (f *fixture) expectation() stamper.Expectation {
	return stamper.Expectation{Type: "ADD_CREDENTIAL", AccountID: f.account, Body: []byte(body),
		Parameters: map[string]string{"credentialType": "PASSKEY"}, Now: f.clock.Now()}
}

// wantRefused fails unless err is the 401 UNAUTHORIZED of a payload that
// failed check.
func wantRefused(t *testing.T, err error, check string) {
	t.Helper()
	e := apierrortest.Want(t, err, apierror.Unauthorized, "")
	if e.Status() != 401 || e.Details["check"] != check || e.Reason() == "" || !strings.Contains(e.Message, check) {
		t.Fatalf("error %v (details %v), want the %q check to fail", err, e.Details, check)
	}
}

func TestExpectationAcceptsTheIssuedPayload(t *testing.T) {
	ctx := t.Context()
	f := newFixture(t, false)
	c := f.issue(t, signedretry.Signer{Rule: signedretry.AnySession})
	want := f.expectation()
	// The same JSON value in another spelling is the same parameters, and
	// the body as sent is compared by its canonical digest.
	for _, params := range []any{want.Parameters, json.RawMessage(` { "credentialType" : "PASS\u004bEY" } `), []byte(`{"credentialType":"PASSKEY"}`)} {
		want.Parameters = params
		p, err := want.Check(c.PayloadToSign)
		if err != nil {
			t.Fatalf("parameters %s: %v", params, err)
		}
		if p.RequestID != c.RequestID || p.Type != "ADD_CREDENTIAL" || p.AccountID != f.account || !p.ExpiresAt.Equal(c.ExpiresAt) ||
			!p.Timestamp.Equal(f.clock.Now()) || string(p.Parameters) != `{"credentialType":"PASSKEY"}` {
			t.Fatalf("payload %+v", p)
		}
	}
	// Stamp checks and stamps; the stamp completes the retry.
	sig, p, err := f.expectation().Stamp(f.keyA, c.PayloadToSign)
	if err != nil || p.RequestID != c.RequestID {
		t.Fatalf("Stamp: %v, %+v", err, p)
	}
	if _, err := f.mgr.Complete(ctx, retry(c, sig), opType, nil); err != nil {
		t.Fatalf("the checked stamp does not complete the retry: %v", err)
	}
}

// TestExpectationRefusals: each check refuses a payload that differs from
// the expectation in its one member, and Stamp stamps nothing then.
func TestExpectationRefusals(t *testing.T) {
	f := newFixture(t, false)
	c := f.issue(t, signedretry.Signer{Rule: signedretry.AnySession})
	for _, tc := range []struct {
		check string
		edit  func(*stamper.Expectation)
	}{
		{"type", func(e *stamper.Expectation) { e.Type = "REFRESH_SESSION" }},
		{"accountId", func(e *stamper.Expectation) { e.AccountID = newID(t, "InternalAccount") }},
		{"bodySha256", func(e *stamper.Expectation) { e.Body = []byte(strings.Replace(body, "laptop", "phone", 1)) }},
		{"bodySha256", func(e *stamper.Expectation) { e.Body = nil }},
		{"parameters", func(e *stamper.Expectation) { e.Parameters = map[string]string{"credentialType": "OAUTH"} }},
		{"parameters", func(e *stamper.Expectation) { e.Parameters = map[string]any{} }},
		{"parameters", func(e *stamper.Expectation) { e.Parameters = nil }},
		{"parameters", func(e *stamper.Expectation) {
			e.Parameters = map[string]string{"credentialType": "PASSKEY", "clientPublicKey": "02ab"}
		}},
		{"expiresAt", func(e *stamper.Expectation) { e.Now = c.ExpiresAt }},
		{"expiresAt", func(e *stamper.Expectation) { e.Now = c.ExpiresAt.Add(time.Hour) }},
	} {
		want := f.expectation()
		tc.edit(&want)
		_, err := want.Check(c.PayloadToSign)
		wantRefused(t, err, tc.check)
		if sig, p, err := want.Stamp(f.keyA, c.PayloadToSign); sig != "" || p != nil || err == nil {
			t.Fatalf("%s: Stamp stamped a refused payload", tc.check)
		}
	}
	// A payload with a member more in its parameters than expected.
	extra := strings.Replace(c.PayloadToSign, `{"credentialType":"PASSKEY"}`, `{"credentialType":"PASSKEY","clientPublicKey":"02ab"}`, 1)
	_, err := f.expectation().Check(extra)
	wantRefused(t, err, "parameters")
}

// TestExpectationCallerMistakes: an expectation that cannot be compared is
// an error, never an acceptance.
func TestExpectationCallerMistakes(t *testing.T) {
	f := newFixture(t, false)
	c := f.issue(t, signedretry.Signer{Rule: signedretry.AnySession})
	for name, edit := range map[string]func(*stamper.Expectation){
		"Expectation":            func(e *stamper.Expectation) { e.Type = "" },
		"Expectation ":           func(e *stamper.Expectation) { e.AccountID = "" },
		"Expectation.Body":       func(e *stamper.Expectation) { e.Body = []byte(`{"a":`) },
		"Expectation.Parameters": func(e *stamper.Expectation) { e.Parameters = []string{"credentialType"} },
	} {
		want := f.expectation()
		edit(&want)
		_, err := want.Check(c.PayloadToSign)
		e := apierrortest.Want(t, err, apierror.InvalidInput, "")
		if e.Details["field"] != strings.TrimSpace(name) {
			t.Errorf("%s: %v, want the field named", name, err)
		}
	}
	for _, bad := range []any{json.RawMessage(`[]`), json.RawMessage(`{"a":1,"a":2}`), make(chan int)} {
		want := f.expectation()
		want.Parameters = bad
		_, err := want.Check(c.PayloadToSign)
		apierrortest.Want(t, err, apierror.InvalidInput, "")
	}
}

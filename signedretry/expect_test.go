package signedretry_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/signedretry"
)

// expectation is what the client of fixture.issue knows: it called the
// ADD_CREDENTIAL route of f.account with body, expecting those parameters.
func (f *fixture) expectation() signedretry.Expectation {
	return signedretry.Expectation{Type: "ADD_CREDENTIAL", AccountID: f.account, Body: []byte(body),
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

// wantMalformed fails unless err is the 400 INVALID_INPUT of ParsePayload
// whose reason contains reason.
func wantMalformed(t *testing.T, err error, reason string) {
	t.Helper()
	e := apierrortest.Want(t, err, apierror.InvalidInput, "")
	if e.Status() != 400 || !strings.Contains(e.Reason(), reason) || !strings.HasPrefix(e.Reason(), "payloadToSign ") {
		t.Fatalf("error %v (reason %q), want reason %q", err, e.Reason(), reason)
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
		edit  func(*signedretry.Expectation)
	}{
		{"type", func(e *signedretry.Expectation) { e.Type = "REFRESH_SESSION" }},
		{"accountId", func(e *signedretry.Expectation) { e.AccountID = newID(t, "InternalAccount") }},
		{"bodySha256", func(e *signedretry.Expectation) { e.Body = []byte(strings.Replace(body, "laptop", "phone", 1)) }},
		{"bodySha256", func(e *signedretry.Expectation) { e.Body = nil }},
		{"parameters", func(e *signedretry.Expectation) { e.Parameters = map[string]string{"credentialType": "OAUTH"} }},
		{"parameters", func(e *signedretry.Expectation) { e.Parameters = map[string]any{} }},
		{"parameters", func(e *signedretry.Expectation) { e.Parameters = nil }},
		{"parameters", func(e *signedretry.Expectation) {
			e.Parameters = map[string]string{"credentialType": "PASSKEY", "clientPublicKey": "02ab"}
		}},
		{"expiresAt", func(e *signedretry.Expectation) { e.Now = c.ExpiresAt }},
		{"expiresAt", func(e *signedretry.Expectation) { e.Now = c.ExpiresAt.Add(time.Hour) }},
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
	for name, edit := range map[string]func(*signedretry.Expectation){
		"Expectation":            func(e *signedretry.Expectation) { e.Type = "" },
		"Expectation ":           func(e *signedretry.Expectation) { e.AccountID = "" },
		"Expectation.Body":       func(e *signedretry.Expectation) { e.Body = []byte(`{"a":`) },
		"Expectation.Parameters": func(e *signedretry.Expectation) { e.Parameters = []string{"credentialType"} },
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

// validPayload is a payload as Manager.Issue writes it.
const validPayload = `{"type":"REFRESH_SESSION","requestId":"Request:7c4a8d09-ca37-4e5b-9c1d-2f0b6a3e8f11",` +
	`"accountId":"InternalAccount:0b9f5a3c-1d2e-4f60-8a7b-9c0d1e2f3a4b","parameters":{"sessionId":"Session:1"},` +
	`"bodySha256":"44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a","timestampMs":"1777636800000",` +
	`"expiresAt":"2026-05-01T12:05:00Z"}`

func TestParsePayloadStrict(t *testing.T) {
	p, err := signedretry.ParsePayload(validPayload)
	if err != nil || p.Type != "REFRESH_SESSION" || string(p.Parameters) != `{"sessionId":"Session:1"}` ||
		!p.ExpiresAt.Equal(time.Date(2026, 5, 1, 12, 5, 0, 0, time.UTC)) || p.Timestamp.UnixMilli() != 1777636800000 {
		t.Fatalf("ParsePayload: %+v, %v", p, err)
	}
	edit := func(old, new string) string {
		if !strings.Contains(validPayload, old) {
			t.Fatalf("%q not in the payload", old)
		}
		return strings.Replace(validPayload, old, new, 1)
	}
	for in, reason := range map[string]string{
		"":                           "not a JSON object",
		"[]":                         "not a JSON object",
		`"x"`:                        "not a JSON object",
		validPayload + "{}":          "not acceptable JSON",
		strings.Repeat(" ", 1<<20+1): "longer than",
		edit(`{"type"`, `{"Type"`):   `unknown member "Type"`,
		edit(`"type":"REFRESH_SESSION",`, `"type":"REFRESH_SESSION","type":"EXPORT_WALLET",`):                    "not acceptable JSON",
		edit(`"type":"REFRESH_SESSION",`, `"type":"REFRESH_SESSION","Type":"EXPORT_WALLET",`):                    "not acceptable JSON",
		edit(`"type":"REFRESH_SESSION",`, `"type":"REFRESH_SESSION","method":"POST",`):                           `unknown member "method"`,
		edit(`"type":"REFRESH_SESSION",`, ``):                                                                    "member type is missing",
		edit(`"REFRESH_SESSION"`, `""`):                                                                          "member type is empty",
		edit(`"REFRESH_SESSION"`, `1`):                                                                           "member type is not a string",
		edit(`"Request:7c4a8d09-ca37-4e5b-9c1d-2f0b6a3e8f11"`, `"Session:7c4a8d09-ca37-4e5b-9c1d-2f0b6a3e8f11"`): "requestId",
		edit(`"InternalAccount:0b9f5a3c-1d2e-4f60-8a7b-9c0d1e2f3a4b"`, `""`):                                     "member accountId is empty",
		edit(`{"sessionId":"Session:1"}`, `"{}"`):                                                                "member parameters is not a JSON object",
		edit(`{"sessionId":"Session:1"}`, `null`):                                                                "member parameters is not a JSON object",
		edit(`"44136fa3`, `"44136FA3`):                                                                           "bodySha256",
		edit(`ff8a"`, `ff8`+`"`):                                                                                 "bodySha256",
		edit(`"1777636800000"`, `1777636800000`):                                                                 "member timestampMs is not a string",
		edit(`"1777636800000"`, `"01777636800000"`):                                                              "timestampMs",
		edit(`"1777636800000"`, `"-1"`):                                                                          "timestampMs",
		edit(`"1777636800000"`, `"99999999999999999999"`):                                                        "timestampMs",
		edit(`"2026-05-01T12:05:00Z"`, `"2026-05-01 12:05:00"`):                                                  "expiresAt",
	} {
		p, err := signedretry.ParsePayload(in)
		if p != nil {
			t.Errorf("ParsePayload(%.80q) returned a payload with the error", in)
		}
		wantMalformed(t, err, reason)
	}
}

// FuzzParsePayload: ParsePayload never panics; every rejection is a typed
// 400 INVALID_INPUT naming its check; an accepted payload has every member
// well formed, and written again in the wire order it parses to the same
// payload.
func FuzzParsePayload(f *testing.F) {
	for _, s := range []string{
		validPayload, "", "{}", "[]", "null", `{"type":1}`, validPayload + " ", " " + validPayload,
		strings.Replace(validPayload, `"type"`, `"type":"X","type"`, 1),
		strings.Replace(validPayload, `{"sessionId":"Session:1"}`, `{"a":{"b":[1,2.0,"\u0000"]}}`, 1),
		strings.Replace(validPayload, `"1777636800000"`, `"0"`, 1),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		p, err := signedretry.ParsePayload(in)
		if err != nil {
			e, ok := err.(*apierror.Error)
			if !ok || e.Code != apierror.InvalidInput || e.Status() != 400 || !strings.HasPrefix(e.Reason(), "payloadToSign ") || p != nil {
				t.Fatalf("ParsePayload(%q): %v, %v", in, p, err)
			}
			return
		}
		if p.Type == "" || p.AccountID == "" || len(p.BodySHA256) != 64 || len(p.Parameters) == 0 || p.Parameters[0] != '{' ||
			!strings.HasPrefix(p.RequestID, "Request:") {
			t.Fatalf("ParsePayload(%q) accepted %+v", in, p)
		}
		again, err := json.Marshal(map[string]any{"type": p.Type, "requestId": p.RequestID, "accountId": p.AccountID,
			"parameters": p.Parameters, "bodySha256": p.BodySHA256, "timestampMs": json.Number("0"),
			"expiresAt": p.ExpiresAt.Format(time.RFC3339Nano)})
		if err != nil {
			t.Fatal(err)
		}
		s := strings.Replace(string(again), `"timestampMs":0`, `"timestampMs":"`+itoa(p.Timestamp.UnixMilli())+`"`, 1)
		q, err := signedretry.ParsePayload(s)
		if err != nil || q.Type != p.Type || q.RequestID != p.RequestID || q.AccountID != p.AccountID || q.BodySHA256 != p.BodySHA256 ||
			!q.Timestamp.Equal(p.Timestamp) || !q.ExpiresAt.Equal(p.ExpiresAt) {
			t.Fatalf("ParsePayload(%q) = %+v; written again %s: %+v, %v", in, p, s, q, err)
		}
	})
}

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

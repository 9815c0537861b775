package stamper_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/signedretry/stamper"
)

// wantMalformed fails unless err is the 400 INVALID_INPUT of ParsePayload
// whose reason contains reason.
func wantMalformed(t *testing.T, err error, reason string) {
	t.Helper()
	e := apierrortest.Want(t, err, apierror.InvalidInput, "")
	if e.Status() != 400 || !strings.Contains(e.Reason(), reason) || !strings.HasPrefix(e.Reason(), "payloadToSign ") {
		t.Fatalf("error %v (reason %q), want reason %q", err, e.Reason(), reason)
	}
}

// validPayload is a payload as the service writes it.
const validPayload = `{"type":"REFRESH_SESSION","requestId":"Request:7c4a8d09-ca37-4e5b-9c1d-2f0b6a3e8f11",` +
	`"accountId":"InternalAccount:0b9f5a3c-1d2e-4f60-8a7b-9c0d1e2f3a4b","parameters":{"sessionId":"Session:1"},` +
	`"bodySha256":"44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a","timestampMs":"1777636800000",` +
	`"expiresAt":"2026-05-01T12:05:00Z"}`

func TestParsePayloadStrict(t *testing.T) {
	p, err := stamper.ParsePayload(validPayload)
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
		p, err := stamper.ParsePayload(in)
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
		p, err := stamper.ParsePayload(in)
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
		q, err := stamper.ParsePayload(s)
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

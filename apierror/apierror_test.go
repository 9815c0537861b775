package apierror_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/walletgate/walletgate/apierror"
)

func TestCodesKnowTheirStatus(t *testing.T) {
	want := map[string]int{
		"INVALID_INPUT": 400, "EMAIL_OTP_CREDENTIAL_ALREADY_EXISTS": 400, "PASSKEY_CREDENTIAL_ALREADY_EXISTS": 400,
		"EXTERNAL_ACCOUNT_VERIFICATION_REQUIRED": 400, "INCOMPLETE": 400,
		"UNAUTHORIZED": 401, "INVALID_SIGNATURE": 401, "WALLET_SIGNATURE_MISSING": 401, "WALLET_SIGNATURE_MALFORMED": 401,
		"WALLET_SIGNATURE_BODY_MISMATCH": 401, "WALLET_SIGNATURE_INVALID": 401, "REQUEST_ID_MISSING": 401,
		"FORBIDDEN": 403, "USER_NOT_FOUND": 404, "REFERENCE_NOT_FOUND": 404, "METHOD_NOT_ALLOWED": 405,
		"EMAIL_OTP_EMAIL_ALREADY_EXISTS": 409, "EMAIL_OTP_CREDENTIAL_SET_CHANGED": 409, "CONFLICT": 409,
		"INVALID_STATE_TRANSITION": 409, "CARD_ALREADY_CLOSED": 409, "CARD_NOT_MUTABLE": 409, "BENEFICIARY_TRUSTED": 409,
		"RATE_LIMITED": 429, "INTERNAL_ERROR": 500, "SERVICE_SWITCH_ERROR": 500,
	}
	for name, status := range want {
		c, ok := apierror.LookupCode(name)
		if !ok {
			t.Errorf("code %s is not defined", name)
			continue
		}
		if c.Status() != status || c.String() != name {
			t.Errorf("%s: status %d name %q, want %d", name, c.Status(), c.String(), status)
		}
	}
	if _, ok := apierror.LookupCode("NOPE"); ok {
		t.Error("LookupCode found an undefined code")
	}
	// The service's error table has 43 codes for 400, 7 for 401, 10 for 404,
	// 12 for 409 and 2 for 500; the library adds FORBIDDEN, PAYOUT_BLOCKED,
	// STEP_UP_REQUIRED, METHOD_NOT_ALLOWED and RATE_LIMITED.
	perStatus := map[int]int{}
	for _, c := range apierror.Codes() {
		perStatus[c.Status()]++
		if got, _ := apierror.LookupCode(c.String()); got != c {
			t.Errorf("LookupCode(%s) does not round-trip", c)
		}
	}
	wantPer := map[int]int{400: 43, 401: 7, 403: 3, 404: 10, 405: 1, 409: 12, 429: 1, 500: 2}
	if d := cmp.Diff(wantPer, perStatus); d != "" {
		t.Errorf("codes per status (-want +got):\n%s", d)
	}
	codes := apierror.Codes()
	codes[0] = apierror.Conflict
	if apierror.Codes()[0] != apierror.InvalidInput {
		t.Error("Codes returned the package's own slice")
	}
}

func TestMarshalShape(t *testing.T) {
	tests := []struct {
		name string
		err  *apierror.Error
		want string
	}{
		{"plain", apierror.New(apierror.Conflict, "account %s is %s", "ExternalAccount:1", "ACTIVE"),
			`{"status":409,"code":"CONFLICT","message":"account ExternalAccount:1 is ACTIVE"}`},
		{"percent as an argument", apierror.New(apierror.InvalidInput, "%s", "100% wrong"),
			`{"status":400,"code":"INVALID_INPUT","message":"100% wrong"}`},
		{"reason", apierror.Unauthenticated("Invalid OTP code"),
			`{"status":401,"code":"UNAUTHORIZED","message":"authentication failed: Invalid OTP code","details":{"reason":"Invalid OTP code"}}`},
		{"empty details omitted", &apierror.Error{Code: apierror.Forbidden, Message: "no", Details: map[string]any{}},
			`{"status":403,"code":"FORBIDDEN","message":"no"}`},
		{"zero code is internal", &apierror.Error{Message: "secret: db password", Details: map[string]any{"sql": "x"}},
			`{"status":500,"code":"INTERNAL_ERROR","message":"internal error"}`},
		{"rate limited", apierror.TooManyRequests(1500 * time.Millisecond),
			`{"status":429,"code":"RATE_LIMITED","message":"too many requests; retry later","details":{"retryAfterSeconds":2}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.err)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.want {
				t.Errorf("got  %s\nwant %s", b, tt.want)
			}
		})
	}
}

func TestUnmarshal(t *testing.T) {
	var v apierror.Validation
	v.Add("address.postalCode", apierror.Pattern(`^\d{5}$`), "must be 5 digits")
	v.Add(apierror.Path("items", 2, "name"), apierror.Length(1, 100), "")
	orig := v.Err().(*apierror.Error)
	b, _ := json.Marshal(orig)
	var got apierror.Error
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.Code != apierror.InvalidInput || got.Message != orig.Message {
		t.Fatalf("round trip: %+v", got)
	}
	if d := cmp.Diff(orig.FieldErrors(), got.FieldErrors()); d != "" {
		t.Errorf("field errors (-want +got):\n%s", d)
	}
	var reason apierror.Error
	if err := json.Unmarshal([]byte(`{"status":401,"code":"UNAUTHORIZED","message":"m","details":{"reason":"iat too old"}}`), &reason); err != nil {
		t.Fatal(err)
	}
	if reason.Reason() != "iat too old" {
		t.Errorf("Reason() = %q", reason.Reason())
	}
	for _, bad := range []string{
		`{"status":400,"code":"NOPE","message":"m"}`,
		`{"status":401,"code":"INVALID_INPUT","message":"m"}`,
		`{"status":400,"code":"INVALID_INPUT","message":"m","details":[1]}`,
		`{"status":400,"code":"INVALID_INPUT","message":"m","details":{"errors":"x"}}`,
		`[]`,
	} {
		var e apierror.Error
		if err := json.Unmarshal([]byte(bad), &e); err == nil {
			t.Errorf("Unmarshal(%s) accepted", bad)
		}
	}
}

func TestErrorInterface(t *testing.T) {
	cause := errors.New("dial tcp 10.0.0.1:5432: refused")
	internal := apierror.Internal(cause)
	if !errors.Is(internal, cause) {
		t.Error("Internal does not unwrap to its cause")
	}
	if !strings.Contains(internal.Error(), "refused") {
		t.Error("Error() should keep the cause for logs")
	}
	wrapped := fmt.Errorf("verify: %w", apierror.New(apierror.WalletSignatureInvalid, "bad signature"))
	var e *apierror.Error
	if !errors.As(wrapped, &e) || e.Code != apierror.WalletSignatureInvalid || e.Status() != 401 {
		t.Fatalf("errors.As through a wrap: %v", e)
	}
	if !errors.Is(wrapped, apierror.New(apierror.WalletSignatureInvalid, "")) {
		t.Error("errors.Is by code failed")
	}
	if errors.Is(wrapped, apierror.New(apierror.WalletSignatureMalformed, "")) {
		t.Error("errors.Is matched another code")
	}
	if got := apierror.Unauthenticated("nonce mismatch").Error(); got != "401 UNAUTHORIZED: authentication failed: nonce mismatch" {
		t.Errorf("Error() = %q", got)
	}
	if got := apierror.New(apierror.Unauthorized, "denied").WithDetail("reason", "iat too old").Error(); got != "401 UNAUTHORIZED: denied (reason: iat too old)" {
		t.Errorf("Error() with a separate reason = %q", got)
	}
	if got := (&apierror.Error{Message: "m"}).Error(); got != "500 INTERNAL_ERROR: m" {
		t.Errorf("zero code Error() = %q", got)
	}
	if (&apierror.Error{}).Status() != 500 {
		t.Error("zero code status is not 500")
	}
	e2 := apierror.New(apierror.Conflict, "x").WithDetail("accountId", "ExternalAccount:1").WithCause(cause)
	if e2.Details["accountId"] != "ExternalAccount:1" || !errors.Is(e2, cause) {
		t.Errorf("WithDetail/WithCause: %+v", e2)
	}
	if apierror.CodeOf(nil) != (apierror.Code{}) || !apierror.CodeOf(nil).IsZero() {
		t.Error("CodeOf(nil) is not the zero code")
	}
	if apierror.CodeOf(cause) != apierror.InternalError || apierror.CodeOf(wrapped) != apierror.WalletSignatureInvalid {
		t.Error("CodeOf")
	}
	if apierror.CodeOf(&apierror.Error{}) != apierror.InternalError {
		t.Error("CodeOf of a zero-code error")
	}
	if apierror.As(nil) != nil || apierror.As(cause).Code != apierror.InternalError || apierror.As(wrapped) != e {
		t.Error("As")
	}
	if (&apierror.Error{Code: apierror.RateLimited}).RetryAfterSeconds() != 0 {
		t.Error("RetryAfterSeconds without RetryAfter")
	}
	if apierror.TooManyRequests(time.Millisecond).RetryAfterSeconds() != 1 || apierror.TooManyRequests(30*time.Second).RetryAfterSeconds() != 30 {
		t.Error("RetryAfterSeconds rounding")
	}
	if (&apierror.Error{}).Reason() != "" || (&apierror.Error{}).FieldErrors() != nil {
		t.Error("accessors on an empty error")
	}
}

func TestValidation(t *testing.T) {
	var v apierror.Validation
	if v.Err() != nil || v.Len() != 0 {
		t.Fatal("empty validation is not nil")
	}
	if !v.Check(true, "ok", nil, "") {
		t.Fatal("Check(true) reported false")
	}
	v.Check(false, "fullName", apierror.Length(1, 255), "is required")
	v.Add(apierror.Path("address", "country"), apierror.Format("iso3166-1-alpha-2"), "must be a country code")
	v.Add(apierror.Path("customerType"), apierror.OneOf("INDIVIDUAL", "BUSINESS"), "unknown value")
	v.Add(apierror.Path("items", 2, "name"), apierror.Length(-1, 10), "too long")
	err := v.Err()
	e := err.(*apierror.Error)
	if e.Code != apierror.InvalidInput || e.Status() != 400 {
		t.Fatalf("code %v", e.Code)
	}
	if e.Message != "4 invalid fields: fullName, address.country, customerType, items[2].name" {
		t.Errorf("message %q", e.Message)
	}
	b, _ := json.Marshal(e)
	want := `{"status":400,"code":"INVALID_INPUT","message":"4 invalid fields: fullName, address.country, customerType, items[2].name","details":{"errors":[` +
		`{"field":"fullName","constraint":{"minLength":1,"maxLength":255},"message":"is required"},` +
		`{"field":"address.country","constraint":{"format":"iso3166-1-alpha-2"},"message":"must be a country code"},` +
		`{"field":"customerType","constraint":{"enum":["INDIVIDUAL","BUSINESS"]},"message":"unknown value"},` +
		`{"field":"items[2].name","constraint":{"maxLength":10},"message":"too long"}]}}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
	// Adding after Err does not change the returned error.
	v.Add("late", nil, "")
	if len(e.FieldErrors()) != 4 {
		t.Error("Err shares its slice with the builder")
	}
	one := apierror.InvalidField("email", apierror.Format("email"), "not an email address")
	if one.Message != "invalid field email: not an email address" || len(one.FieldErrors()) != 1 {
		t.Errorf("InvalidField: %+v", one)
	}
	if got := apierror.InvalidField("x", nil, "").Message; got != "invalid field x" {
		t.Errorf("InvalidField without message: %q", got)
	}
}

func TestPath(t *testing.T) {
	tests := []struct {
		elems []any
		want  string
	}{
		{[]any{"a"}, "a"},
		{[]any{"items", 2, "name"}, "items[2].name"},
		{[]any{"matrix", 0, 1}, "matrix[0][1]"},
		{[]any{0, "x"}, "[0].x"},
		{[]any{"a", "", "b"}, "a.b"},
		{[]any{"edd", apierror.InvalidInput}, "edd.INVALID_INPUT"},
		{[]any{"a", 1.5, "b"}, "a.b"},
		{nil, ""},
	}
	for _, tt := range tests {
		if got := apierror.Path(tt.elems...); got != tt.want {
			t.Errorf("Path(%v) = %q, want %q", tt.elems, got, tt.want)
		}
	}
}

type result struct {
	status int
	header http.Header
	body   map[string]any
}

func write(t *testing.T, err error) result {
	t.Helper()
	rec := httptest.NewRecorder()
	apierror.Write(rec, err)
	var body map[string]any
	if e := json.Unmarshal(rec.Body.Bytes(), &body); e != nil {
		t.Fatalf("body is not JSON: %s", rec.Body)
	}
	if body["status"] != float64(rec.Code) {
		t.Fatalf("body status %v differs from HTTP status %d", body["status"], rec.Code)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q", ct)
	}
	return result{rec.Code, rec.Header(), body}
}

func TestWrite(t *testing.T) {
	r := write(t, fmt.Errorf("wrapped: %w", apierror.Unauthenticated("session revoked")))
	if r.status != 401 || r.body["code"] != "UNAUTHORIZED" || r.body["details"].(map[string]any)["reason"] != "session revoked" {
		t.Errorf("auth failure: %+v", r)
	}
	r = write(t, apierror.TooManyRequests(42*time.Second))
	if r.status != 429 || r.header.Get("Retry-After") != "42" {
		t.Errorf("rate limit: %d Retry-After %q", r.status, r.header.Get("Retry-After"))
	}
	for _, leak := range []error{
		errors.New(`pq: password authentication failed for user "walletgate" at 10.1.2.3`),
		apierror.Internal(errors.New("open /etc/walletgate/key.pem: permission denied")),
		&apierror.Error{Code: apierror.InternalError, Message: "query SELECT * FROM sessions failed"},
		nil,
	} {
		r := write(t, leak)
		if r.status != 500 || r.body["code"] != "INTERNAL_ERROR" || r.body["message"] != "internal error" || r.body["details"] != nil {
			t.Errorf("internal error written as %+v", r)
		}
	}
	r = write(t, apierror.New(apierror.ServiceSwitchError, "switch failed"))
	if r.status != 500 || r.body["code"] != "SERVICE_SWITCH_ERROR" {
		t.Errorf("service switch error: %+v", r)
	}
}

func TestWriteJSONUnencodable(t *testing.T) {
	rec := httptest.NewRecorder()
	apierror.WriteJSON(rec, 200, map[string]any{"f": func() {}})
	if rec.Code != 500 || !strings.Contains(rec.Body.String(), `"INTERNAL_ERROR"`) {
		t.Errorf("unencodable body: %d %s", rec.Code, rec.Body)
	}
	rec = httptest.NewRecorder()
	apierror.WriteJSON(rec, 201, map[string]string{"id": "x"})
	if rec.Code != 201 || rec.Body.String() != "{\"id\":\"x\"}\n" || rec.Header().Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("WriteJSON: %d %q", rec.Code, rec.Body)
	}
}

type createCustomer struct {
	FullName string `json:"fullName"`
	Age      int    `json:"age"`
	Address  struct {
		Line1 string `json:"line1"`
	} `json:"address"`
	Tags []string `json:"tags"`
}

type strict struct{ V strictValue }
type strictValue string

func (s *strictValue) UnmarshalJSON([]byte) error {
	return apierror.InvalidField("v", apierror.OneOf("A"), "unknown value")
}

type failing struct{ V failingValue }
type failingValue string

func (s *failingValue) UnmarshalJSON([]byte) error { return errors.New("custom failure") }

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("connection reset") }

func TestDecode(t *testing.T) {
	req := func(body string) *http.Request {
		return httptest.NewRequest(http.MethodPost, "/customers", strings.NewReader(body))
	}
	var ok createCustomer
	if err := apierror.Decode(req(` {"fullName":"Ada","age":36,"address":{"line1":"1 Main"},"unknown":{"x":[1,2]}} `), &ok); err != nil {
		t.Fatalf("valid body with an unknown field: %v", err)
	}
	if ok.FullName != "Ada" || ok.Age != 36 || ok.Address.Line1 != "1 Main" {
		t.Fatalf("decoded %+v", ok)
	}
	tests := []struct {
		name, body, wantMsg, wantField string
	}{
		{"empty", "", "request body is required", ""},
		{"whitespace", " \n\t", "request body is required", ""},
		{"malformed", `{"fullName":}`, "not acceptable JSON: unexpected character '}' at offset 12", ""},
		{"truncated", `{"fullName":"Ada"`, "unexpected end of input", ""},
		{"trailing value", `{"fullName":"Ada"} {"x":1}`, "data after the JSON value at offset", ""},
		{"trailing bracket", `{"fullName":"Ada"}]`, "data after the JSON value at offset", ""},
		{"trailing garbage", `{"fullName":"Ada"}garbage`, "data after the JSON value at offset", ""},
		{"wrong type", `{"fullName":42}`, "must be a string, not number", "fullName"},
		{"wrong nested type", `{"address":{"line1":true}}`, "must be a string, not bool", "address.line1"},
		{"wrong int", `{"age":"36"}`, "must be an integer, not string", "age"},
		{"fraction for int", `{"age":36.5}`, "must be an integer", "age"},
		{"wrong array", `{"tags":"x"}`, "must be an array, not string", "tags"},
		{"wrong object", `{"address":[]}`, "must be an object, not array", "address"},
		{"not an object", `[1,2]`, "request body must be an object, not array", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var dst createCustomer
			err := apierror.Decode(req(tt.body), &dst)
			e := apierror.As(err)
			if e == nil || e.Code != apierror.InvalidInput {
				t.Fatalf("error %v, want INVALID_INPUT", err)
			}
			msg := e.Message
			if fe := e.FieldErrors(); len(fe) > 0 {
				msg = fe[0].Message
				if fe[0].Field != tt.wantField {
					t.Errorf("field %q, want %q", fe[0].Field, tt.wantField)
				}
			} else if tt.wantField != "" {
				t.Errorf("no field error, want field %q", tt.wantField)
			}
			if !strings.Contains(msg, tt.wantMsg) {
				t.Errorf("message %q, want it to contain %q", msg, tt.wantMsg)
			}
		})
	}

	t.Run("too large", func(t *testing.T) {
		body := `{"fullName":"` + strings.Repeat("a", apierror.DefaultMaxBodyBytes) + `"}`
		var dst createCustomer
		err := apierror.Decode(req(body), &dst)
		if apierror.CodeOf(err) != apierror.InvalidInput || !strings.Contains(err.Error(), "exceeds 1048576 bytes") {
			t.Fatalf("oversized body: %v", err)
		}
		err = apierror.Decoder{MaxBytes: 10}.Decode(req(`{"fullName":"Ada"}`), &dst)
		if apierror.CodeOf(err) != apierror.InvalidInput || !strings.Contains(err.Error(), "exceeds 10 bytes") {
			t.Fatalf("custom limit: %v", err)
		}
		if err := (apierror.Decoder{MaxBytes: 18}).Decode(req(`{"fullName":"Ada"}`), &dst); err != nil {
			t.Fatalf("body exactly at the limit: %v", err)
		}
	})
	t.Run("MaxBytesReader", func(t *testing.T) {
		r := req(`{"fullName":"Ada"}`)
		r.Body = http.MaxBytesReader(httptest.NewRecorder(), r.Body, 5)
		var dst createCustomer
		err := apierror.Decode(r, &dst)
		if apierror.CodeOf(err) != apierror.InvalidInput || !strings.Contains(err.Error(), "exceeds 5 bytes") {
			t.Fatalf("MaxBytesReader limit: %v", err)
		}
	})
	t.Run("read error", func(t *testing.T) {
		r := req("")
		r.Body = io.NopCloser(errReader{})
		var dst createCustomer
		err := apierror.Decode(r, &dst)
		if apierror.CodeOf(err) != apierror.InvalidInput || !strings.Contains(apierror.As(err).Message, "could not be read") {
			t.Fatalf("read error: %v", err)
		}
	})
	t.Run("nil body", func(t *testing.T) {
		r := req("")
		r.Body = nil
		var dst createCustomer
		if err := apierror.Decode(r, &dst); apierror.CodeOf(err) != apierror.InvalidInput {
			t.Fatalf("nil body: %v", err)
		}
	})
	t.Run("typed error from a field", func(t *testing.T) {
		var dst strict
		err := apierror.Decode(req(`{"V":"B"}`), &dst)
		if fe := apierror.As(err).FieldErrors(); len(fe) != 1 || fe[0].Field != "v" {
			t.Fatalf("typed field error: %v", err)
		}
	})
	t.Run("untyped error from a field", func(t *testing.T) {
		var dst failing
		err := apierror.Decode(req(`{"V":"B"}`), &dst)
		if apierror.CodeOf(err) != apierror.InvalidInput || !strings.Contains(err.Error(), "custom failure") {
			t.Fatalf("untyped field error: %v", err)
		}
	})
	t.Run("float kinds", func(t *testing.T) {
		var dst struct {
			F float64 `json:"f"`
			B bool    `json:"b"`
			M any     `json:"m"`
		}
		err := apierror.DecodeBytes([]byte(`{"f":"x"}`), &dst)
		if fe := apierror.As(err).FieldErrors(); len(fe) != 1 || !strings.Contains(fe[0].Message, "must be a number") {
			t.Fatalf("float: %v", err)
		}
		err = apierror.DecodeBytes([]byte(`{"b":1}`), &dst)
		if fe := apierror.As(err).FieldErrors(); len(fe) != 1 || !strings.Contains(fe[0].Message, "must be a boolean") {
			t.Fatalf("bool: %v", err)
		}
	})
}

// FuzzDecode: no input panics DecodeBytes or DecodeStored, every rejection
// is a typed 400 INVALID_INPUT, and DecodeStored differs from DecodeBytes
// only by refusing an unknown member, named by its path.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"fullName":"Ada","age":1}`, `{"age":1e400}`, `{"address":{"line1":null}}`,
		`{"tags":["a",1]}`, `[]`, `"x"`, `{"a":1}{`, "\xff", `{"fullName":"\ud800"}`, `{"age":-0}`} {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"fullName":"A","FullName":"B"}`))
	f.Add([]byte(`{"FULLNAME":"B","address":{"Line1":"x"}}`))
	f.Add([]byte(`{"fullName":"A","address":{"line1":"x","line2":"y"},"x":1}`))
	f.Add([]byte(`{"":0}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var dst createCustomer
		err := apierror.DecodeBytes(body, &dst)
		// DecodeStored refuses what DecodeBytes refuses, and otherwise
		// decodes the same value or refuses an unknown member by its path.
		var stored createCustomer
		serr := apierror.DecodeStored(body, &stored)
		switch {
		case err != nil && serr == nil:
			t.Fatalf("%q: DecodeStored accepted what DecodeBytes refused (%v)", body, err)
		case err == nil && serr == nil && !reflect.DeepEqual(dst, stored):
			t.Fatalf("%q: DecodeStored %+v, DecodeBytes %+v", body, stored, dst)
		case err == nil && serr != nil:
			if fe := apierror.As(serr).FieldErrors(); len(fe) != 1 || fe[0].Message != "unknown member" {
				t.Fatalf("%q: DecodeStored refused what DecodeBytes accepted, not as an unknown member: %v", body, serr)
			}
		}
		if serr != nil {
			if e := apierror.As(serr); e == nil || e.Code != apierror.InvalidInput {
				t.Fatalf("untyped DecodeStored rejection %T %v", serr, serr)
			}
		}
		if err == nil {
			// One reading: the canonical form decodes to the same value.
			canon, cerr := apierror.Canonicalize(body)
			var again createCustomer
			if cerr != nil || apierror.DecodeBytes(canon, &again) != nil || !reflect.DeepEqual(dst, again) {
				t.Fatalf("%q and its canonical form %q decode differently: %+v, %+v (%v)", body, canon, dst, again, cerr)
			}
			return
		}
		var e *apierror.Error
		if !errors.As(err, &e) || e.Code != apierror.InvalidInput {
			t.Fatalf("untyped rejection %T %v", err, err)
		}
		if _, jerr := json.Marshal(e); jerr != nil {
			t.Fatalf("error does not marshal: %v", jerr)
		}
	})
}

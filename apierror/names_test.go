package apierror_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/walletgate/walletgate/apierror"
)

type refresh struct {
	ClientPublicKey string `json:"clientPublicKey"`
	Nested          *struct {
		Kind string `json:"kind"`
	} `json:"nested,omitempty"`
	List []struct {
		Key string `json:"key"`
	} `json:"list,omitempty"`
	Extra map[string]any `json:"extra,omitempty"`
	Embedded
}

type Embedded struct {
	Amount int64 `json:"amount"`
}

// TestDecodeStrictNames covers the ways a body could hold two readings of one
// member: each is refused with 400 INVALID_INPUT naming the member.
func TestDecodeStrictNames(t *testing.T) {
	tests := []struct {
		name, body, field, msg string
	}{
		{"case variant of a field", `{"ClientPublicKey":"A"}`, "ClientPublicKey", "member names are case-sensitive; the field is clientPublicKey"},
		{"case variant beside the field", `{"clientPublicKey":"U","ClientPublicKey":"A"}`, "", `member names differ only in case "clientPublicKey" and "ClientPublicKey"`},
		{"swapped order", `{"ClientPublicKey":"A","clientPublicKey":"U"}`, "", "member names differ only in case"},
		{"escaped case variant", `{"clientPublicKey":"U","\u0043lientPublicKey":"A"}`, "", "member names differ only in case"},
		{"exact duplicate", `{"clientPublicKey":"U","clientPublicKey":"A"}`, "", "duplicate member name"},
		{"escaped duplicate", `{"clientPublicKey":"U","client\u0050ublicKey":"A"}`, "", "duplicate member name"},
		{"kelvin sign", `{"nested":{"kind":"a","\u212aind":"b"}}`, "", "member names differ only in case"},
		{"long s", `{"list":[{"key":"a"}],"extra":{"s":1,"\u017f":2}}`, "", "member names differ only in case"},
		{"nested case variant", `{"nested":{"Kind":"x"}}`, "nested.Kind", "the field is kind"},
		{"case variant in an array element", `{"list":[{"key":"a"},{"KEY":"b"}]}`, "list.KEY", "the field is key"},
		{"promoted field variant", `{"AMOUNT":5}`, "AMOUNT", "the field is amount"},
		{"many members", `{"a0":0,"a1":1,"a2":2,"a3":3,"a4":4,"a5":5,"a6":6,"a7":7,"a8":8,"A3":9}`, "", "member names differ only in case"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var dst refresh
			err := apierror.DecodeBytes([]byte(tt.body), &dst)
			e := apierror.As(err)
			if e == nil || e.Code != apierror.InvalidInput || e.Status() != 400 {
				t.Fatalf("error %v, want 400 INVALID_INPUT", err)
			}
			msg := e.Message
			if fe := e.FieldErrors(); len(fe) > 0 {
				if fe[0].Field != tt.field {
					t.Errorf("field %q, want %q", fe[0].Field, tt.field)
				}
				msg = fe[0].Message
			} else if tt.field != "" {
				t.Errorf("no field error, want %q", tt.field)
			}
			if !strings.Contains(msg, tt.msg) {
				t.Errorf("message %q, want it to contain %q", msg, tt.msg)
			}
			if !reflect.DeepEqual(dst, refresh{}) {
				t.Errorf("decoded %+v despite the error", dst)
			}
		})
	}
}

// badTag's tag names no member: encoding/json names the field A, and reads
// it from a member named a only under case folding.
type badTag struct {
	A string `json:"a\\b"`
}

// TestDecodeStrictNamesBadTag: a field whose tag name encoding/json does
// not accept is named as encoding/json names it, so a member naming it only
// under case folding is refused, not decoded into it.
func TestDecodeStrictNamesBadTag(t *testing.T) {
	var dst badTag
	e := apierror.As(apierror.DecodeBytes([]byte(`{"a":"x"}`), &dst))
	if e == nil {
		t.Fatalf("accepted, decoded %+v", dst)
	}
	if fe := e.FieldErrors(); len(fe) != 1 || fe[0].Field != "a" || !strings.Contains(fe[0].Message, "the field is A") {
		t.Fatalf("error %v", e)
	}
	if err := apierror.DecodeBytes([]byte(`{"A":"x"}`), &dst); err != nil || dst.A != "x" {
		t.Fatalf("error %v, decoded %+v", err, dst)
	}
}

// TestDecodeOneReading checks that bodies with the same canonical form decode
// to the same value, whatever their spelling.
func TestDecodeOneReading(t *testing.T) {
	bodies := []string{
		`{"clientPublicKey":"U","amount":100,"extra":{"n":1,"s":"x"},"list":[{"key":"k"}]}`,
		`{"list":[{"key":"k"}],"extra":{"s":"x","n":1.0},"amount":1e2,"clientPublicKey":"U"}`,
		"{\"client\\u0050ublicKey\":\"\\u0055\",\"amount\":100.000,\"extra\":{\"n\":10e-1,\"s\":\"\\u0078\"},\"list\":[{\"k\\u0065y\":\"k\"}]}",
		" \n{ \"clientPublicKey\" : \"U\" , \"amount\" : 1000e-1 , \"extra\" : { \"s\" : \"x\" , \"n\" : 1E0 } , \"list\" : [ { \"key\" : \"k\" } ] }\n",
	}
	var first refresh
	for i, body := range bodies {
		var got refresh
		if err := apierror.DecodeBytes([]byte(body), &got); err != nil {
			t.Fatalf("body %d: %v", i, err)
		}
		if i == 0 {
			first = got
			continue
		}
		if !reflect.DeepEqual(got, first) {
			t.Fatalf("body %d decoded to %+v, body 0 to %+v", i, got, first)
		}
	}
	if first.Amount != 100 || first.Extra["n"] != float64(1) {
		t.Fatalf("decoded %+v", first)
	}
}

// TestDecodeMapKeysExact checks that a map keeps member names as sent and
// that unknown members of a struct are still ignored.
func TestDecodeMapKeysExact(t *testing.T) {
	var dst refresh
	err := apierror.DecodeBytes([]byte(`{"clientPublicKey":"U","extra":{"Mixed":1},"unknownMember":{"x":[1]}}`), &dst)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := dst.Extra["Mixed"]; !ok || dst.ClientPublicKey != "U" {
		t.Fatalf("decoded %+v", dst)
	}
	var e *apierror.Error
	if err := apierror.DecodeBytes([]byte(`{"clientPublicKey":"\ud800"}`), &dst); !errors.As(err, &e) || e.Code != apierror.InvalidInput {
		t.Fatalf("unpaired surrogate: %v", err)
	}
}

// TestDecodeStoredUnknownMembers: DecodeStored refuses a member its type has
// no field for, at any depth, with 400 INVALID_INPUT naming the member's
// path, and keeps every rule of DecodeBytes.
func TestDecodeStoredUnknownMembers(t *testing.T) {
	tests := []struct {
		name, body, field, msg string
	}{
		{"top level", `{"clientPublicKey":"U","unknownMember":1}`, "unknownMember", "unknown member"},
		{"escaped name", `{"clientPublicKey":"U","\u0078":1}`, "x", "unknown member"},
		{"nested object", `{"nested":{"kind":"a","colour":"b"}}`, "nested.colour", "unknown member"},
		{"array element", `{"list":[{"key":"a"},{"key":"b","lock":true}]}`, "list.lock", "unknown member"},
		{"inside an unknown member, the outer one", `{"extraneous":{"deeper":1}}`, "extraneous", "unknown member"},
		{"case variant still named as such", `{"nested":{"Kind":"x"}}`, "nested.Kind", "the field is kind"},
		{"duplicate still refused", `{"clientPublicKey":"U","clientPublicKey":"A"}`, "", "duplicate member name"},
		{"case collision still refused", `{"clientPublicKey":"U","ClientPublicKey":"A"}`, "", "member names differ only in case"},
		{"wrong type still named", `{"nested":{"kind":1}}`, "nested.kind", "must be a string"},
		{"empty", ``, "", "request body is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var dst refresh
			err := apierror.DecodeStored([]byte(tt.body), &dst)
			e := apierror.As(err)
			if e == nil || e.Code != apierror.InvalidInput || e.Status() != 400 {
				t.Fatalf("error %v, want 400 INVALID_INPUT", err)
			}
			msg := e.Message
			fe := e.FieldErrors()
			if tt.field != "" {
				if len(fe) != 1 || fe[0].Field != tt.field {
					t.Fatalf("field errors %+v, want one naming %q", fe, tt.field)
				}
				msg = fe[0].Message
			}
			if !strings.Contains(msg, tt.msg) {
				t.Fatalf("message %q, want %q", msg, tt.msg)
			}
		})
	}

	// Members it does not judge: map keys, interfaces, a type's own
	// decoding, promoted fields; and the value is DecodeBytes's.
	body := `{"clientPublicKey":"U","extra":{"Mixed":{"any":[1]}},"nested":{"kind":"k"},"list":[{"key":"a"}],"amount":5}`
	var got, want refresh
	if err := apierror.DecodeStored([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	if err := apierror.DecodeBytes([]byte(body), &want); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("DecodeStored %+v, DecodeBytes %+v (%v)", got, want, err)
	}
	var own struct {
		Raw json.RawMessage `json:"raw"`
	}
	if err := apierror.DecodeStored([]byte(`{"raw":{"whatever":1}}`), &own); err != nil || string(own.Raw) != `{"whatever":1}` {
		t.Fatalf("a type's own decoding judged: %v", err)
	}
	var anything map[string]any
	if err := apierror.DecodeStored([]byte(`{"a":{"b":1}}`), &anything); err != nil {
		t.Fatalf("a map judged: %v", err)
	}
}

// kibRequest is the shape kibBody decodes into.
type kibRequest struct {
	Type     string `json:"type"`
	QuoteID  string `json:"quoteId"`
	Metadata struct {
		Source string   `json:"source"`
		Note   string   `json:"note"`
		Tags   []string `json:"tags"`
	} `json:"metadata"`
	Lines []struct {
		SKU      string  `json:"sku"`
		Amount   float64 `json:"amount"`
		Fee      float64 `json:"fee"`
		Currency string  `json:"currency"`
		Qty      int     `json:"qty"`
	} `json:"lines"`
	Amount         float64 `json:"amount"`
	IdempotencyKey string  `json:"idempotencyKey"`
	AccountID      string  `json:"accountId"`
}

// BenchmarkDecodeBytes measures the strict decoder on a ~1 KiB body; compare
// with BenchmarkJSONUnmarshal, encoding/json's lenient decoding of the same
// bytes into the same type.
func BenchmarkDecodeBytes(b *testing.B) {
	body := kibBody()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		var dst kibRequest
		if err := apierror.DecodeBytes(body, &dst); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkJSONUnmarshal is the reference for BenchmarkDecodeBytes.
func BenchmarkJSONUnmarshal(b *testing.B) {
	body := kibBody()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		var dst kibRequest
		if err := json.Unmarshal(body, &dst); err != nil {
			b.Fatal(err)
		}
	}
}

// stringsRequest is the shape of the verify endpoints' bodies: a few plain
// string members.
type stringsRequest struct {
	Signature       string `json:"signature"`
	SignatureScheme string `json:"signatureScheme,omitempty"`
	ClientPublicKey string `json:"clientPublicKey"`
}

func stringsBody() []byte {
	return []byte(`{"signature":"0x` + strings.Repeat("ab", 65) + `","signatureScheme":"bip322","clientPublicKey":"02` + strings.Repeat("cd", 32) + `"}`)
}

// BenchmarkDecodeBytesStrings measures the strict decoder on a small body of
// plain strings, the shape of a verify request; compare with
// BenchmarkJSONUnmarshalStrings.
func BenchmarkDecodeBytesStrings(b *testing.B) {
	body := stringsBody()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		var dst stringsRequest
		if err := apierror.DecodeBytes(body, &dst); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkJSONUnmarshalStrings is the reference for
// BenchmarkDecodeBytesStrings.
func BenchmarkJSONUnmarshalStrings(b *testing.B) {
	body := stringsBody()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		var dst stringsRequest
		if err := json.Unmarshal(body, &dst); err != nil {
			b.Fatal(err)
		}
	}
}

// flatRequest is a flat request body: strings, numbers, a boolean and a
// null.
type flatRequest struct {
	Type            string  `json:"type"`
	AccountID       string  `json:"accountId"`
	ClientPublicKey string  `json:"clientPublicKey"`
	Signature       string  `json:"signature"`
	Amount          int64   `json:"amount"`
	Rate            float64 `json:"rate"`
	Confirmed       bool    `json:"confirmed"`
	Memo            string  `json:"memo"`
}

func flatBody() []byte {
	return []byte(`{"type":"PAYOUT","accountId":"InternalAccount:019b2d7c-8d0e-7f3a-9c1e-4b5a6d7e8f90","clientPublicKey":"02` +
		strings.Repeat("cd", 32) + `","signature":"0x` + strings.Repeat("ab", 65) + `","amount":125000,"rate":1.0825,"confirmed":true,"memo":null}`)
}

// BenchmarkDecodeBytesFlat measures the strict decoder on a flat object;
// compare with BenchmarkJSONUnmarshalFlat, encoding/json's lenient
// decoding of the same bytes into the same type.
func BenchmarkDecodeBytesFlat(b *testing.B) {
	body := flatBody()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		var dst flatRequest
		if err := apierror.DecodeBytes(body, &dst); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkJSONUnmarshalFlat is the reference for BenchmarkDecodeBytesFlat.
func BenchmarkJSONUnmarshalFlat(b *testing.B) {
	body := flatBody()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		var dst flatRequest
		if err := json.Unmarshal(body, &dst); err != nil {
			b.Fatal(err)
		}
	}
}

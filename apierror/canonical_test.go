package apierror_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"strings"
	"testing"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
)

func mustCanonicalize(tb testing.TB, body string) string {
	tb.Helper()
	out, err := apierror.Canonicalize([]byte(body))
	if err != nil {
		tb.Fatalf("Canonicalize(%q): %v", body, err)
	}
	return string(out)
}

func TestCanonicalizeOutput(t *testing.T) {
	cases := []struct{ in, want string }{
		{`{"b": 1, "a": 2}`, `{"a":2,"b":1}`},
		{" [ 1 , 2 , [ ] , { } ] \n", `[1,2,[],{}]`},
		{`{"z":{"y":[{"b":true,"a":false}],"x":null},"a":"s"}`, `{"a":"s","z":{"x":null,"y":[{"a":false,"b":true}]}}`},
		{`"\u0041\/\"\\"`, `"A/\"\\"`},
		{`"\b\f\n\r\t\u0000\u001F\u007f"`, `"\b\f\n\r\t\u0000\u001f` + "\x7f" + `"`},
		{`"\u00e9\u2028\ud83d\ude00"`, "\"é\u2028😀\""},
		{`"<>&"`, `"<>&"`},
		{`true`, `true`},
		{` null `, `null`},
		// Member names sorted by UTF-16 code units: the example of RFC 8785,
		// section 3.2.3. Byte order would put U+1F600 after U+FB33.
		{`{"\u20ac":"Euro Sign","\r":"Carriage Return","\ufb33":"Hebrew Letter Dalet With Dagesh","1":"One","\ud83d\ude00":"Emoji: Grinning Face","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis"}`,
			"{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u0080\":\"Control\",\"ö\":\"Latin Small Letter O With Diaeresis\",\"€\":\"Euro Sign\",\"😀\":\"Emoji: Grinning Face\",\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"}"},
		{`{"b":1,"a":2,"c":{"e":1,"d":[{"g":1,"f":2}]}}`, `{"a":2,"b":1,"c":{"d":[{"f":2,"g":1}],"e":1}}`},
		{`{"aa":1,"a":2}`, `{"a":2,"aa":1}`},
		{`{"":1,"a":2}`, `{"":1,"a":2}`},
	}
	for _, tc := range cases {
		if got := mustCanonicalize(t, tc.in); got != tc.want {
			t.Errorf("Canonicalize(%s)\n got %s\nwant %s", tc.in, got, tc.want)
		}
	}
}

func TestCanonicalizeNumbers(t *testing.T) {
	cases := []struct{ in, want string }{
		{"0", "0"}, {"-0", "0"}, {"0.000", "0"}, {"-0.0e-5", "0"}, {"0e9999", "0"},
		{"1", "1"}, {"1.0", "1"}, {"1e0", "1"}, {"10e-1", "1"}, {"0.1e1", "1"}, {"1E+0", "1"}, {"100e-2", "1"},
		{"-1", "-1"}, {"-1.50", "-1.5"},
		{"9007199254740993", "9007199254740993"},
		{"9007199254740992", "9007199254740992"},
		{"123456789012345678901", "123456789012345678901"},
		{"1234567890123456789012", "1.234567890123456789012e+21"},
		{"1e20", "100000000000000000000"},
		{"1e21", "1e+21"},
		{"0.000001", "0.000001"},
		{"1e-7", "1e-7"},
		{"1.5e-7", "1.5e-7"},
		{"123.456e3", "123456"},
		{"123.456e1", "1234.56"},
		{"0.1", "0.1"},
		{"0.10000000000000001", "0.10000000000000001"},
		{"1E400", "1e+400"},
		{"-2.5e-400", "-2.5e-400"},
		{"1e0009999", "1e+9999"},
		{"115792089237316195423570985008687907852837564279074904382605163141518161494337", "1.15792089237316195423570985008687907852837564279074904382605163141518161494337e+77"},
	}
	for _, tc := range cases {
		if got := mustCanonicalize(t, tc.in); got != tc.want {
			t.Errorf("Canonicalize(%s) = %s, want %s", tc.in, got, tc.want)
		}
		if got := mustCanonicalize(t, "["+tc.in+"]"); got != "["+tc.want+"]" {
			t.Errorf("Canonicalize([%s]) = %s", tc.in, got)
		}
	}
}

func TestCanonicalizeSameValue(t *testing.T) {
	groups := [][]string{
		{`{"a":1,"b":[true,null]}`, `{ "b" : [ true , null ] , "a" : 1 }`, "{\n\t\"b\": [true, null],\r\n\t\"a\": 1.0\n}"},
		{`{"name":"A"}`, `{"name":"\u0041"}`, `{"\u006eame":"\u0041"}`},
		{`"😀"`, `"\ud83d\ude00"`, `"\uD83D\uDE00"`},
		{`"a/b"`, `"a\/b"`},
		{`"\n"`, `"\u000a"`, `"\u000A"`},
		{`[1]`, `[1.0]`, `[1e0]`, `[10E-1]`, `[0.01e2]`},
		{`[0]`, `[-0]`, `[0.0e10]`},
		{`{"amount":"12.50","fee":12.5}`, `{"fee":1250e-2,"amount":"12.50"}`},
	}
	for _, g := range groups {
		first := mustCanonicalize(t, g[0])
		for _, other := range g[1:] {
			if got := mustCanonicalize(t, other); got != first {
				t.Errorf("%s -> %s, but %s -> %s", g[0], first, other, got)
			}
		}
	}
}

func TestCanonicalizeDifferentValue(t *testing.T) {
	pairs := [][2]string{
		{`9007199254740993`, `9007199254740992`},
		{`0.1`, `0.10000000000000001`},
		{`1e400`, `1e401`},
		{`1`, `"1"`},
		{`1`, `-1`},
		{`1.5`, `15e-2`},
		{`null`, `false`},
		{`[1,2]`, `[2,1]`},
		{`[]`, `{}`},
		{`""`, `null`},
		{`"\u00e9"`, `"e\u0301"`},
		{`"a"`, `"a "`},
		{`"A"`, `"a"`},
		{`{"a":1}`, `{"a":1,"b":null}`},
		{`{"a":{"b":1}}`, `{"a":{"b":"1"}}`},
		{`{"a":[]}`, `{"a":[[]]}`},
		{`""`, `"\u0000"`},
	}
	for _, p := range pairs {
		a, b := mustCanonicalize(t, p[0]), mustCanonicalize(t, p[1])
		if a == b {
			t.Errorf("%s and %s both canonicalize to %s", p[0], p[1], a)
		}
	}
}

func TestCanonicalizeEmpty(t *testing.T) {
	for _, body := range []string{"", " ", "\n\r\t "} {
		out, err := apierror.Canonicalize([]byte(body))
		if err != nil || len(out) != 0 {
			t.Fatalf("Canonicalize(%q) = %q, %v; want empty", body, out, err)
		}
	}
}

func TestCanonicalizeRejects(t *testing.T) {
	nested := func(n int, open, close string) string {
		return strings.Repeat(open, n) + strings.Repeat(close, n)
	}
	deepObject := strings.Repeat(`{"a":`, apierror.MaxCanonicalDepth+1) + "1" + strings.Repeat("}", apierror.MaxCanonicalDepth+1)
	cases := []struct {
		name, body, reason string
		offset             int
	}{
		{"invalid UTF-8 in string", "\"caf\xe9\"", "invalid UTF-8", 4},
		{"invalid UTF-8 outside string", "[1,\xff]", "invalid UTF-8", 3},
		{"UTF-8 encoded surrogate", "\"\xed\xa0\x80\"", "invalid UTF-8", 1},
		{"overlong UTF-8", "\"\xc0\xaf\"", "invalid UTF-8", 1},
		{"byte-order mark", "\ufeff{}", "unexpected character", 0},
		{"lone high surrogate", `"\ud800"`, "unpaired surrogate escape in string", 1},
		{"lone low surrogate", `"x\udc00"`, "unpaired surrogate escape in string", 2},
		{"high surrogate then letter", `"\ud83dx"`, "unpaired surrogate escape in string", 1},
		{"high surrogate then high", `"\ud83d\ud83d"`, "unpaired surrogate escape in string", 1},
		{"high surrogate at end", `"\ud83d`, "unpaired surrogate escape in string", 1},
		{"bad \\u escape", `"\u12g4"`, "invalid \\u escape in string", 1},
		{"short \\u escape", `"\u12"`, "invalid \\u escape in string", 1},
		{"bad low escape", `"\ud83d\uzzzz"`, "invalid \\u escape in string", 7},
		{"invalid escape", `"\x41"`, "invalid escape in string", 1},
		{"control character", "\"a\tb\"", "control character in string", 2},
		{"raw newline", "\"a\nb\"", "control character in string", 2},
		{"unterminated string", `"abc`, "unterminated string", 0},
		{"unterminated escape", `"abc\`, "unterminated string", 0},
		{"duplicate name", `{"a":1,"a":2}`, "duplicate member name", 7},
		{"duplicate name escaped", `{"a":1,"\u0061":2}`, "duplicate member name", 7},
		{"duplicate name unsorted", `{"b":1,"a":2,"b":3}`, "duplicate member name", 13},
		{"duplicate name nested", `[{"x":{"k":1,"j":0,"k":2}}]`, "duplicate member name", 19},
		{"arrays too deep", nested(apierror.MaxCanonicalDepth+1, "[", "]"), "nesting deeper than 64", apierror.MaxCanonicalDepth},
		{"objects too deep", deepObject, "nesting deeper than 64", 5 * apierror.MaxCanonicalDepth},
		{"number too long", "1" + strings.Repeat("0", apierror.MaxNumberLength), "number longer than 512 bytes", 0},
		{"exponent too large", "[1e10000]", "number exponent out of range", 1},
		{"exponent too small", "[1e-10000]", "number exponent out of range", 1},
		{"mantissa pushes exponent out", "10e9999", "number exponent out of range", 0},
		{"fraction pushes exponent out", "-0.01e-9998", "number exponent out of range", 0},
		{"exponent huge", "1e99999999999999999999999", "number exponent out of range", 0},
		{"zero with huge exponent", "0e99999999999999999999999", "number exponent out of range", 0},
		{"leading zero", "01", "data after the JSON value", 1},
		{"leading plus", "+1", "unexpected character", 0},
		{"leading dot", ".5", "unexpected character", 0},
		{"trailing dot", "1.", "invalid number: expected a digit after the decimal point", 2},
		{"bare minus", "-", "invalid number: expected a digit", 1},
		{"minus letter", "-x", "invalid number: expected a digit", 1},
		{"empty exponent", "1e", "invalid number: expected a digit in the exponent", 2},
		{"signed empty exponent", "1e+", "invalid number: expected a digit in the exponent", 3},
		{"NaN", "NaN", "unexpected character", 0},
		{"Infinity", "-Infinity", "invalid number: expected a digit", 1},
		{"single quotes", `{'a':1}`, "expected a member name in object", 1},
		{"unquoted name", `{a:1}`, "expected a member name in object", 1},
		{"missing colon", `{"a" 1}`, "expected : after member name", 5},
		{"trailing comma in object", `{"a":1,}`, "expected a member name in object", 7},
		{"trailing comma in array", `[1,]`, "unexpected character", 3},
		{"missing comma", `[1 2]`, "expected , or ] in array", 3},
		{"object missing comma", `{"a":1 "b":2}`, "expected , or } in object", 7},
		{"unclosed array", `[1`, "unexpected end of input in array", 2},
		{"unclosed object", `{"a":1`, "unexpected end of input in object", 6},
		{"missing value", `{"a":}`, "unexpected character", 5},
		{"value at end", `{"a":`, "unexpected end of input", 5},
		{"two values", `{} {}`, "data after the JSON value", 3},
		{"comment", `{} // x`, "data after the JSON value", 3},
		{"bad literal", `tru`, "invalid literal (expected true)", 0},
		{"misspelled literal", `[nul]`, "invalid literal (expected null)", 1},
		{"capital literal", `True`, "unexpected character", 0},
		{"NUL byte", "\x00", "unexpected character", 0},
		{"form feed whitespace", "\f1", "unexpected character", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := apierror.Canonicalize([]byte(tc.body))
			if out != nil {
				t.Fatalf("output %q returned with an error", out)
			}
			e := apierrortest.Want(t, err, apierror.InvalidInput, tc.reason)
			if err != error(e) {
				t.Fatalf("error %T is not the *apierror.Error itself", err)
			}
			if e.Status() != 400 {
				t.Fatalf("status %d", e.Status())
			}
			if e.Reason() != tc.reason {
				t.Fatalf("reason %q, want %q (message %q)", e.Reason(), tc.reason, e.Message)
			}
			if !strings.Contains(e.Message, tc.reason) {
				t.Fatalf("message %q does not name %q", e.Message, tc.reason)
			}
			if off, _ := e.Details["offset"].(int); off != tc.offset {
				t.Fatalf("offset %v, want %d (message %q)", e.Details["offset"], tc.offset, e.Message)
			}
		})
	}
}

func TestCanonicalizeLimitsAccepted(t *testing.T) {
	depth := apierror.MaxCanonicalDepth
	mustCanonicalize(t, strings.Repeat("[", depth)+strings.Repeat("]", depth))
	mustCanonicalize(t, strings.Repeat(`{"a":`, depth)+"1"+strings.Repeat("}", depth))
	mustCanonicalize(t, "1"+strings.Repeat("0", apierror.MaxNumberLength-1))
	mustCanonicalize(t, "-1e-9999")
	mustCanonicalize(t, "0.1e10000")
	mustCanonicalize(t, "123e-10001")
	mustCanonicalize(t, "0e10500")
	mustCanonicalize(t, "1e"+strings.Repeat("0", 400)+"5")
}

// TestCanonicalizeKeepsValue checks, on a corpus, the properties the fuzz
// target checks: idempotence and the same JSON value as encoding/json sees it.
func TestCanonicalizeKeepsValue(t *testing.T) {
	for _, body := range canonicalSeeds() {
		checkCanonical(t, []byte(body))
	}
}

// checkCanonical asserts the guarantees of Canonicalize on one input.
func checkCanonical(t *testing.T, body []byte) {
	t.Helper()
	out, err := apierror.Canonicalize(body)
	if err != nil {
		var e *apierror.Error
		if !asAPIError(err, &e) || e.Code != apierror.InvalidInput || e.Reason() == "" {
			t.Fatalf("Canonicalize(%q): untyped or wrong error %v", body, err)
		}
		return
	}
	if len(bytes.TrimLeft(body, " \t\r\n")) == 0 {
		if len(out) != 0 {
			t.Fatalf("blank body canonicalized to %q", out)
		}
		return
	}
	if !json.Valid(body) {
		t.Fatalf("accepted invalid JSON %q", body)
	}
	if !json.Valid(out) {
		t.Fatalf("output %q of %q is not valid JSON", out, body)
	}
	again, err := apierror.Canonicalize(out)
	if err != nil || !bytes.Equal(again, out) {
		t.Fatalf("not idempotent: %q -> %q -> %q (%v)", body, out, again, err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, out); err != nil || !bytes.Equal(compact.Bytes(), out) {
		t.Fatalf("output %q is not compact", out)
	}
	in, err1 := decodeExact(body)
	got, err2 := decodeExact(out)
	if err1 != nil || err2 != nil {
		t.Fatalf("encoding/json cannot decode %q (%v) or %q (%v)", body, err1, out, err2)
	}
	if path, ok := sameValue(in, got, "$"); !ok {
		t.Fatalf("value changed at %s: %q -> %q", path, body, out)
	}
}

func asAPIError(err error, target **apierror.Error) bool {
	e, ok := err.(*apierror.Error)
	*target = e
	return ok
}

func decodeExact(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

// sameValue compares decoded JSON values, numbers as exact rationals.
func sameValue(a, b any, path string) (string, bool) {
	switch a := a.(type) {
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok || len(a) != len(bm) {
			return path, false
		}
		for k, av := range a {
			bv, ok := bm[k]
			if !ok {
				return path + "." + k, false
			}
			if p, ok := sameValue(av, bv, path+"."+k); !ok {
				return p, false
			}
		}
		return "", true
	case []any:
		bs, ok := b.([]any)
		if !ok || len(a) != len(bs) {
			return path, false
		}
		for i := range a {
			if p, ok := sameValue(a[i], bs[i], fmt.Sprintf("%s[%d]", path, i)); !ok {
				return p, false
			}
		}
		return "", true
	case json.Number:
		bn, ok := b.(json.Number)
		if !ok {
			return path, false
		}
		ra, ok1 := new(big.Rat).SetString(string(a))
		rb, ok2 := new(big.Rat).SetString(string(bn))
		return path, ok1 && ok2 && ra.Cmp(rb) == 0
	default:
		return path, a == b
	}
}

func canonicalSeeds() []string {
	return []string{
		``, ` `, `{}`, `[]`, `0`, `-0`, `1.0`, `1e0`, `1E+2`, `-12.3400e-10`, `9007199254740993`,
		`123456789012345678901234567890`, `0.0000001234`, `1e21`, `1e-7`, `1e9999`, `10e9999`, `0.01e-9997`, `-9.99e9999`, `"x"`, `true`, `false`, `null`,
		`{"b":1,"a":2}`, `{"a":1,"a":2}`, `{"\u0061":1,"a":2}`, `"\ud800"`, `"\ud83d\ude00"`, "\"caf\xc3\xa9\"", "\"\xff\"",
		`{"€":1,"😀":2,"דּ":3,"\r":4}`, `[1,[2,[3,{"c":{"b":{"a":[]}}}]]]`, `{"nested":{"z":1,"y":{"x":2,"w":3}},"arr":[{"q":1,"p":2}]}`,
		`"\b\f\n\r\t\u0000\u001f\/\\\""`, "{\"a\" : [ 1 , 2 ] }\n", `{"amount":"100.00","currency":"USD","note":"caf\u00e9 ☕"}`,
		`[1.`, `{"a":}`, `[01]`, `{"a":1,}`, "\ufeff{}", strings.Repeat("[", 70) + strings.Repeat("]", 70),
	}
}

// kibBody is a realistic 1 KiB request body: unsorted members, whitespace,
// escapes, non-ASCII and numbers that need normalising.
func kibBody() []byte {
	var b strings.Builder
	b.WriteString("{\n  \"type\": \"QUOTE_EXECUTE\",\n  \"quoteId\": \"Quote:019d5a0e-6b1c-7a53-8d2f-4c3b2a190817\",\n")
	b.WriteString("  \"metadata\": {\"source\": \"mobile\", \"note\": \"caf\\u00e9 \u2615 Fr\u00fchst\u00fcck\", \"tags\": [\"a\", \"b\", \"c\"]},\n")
	b.WriteString("  \"lines\": [\n")
	for i := range 7 {
		if i > 0 {
			b.WriteString(",\n")
		}
		fmt.Fprintf(&b, "    {\"sku\": \"SKU-%04d\", \"amount\": %d.50, \"fee\": 1.0e-2, \"currency\": \"USD\", \"qty\": %d}", i, 100+i, i+1)
	}
	b.WriteString("\n  ],\n  \"amount\": 12345.6700,\n  \"idempotencyKey\": \"7c4a8d09-ca37-4e5b-9c1d-2f0b6a3e8f11\",\n  \"accountId\": \"InternalAccount:019d5a0e-6b1c-7a53-8d2f-4c3b2a190817\"\n}\n")
	return []byte(b.String())
}

// BenchmarkCanonicalize measures Canonicalize on a ~1 KiB body; compare with
// BenchmarkJSONCompact, the standard library's syntax check and whitespace
// removal of the same bytes.
func BenchmarkCanonicalize(b *testing.B) {
	body := kibBody()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := apierror.Canonicalize(body); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkJSONCompact is the reference for BenchmarkCanonicalize:
// encoding/json.Compact of the same body.
func BenchmarkJSONCompact(b *testing.B) {
	body := kibBody()
	var buf bytes.Buffer
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		if err := json.Compact(&buf, body); err != nil {
			b.Fatal(err)
		}
	}
}

func TestKibBody(t *testing.T) {
	body := kibBody()
	if len(body) < 900 || len(body) > 1200 {
		t.Fatalf("benchmark body is %d bytes, want about 1 KiB", len(body))
	}
	checkCanonical(t, body)
}

func ExampleCanonicalize() {
	a, _ := apierror.Canonicalize([]byte(`{"nickname": "caf\u00e9", "amount": 12.50}`))
	b, _ := apierror.Canonicalize([]byte(`{"amount":1250e-2,"nickname":"café"}`))
	fmt.Println(string(a))
	fmt.Println(bytes.Equal(a, b))
	// Output:
	// {"amount":12.5,"nickname":"café"}
	// true
}

// FuzzCanonicalize checks that Canonicalize never panics, rejects only with a
// typed 400 INVALID_INPUT, accepts only valid JSON, and on success writes
// compact valid JSON holding the same value (numbers compared exactly) that
// canonicalizes to itself.
func FuzzCanonicalize(f *testing.F) {
	for _, s := range canonicalSeeds() {
		f.Add([]byte(s))
	}
	f.Add(kibBody())
	f.Fuzz(func(t *testing.T, body []byte) {
		checkCanonical(t, body)
	})
}

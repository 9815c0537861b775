package apierror

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/walletgate/walletgate/apierror/internal/canonjson"
)

// flatName is a named string kind, filled like a string.
type flatName string

// flatSelf decodes itself: a member naming it is the full reading's.
type flatSelf string

func (s *flatSelf) UnmarshalJSON(b []byte) error {
	*s = flatSelf("self:" + string(b))
	return nil
}

// flatKinds has a field of every kind the one-pass reading fills, fields
// it leaves to the full reading, and names that fold onto others.
type flatKinds struct {
	S        string      `json:"s"`
	B        bool        `json:"b"`
	I        int         `json:"i"`
	I8       int8        `json:"i8"`
	I64      int64       `json:"i64"`
	U        uint        `json:"u"`
	U16      uint16      `json:"u16"`
	F        float64     `json:"f"`
	F32      float32     `json:"f32"`
	Named    flatName    `json:"named"`
	NoTag    string      // no tag: the Go name is the member name
	Opt      string      `json:"opt,omitempty"`
	Ptr      *string     `json:"ptr"`
	List     []string    `json:"list"`
	Any      any         `json:"any"`
	Num      json.Number `json:"num"`
	Self     flatSelf    `json:"self"`
	K        string      `json:"k"`
	Accented string      `json:"é"`
	Dash     string      `json:"-"`
	DashName string      `json:"-,"`
	skip     string
}

// flatStrings is the shape of a stamp or an envelope: string members.
type flatStrings struct {
	PublicKey string `json:"publicKey"`
	Scheme    string `json:"scheme"`
	Signature string `json:"signature"`
}

// flatRaw is the shape of a JWT claim set.
type flatRaw map[string]json.RawMessage

// flatEmbedded and flatBadTag are types the one-pass reading does not fill.
type flatEmbedded struct {
	flatStrings
	Extra string `json:"extra"`
}

type flatBadTag struct {
	A string `json:"a\\b"`
	B string
}

// flatTargets makes, for each type, a fresh destination and a prefilled
// one: the one-pass reading must leave untouched what the full reading
// leaves untouched.
var flatTargets = []struct {
	name string
	make func(prefilled bool) any
}{
	{"kinds", func(p bool) any {
		if !p {
			return &flatKinds{}
		}
		s := "ptr"
		return &flatKinds{S: "prev", B: true, I: 7, I8: -3, U: 9, F: 2.5, Named: "n", NoTag: "t", Ptr: &s, List: []string{"l"},
			Any: "a", Num: "4", Self: "x", K: "k", skip: "hidden"}
	}},
	{"strings", func(p bool) any {
		if !p {
			return &flatStrings{}
		}
		return &flatStrings{PublicKey: "prev", Scheme: "prev", Signature: "prev"}
	}},
	{"raw", func(p bool) any {
		if !p {
			return &flatRaw{}
		}
		m := flatRaw{"prev": json.RawMessage(`1`), "s": json.RawMessage(`"old"`)}
		return &m
	}},
	{"nil raw", func(bool) any { var m flatRaw; return &m }},
	{"plain map", func(bool) any { return &map[string]json.RawMessage{} }},
	{"any map", func(bool) any { return &map[string]any{} }},
	{"embedded", func(bool) any { return &flatEmbedded{} }},
	{"bad tag", func(bool) any { return &flatBadTag{} }},
	{"value", func(bool) any { return flatStrings{} }},
	{"nil pointer", func(bool) any { return (*flatStrings)(nil) }},
}

// flatSeeds are flat objects and near misses: every kind and its refusals,
// number forms, escapes, surrogates, invalid UTF-8, names equal under case
// folding, unknown members, nesting, trailing data and member counts.
func flatSeeds() []string {
	var many, most strings.Builder
	many.WriteString("{")
	for i := range canonjson.MaxFlatMembers + 1 {
		if i > 0 {
			many.WriteString(",")
		}
		many.WriteString(`"m` + strings.Repeat("x", i) + `":1`)
		if i == canonjson.MaxFlatMembers-1 {
			most.WriteString(many.String() + "}")
		}
	}
	many.WriteString("}")
	return []string{
		``, ` `, `{}`, ` {} `, `{}x`, `{} {}`, `null`, `[]`, `"s"`, `1`, `{`, `}`,
		`{"s":"a","b":true,"i":-12,"i8":127,"i64":9007199254740993,"u":1,"u16":65535,"f":1.5e3,"f32":3.4e38,"named":"n","NoTag":"x","opt":"o"}`,
		`{"s":"a\u0041\n\"\\\/\b\f\r\t\u001f","é":"\u00e9","k":"k"}`,
		`{"i":1.0}`, `{"i":1e2}`, `{"i":1.5}`, `{"i":-0}`, `{"i":-0.0e5}`, `{"i8":128}`, `{"i8":-129}`, `{"i8":-128}`,
		`{"u":-1}`, `{"u":-0}`, `{"u16":65536}`, `{"i":1e21}`, `{"i":1e20}`, `{"i64":9223372036854775807}`,
		`{"i64":9223372036854775808}`, `{"i64":-9223372036854775808}`, `{"u":18446744073709551615}`, `{"u":18446744073709551616}`,
		`{"f":1e400}`, `{"f":1e9999}`, `{"f32":3.5e38}`, `{"f32":1e-46}`, `{"f":1e-400}`, `{"f":0.1}`, `{"f":-0}`, `{"f":123456789012345678901234567890}`,
		`{"num":1}`, `{"num":"1"}`,
		`{"s":1}`, `{"s":true}`, `{"s":null}`, `{"b":null}`, `{"b":"true"}`, `{"b":0}`, `{"i":"1"}`, `{"i":null}`, `{"i":true}`, `{"f":"x"}`,
		`{"ptr":"x"}`, `{"ptr":null}`, `{"list":[]}`, `{"list":null}`, `{"any":1}`, `{"any":null}`, `{"self":"x"}`, `{"self":null}`,
		`{"skip":"x"}`, `{"Dash":"x"}`, `{"-":"x"}`, `{"opt":"x","Opt":"y"}`,
		`{"S":"x"}`, `{"notag":"x"}`, `{"\u212a":"x"}`, `{"\u017f":"x"}`, `{"K":"x"}`, `{"É":"x"}`, `{"\u00e9":"x"}`,
		`{"publicKey":"02ab","scheme":"SIGNATURE_SCHEME_TK_API_P256","signature":"3006020101020101"}`,
		`{"publicKey":"02ab","PublicKey":"x"}`, `{"PublicKey":"x"}`, `{"publicKe\u0079":"y"}`, `{"publicKey":null,"scheme":1}`,
		`{"s":"a","s":"b"}`, `{"s":"a","\u0073":"b"}`, `{"x":1,"X":2}`, `{"x":1,"x":2}`, `{"k":1,"\u212a":2}`,
		`{"unknown":1}`, `{"unknown":{"a":1}}`, `{"unknown":[1]}`, `{"unknown":"\ud800"}`, `{"unknown":"\ud83d\ude00"}`,
		`{"unknown":{"a":1,"a":2}}`,
		`{"s":"\ud800"}`, `{"s":"\udc00"}`, `{"s":"\ud83d\ude00"}`, `{"s":"\ud83dx"}`, "{\"s\":\"\xff\"}", "{\"s\":\"a\tb\"}",
		`{"s":"\x"}`, `{"s":"\u12g4"}`, "{\"s\":\"\xed\xa0\x80\"}", "{\"\xff\":1}",
		"\ufeff{}", " \t\r\n{ \"s\" : \"a\" , \"b\" : false }\n ", "\f{}", "{}\f", `{"s":"a",}`, `{,}`, `{"s" "a"}`, `{"s":}`,
		`{"s":"a"`, `{"s":"a`, `{"s":tru}`, `{"s":nul}`, `{"b":truex}`, `{"b":True}`, `{"s":"a" "b":1}`, `{"s":'a'}`, `{s:"a"}`,
		`{"i":01}`, `{"i":-}`, `{"i":1.}`, `{"i":1e}`, `{"i":1e+}`, `{"i":+1}`, `{"i":.5}`, `{"i":NaN}`, `{"i":1e10000}`,
		`{"i":1` + strings.Repeat("0", canonjson.MaxNumberLength) + `}`,
		`{"iss":"https://accounts.google.com","aud":"client","sub":"1","email_verified":true,"iat":1700000000,"exp":1.7e9,"nonce":"n","x":null,"f":false}`,
		`{"aud":["a"],"sub":"u"}`, `{"a\"b":"\u0041","\u00e9":"x","n\\":-0.0,"t":"\t"}`,
		`{"":1}`, `{"\u0000":1}`, `{"otp_code":"123456","public_key":"02ab"}`, `{"encappedPublic":"04ab","ciphertext":"cd"}`,
		most.String(), many.String(),
	}
}

// FuzzDecodeFlat decodes every input with the one-pass reading in front
// (DecodeBytes and DecodeStored) and with the full reading alone, into each
// type of flatTargets fresh and prefilled, and requires the same value and
// the same error: status, code, message and details.
func FuzzDecodeFlat(f *testing.F) {
	for _, s := range flatSeeds() {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkFlatLikeFull(t, body)
	})
}

func checkFlatLikeFull(t *testing.T, body []byte) {
	t.Helper()
	for _, target := range flatTargets {
		for _, prefilled := range []bool{false, true} {
			for _, known := range []bool{false, true} {
				checkNames := canonjson.CheckNames
				if known {
					checkNames = canonjson.CheckKnownNames
				}
				got, want := target.make(prefilled), target.make(prefilled)
				gerr := decodeBytes(body, got, known)
				werr := decodeCanonical(body, want, checkNames)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("%q into %s (prefilled %v, stored %v): one pass %#v, full reading %#v", body, target.name, prefilled, known, got, want)
				}
				if d := errorDifference(gerr, werr); d != "" {
					t.Fatalf("%q into %s (prefilled %v, stored %v): %s", body, target.name, prefilled, known, d)
				}
			}
		}
	}
}

// errorDifference names how a and b differ as answers, or is empty.
func errorDifference(a, b error) string {
	if (a == nil) != (b == nil) {
		return "one pass error " + errText(a) + ", full reading error " + errText(b)
	}
	if a == nil {
		return ""
	}
	var ea, eb *Error
	if !errors.As(a, &ea) || !errors.As(b, &eb) {
		return "untyped error: " + a.Error() + " / " + b.Error()
	}
	if ea.Status() != eb.Status() || ea.Code != eb.Code || ea.Message != eb.Message || !reflect.DeepEqual(ea.Details, eb.Details) {
		return "one pass error " + errText(a) + ", full reading error " + errText(b)
	}
	return ""
}

func errText(err error) string {
	if err == nil {
		return "nil"
	}
	b, _ := json.Marshal(err)
	return string(b)
}

// The bodies the three packages decode (a stamp, the two objects of an
// OTP attempt, a claim set) and flat request bodies are read in one pass,
// with whitespace, escapes, every scalar and unknown members.
func TestDecodeFlatTakesFlatObjects(t *testing.T) {
	cases := []struct {
		body  string
		dst   func() any
		known bool
	}{
		{`{"publicKey":"02ab","scheme":"SIGNATURE_SCHEME_TK_API_P256","signature":"3006020101020101"}`, func() any { return &flatStrings{} }, true},
		{" {\n\t\"signature\" : \"30\" ,\r\"publicKe\\u0079\":\"k\", \"extra\":\"x\"} ", func() any { return &flatStrings{} }, false},
		{`{"otp_code":"123456","public_key":"02ab"}`, func() any { return &flatRaw{} }, false},
		{`{"iss":"https://issuer.example","aud":"a","sub":"u","iat":1700000000,"exp":1.7e9,"email_verified":true,"x":null,"n":"\u00e9"}`, func() any { return &flatRaw{} }, false},
		{`{}`, func() any { var m flatRaw; return &m }, false},
		{`{"s":"a\"b","b":true,"i":1e2,"i8":-128,"u":1,"f":0.5,"f32":1,"named":"n","NoTag":"t","é":"e","k":"k","s2":null,"b2":false}`, func() any { return &flatKinds{} }, false},
		{`{"s":"a","i":null,"ptr2":1}`, func() any { return &flatKinds{} }, false},
	}
	for _, tc := range cases {
		dst := tc.dst()
		if !canonjson.DecodeFlat([]byte(tc.body), dst, tc.known) {
			t.Errorf("%s into %T: not read in one pass", tc.body, dst)
		}
		checkFlatLikeFull(t, []byte(tc.body))
	}
}

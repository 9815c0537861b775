package apierror

import (
	"encoding/json"
	"reflect"
	"testing"
)

// The shapes decodeFast handles, and shapes it must leave to encoding/json.
type (
	fastPair struct {
		A string `json:"a"`
		B string `json:"b,omitempty"`
		C string
		d string
		E string `json:"-"`
	}
	fastNamed     string
	fastNamedPair struct {
		K fastNamed `json:"k"`
	}
	fastMixed struct {
		A string `json:"a"`
		N int    `json:"n"`
	}
	fastQuoted struct {
		A string `json:"a,string"`
	}
	fastEmbedded struct {
		fastPair
		Z string `json:"z"`
	}
	fastClaims map[string]json.RawMessage
)

// decodeBoth decodes body with DecodeBytes and with json.Unmarshal of its
// canonical form into fresh values made by mk, and fails unless both give
// the same value and both succeed or both fail.
func decodeBoth[T any](t *testing.T, body string, mk func() *T) {
	t.Helper()
	canon, err := Canonicalize([]byte(body))
	if err != nil || len(canon) == 0 {
		return
	}
	if checkMemberNames(canon, reflect.TypeFor[*T]()) != nil {
		return
	}
	got, want := mk(), mk()
	gotErr := DecodeBytes([]byte(body), got)
	wantErr := json.Unmarshal(canon, want)
	if (gotErr == nil) != (wantErr == nil) {
		t.Fatalf("%T %s: DecodeBytes error %v, json.Unmarshal error %v", got, body, gotErr, wantErr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%T %s: DecodeBytes gave %#v, json.Unmarshal %#v", got, body, got, want)
	}
}

var fastSeeds = []string{
	`{}`, `null`, `[]`, `"x"`, `1`,
	`{"a":"1","b":"2","C":"3","d":"4","E":"5","-":"6"}`,
	`{"a":null,"b":"x"}`,
	`{"a":"\u00e9\n\"\\\u0001","b":"\ud83d\ude00"}`,
	`{"a":1}`, `{"a":true}`, `{"a":{"b":"c"}}`, `{"a":["x"]}`,
	`{"zz":{"a":[1,{"b":null}],"c":"d"},"a":"kept"}`,
	`{"k":"v","n":12}`, `{"k":"v","n":"12"}`,
	`{"a":"\"12\""}`,
	`{"z":"1","a":"2","C":"3"}`,
	`{"iss":"https://example.com","aud":["x"],"exp":1.7e9,"nested":{"a":[true,false,null]},"e\u0301":"x","\u2028":"y"}`,
}

func TestDecodeFastMatchesUnmarshal(t *testing.T) {
	for _, s := range fastSeeds {
		checkDecodeFast(t, s)
	}
}

func FuzzDecodeFast(f *testing.F) {
	for _, s := range fastSeeds {
		f.Add(s)
	}
	f.Fuzz(checkDecodeFast)
}

func checkDecodeFast(t *testing.T, body string) {
	decodeBoth(t, body, func() *fastPair { return &fastPair{A: "old", B: "old", d: "old", E: "old"} })
	decodeBoth(t, body, func() *fastNamedPair { return &fastNamedPair{K: "old"} })
	decodeBoth(t, body, func() *fastMixed { return &fastMixed{A: "old", N: 7} })
	decodeBoth(t, body, func() *fastQuoted { return &fastQuoted{A: "old"} })
	decodeBoth(t, body, func() *fastEmbedded { return &fastEmbedded{} })
	decodeBoth(t, body, func() *fastClaims { return new(fastClaims) })
	decodeBoth(t, body, func() *fastClaims { c := fastClaims{"old": json.RawMessage(`1`)}; return &c })
	decodeBoth(t, body, func() *map[string]json.RawMessage { return new(map[string]json.RawMessage) })
	decodeBoth(t, body, func() *map[string]string { return new(map[string]string) })
}

// A value of the raw map is its own slice: appending to one leaves the
// others as they were.
func TestDecodeFastRawValuesDoNotAlias(t *testing.T) {
	var c fastClaims
	if err := DecodeBytes([]byte(`{"a":"x","b":"y"}`), &c); err != nil {
		t.Fatal(err)
	}
	_ = append(c["a"], 'Z', 'Z', 'Z', 'Z')
	if string(c["b"]) != `"y"` {
		t.Fatalf("b became %s after an append to a", c["b"])
	}
}

func TestDecodeFastPlans(t *testing.T) {
	for _, c := range []struct {
		ptr     reflect.Type
		raw     bool
		structs bool
	}{
		{reflect.TypeFor[*fastPair](), false, true},
		{reflect.TypeFor[*fastNamedPair](), false, true},
		{reflect.TypeFor[*fastClaims](), true, false},
		{reflect.TypeFor[*fastMixed](), false, false},
		{reflect.TypeFor[*fastQuoted](), false, false},
		{reflect.TypeFor[*fastEmbedded](), false, false},
		{reflect.TypeFor[*map[string]string](), false, false},
		{reflect.TypeFor[*json.RawMessage](), false, false},
	} {
		p := fastPlanOf(c.ptr)
		if p.rawMap != c.raw || (p.fields != nil) != c.structs {
			t.Errorf("%v: plan %+v, want raw map %v, string struct %v", c.ptr, p, c.raw, c.structs)
		}
	}
}

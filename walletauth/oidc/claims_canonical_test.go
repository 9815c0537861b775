package oidc

import (
	"bytes"
	"testing"

	"github.com/walletgate/walletgate/apierror"
)

// claimSeeds are claim sets in the shapes parseClaims must read exactly as
// apierror.DecodeBytes does: escaped names and values, nesting, numbers
// that canonicalize, empty objects, and inputs it refuses.
var claimSeeds = []string{
	`{"iss":"https://issuer.example","aud":["a","b"],"sub":"u","iat":1700000000,"exp":1.7e9,"nonce":"n"}`,
	`{}`, ` {"a":{"b":[1,{"c":"}"}]},"d":null,"e":true} `,
	`{"a\"b":"\u0041","\u00e9":"x","n\\":-0.0,"t":"\t"}`,
	`{"a":[[],{},""],"b":"]"}`,
	`{"iss":"i","sub":"s","aud":"a","exp":1.7e9,"email_verified":true,"x":null,"n":"\u00e9"}`,
	`{"a":1,"a":2}`, `{"a":1,"A":2}`, `{"k":1,"\u212a":2}`, `[1]`, `"s"`, `null`, "\f{}", `{"a":}`, ``, `{"a":1}x`,
}

// FuzzParseClaims holds parseClaims to apierror.DecodeBytes into a
// claimSet: the same refusals, the same names and the same value bytes.
func FuzzParseClaims(f *testing.F) {
	for _, s := range claimSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		checkClaimsLikeDecodeBytes(t, payload)
	})
}

func TestParseClaimsLikeDecodeBytes(t *testing.T) {
	for _, s := range claimSeeds {
		checkClaimsLikeDecodeBytes(t, []byte(s))
	}
}

func checkClaimsLikeDecodeBytes(t *testing.T, payload []byte) {
	t.Helper()
	got, gerr := parseClaims(payload)
	trimmed := bytes.TrimLeft(payload, " \t\r\n")
	var want claimSet
	werr := apierror.DecodeBytes(payload, &want)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		werr = apierror.New(apierror.InvalidInput, "not an object")
	}
	if (gerr != nil) != (werr != nil) {
		t.Fatalf("%q: parseClaims error %v, DecodeBytes error %v", payload, gerr, werr)
	}
	if gerr != nil {
		return
	}
	if len(got) != len(want) {
		t.Fatalf("%q: parseClaims read %d members, DecodeBytes %d", payload, len(got), len(want))
	}
	for name, w := range want {
		if g, ok := got[name]; !ok || !bytes.Equal(g, w) {
			t.Fatalf("%q: member %q = %q (present %v), DecodeBytes %q", payload, name, g, ok, w)
		}
	}
}

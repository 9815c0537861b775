package signedretry

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"testing"
)

// plainStampSeeds are stamp objects the one-pass reading accepts, refuses
// or must leave to encoding/json.
var plainStampSeeds = []string{
	`{"publicKey":"02aa","scheme":"SIGNATURE_SCHEME_TK_API_P256","signature":"30"}`,
	` { "signature" : "30" , "scheme":"s", "publicKey":"k", "extra":"x" } `,
	`{"publicKey":"k","scheme":"s","signature":"a","publicKey":"k"}`,
	`{"publicKey":"k","scheme":"s"}`,
	`{"publicKey":"k","scheme":"s","signature":"a","n":1}`,
	`{"publicKey":"k","scheme":"s","signature":"\u0061"}`,
	`{"publicKey":"k","scheme":"s","signature":"a"}x`,
	`{"publicKey":"k","scheme":"s","signature":"a",}`,
	"{\"publicKey\":\"k\",\"scheme\":\"s\",\"signature\":\"\xff\"}",
	`{}`, `[]`, ``, `{"a"}`,
}

// FuzzDecodePlainStamp holds the one-pass reading of a stamp object to the
// token-by-token one: whatever it accepts, encoding/json accepts with the
// same members.
func FuzzDecodePlainStamp(f *testing.F) {
	for _, s := range plainStampSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		fast, ok := decodePlainStamp(raw)
		if !ok {
			return
		}
		slow, err := decodeStampTokens(raw)
		if err != nil || slow != fast {
			t.Fatalf("%q: one pass read %+v, encoding/json %+v, %v", raw, fast, slow, err)
		}
	})
}

// TestPlainStampReadsClientStamps checks that the stamps clients send, as
// NewStamp writes them and with whitespace and unknown members, take the
// one-pass reading, and that the inputs it must not judge are left to
// encoding/json.
func TestPlainStampReadsClientStamps(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	header, err := NewStamp(key, []byte("payload"))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := base64.RawURLEncoding.DecodeString(header)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range [][]byte{raw, []byte(plainStampSeeds[0]), []byte(plainStampSeeds[1])} {
		w, ok := decodePlainStamp(in)
		if !ok {
			t.Fatalf("%s: not read in one pass", in)
		}
		if slow, err := decodeStampTokens(in); err != nil || slow != w {
			t.Fatalf("%s: one pass read %+v, encoding/json %+v, %v", in, w, slow, err)
		}
	}
	for _, s := range plainStampSeeds[2:] {
		if _, ok := decodePlainStamp([]byte(s)); ok {
			t.Errorf("%q read in one pass; it is encoding/json's to judge", s)
		}
	}
}

package signedretry

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/signedretry/stamper"
)

// stampJSONSeeds are stamp objects decodeStampJSON accepts, and objects it
// refuses for each of its checks or because apierror.DecodeBytes does.
var stampJSONSeeds = []string{
	`{"publicKey":"02aa","scheme":"SIGNATURE_SCHEME_TK_API_P256","signature":"30"}`,
	` { "signature" : "30" , "scheme":"s", "publicKey":"k", "extra":"x" } `,
	`{"publicKey":"k","scheme":"s","signature":"\u0061","n":1,"o":{"p":[null]}}`,
	`{"publicKey":"k","scheme":"s","signature":"a","publicKey":"k"}`,
	`{"publicKey":"k","scheme":"s"}`,
	`{"publicKey":"k","scheme":"s","signature":""}`,
	`{"publicKey":null,"scheme":"s","signature":"a"}`,
	`{"publicKey":1,"scheme":"s","signature":"a"}`,
	`{"PublicKey":"k","scheme":"s","signature":"a"}`,
	`{"publicKey":"k","scheme":"s","signature":"a","x":1,"x":2}`,
	`{"publicKey":"k","scheme":"s","signature":"a","x":1,"X":2}`,
	`{"publicKey":"k","scheme":"s","signature":"a"}x`,
	`{"publicKey":"k","scheme":"s","signature":"a",}`,
	"{\"publicKey\":\"k\",\"scheme\":\"s\",\"signature\":\"\xff\"}",
	`{"publicKey":"k","scheme":"s","signature":"\ud800"}`,
	"\f{}", `{}`, `[]`, `null`, ``, `{"a"}`,
}

// FuzzDecodeStampJSON holds decodeStampJSON to apierror.DecodeBytes: it
// accepts only objects DecodeBytes accepts, with the same members, all
// three present as strings, and refuses everything else with a typed 401
// WALLET_SIGNATURE_MALFORMED naming its check.
func FuzzDecodeStampJSON(f *testing.F) {
	for _, s := range stampJSONSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		checkStampJSON(t, raw)
	})
}

func checkStampJSON(t *testing.T, raw []byte) {
	t.Helper()
	got, err := decodeStampJSON(raw)
	var want stampWire
	werr := apierror.DecodeBytes(raw, &want)
	if err != nil {
		if e := apierror.As(err); e == nil || e.Code != apierror.WalletSignatureMalformed || e.Reason() == "" {
			t.Fatalf("%q: untyped or wrong refusal %v", raw, err)
		}
		return
	}
	if werr != nil || got != want {
		t.Fatalf("%q: decodeStampJSON read %+v, DecodeBytes %+v, %v", raw, got, want, werr)
	}
	var members map[string]json.RawMessage
	if apierror.DecodeBytes(raw, &members) != nil {
		t.Fatalf("%q: accepted, but not an object", raw)
	}
	for _, name := range stampMembers {
		if v := members[name]; len(v) == 0 || v[0] != '"' {
			t.Fatalf("%q: accepted with member %s %q", raw, name, v)
		}
	}
}

// TestDecodeStampJSON checks the seeds, and that the stamps clients send,
// as stamper.NewStamp writes them, read as they were written.
func TestDecodeStampJSON(t *testing.T) {
	for _, s := range stampJSONSeeds {
		checkStampJSON(t, []byte(s))
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	header, err := stamper.NewStamp(key, []byte("payload"))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := base64.RawURLEncoding.DecodeString(header)
	if err != nil {
		t.Fatal(err)
	}
	w, err := decodeStampJSON(raw)
	if err != nil {
		t.Fatal(err)
	}
	again, err := json.Marshal(w)
	if err != nil || !bytes.Equal(again, raw) {
		t.Fatalf("read %s as %+v, written again as %s (%v)", raw, w, again, err)
	}
}

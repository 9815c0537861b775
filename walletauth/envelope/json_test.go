package envelope

import (
	"encoding/json"
	"testing"

	"github.com/walletgate/walletgate/apierror"
)

// objectSeeds are the objects of an OTP attempt as clients send them, and
// the objects decodeObject refuses, as apierror.DecodeBytes does (escapes
// it reads, numbers, nesting, repeated, case-colliding or case-folded
// names, invalid UTF-8, trailing data) or because they are no object.
var objectSeeds = []struct {
	data string
	ok   bool
}{
	{`{"encappedPublic":"04ab","ciphertext":"cd"}`, true},
	{` { "otp_code" : "123456" , "public_key":"02ab", "extra":"é" } `, true},
	{`{"ciphertext":"cd"}`, true},
	{`{"encappedPublic":"04ab","ciphertext":"c\u0064","x":{"y":[1]}}`, true},
	{`{"encappedPublic":"04ab","ciphertext":1}`, false},
	{`{"encappedPublic":"a","encappedPublic":"b"}`, false},
	{`{"x":"a","X":"b"}`, false},
	{`{"EncappedPublic":"a","ciphertext":"b"}`, false},
	{`{"OTP_code":"1","public_key":"k"}`, false},
	{`{"otp_ｃode":"1"}`, true},
	{"{\"otp_code\":\"\xff\"}", false},
	{`{"otp_code":"\udc00"}`, false},
	{`{"otp_code":"1"}x`, false},
	{`{"otp_code":"1","x":1e400}`, true},
	{`{"otp_code":"1",}`, false},
	{"\f{}", false},
	{"\u00a0{}", false},
	{"{}\u00a0", false},
	{`null`, false},
	{` null`, false},
	{`[]`, false},
	{``, false},
	{`{}`, true},
	{`{"a"}`, false},
}

// FuzzDecodeObject holds decodeObject to apierror.DecodeBytes: it accepts
// exactly the JSON objects DecodeBytes accepts, with the same fields, for
// both objects of an OTP attempt.
func FuzzDecodeObject(f *testing.F) {
	for _, s := range objectSeeds {
		f.Add([]byte(s.data))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkObjectLikeDecodeBytes(t, data)
	})
}

// checkObjectLikeDecodeBytes reports whether decodeObject accepted data
// as both objects of an OTP attempt.
func checkObjectLikeDecodeBytes(t *testing.T, data []byte) bool {
	t.Helper()
	var object map[string]json.RawMessage
	isObject := apierror.DecodeBytes(data, &object) == nil && object != nil
	var gotMsg, wantMsg clientMessage
	okMsg := decodeObject(data, &gotMsg)
	errMsg := apierror.DecodeBytes(data, &wantMsg)
	if okMsg != (isObject && errMsg == nil) || gotMsg != wantMsg {
		t.Fatalf("%q: decodeObject %v %+v, DecodeBytes %+v, %v (an object: %v)", data, okMsg, gotMsg, wantMsg, errMsg, isObject)
	}
	var gotP, wantP otpPayload
	okP := decodeObject(data, &gotP)
	errP := apierror.DecodeBytes(data, &wantP)
	if okP != (isObject && errP == nil) || gotP != wantP {
		t.Fatalf("%q: decodeObject %v %+v, DecodeBytes %+v, %v (an object: %v)", data, okP, gotP, wantP, errP, isObject)
	}
	return okMsg && okP
}

// TestDecodeObject checks the seeds against DecodeBytes and the objects
// clients send are read.
func TestDecodeObject(t *testing.T) {
	for _, s := range objectSeeds {
		if read := checkObjectLikeDecodeBytes(t, []byte(s.data)); read != s.ok {
			t.Errorf("%q read: %v, want %v", s.data, read, s.ok)
		}
	}
}

package envelope

import (
	"bytes"
	"testing"

	"github.com/walletgate/walletgate/apierror"
)

// plainObjectSeeds are objects decodePlainObject reads, and objects it must
// leave to apierror.DecodeBytes (escapes, numbers, nesting, repeated,
// case-colliding or case-folded names, non-ASCII names, trailing data).
var plainObjectSeeds = []string{
	`{"encappedPublic":"04ab","ciphertext":"cd"}`,
	` { "otp_code" : "123456" , "public_key":"02ab", "extra":"é" } `,
	`{"ciphertext":"cd"}`,
	`{"encappedPublic":"04ab","ciphertext":"c\u0064"}`,
	`{"encappedPublic":"04ab","ciphertext":1}`,
	`{"encappedPublic":"04ab","ciphertext":"cd","x":{}}`,
	`{"encappedPublic":"a","encappedPublic":"b"}`,
	`{"x":"a","X":"b"}`,
	`{"EncappedPublic":"a","ciphertext":"b"}`,
	`{"OTP_code":"1","public_key":"k"}`,
	`{"otp_ｃode":"1"}`,
	"{\"otp_code\":\"\xff\"}",
	`{"otp_code":"1"}x`, `{"otp_code":"1",}`, `{}`, `{"a"}`,
}

// FuzzDecodePlainObject holds the one-pass reading of the OTP attempt's
// objects to apierror.DecodeBytes: whatever it accepts, DecodeBytes
// accepts with the same fields.
func FuzzDecodePlainObject(f *testing.F) {
	for _, s := range plainObjectSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkPlainObjectLikeDecodeBytes(t, data)
	})
}

func checkPlainObjectLikeDecodeBytes(t *testing.T, data []byte) bool {
	t.Helper()
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return false
	}
	var fastMsg, slowMsg clientMessage
	okMsg := decodePlainObject(data, [2]string{"encappedPublic", "ciphertext"}, [2]*string{&fastMsg.EncappedPublic, &fastMsg.Ciphertext})
	if okMsg {
		if err := apierror.DecodeBytes(data, &slowMsg); err != nil || slowMsg != fastMsg {
			t.Fatalf("%q: one pass read %+v, DecodeBytes %+v, %v", data, fastMsg, slowMsg, err)
		}
	}
	var fastP, slowP otpPayload
	okP := decodePlainObject(data, [2]string{"otp_code", "public_key"}, [2]*string{&fastP.OTPCode, &fastP.PublicKey})
	if okP {
		if err := apierror.DecodeBytes(data, &slowP); err != nil || slowP != fastP {
			t.Fatalf("%q: one pass read %+v, DecodeBytes %+v, %v", data, fastP, slowP, err)
		}
	}
	return okMsg && okP
}

// TestDecodePlainObject checks the seeds against DecodeBytes, that the
// objects clients send take the one pass and that the others do not.
func TestDecodePlainObject(t *testing.T) {
	for i, s := range plainObjectSeeds {
		read := checkPlainObjectLikeDecodeBytes(t, []byte(s))
		if want := i < 3; read != want {
			t.Errorf("%q read in one pass: %v, want %v", s, read, want)
		}
	}
}

package webhooksig_test

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/walletgate/walletgate/apierror/webhooksig"
)

// FuzzVerify checks that VerifyBytes never panics, refuses with a
// *VerifyError and a 400 or 401 status, and that what it accepts is a
// well-formed delivery of exactly the body given.
func FuzzVerify(f *testing.F) {
	s := testSigner(f)
	v := testVerifier(f, webhooksig.VerifierConfig{})
	seed := func(body []byte, offset int64) {
		h, err := s.Sign(body)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(h, body, offset)
	}
	seed(testBody, 0)
	seed(testBody, 301)
	seed(envelope(testID, "2026-11-23T12:04:00+00:00"), -60)
	seed([]byte(`{"id":"`+testID+`","type":"T","timestamp":"2026-11-23T12:00:00Z","data":{},"x":[]}`), 0)
	seed([]byte(`{"id":"`+testID+`","id":"`+testID+`","type":"T","timestamp":"2026-11-23T12:00:00Z","data":{}}`), 0)
	seed([]byte(`{"id":"Webhook:x","type":"T","timestamp":"2026-11-23T12:00:00Z","data":{}}`), 0)
	seed([]byte(`{"id":"`+testID+`","type":"T","timestamp":"2026-11-23T12:00:00Z","data":null}`), 0)
	seed([]byte(`[]`), 0)
	seed([]byte{}, 0)
	f.Add(`{"version":1,"signature":"MAYCAQECAQE="}`, testBody, int64(0))
	f.Add(``, testBody, int64(0))
	f.Fuzz(func(t *testing.T, header string, body []byte, offset int64) {
		now := t0.Add(time.Duration(offset) * time.Second)
		d, err := v.VerifyBytes(header, body, now)
		if err != nil {
			var ve *webhooksig.VerifyError
			if !errors.As(err, &ve) || (ve.Status() != 400 && ve.Status() != 401) {
				t.Fatalf("error %v", err)
			}
			return
		}
		if !bytes.Equal(d.Body, body) || len(d.ID) != len(testID) || d.Type == "" || len(d.Data) == 0 || d.Data[0] != '{' {
			t.Fatalf("accepted %+v", d)
		}
		if age := now.Sub(d.Timestamp); age > webhooksig.DefaultFreshnessWindow || age < -webhooksig.MaxClockSkew {
			t.Fatalf("accepted a timestamp %v from now", age)
		}
	})
}

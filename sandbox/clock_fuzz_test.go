package sandbox

import (
	"fmt"
	"testing"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
)

// FuzzParseClockAdvance: the reader of the POST /sandbox/clock/advance body
// never panics; it refuses only with a typed 400 INVALID_INPUT whose one
// field error names seconds, and what it accepts is a whole number of
// seconds from one second to MaxClockAdvance, which it accepts again when
// written back as {"seconds": n}.
func FuzzParseClockAdvance(f *testing.F) {
	for _, s := range []string{
		`{"seconds":1}`, `{"seconds":60}`, `{"seconds":60.0}`, `{"seconds":6e1}`, `{ "seconds" : 2592000 }`,
		`{"seconds":2592001}`, `{"seconds":0}`, `{"seconds":-0}`, `{"seconds":-1}`, `{"seconds":1.5}`, `{"seconds":1e30}`,
		`{"seconds":"60"}`, `{"seconds":null}`, `{"seconds":true}`, `{"seconds":[]}`, `{"seconds":{}}`,
		`{"seconds":60,"other":1}`, `{"Seconds":60}`, `{"seconds":1,"seconds":2}`, `{"seconds":9223372036854775807}`,
		`{}`, `[]`, `null`, `60`, `"x"`, `{`, ``, `{"seconds":60}{}`, "{\"seconds\":\xff}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		d, err := parseClockAdvance(body)
		if err != nil {
			e := apierrortest.WantFields(t, err, apierror.InvalidInput, "seconds")
			if e.Code.Status() != 400 {
				t.Fatalf("status %d", e.Code.Status())
			}
			return
		}
		if d < time.Second || d > MaxClockAdvance || d%time.Second != 0 {
			t.Fatalf("accepted %s from %q", d, body)
		}
		again, err := parseClockAdvance(fmt.Appendf(nil, `{"seconds":%d}`, d/time.Second))
		if err != nil || again != d {
			t.Fatalf("accepted %s from %q but not its own spelling: %s %v", d, body, again, err)
		}
	})
}

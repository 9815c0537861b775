package idempotency_test

import (
	"strings"
	"testing"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/storage/idempotency"
)

// FuzzParseKey: ParseKey never panics; it accepts exactly the hyphenated
// 36-character hex form, returns it in lower case (a fixed point), and
// rejects everything else with 400 INVALID_INPUT.
func FuzzParseKey(f *testing.F) {
	for _, s := range []string{key, strings.ToUpper(key), "", "not-a-uuid", "{" + key + "}", key + " ",
		strings.ReplaceAll(key, "-", "_"), "5b0d6a7e-5f38-4e0f-8b0b-0e7c0c0f2a1\u00e9"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, err := idempotency.ParseKey(in)
		if err != nil {
			if e := apierror.As(err); e == nil || e.Code != apierror.InvalidInput || e.Status() != 400 {
				t.Fatalf("ParseKey(%q): %v, want 400 INVALID_INPUT", in, err)
			}
			if wellFormed(in) {
				t.Fatalf("ParseKey(%q) rejected a well-formed key", in)
			}
			return
		}
		if !wellFormed(in) || got != strings.ToLower(in) {
			t.Fatalf("ParseKey(%q) = %q", in, got)
		}
		if again, err := idempotency.ParseKey(got); err != nil || again != got {
			t.Fatalf("ParseKey(%q) = %q, %v; want a fixed point", got, again, err)
		}
	})
}

// wellFormed is the reference: 8-4-4-4-12 hex digits.
func wellFormed(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range []byte(s) {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !strings.ContainsRune("0123456789abcdefABCDEF", rune(c)) {
				return false
			}
		}
	}
	return true
}

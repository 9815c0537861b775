package apierror

import (
	"testing"

	"github.com/walletgate/walletgate/apierror/internal/canonjson"
)

// A code can be defined once: a second definition is a programming error
// caught when the package initialises.
func TestDefineTwicePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("defining INVALID_INPUT again did not panic")
		}
	}()
	def(400, "INVALID_INPUT")
}

func TestJSONKindFallback(t *testing.T) {
	if got := jsonKind("uintptr"); got != "a valid value" {
		t.Fatalf("jsonKind(uintptr) = %q", got)
	}
}

// The documented limits are the ones the canonicalizer enforces.
func TestLimitsAreTheCanonicalizers(t *testing.T) {
	if MaxCanonicalDepth != canonjson.MaxCanonicalDepth || MaxNumberLength != canonjson.MaxNumberLength ||
		MaxNumberExponent != canonjson.MaxNumberExponent {
		t.Fatal("apierror's limits differ from canonjson's")
	}
}

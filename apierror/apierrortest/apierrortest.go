// Package apierrortest is the one error assertion of walletgate's tests, and
// of hosts' tests that check what walletgate answers.
//
// Every refusal walletgate returns is an [*apierror.Error] whose code fixes
// its HTTP status, so asserting the code asserts the status too; Want also
// checks the status against the code's, so a test states both in one line.
package apierrortest

import (
	"errors"
	"slices"
	"testing"

	"github.com/walletgate/walletgate/apierror"
)

// Want fails tb unless err is (or wraps) an [*apierror.Error] with the given
// code. When reason is not empty, details.reason must equal it. It returns
// the error for further checks.
func Want(tb testing.TB, err error, code apierror.Code, reason string) *apierror.Error {
	tb.Helper()
	var e *apierror.Error
	if !errors.As(err, &e) {
		tb.Fatalf("error %v (%T), want %d %s", err, err, code.Status(), code)
	}
	if e.Code != code {
		tb.Fatalf("error %d %s (%v), want %d %s", e.Code.Status(), e.Code, e, code.Status(), code)
	}
	if reason != "" && e.Reason() != reason {
		tb.Fatalf("%s reason %q, want %q", code, e.Reason(), reason)
	}
	return e
}

// WantFields is [Want] for a validation failure: err must carry code and
// exactly the field errors named, in any order.
func WantFields(tb testing.TB, err error, code apierror.Code, fields ...string) *apierror.Error {
	tb.Helper()
	e := Want(tb, err, code, "")
	var got []string
	for _, f := range e.FieldErrors() {
		got = append(got, f.Field)
	}
	slices.Sort(got)
	want := slices.Clone(fields)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		tb.Fatalf("%s field errors %q, want %q", code, got, want)
	}
	return e
}

// OneWins is the assertion of a race: of the results errs of concurrent
// attempts at one thing that only one may do, exactly one is nil and every
// other one is an [*apierror.Error] with code (the loser's answer). what
// names the race in failure messages.
func OneWins(tb testing.TB, what string, errs []error, code apierror.Code) {
	tb.Helper()
	wins := 0
	for i, err := range errs {
		if err == nil {
			wins++
			continue
		}
		var e *apierror.Error
		if !errors.As(err, &e) || e.Code != code {
			tb.Fatalf("%s: attempt %d failed with %v (%T), want nil or %d %s", what, i, err, err, code.Status(), code)
		}
	}
	if wins != 1 {
		tb.Fatalf("%s: %d of %d attempts succeeded, want exactly 1", what, wins, len(errs))
	}
}

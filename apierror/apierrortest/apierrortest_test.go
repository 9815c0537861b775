package apierrortest_test

import (
	"fmt"
	"testing"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
)

func TestWant(t *testing.T) {
	err := fmt.Errorf("wrapped: %w", apierror.Unauthenticated("request id expired"))
	e := apierrortest.Want(t, err, apierror.Unauthorized, "request id expired")
	if e.Code.Status() != 401 {
		t.Fatalf("status %d", e.Code.Status())
	}
	v := apierror.New(apierror.InvalidInput, "bad")
	v.Details = map[string]any{"errors": []apierror.FieldError{{Field: "b"}, {Field: "a"}}}
	apierrortest.WantFields(t, v, apierror.InvalidInput, "a", "b")
}

func TestOneWins(t *testing.T) {
	lost := apierror.New(apierror.Conflict, "taken")
	apierrortest.OneWins(t, "race", []error{lost, nil, fmt.Errorf("wrapped: %w", lost)}, apierror.Conflict)
}

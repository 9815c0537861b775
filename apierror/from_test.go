package apierror_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/storage"
)

// From is the one mapping of store and helper failures: typed errors pass
// through, a lost race is 409 CONFLICT (retry), everything else is 500 with
// its cause kept for the host, and nil stays nil.
func TestFrom(t *testing.T) {
	if err := apierror.From(nil); err != nil {
		t.Fatalf("From(nil) = %v, want nil", err)
	}

	typed := apierror.New(apierror.ReferenceNotFound, "account a not found")
	if got := apierror.From(fmt.Errorf("lookup: %w", typed)); got != typed {
		t.Fatalf("From(wrapped *Error) = %v, want the *Error itself", got)
	}

	for _, sentinel := range []error{storage.ErrConflict, storage.ErrDuplicate} {
		cause := fmt.Errorf("postgres: update account a: %w", sentinel)
		err := apierror.From(cause)
		apierrortest.Want(t, err, apierror.Conflict, "changed concurrently; retry")
		if !errors.Is(err, sentinel) {
			t.Fatalf("From(%v) lost its cause", cause)
		}
	}

	for _, cause := range []error{storage.ErrNotFound, storage.ErrExpired, errors.New("connection reset")} {
		err := apierror.From(cause)
		apierrortest.Want(t, err, apierror.InternalError, "")
		if !errors.Is(err, cause) {
			t.Fatalf("From(%v) lost its cause", cause)
		}
	}
}

// TestRefusal: a host's refusal is answered as the host chose it when it
// is (or wraps) an *Error, as an unknown id when it is plain, and not at
// all when nil.
func TestRefusal(t *testing.T) {
	hidden := func() error { return apierror.New(apierror.ReferenceNotFound, "credential x not found") }
	if err := apierror.Refusal(nil, hidden); err != nil {
		t.Fatalf("nil refusal: %v", err)
	}
	e := apierrortest.Want(t, apierror.Refusal(errors.New("host: another platform's"), hidden), apierror.ReferenceNotFound, "")
	if e.Message != "credential x not found" {
		t.Fatalf("a plain refusal says %q", e.Message)
	}
	apierrortest.Want(t, apierror.Refusal(fmt.Errorf("host: %w", apierror.New(apierror.Forbidden, "no")), hidden), apierror.Forbidden, "")
}

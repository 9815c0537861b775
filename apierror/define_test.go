package apierror_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
)

// TestDefine: a host's code is written, read back and looked up like the
// service's, and every name or status that could be mistaken for another
// code is refused.
func TestDefine(t *testing.T) {
	funds, err := apierror.Define(http.StatusConflict, "HOST_TEST_INSUFFICIENT_FUNDS")
	if err != nil {
		t.Fatal(err)
	}
	if funds.Status() != 409 || funds.String() != "HOST_TEST_INSUFFICIENT_FUNDS" {
		t.Fatalf("code %s with status %d", funds, funds.Status())
	}
	if got, ok := apierror.LookupCode("HOST_TEST_INSUFFICIENT_FUNDS"); !ok || got != funds {
		t.Fatalf("LookupCode: %v %v", got, ok)
	}
	again, err := apierror.Define(http.StatusConflict, "HOST_TEST_INSUFFICIENT_FUNDS")
	if err != nil || again != funds {
		t.Fatalf("defining the same code again: %v, %v", again, err)
	}
	for _, c := range apierror.Codes() {
		if c == funds {
			t.Fatal("Codes lists a host's code among the service's")
		}
	}

	// Written and decoded as a client receives it.
	w := httptest.NewRecorder()
	apierror.Write(w, apierror.New(funds, "balance %d is below %d", 5, 10).WithDetail("field", "amount"))
	if w.Code != 409 {
		t.Fatalf("status %d", w.Code)
	}
	var got apierror.Error
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
		t.Fatalf("decoding %s: %v", w.Body, err)
	}
	apierrortest.Want(t, &got, funds, "")
	if got.Details["field"] != "amount" {
		t.Fatalf("details %v", got.Details)
	}

	for _, tc := range []struct {
		status int
		name   string
		want   string
	}{
		{409, "CONFLICT", "is the service's (status 409)"},
		{402, "INVALID_INPUT", "is the service's (status 400)"},
		{409, "HOST_TEST_INSUFFICIENT_FUNDS", "already defined with status 409, not 402"},
		{200, "HOST_TEST_OK", "status 200 is not a client or server error"},
		{600, "HOST_TEST_BIG", "status 600"},
		{400, "", "is not 1 to 64 uppercase"},
		{400, "lower_case", "is not 1 to 64 uppercase"},
		{400, "_LEADING", "is not 1 to 64 uppercase"},
		{400, "9LIVES", "is not 1 to 64 uppercase"},
		{400, "SPACE IN", "is not 1 to 64 uppercase"},
		{400, "ÜBER", "is not 1 to 64 uppercase"},
		{400, strings.Repeat("A", 65), "is not 1 to 64 uppercase"},
	} {
		status := tc.status
		if tc.name == "HOST_TEST_INSUFFICIENT_FUNDS" {
			status = 402
		}
		c, err := apierror.Define(status, tc.name)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Define(%d, %.20q) = %v, %v; want an error containing %q", status, tc.name, c, err, tc.want)
		}
		if !c.IsZero() {
			t.Errorf("Define(%d, %.20q) returned the code %s with its error", status, tc.name, c)
		}
	}
	if c, _ := apierror.LookupCode("CONFLICT"); c != apierror.Conflict {
		t.Fatal("a refused definition changed a service code")
	}
}

// TestDefineConcurrent: hosts define and look up codes from many
// goroutines; one name is one code.
func TestDefineConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	codes := make([]apierror.Code, 16)
	for i := range codes {
		wg.Go(func() {
			c, err := apierror.Define(http.StatusPaymentRequired, "HOST_TEST_RACE")
			if err != nil {
				t.Error(err)
			}
			codes[i] = c
			if _, ok := apierror.LookupCode(fmt.Sprintf("HOST_TEST_RACE_%d", i)); ok {
				t.Error("LookupCode found a code nobody defined")
			}
		})
	}
	wg.Wait()
	for _, c := range codes {
		if c != codes[0] {
			t.Fatalf("one name gave two codes: %v and %v", c, codes[0])
		}
	}
}

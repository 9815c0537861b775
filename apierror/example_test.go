package apierror_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/walletgate/walletgate/apierror"
)

// A submit endpoint reports every invalid field at once.
func ExampleValidation() {
	var v apierror.Validation
	v.Add("fullName", apierror.Length(1, 255), "is required")
	v.Add(apierror.Path("owners", 1, "birthDate"), apierror.Format("date"), "must be YYYY-MM-DD")

	rec := httptest.NewRecorder()
	apierror.Write(rec, v.Err())
	fmt.Println(rec.Code)
	fmt.Print(rec.Body)
	// Output:
	// 400
	// {"status":400,"code":"INVALID_INPUT","message":"2 invalid fields: fullName, owners[1].birthDate","details":{"errors":[{"field":"fullName","constraint":{"minLength":1,"maxLength":255},"message":"is required"},{"field":"owners[1].birthDate","constraint":{"format":"date"},"message":"must be YYYY-MM-DD"}]}}
}

// Authentication failures name the failed check in details.reason.
func ExampleUnauthenticated() {
	err := apierror.Unauthenticated("Invalid OTP code")
	fmt.Println(err.Status(), err.Code, err.Reason())
	// Output: 401 UNAUTHORIZED Invalid OTP code
}

// Rate limits carry Retry-After.
func ExampleTooManyRequests() {
	rec := httptest.NewRecorder()
	apierror.Write(rec, apierror.TooManyRequests(30*time.Second))
	fmt.Println(rec.Code, rec.Header().Get("Retry-After"))
	// Output: 429 30
}

// Causes of internal failures stay on the server.
func ExampleWrite_internal() {
	rec := httptest.NewRecorder()
	apierror.Write(rec, fmt.Errorf("query sessions: connection to 10.0.0.7 refused"))
	fmt.Print(rec.Body)
	// Output: {"status":500,"code":"INTERNAL_ERROR","message":"internal error"}
}

// A host defines the codes of its own refusals once, when it starts; a name
// the service uses is refused.
func ExampleDefine() {
	insufficientFunds, err := apierror.Define(http.StatusConflict, "INSUFFICIENT_FUNDS")
	if err != nil {
		panic(err)
	}
	e := apierror.New(insufficientFunds, "balance %d is below the payout's %d", 500, 1000).WithDetail("field", "amount")
	fmt.Println(e.Status(), e.Code)

	_, err = apierror.Define(http.StatusConflict, "CONFLICT")
	fmt.Println(err)
	// Output:
	// 409 INSUFFICIENT_FUNDS
	// apierror: code CONFLICT is the service's (status 409); a host code needs a name of its own
}

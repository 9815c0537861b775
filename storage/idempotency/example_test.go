package idempotency_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/walletgate/walletgate/storage/idempotency"
	"github.com/walletgate/walletgate/storage/memory"
)

// A payment route behind the middleware: the repeat of a request with the
// same Idempotency-Key is answered from the store, and the payment runs once.
func ExampleOnce_Middleware() {
	payments := 0
	pay := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		payments++
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"payment":%d}`, payments)
	})
	once, err := idempotency.New(idempotency.Config{Store: memory.New()})
	if err != nil {
		panic(err)
	}
	platform := func(r *http.Request) string { return "Platform:demo" } // in practice: the authenticated caller
	h, err := once.Middleware(platform, pay)
	if err != nil {
		panic(err)
	}

	for range 2 {
		r := httptest.NewRequest("POST", "/payments", strings.NewReader(`{"amount":100}`))
		r.Header.Set(idempotency.Header, "5b0d6a7e-5f38-4e0f-8b0b-0e7c0c0f2a10")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		fmt.Printf("%d %s replayed=%q\n", w.Code, w.Body.String(), w.Header().Get(idempotency.ReplayedHeader))
	}
	fmt.Println("payments made:", payments)
	// Output:
	// 201 {"payment":1} replayed=""
	// 201 {"payment":1} replayed="true"
	// payments made: 1
}

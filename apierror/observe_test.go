package apierror_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/operation/telemetrytest"
)

// TestObserve: a 5xx logs its cause once at Error with the request id, a
// 4xx at Debug with its code and reason; the caller's well-formed
// X-Request-Id is kept and echoed, any other is replaced; an Observe inside
// another logs nothing of its own; a 5xx written without Write logs at
// Error without a cause; the request body is never logged.
func TestObserve(t *testing.T) {
	const body = `{"encryptedOtpBundle":"very-secret-bundle"}`
	serve := func(h http.Handler, id string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, "/x", strings.NewReader(body))
		if id != "" {
			r.Header.Set(apierror.RequestIDHeader, id)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	cause := errors.New("pq: connection refused")
	failing := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if apierror.RequestID(r.Context()) == "" {
			t.Error("no request id in the handler's context")
		}
		apierror.Write(w, apierror.Internal(cause))
	})

	t.Run("5xx", func(t *testing.T) {
		log := telemetrytest.New(t)
		w := serve(apierror.Observe(failing, log.Logger), "req-1")
		if w.Code != 500 || w.Header().Get(apierror.RequestIDHeader) != "req-1" {
			t.Fatalf("answer %d, X-Request-Id %q", w.Code, w.Header().Get(apierror.RequestIDHeader))
		}
		got := log.Lines()
		if len(got) != 1 || !strings.HasPrefix(got[0], "ERROR request failed request_id=req-1 code=INTERNAL_ERROR") ||
			!strings.Contains(got[0], "error=pq: connection refused") {
			t.Fatalf("records %q", got)
		}
		if strings.Contains(w.Body.String(), "connection refused") {
			t.Fatal("the cause reached the client")
		}
	})
	t.Run("nested", func(t *testing.T) {
		outer, inner := telemetrytest.New(t), telemetrytest.New(t)
		serve(apierror.Observe(apierror.Observe(failing, inner.Logger), outer.Logger), "")
		if len(outer.Lines()) != 1 || len(inner.Lines()) != 0 {
			t.Fatalf("outer %q, inner %q", outer.Lines(), inner.Lines())
		}
	})
	t.Run("buffered", func(t *testing.T) {
		// A middleware between the two buffers the answer, so the outer
		// Observe cannot see what Write reports: the inner one logs it,
		// with the outer one's request id, and the outer one adds nothing.
		buffer := func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				rec := httptest.NewRecorder()
				next.ServeHTTP(rec, r)
				w.WriteHeader(rec.Code)
				_, _ = w.Write(rec.Body.Bytes())
			})
		}
		outer, inner := telemetrytest.New(t), telemetrytest.New(t)
		serve(apierror.Observe(buffer(apierror.Observe(failing, inner.Logger)), outer.Logger), "req-7")
		got := inner.Lines()
		if len(outer.Lines()) != 0 || len(got) != 1 || !strings.Contains(got[0], "request_id=req-7") || !strings.Contains(got[0], "error=pq:") {
			t.Fatalf("outer %q, inner %q", outer.Lines(), got)
		}
	})
	t.Run("4xx", func(t *testing.T) {
		log := telemetrytest.New(t)
		serve(apierror.Observe(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			apierror.Write(w, apierror.Unauthenticated("Invalid OTP code"))
		}), log.Logger), "")
		got := log.Lines()
		if len(got) != 1 || !strings.HasPrefix(got[0], "DEBUG request refused request_id=") ||
			!strings.Contains(got[0], "code=UNAUTHORIZED") || !strings.Contains(got[0], "reason=Invalid OTP code") {
			t.Fatalf("records %q", got)
		}
	})
	t.Run("5xx without Write", func(t *testing.T) {
		log := telemetrytest.New(t)
		serve(apierror.Observe(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusBadGateway)
		}), log.Logger), "")
		got := log.Lines()
		if len(got) != 1 || !strings.HasPrefix(got[0], "ERROR request failed") || !strings.Contains(got[0], "status_code=502") {
			t.Fatalf("records %q", got)
		}
	})
	t.Run("ids", func(t *testing.T) {
		for _, id := range []string{"", "has space", strings.Repeat("a", 65), "a\nb", "ünï"} {
			w := serve(apierror.Observe(failing, nil), id)
			got := w.Header().Get(apierror.RequestIDHeader)
			if got == id || len(got) != 32 {
				t.Errorf("caller's %q: answered %q, want a new id", id, got)
			}
		}
	})
	t.Run("no body", func(t *testing.T) {
		log := telemetrytest.New(t)
		serve(apierror.Observe(failing, log.Logger), "")
		for _, r := range log.Lines() {
			if strings.Contains(r, "very-secret-bundle") {
				t.Fatalf("the body was logged: %s", r)
			}
		}
	})
}

// FuzzObserveRequestID: whatever X-Request-Id a caller sends, the answer's
// is 1 to 64 characters of [A-Za-z0-9._-], and it is the caller's exactly
// when the caller's is.
func FuzzObserveRequestID(f *testing.F) {
	for _, s := range []string{"", "req-1", "a.b_c-D9", strings.Repeat("x", 64), strings.Repeat("x", 65), "a b", "\x00", "é", "a\r\nX-Evil: 1"} {
		f.Add(s)
	}
	h := apierror.Observe(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}), nil)
	f.Fuzz(func(t *testing.T, id string) {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Header[apierror.RequestIDHeader] = []string{id}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		got := w.Header().Get(apierror.RequestIDHeader)
		if len(got) < 1 || len(got) > 64 || strings.Trim(got, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != "" {
			t.Fatalf("answered id %q", got)
		}
		valid := len(id) >= 1 && len(id) <= 64 && strings.Trim(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == ""
		if valid != (got == id) {
			t.Fatalf("caller's %q (valid %v), answered %q", id, valid, got)
		}
	})
}

// Observe around an adapter: the answer carries a request id, and a 5xx
// logs its cause with it (the client sees a generic message).
func ExampleObserve() {
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		apierror.Write(w, apierror.Internal(errors.New("ledger: connection refused")))
	})
	log := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{} // stable output
			}
			return a
		}}))
	r := httptest.NewRequest(http.MethodPost, "/payouts", bytes.NewReader([]byte(`{}`)))
	r.Header.Set(apierror.RequestIDHeader, "req-42")
	w := httptest.NewRecorder()
	apierror.Observe(handler, log).ServeHTTP(w, r)
	fmt.Print(w.Code, " ", w.Header().Get(apierror.RequestIDHeader), " ", w.Body)
	// Output:
	// level=ERROR msg="request failed" request_id=req-42 code=INTERNAL_ERROR http.request.method=POST http.route="" http.response.status_code=500 error="ledger: connection refused"
	// 500 req-42 {"status":500,"code":"INTERNAL_ERROR","message":"internal error"}
}

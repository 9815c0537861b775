package apierror

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http"
)

// RequestIDHeader carries the id of an HTTP request: [Observe] takes it from
// the request when the caller sent a usable one, makes one otherwise, and
// echoes it on the response. It is not the Request-Id of a signed retry,
// which names a challenge.
const RequestIDHeader = "X-Request-Id"

type requestIDKey struct{}

// RequestID returns the request id [Observe] put in ctx, or "".
func RequestID(ctx context.Context) string {
	s, _ := ctx.Value(requestIDKey{}).(string)
	return s
}

// Observe returns a handler that serves next and reports, through logger,
// every error next writes with [Write]:
//
//   - a 5xx answer logs its cause (the error chain, which clients never
//     see) once, at slog.LevelError, with the request id;
//   - a 4xx answer logs at slog.LevelDebug with the code and details.reason
//     (the services log refusals of authentication themselves, at
//     slog.LevelWarn, with what they know of them).
//
// A 5xx written some other way logs at slog.LevelError once, without a
// cause. The records carry the keys "request_id", "code", "reason",
// "error", "http.request.method", "http.route" and "http.response.status_code";
// never a request body, header value or query.
//
// Every request gets an id, available to next through [RequestID] and sent
// back in the X-Request-Id header: the caller's X-Request-Id when it is 1 to
// 64 characters of letters, digits, '-', '_' and '.', otherwise 16 random
// bytes in hex. Observe inside another Observe (an adapter mounted in a
// host's observed mux) passes the request through untouched, so an answer
// is logged once, by the outer one. A nil logger logs nothing.
func Observe(next http.Handler, logger *slog.Logger) http.Handler {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if RequestID(r.Context()) != "" {
			next.ServeHTTP(w, r)
			return
		}
		id := r.Header.Get(RequestIDHeader)
		if !validRequestID(id) {
			id = newRequestID()
		}
		w.Header().Set(RequestIDHeader, id)
		r = r.WithContext(context.WithValue(r.Context(), requestIDKey{}, id))
		ow := &observedWriter{ResponseWriter: w, r: r, log: logger, id: id}
		next.ServeHTTP(ow, r)
		if ow.status >= 500 && !ow.logged {
			ow.logged = true
			logger.LogAttrs(r.Context(), slog.LevelError, "request failed",
				slog.String("request_id", id), slog.String("http.request.method", r.Method),
				slog.String("http.route", r.Pattern), slog.Int("http.response.status_code", ow.status))
		}
	})
}

// observedWriter is the ResponseWriter of [Observe]: [Write] finds it
// through Unwrap and reports the error it writes.
type observedWriter struct {
	http.ResponseWriter
	r      *http.Request
	log    *slog.Logger
	id     string
	status int
	logged bool
}

func (o *observedWriter) WriteHeader(code int) {
	if o.status == 0 {
		o.status = code
	}
	o.ResponseWriter.WriteHeader(code)
}

func (o *observedWriter) Write(b []byte) (int, error) {
	if o.status == 0 {
		o.status = http.StatusOK
	}
	return o.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (o *observedWriter) Unwrap() http.ResponseWriter { return o.ResponseWriter }

// report logs e, written as the answer of o's request; cause is the error
// handed to [Write].
func (o *observedWriter) report(e *Error, cause error) {
	if o.logged {
		return
	}
	status := e.Status()
	attrs := []slog.Attr{slog.String("request_id", o.id), slog.String("code", codeName(e)),
		slog.String("http.request.method", o.r.Method), slog.String("http.route", o.r.Pattern),
		slog.Int("http.response.status_code", status)}
	level := slog.LevelDebug
	switch {
	case status >= 500:
		o.logged = true
		level = slog.LevelError
		if cause != nil {
			attrs = append(attrs, slog.String("error", causeText(cause)))
		}
	default:
		if reason := e.Reason(); reason != "" {
			attrs = append(attrs, slog.String("reason", reason))
		}
	}
	ctx := o.r.Context()
	if !o.log.Enabled(ctx, level) {
		return
	}
	msg := "request refused"
	if level == slog.LevelError {
		msg = "request failed"
	}
	o.log.LogAttrs(ctx, level, msg, attrs...)
}

func codeName(e *Error) string {
	if e.Code.IsZero() {
		return InternalError.String()
	}
	return e.Code.String()
}

// causeText is the text of an internal error's cause: what Internal
// wrapped, not the generic message clients get.
func causeText(err error) string {
	var e *Error
	if errors.As(err, &e) && e.cause != nil {
		return e.cause.Error()
	}
	return err.Error()
}

// observerOf finds the observedWriter under w, if any.
func observerOf(w http.ResponseWriter) *observedWriter {
	for range 16 {
		switch v := w.(type) {
		case *observedWriter:
			return v
		case interface{ Unwrap() http.ResponseWriter }:
			w = v.Unwrap()
		default:
			return nil
		}
	}
	return nil
}

func validRequestID(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

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

type requestKey struct{}

// request is what Observe keeps of a request in its context.
type request struct {
	id string
	// failed is set once a 5xx of the request has been logged.
	failed bool
}

// RequestID returns the request id [Observe] put in ctx, or "".
func RequestID(ctx context.Context) string {
	if r, ok := ctx.Value(requestKey{}).(*request); ok {
		return r.id
	}
	return ""
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
// Every request gets an id, available to next through [RequestID], set as
// the request's X-Request-Id header for the handlers behind, and sent back
// in the answer's: the caller's X-Request-Id when it is 1 to 64 characters
// of letters, digits, '-', '_' and '.', otherwise 16 random bytes in hex.
// An Observe inside another (an adapter mounted in a host's observed mux)
// keeps the outer one's id and logs each answer once between them: it
// passes the request through when the outer one sees what next writes, and
// reports in its stead when a writer in between hides it (a middleware that
// buffers the response). A nil logger logs nothing.
func Observe(next http.Handler, logger *slog.Logger) http.Handler {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, nested := r.Context().Value(requestKey{}).(*request)
		if nested {
			if observerOf(w) != nil {
				next.ServeHTTP(w, r)
				return
			}
			next.ServeHTTP(&observedWriter{ResponseWriter: w, r: r, log: logger, req: req}, r)
			return
		}
		id := r.Header.Get(RequestIDHeader)
		if !validRequestID(id) {
			id = newRequestID()
		}
		req = &request{id: id}
		w.Header().Set(RequestIDHeader, id)
		r = r.WithContext(context.WithValue(r.Context(), requestKey{}, req))
		r.Header.Set(RequestIDHeader, id)
		ow := &observedWriter{ResponseWriter: w, r: r, log: logger, req: req}
		next.ServeHTTP(ow, r)
		if ow.status >= 500 && !req.failed {
			req.failed = true
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
	req    *request
	status int
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
	status := e.Status()
	if status >= 500 {
		if o.req.failed {
			return
		}
		o.req.failed = true
	}
	attrs := []slog.Attr{slog.String("request_id", o.req.id), slog.String("code", codeName(e)),
		slog.String("http.request.method", o.r.Method), slog.String("http.route", o.r.Pattern),
		slog.Int("http.response.status_code", status)}
	level := slog.LevelDebug
	switch {
	case status >= 500:
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

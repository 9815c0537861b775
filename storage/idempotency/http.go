package idempotency

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/walletgate/walletgate/apierror"
)

// Middleware runs next at most once per Idempotency-Key, as [Once.Do]
// does, with the key in the scope scope(r) and the request's method, URL
// path, raw query and body as its fingerprint. scope names whose keys these
// are, typically the authenticated platform, and is required: a nil scope is
// an error ([ErrNoScope]) and no handler is returned, and a keyed request
// for which scope returns "" is 500 INTERNAL_ERROR without running next, so
// one caller never receives another's stored response. A request without
// the header passes through untouched (scope is not called). The body, at
// most [Config.MaxBody] bytes, is read in full before next runs and given
// to it again. The first response is written as next wrote it; a replay
// writes the stored status, the selected headers and the body, with
// [ReplayedHeader] set to "true". Errors are written as apierror bodies. A
// keyed request's body must be empty or JSON (it is canonicalized for the
// fingerprint); anything else is 400 INVALID_INPUT. Handlers that stream or
// hijack the connection are not supported: the response is buffered.
func (o *Once) Middleware(scope func(*http.Request) string, next http.Handler) (http.Handler, error) {
	if scope == nil {
		return nil, ErrNoScope
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, err := FromHeader(r.Header)
		if err != nil {
			o.tel.record(r.Context(), nil, reasonInvalidKey, err)
			apierror.Write(w, err)
			return
		}
		if key == "" {
			next.ServeHTTP(w, r)
			return
		}
		ctx := r.Context()
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, o.cfg.MaxBody))
		if err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				err = apierror.New(apierror.InvalidInput, "the request body exceeds %d bytes", o.cfg.MaxBody)
			} else {
				err = apierror.New(apierror.InvalidInput, "the request body could not be read")
			}
			o.tel.record(ctx, nil, reasonInvalidBody, err)
			apierror.Write(w, err)
			return
		}
		req := Request{Scope: scope(r), Key: key, Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Body: body}
		var rec *recorder
		resp, replayed, err := o.Do(ctx, req, func(ctx context.Context) (Response, error) {
			rec = &recorder{header: http.Header{}}
			r2 := r.WithContext(ctx)
			r2.Body = io.NopCloser(bytes.NewReader(body))
			r2.ContentLength = int64(len(body))
			next.ServeHTTP(rec, r2)
			if rec.status == 0 {
				rec.status = http.StatusOK
			}
			return Response{Status: rec.status, Header: rec.header, Body: rec.body.Bytes()}, nil
		})
		if err != nil {
			apierror.Write(w, err)
			return
		}
		for k, vs := range resp.Header {
			w.Header()[k] = append([]string(nil), vs...)
		}
		if replayed {
			w.Header().Set(ReplayedHeader, "true")
		}
		w.WriteHeader(resp.Status)
		_, _ = w.Write(resp.Body)
	}), nil
}

// recorder buffers a response.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(b)
}

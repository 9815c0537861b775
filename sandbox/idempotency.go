package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage/idempotency"
)

// keyed is the one Idempotency-Key rule of every route that takes the
// header (POST /transfer-in, /transfer-out, /quotes and
// /quotes/{id}/execute), in Go and over HTTP: fn runs at most once per key
// through the simulator's [idempotency.Once], whose records live in the
// Store (replicas sharing a database agree) under the platform's scope.
//
// An empty key runs fn. Otherwise the key must be a UUID (400
// INVALID_INPUT naming the Idempotency-Key header, nothing runs). The
// request's fingerprint is POST, the base path and path, and the canonical
// body (over HTTP the body as sent; in Go the request's JSON). The first
// request with the key runs fn; a result is stored as status (the route's
// final status, or the result's own when it has one: see [keyedStatus])
// with its JSON for the Once's TTL (24 hours from completion). A
// challenge (the first leg of a signed retry) and an error are not final:
// they release the key, which may then carry the retry or a repeat. A
// payout held for approval (202 with a [PayoutApproval]) is final: the
// key's payout is that approval, and a repeat returns it as it was held
// (GET /payout-approvals/{id} says what became of it), never a second
// hold. A repeat with the same fingerprint returns the stored result
// decoded, with replayed true, without running fn (and so without checking
// a signature: the key, like the effect, belongs to the platform); another
// request under a live key, or the same while the first still runs, is 409
// CONFLICT.
func keyed[T any](ctx context.Context, s *Simulator, key, path string, body []byte, status int,
	fn func(context.Context) (*T, *signedretry.Challenge, error)) (out *T, ch *signedretry.Challenge, replayed bool, err error) {
	if key == "" {
		out, ch, err = fn(ctx)
		return out, ch, false, err
	}
	req := idempotency.Request{Scope: s.idempotencyScope(), Key: key, Method: http.MethodPost,
		Path: s.cfg.BasePath + path, Body: body}
	resp, replayed, err := s.idem.Do(ctx, req, func(ctx context.Context) (idempotency.Response, error) {
		o, c, err := fn(ctx)
		switch {
		case err != nil:
			return idempotency.Response{}, err
		case c != nil:
			ch = c
			// Not final: no response of the key (Status 0, which
			// keepKeyed refuses), so the key is released.
			return idempotency.Response{}, nil
		}
		b, err := json.Marshal(o)
		if err != nil {
			return idempotency.Response{}, apierror.Internal(err)
		}
		out = o
		st := status
		if k, ok := any(o).(keyedStatus); ok {
			st = k.keyedStatus(status)
		}
		return idempotency.Response{Status: st, Header: http.Header{"Content-Type": {"application/json"}}, Body: b}, nil
	})
	switch {
	case err != nil:
		return nil, nil, false, err
	case replayed:
		var v T
		if err := json.Unmarshal(resp.Body, &v); err != nil {
			return nil, nil, false, apierror.Internal(fmt.Errorf("sandbox: decoding a stored response of %s: %w", path, err))
		}
		return &v, nil, true, nil
	}
	return out, ch, false, nil
}

// keyedStatus is a result of [keyed] whose status is its own: a transfer
// out answers 201 with its Transaction or 202 with the PayoutApproval it
// waits for. keyedStatus returns it, given the route's final status.
type keyedStatus interface{ keyedStatus(final int) int }

// keepKeyed is the simulator Once's [idempotency.Config].Keep: every 2xx
// result of keyed is final and stored, 202 included (a held payout); the
// challenge leg, which is not, reaches the Once as no response (Status
// 0) and releases the key.
func keepKeyed(status int) bool { return status >= 200 && status < 300 }

// idempotencyScope is the scope of the simulator's Idempotency-Key records:
// the platform its credentials authenticate (the sandbox serves one, and
// every HTTP request reaches the routes only with its client id).
func (s *Simulator) idempotencyScope() string { return "Platform:" + s.cfg.ClientID }

// writeKeyed writes the answer of a route that takes the Idempotency-Key
// header: a replay carries [idempotency.ReplayedHeader] "true".
func writeKeyed(w http.ResponseWriter, status int, v any, ch *signedretry.Challenge, replayed bool, err error) {
	if replayed && err == nil {
		w.Header().Set(idempotency.ReplayedHeader, "true")
	}
	signedretry.WriteAnswer(w, status, v, ch, err)
}

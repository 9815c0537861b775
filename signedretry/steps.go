package signedretry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/storage"
)

// Steps is one operation of the protocol, as its two legs: what the first
// call binds, parameters of type P, and what the signed retry does with
// them. The retry's steps get the parameters decoded from what the first
// call stored, so they act on exactly what the payload showed the signer,
// never on the retry's own body; the lock step hands what it read (L) to the
// effect, and the effect's result (R) is what [Run] returns.
//
// The store may run the retry's transaction more than once (see
// [storage.Store.Atomic]): each run decodes the parameters anew and hands
// the steps fresh values, and only the last run's result is returned, so a
// step keeps nothing in Go variables between runs.
type Steps[P, L, R any] struct {
	// Type names the operation in the payload, e.g. "REVOKE_CREDENTIAL";
	// the retry must be of the same type.
	Type string
	// Bind runs on the first call, inside the transaction that stores the
	// challenge, and returns what the challenge binds (the account, the
	// signer rule and the parameters). Its own writes commit with the
	// challenge, for example the consumption of a one-time code. A nil
	// Operation with a nil error issues no challenge and commits Bind's
	// writes, and its R is what [Run] returns: an operation that completes
	// at once, or a first call that must keep what it wrote (a counted
	// wrong code) and answers its own outcome. With an Operation, R is
	// ignored. The store may run Bind more than once; only the last run's
	// values are returned. Required.
	Bind func(ctx context.Context, tx storage.Tx) (*Operation[P], R, error)
	// Lock, when not nil, runs on the retry right after the request is
	// consumed and before the signer is checked, with the stored
	// parameters. It takes the locks an effect needs that come before the
	// signer's in the store's lock order (internal accounts other than the
	// operation's own, in ascending id order, the operation's among them,
	// then an email address), so that the signer's credential and session
	// are locked after them and no two transactions wait for each other in
	// a cycle. It only locks and reads: a decision it makes is taken before
	// the signer is known to be allowed. What it returns is handed to
	// Effect.
	Lock func(ctx context.Context, tx storage.Tx, a *Authorization, p P) (L, error)
	// Effect, when not nil, is what the retry does, inside the transaction
	// that consumes the request, with the signer's locks held: it takes
	// only locks that come later in the store's lock order (the
	// operation's internal account again, credentials and sessions of that
	// account, records outside the order). When it returns an error,
	// nothing it wrote persists and the request stays unconsumed, so the
	// client may retry. Inside a host's transaction (storage/postgres's
	// Store.WithTx) it runs once and reaches that transaction with
	// postgres.HostTx, so the host's own writes commit with the
	// consumption.
	Effect func(ctx context.Context, tx storage.Tx, a *Authorization, p P, l L) (R, error)
}

// Run runs the leg of s that r is, with m.
//
// A first call (neither signed-retry header) runs s.Bind and issues the
// challenge it binds, in one transaction, and returns the challenge; when
// Bind bound nothing, it returns no challenge and Bind's result. Parameters that do not marshal to a JSON object
// are 500 INTERNAL_ERROR; the other errors are Bind's, 400 INVALID_INPUT for
// a body that is not JSON, and 429 RATE_LIMITED for an account at
// [Config].MaxPending live challenges (the count and the insert are one step
// in the store), except a [BoundKey] challenge, which is never refused (see
// [Config].MaxPending).
//
// A retry is checked (same method, path, type and canonical body, a valid
// stamp of a signer the operation's rule allows, locked until the
// transaction ends), the request is consumed, and s.Lock and s.Effect run in
// the same transaction on the stored parameters; Run returns the effect's
// result and the authorization. The retry's refusals are 401s:
// WALLET_SIGNATURE_MISSING, REQUEST_ID_MISSING, WALLET_SIGNATURE_MALFORMED,
// UNAUTHORIZED with details.reason (the Request-Id is unknown, expired,
// already used, or bound to another operation), WALLET_SIGNATURE_BODY_MISMATCH
// and WALLET_SIGNATURE_INVALID. Stored parameters that do not decode into P
// (an unknown field among them) are 500 INTERNAL_ERROR, since the server
// wrote them. Errors of the steps are returned unchanged. A failed retry
// never consumes the request.
func Run[P, L, R any](ctx context.Context, m *Manager, r Request, s Steps[P, L, R]) (R, *Authorization, *Challenge, error) {
	var res R
	if r.IsRetry() {
		var (
			p P
			l L
		)
		// lock starts every run of the transaction: it resets what the
		// previous run left and decodes the parameters anew.
		lock := func(ctx context.Context, tx storage.Tx, a *Authorization) error {
			var err error
			l, res = *new(L), *new(R)
			if p, err = decodeParameters[P](a); err != nil {
				return err
			}
			if s.Lock == nil {
				return nil
			}
			l, err = s.Lock(ctx, tx, a, p)
			return err
		}
		var effect step
		if s.Effect != nil {
			effect = func(ctx context.Context, tx storage.Tx, a *Authorization) error {
				var err error
				res, err = s.Effect(ctx, tx, a, p, l)
				return err
			}
		}
		a, err := m.complete(ctx, r, s.Type, lock, effect)
		if err != nil {
			return *new(R), nil, nil, err
		}
		return res, a, nil, nil
	}
	if s.Bind == nil {
		return res, nil, nil, apierror.Internal(errors.New("signedretry: Steps.Bind of " + s.Type + " is nil"))
	}
	c, err := m.issue(ctx, r, s.Type, func(ctx context.Context, tx storage.Tx) (*Operation[json.RawMessage], error) {
		op, out, err := s.Bind(ctx, tx)
		if op != nil {
			out = *new(R)
		}
		res = out
		if err != nil || op == nil {
			return nil, err
		}
		enc, err := encoded(op)
		if err != nil {
			return nil, err
		}
		return &enc, nil
	})
	if err != nil {
		return *new(R), nil, nil, err
	}
	return res, nil, c, nil
}

// issue is the first leg of [Run]: bind, run in the transaction that stores
// the challenge, returns what to issue (nil for nothing).
func (m *Manager) issue(ctx context.Context, r Request, typ string, bind func(ctx context.Context, tx storage.Tx) (*Operation[json.RawMessage], error)) (_ *Challenge, err error) {
	ctx, o := m.tel.Begin(ctx, opIssue, m.tel.outcomes)
	o.Quiet = true // Bind's refusals are the caller's to report
	defer func() { o.End(ctx, err) }()
	var c *Challenge
	err = m.cfg.Store.Atomic(ctx, func(tx storage.Tx) error {
		c = nil
		op, err := bind(ctx, tx)
		if err != nil || op == nil {
			return err
		}
		c, err = m.issueIn(ctx, tx, r, typ, op)
		return err
	})
	if e := m.limitReached(err); e != nil {
		return nil, e
	}
	if err != nil {
		return nil, err
	}
	return c, nil
}

// decodeParameters decodes the operation's parameters, as the first call
// stored them, into a fresh P with apierror.DecodeStored: the rules of
// apierror.DecodeBytes, and no member that P has no field for (the server
// wrote these, so one is a fault, not a newer client). Any failure is 500
// INTERNAL_ERROR.
func decodeParameters[P any](a *Authorization) (P, error) {
	var p P
	if err := apierror.DecodeStored(a.Parameters, &p); err != nil {
		return *new(P), apierror.Internal(fmt.Errorf("signedretry: decoding stored parameters of %s: %w", a.RequestID, err))
	}
	return p, nil
}

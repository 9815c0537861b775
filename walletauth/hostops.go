package walletauth

import (
	"context"
	"errors"
	"strconv"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
)

// HostOperation is a wallet operation of the host (a transfer, a quote
// execution, anything the host does with an embedded wallet other than
// receiving funds), with parameters of type P and a result of type R, that
// an active session of the wallet authorizes through the signed retry, as
// [Authorize] runs it.
type HostOperation[P, R any] struct {
	// Type names the operation in the payload, e.g. "TRANSFER_OUT". It must
	// not be one of the service's own operation types (Op*).
	Type string
	// AccountID is the embedded wallet (internal account) the operation
	// acts on; an active session of it signs the retry.
	AccountID string
	// Parameters must marshal to a JSON object holding every value the
	// operation acts on (accounts, amounts, currencies, keys, flags). It is
	// bound into the payload on the first call; on the retry it is not
	// read: Check and Effect get the parameters the first call stored,
	// decoded into P.
	Parameters P
	// Check, when not nil, is the host's rule on the parameters (a payout
	// limit, a balance, an allow list), run on both legs inside the
	// transaction: on the first call before the challenge is issued, so a
	// refused operation costs the user no signature, and on the retry, once
	// the signer is allowed and before Effect, on the stored parameters
	// and the state as it is then. An error it returns is returned
	// unchanged, and on the retry leaves the request unconsumed. Like
	// Effect, it may run more than once and must have no effect outside
	// tx.
	Check func(ctx context.Context, tx storage.Tx, p P) error
	// Effect, when not nil, runs on the retry inside the transaction that
	// consumes the request, with the authorization and the stored
	// parameters: its writes and the consumption commit together, and when
	// it fails neither persists and the client may retry the same
	// signature. What it returns is what [Authorize] returns.
	//
	// To write its own rows in the same transaction (a ledger debit, an
	// audit row naming a.SessionID), the host runs Authorize inside its
	// own database transaction: on PostgreSQL, with a context of the
	// store's WithTx, the effect reaches that pgx.Tx with postgres.HostTx,
	// and everything commits when the host commits (see the package
	// documentation).
	//
	// Effect may run more than once for one retry: the store reruns a
	// transaction that lost a lock conflict or a serialization check
	// ([storage.Store.Atomic]), and every run but the last is rolled back
	// (inside a host's transaction it runs once: the host reruns). Each
	// run gets the parameters decoded anew, and only the last run's result
	// is returned. So it must have no effect outside tx (no payment sent,
	// no message, no write to another system, no change of memory that
	// outlives the run): do those after Authorize returns, from its
	// result.
	//
	// It runs with the wallet, the signing session and its credential
	// locked, so a revoke of the signer waits for it; it must not lock
	// another internal account, which would come before them in the
	// store's lock order.
	Effect func(ctx context.Context, tx storage.Tx, a *signedretry.Authorization, p P) (R, error)
}

// ownOperation reports whether typ is an operation type of the service
// itself, which a host operation may not reuse (its retry would consume the
// service's own requests).
func ownOperation(typ string) bool {
	switch typ {
	case OpAddCredential, OpRevokeCredential, OpVerifyOTP, OpRevokeSession, OpRefreshSession, OpUpdateEmail,
		OpExportWallet, OpWalletPrivacy:
		return true
	}
	return false
}

// Authorize runs the two legs of the host wallet operation op of s through
// the signed retry. call is the request as it arrived
// (signedretry.RequestFrom); its Method, Path and Body are bound to the
// challenge.
//
// A call without either signed-retry header is the first leg: the account
// must exist and op.Check must accept op.Parameters; then the parameters are
// bound into the payload and the challenge (202) is returned, to be stamped
// by any active session of the account. A call with a header is the retry:
// it is checked (same method, path, type and canonical body, a valid stamp
// of an active session of op.AccountID), the request is consumed, and
// op.Check and op.Effect run in the same transaction on the parameters the
// first call stored; the effect's result and the authorization are
// returned.
//
// The host acts on the parameters its Check and Effect are handed, or on
// what Effect returns, never on values read again from the retry (its body,
// path or the Go arguments of the call): the parameters are what the
// payload showed the signer. On the retry, op.Parameters is not read.
//
// The [Config].Guard is asked about the wallet on each leg: on the first
// before op.Check, on the retry once the signer is locked and before
// op.Check and op.Effect run.
//
// Errors: 404 REFERENCE_NOT_FOUND (no such account, first leg; a plain
// refusal of the guard, either leg), the 401s of
// signedretry (a retry for another account is UNAUTHORIZED), errors of
// op.Check and op.Effect unchanged, 500 INTERNAL_ERROR for a Type that is
// empty or one of the service's own, or for stored parameters that do not
// decode into P.
func Authorize[P, R any](ctx context.Context, s *Service, op HostOperation[P, R], call signedretry.Request) (R, *signedretry.Authorization, *signedretry.Challenge, error) {
	if op.Type == "" || ownOperation(op.Type) {
		return *new(R), nil, nil, apierror.Internal(errors.New("walletauth: host operation type " + strconv.Quote(op.Type) + " is reserved"))
	}
	// Every authorized operation is audited in the transaction of its
	// effect: who signed which request.
	effect := func(ctx context.Context, tx storage.Tx, a *signedretry.Authorization, p P) (R, error) {
		var res R
		if op.Effect != nil {
			var err error
			if res, err = op.Effect(ctx, tx, a, p); err != nil {
				return res, err
			}
		}
		data := HostOperationEventData{RequestID: a.RequestID, Type: a.Type, AccountID: a.AccountID,
			AuthorizedAt: a.Now, SignedBySessionID: a.SessionID, AuthMethodID: a.CredentialID}
		return res, s.emit(ctx, tx, EventHostOperation, a.AccountID, data, a.Now)
	}
	steps := walletOp(s, op.Type, op.AccountID, func() (P, error) { return op.Parameters, nil }, op.Check, effect)
	res, a, c, err := signedretry.Run(ctx, s.retry, call, steps)
	if err != nil {
		return res, nil, nil, apierror.From(err)
	}
	return res, a, c, nil
}

// walletOp is an operation on the wallet accountID that any active session
// of it signs, the service's own (export, privacy) or the host's. On the
// first leg params, run before anything else, returns the parameters to
// bind (or the error that refuses the call), the wallet must exist and be
// admitted by s's guard, and check, when not nil, must accept the
// parameters; on the retry the request must be bound to accountID, the
// guard is asked again, and check, then effect, run on the stored
// parameters.
func walletOp[P, R any](s *Service, typ, accountID string, params func() (P, error), check func(context.Context, storage.Tx, P) error,
	effect func(context.Context, storage.Tx, *signedretry.Authorization, P) (R, error)) signedretry.Steps[P, struct{}, R] {
	return signedretry.Steps[P, struct{}, R]{
		Type: typ,
		Bind: func(ctx context.Context, tx storage.Tx) (*signedretry.Operation[P], R, error) {
			var none R
			p, err := params()
			if err != nil {
				return nil, none, err
			}
			if !storage.ValidID(accountID, "InternalAccount") {
				return nil, none, notFound("internal account", accountID)
			}
			unknown := unknownAs("internal account", accountID)
			w, err := tx.InternalAccounts().Get(ctx, accountID)
			if errors.Is(err, storage.ErrNotFound) {
				return nil, none, unknown()
			} else if err != nil {
				return nil, none, err
			}
			if err := s.admit(ctx, &w, unknown); err != nil {
				return nil, none, err
			}
			if check != nil {
				if err := check(ctx, tx, p); err != nil {
					return nil, none, err
				}
			}
			return &signedretry.Operation[P]{AccountID: accountID, Signer: signedretry.Signer{Rule: signedretry.AnySession},
				Parameters: p}, none, nil
		},
		Effect: func(ctx context.Context, tx storage.Tx, a *signedretry.Authorization, p P, _ struct{}) (R, error) {
			if a.AccountID != accountID {
				return *new(R), apierror.Unauthenticated("request id is bound to another account")
			}
			// The signer's lock holds the wallet: its read costs nothing.
			if err := s.admitID(ctx, tx, accountID, unknownAs("internal account", accountID)); err != nil {
				return *new(R), err
			}
			if check != nil {
				if err := check(ctx, tx, p); err != nil {
					return *new(R), err
				}
			}
			if effect != nil {
				return effect(ctx, tx, a, p)
			}
			return *new(R), nil
		},
	}
}

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
// receiving funds) that an active session of the wallet authorizes through
// the signed retry, as [Service.Authorize] runs it.
type HostOperation struct {
	// Type names the operation in the payload, e.g. "TRANSFER_OUT". It must
	// not be one of the service's own operation types (Op*).
	Type string
	// AccountID is the embedded wallet (internal account) the operation
	// acts on; an active session of it signs the retry.
	AccountID string
	// Parameters must marshal to a JSON object holding every value the
	// operation acts on (accounts, amounts, currencies, keys, flags). It is
	// bound into the payload on the first call and handed back, as stored,
	// on the retry; it is not read on the retry.
	Parameters any
	// Effect, when not nil, runs on the retry inside the transaction that
	// consumes the request, with the authorization (its Parameters are the
	// ones stored on the first call): its writes and the consumption commit
	// together, and when it fails neither persists and the client may retry
	// the same signature. It must act on the authorization's parameters
	// only.
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
	// (inside a host's transaction it runs once: the host reruns).
	// So it must have no effect outside tx (no payment sent, no message,
	// no write to another system, no change of memory that outlives the
	// run): do those after Authorize returns, from the returned
	// [signedretry.Authorization.Parameters]. Whatever it keeps in Go
	// variables is overwritten by each run.
	//
	// It runs with the wallet, the signing session and its credential
	// locked (signedretry.Manager.Complete), so a revoke of the signer
	// waits for it; it must not lock another internal account, which would
	// come before them in the store's lock order.
	Effect signedretry.Effect
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

// Authorize runs the two legs of a host wallet operation through the signed
// retry. call is the request as it arrived (signedretry.RequestFrom); its
// Method, Path and Body are bound to the challenge.
//
// A call without either signed-retry header is the first leg: the account
// must exist, op.Parameters are bound into the payload, and the challenge
// (202) is returned, to be stamped by any active session of the account. A
// call with a header is the retry: it is checked (same method, path, type
// and canonical body, a valid stamp of an active session of op.AccountID),
// the request is consumed, op.Effect runs in the same transaction, and the
// authorization, with the stored parameters, is returned.
//
// The host must act on [signedretry.Authorization.Parameters] only, never
// on values read again from the retry (its body, path or the Go arguments of
// the call): the parameters are what the payload showed the signer. On the
// retry, op.Parameters is not read.
//
// Errors: 404 REFERENCE_NOT_FOUND (no such account, first leg), the 401s of
// signedretry (a retry for another account is UNAUTHORIZED), errors of
// op.Effect unchanged, 500 INTERNAL_ERROR for a Type that is empty or one of
// the service's own.
func (s *Service) Authorize(ctx context.Context, op HostOperation, call signedretry.Request) (*signedretry.Authorization, *signedretry.Challenge, error) {
	if op.Type == "" || ownOperation(op.Type) {
		return nil, nil, apierror.Internal(errors.New("walletauth: host operation type " + strconv.Quote(op.Type) + " is reserved"))
	}
	return s.run(ctx, call, s.walletOp(op.Type, op.AccountID, func() (any, error) { return op.Parameters, nil }, op.Effect))
}

// walletOp is an operation on the wallet accountID that any active session
// of it signs, the service's own (export, privacy) or the host's. On the
// first leg params, run before anything else, returns the parameters to
// bind (or the error that refuses the call), and the wallet must exist; on
// the retry the request must be bound to accountID before effect runs.
func (s *Service) walletOp(typ, accountID string, params func() (any, error), effect signedretry.Effect) signedretry.Steps {
	return signedretry.Steps{
		Type: typ,
		Bind: func(ctx context.Context, tx storage.Tx) (*signedretry.Operation, error) {
			p, err := params()
			if err != nil {
				return nil, err
			}
			if !storage.ValidID(accountID, "InternalAccount") {
				return nil, notFound("internal account", accountID)
			}
			if _, err := tx.InternalAccounts().Get(ctx, accountID); errors.Is(err, storage.ErrNotFound) {
				return nil, notFound("internal account", accountID)
			} else if err != nil {
				return nil, err
			}
			return &signedretry.Operation{AccountID: accountID, Signer: signedretry.Signer{Rule: signedretry.AnySession},
				Parameters: p}, nil
		},
		Effect: func(ctx context.Context, tx storage.Tx, a *signedretry.Authorization) error {
			if a.AccountID != accountID {
				return apierror.Unauthenticated("request id is bound to another account")
			}
			if effect != nil {
				return effect(ctx, tx, a)
			}
			return nil
		},
	}
}

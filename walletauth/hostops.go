package walletauth

import (
	"context"
	"encoding/json"
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
	// consumes the request, with the stored parameters: its writes and the
	// consumption commit together, and when it fails neither persists and
	// the client may retry the same signature. It must act on params only.
	//
	// Effect may run more than once for one retry: the store reruns a
	// transaction that lost a lock conflict or a serialization check
	// ([storage.Store.Atomic]), and every run but the last is rolled back.
	// So it must have no effect outside tx (no payment sent, no message,
	// no write to another system, no change of memory that outlives the
	// run): do those after Authorize returns, from [Authorized.Parameters].
	// Whatever it keeps in Go variables is overwritten by each run.
	//
	// It runs with the wallet, the signing session and its credential
	// locked (signedretry.Manager.Complete), so a revoke of the signer
	// waits for it; it must not lock another internal account, which would
	// come before them in the store's lock order.
	Effect func(tx storage.Tx, params json.RawMessage) error
}

// Authorized is a completed host operation: the parameters the user signed
// and who signed them.
type Authorized struct {
	// RequestID is the consumed request.
	RequestID string
	// Type and AccountID are the operation's.
	Type      string
	AccountID string
	// Parameters are the operation's parameters exactly as the first call
	// bound them into the payload the user signed.
	Parameters json.RawMessage
	// SessionID and CredentialID identify the session that signed.
	SessionID    string
	CredentialID string
	// Sandbox reports that the sandbox literal stood in for a signature.
	Sandbox bool
}

// DecodeParameters decodes the signed parameters into dst. A failure is 500
// INTERNAL_ERROR: the stored bytes are the service's own.
func (a *Authorized) DecodeParameters(dst any) error {
	if err := apierror.DecodeBytes(a.Parameters, dst); err != nil {
		return apierror.Internal(errors.New("walletauth: decoding stored parameters of " + a.RequestID + ": " + err.Error()))
	}
	return nil
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
// retry. call is the request as it arrived (signedretry.RetryFrom); its
// Method, Path and Body are bound to the challenge.
//
// A call without either signed-retry header is the first leg: the account
// must exist, op.Parameters are bound into the payload, and the challenge
// (202) is returned, to be stamped by any active session of the account
// (DESIGN section 3). A call with a header is the retry: it is checked (same
// method, path, type and canonical body, a valid stamp of an active session
// of op.AccountID), the request is consumed, op.Effect runs in the same
// transaction, and the stored parameters are returned.
//
// The host must act on [Authorized.Parameters] only, never on values read
// again from the retry (its body, path or the Go arguments of the call): the
// parameters are what the payload showed the signer. On the retry,
// op.Parameters is not read.
//
// Errors: 404 REFERENCE_NOT_FOUND (no such account, first leg), the 401s of
// signedretry (a retry for another account is UNAUTHORIZED), errors of
// op.Effect unchanged, 500 INTERNAL_ERROR for a Type that is empty or one of
// the service's own.
func (s *Service) Authorize(ctx context.Context, op HostOperation, call signedretry.Retry) (*Authorized, *signedretry.Challenge, error) {
	if op.Type == "" || ownOperation(op.Type) {
		return nil, nil, apierror.Internal(errors.New("walletauth: host operation type " + strconv.Quote(op.Type) + " is reserved"))
	}
	return s.authorize(ctx, op, call)
}

// authorize is Authorize without the check of the type, for the service's
// own wallet operations.
func (s *Service) authorize(ctx context.Context, op HostOperation, call signedretry.Retry) (*Authorized, *signedretry.Challenge, error) {
	if !isRetry(call) {
		var challenge *signedretry.Challenge
		err := s.atomic(ctx, func(tx storage.Tx) error {
			if !storage.ValidID(op.AccountID, "InternalAccount") {
				return notFound("internal account", op.AccountID)
			}
			if _, err := tx.InternalAccounts().Get(ctx, op.AccountID); errors.Is(err, storage.ErrNotFound) {
				return notFound("internal account", op.AccountID)
			} else if err != nil {
				return err
			}
			var err error
			challenge, err = s.retry.IssueIn(ctx, tx, signedretry.Operation{Type: op.Type, AccountID: op.AccountID,
				Method: call.Method, Path: call.Path, Body: call.Body, Signer: signedretry.Signer{Rule: signedretry.AnySession},
				Parameters: op.Parameters})
			return err
		})
		if err != nil {
			return nil, nil, storeErr(err)
		}
		return nil, challenge, nil
	}
	call.Type = op.Type
	a, err := s.retry.Complete(ctx, call, func(tx storage.Tx, a *signedretry.Authorization) error {
		if a.AccountID != op.AccountID {
			return apierror.Unauthenticated("request id is bound to another account")
		}
		if op.Effect != nil {
			return op.Effect(tx, a.Parameters)
		}
		return nil
	})
	if err != nil {
		return nil, nil, storeErr(err)
	}
	return &Authorized{RequestID: a.RequestID, Type: a.Type, AccountID: a.AccountID, Parameters: a.Parameters,
		SessionID: a.SessionID, CredentialID: a.CredentialID, Sandbox: a.Sandbox}, nil, nil
}

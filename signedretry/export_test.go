package signedretry

import (
	"context"
	"encoding/json"

	"github.com/walletgate/walletgate/storage"
)

// TestOperation is an operation of type Type as the tests issue it straight
// through the first leg, without a Bind of their own.
type TestOperation struct {
	Type           string
	AccountID      string
	Signer         Signer
	Parameters     any
	CredentialType string
}

// Issue is the first leg alone: it issues the challenge of op.
func (m *Manager) Issue(ctx context.Context, r Request, op TestOperation) (*Challenge, error) {
	return m.issue(ctx, r, op.Type, func(context.Context, storage.Tx) (*Operation[json.RawMessage], error) {
		enc, err := encoded(&Operation[any]{AccountID: op.AccountID, Signer: op.Signer, Parameters: op.Parameters,
			CredentialType: op.CredentialType})
		return &enc, err
	})
}

// Complete is the retry alone, with effect and no lock step.
func (m *Manager) Complete(ctx context.Context, r Request, opType string, effect func(context.Context, storage.Tx, *Authorization) error) (*Authorization, error) {
	return m.complete(ctx, r, opType, nil, effect)
}

// CompleteLocking is the retry alone, with a lock step and an effect.
func (m *Manager) CompleteLocking(ctx context.Context, r Request, opType string, lock, effect func(context.Context, storage.Tx, *Authorization) error) (*Authorization, error) {
	return m.complete(ctx, r, opType, lock, effect)
}

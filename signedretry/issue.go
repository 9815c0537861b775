package signedretry

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/signedretry/stamper"
	"github.com/walletgate/walletgate/storage"
)

// Operation is what the first leg of a sensitive request binds into its
// challenge, with parameters of type P. The method, path and body it is
// bound to are the [Request]'s, and its type is [Steps].Type.
type Operation[P any] struct {
	// AccountID is the internal account the operation acts on.
	AccountID string
	// Signer says who may sign the retry.
	Signer Signer
	// Parameters must marshal to a JSON object (a nil map, pointer or
	// interface stands for the empty object); it is written into the
	// payload, and the retry's steps get it back decoded from what was
	// stored. It must hold every value the operation's effect uses (keys,
	// identities, types, amounts, flags; a long token by its SHA-256 and
	// what it asserts), since the effect reads them from here and not from
	// the retry.
	Parameters P
	// CredentialType, when set, is echoed as "type" in the 202 body (auth
	// operations carry the credential type concerned).
	CredentialType string
}

// encoded is op with its parameters marshaled: the JSON object the payload
// binds.
func encoded[P any](op *Operation[P]) (Operation[json.RawMessage], error) {
	b, err := json.Marshal(op.Parameters)
	if err == nil && string(b) == "null" {
		b = []byte(`{}`)
	}
	if err != nil || len(b) == 0 || b[0] != '{' {
		return Operation[json.RawMessage]{}, apierror.Internal(errors.New("signedretry: operation parameters must marshal to a JSON object"))
	}
	return Operation[json.RawMessage]{AccountID: op.AccountID, Signer: op.Signer, Parameters: b, CredentialType: op.CredentialType}, nil
}

// Challenge is the 202 body of a first call, as clients read it
// ([stamper.Challenge]).
type Challenge = stamper.Challenge

// payload is the signed document, its fields in the fixed wire order.
type payload struct {
	Type        string          `json:"type"`
	RequestID   string          `json:"requestId"`
	AccountID   string          `json:"accountId"`
	Parameters  json.RawMessage `json:"parameters"`
	BodySHA256  string          `json:"bodySha256"`
	TimestampMs string          `json:"timestampMs"`
	ExpiresAt   string          `json:"expiresAt"`
}

// issueIn stores, in tx, a pending request for op of type typ, bound to the
// method, path and body of the first call r, and returns its challenge. The
// payload binds the operation, the account, the parameters and the SHA-256
// of the canonical body; the server keeps it byte for byte. A body that is
// not JSON (or empty) answers 400 INVALID_INPUT. An account that already
// holds [Config].MaxPending live challenges gets 429 RATE_LIMITED, with
// Retry-After until the first of them expires; the count and the insert are
// one step in the store, so concurrent first legs, on any replica, never
// exceed the cap. A challenge bound to a key ([BoundKey]) is never refused:
// it is kept among the account's MaxPending newest of its kind, apart from
// the cap (see [Config].MaxPending).
func (m *Manager) issueIn(ctx context.Context, tx storage.Tx, r Request, typ string, op *Operation[json.RawMessage]) (*Challenge, error) {
	digest, err := stamper.BodyDigest(r.Body)
	if err != nil {
		return nil, err
	}
	params := op.Parameters
	switch op.Signer.Rule {
	case AnySession, OtherCredentialSession, Session, BoundKey:
	default:
		return nil, apierror.Internal(errors.New("signedretry: unknown signer rule " + strconv.Quote(string(op.Signer.Rule))))
	}
	id, err := storage.NewID(m.cfg.Rand, "Request")
	if err != nil {
		return nil, apierror.Internal(err)
	}
	now := m.cfg.Clock().UTC()
	expires := now.Add(m.cfg.TTL)
	p, err := marshalCompact(payload{
		Type: typ, RequestID: id, AccountID: op.AccountID, Parameters: params,
		BodySHA256: hex.EncodeToString(digest[:]), TimestampMs: strconv.FormatInt(now.UnixMilli(), 10),
		ExpiresAt: expires.Format(time.RFC3339Nano),
	})
	if err != nil {
		return nil, apierror.Internal(err)
	}
	rec := storage.PendingRequest{
		ID: id, Kind: typ, AccountID: op.AccountID, Method: r.Method, Path: r.Path,
		BodyDigest: digest[:], Payload: p, SignerRule: string(op.Signer.Rule), SignerRef: op.Signer.Ref,
		Data: params, CreatedAt: now, ExpiresAt: expires,
	}
	quota := storage.Quota{Limit: m.cfg.MaxPending}
	if op.Signer.Rule == BoundKey {
		// A login's challenge: bounded apart, the oldest superseded (see
		// Config.MaxPending).
		quota.Scope = boundKeyScope + op.AccountID
	}
	// The store may report the limit here or, having deferred the insert,
	// from Atomic: limitReached answers it either way.
	if err := tx.PendingRequests().Create(ctx, &rec, quota); err != nil {
		if e := m.limitReached(err); e != nil {
			return nil, e
		}
		return nil, apierror.Internal(err)
	}
	return &Challenge{PayloadToSign: string(p), RequestID: id, ExpiresAt: expires, Type: op.CredentialType}, nil
}

// limitReached is the 429 of an account at its cap of live challenges, when
// err reports it (a *storage.LimitError), or nil.
func (m *Manager) limitReached(err error) *apierror.Error {
	var limit *storage.LimitError
	if !errors.As(err, &limit) {
		return nil
	}
	e := apierror.TooManyRequests(max(limit.RetryAt.Sub(m.cfg.Clock()), time.Second))
	e.Message = "the account holds too many live signed-retry challenges; complete one or wait until one expires"
	return e
}

func marshalCompact(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

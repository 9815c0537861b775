package sandbox

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
)

// Money is an amount in the smallest unit of a currency (cents, sats,
// micro-units of a stablecoin).
type Money struct {
	Amount   int64  `json:"amount"`
	Currency string `json:"currency"`
}

// InternalAccount is a customer's embedded wallet with its balances.
type InternalAccount struct {
	ID         string `json:"id"`
	CustomerID string `json:"customerId"`
	Type       string `json:"type"`
	Status     string `json:"status"`
	// Balance is the balance in the wallet's primary currency.
	Balance Money `json:"balance"`
	// Balances lists every currency the wallet holds, the primary first.
	Balances       []Money   `json:"balances"`
	PrivateEnabled bool      `json:"privateEnabled"`
	CreatedAt      time.Time `json:"createdAt"`
	UpdatedAt      time.Time `json:"updatedAt"`
}

// view builds the record of a stored wallet from the state; st must be
// locked and settled.
func (s *Simulator) view(st *state, a *storage.InternalAccount) InternalAccount {
	w := st.wallet(a.ID)
	primary := s.cfg.WalletCurrency
	out := InternalAccount{ID: a.ID, CustomerID: a.CustomerID, Type: "EMBEDDED_WALLET", Status: "ACTIVE",
		Balance: Money{w.balances[primary], primary}, PrivateEnabled: w.privateEnabled,
		CreatedAt: a.CreatedAt.UTC(), UpdatedAt: a.UpdatedAt.UTC()}
	if w.updatedAt.After(out.UpdatedAt) {
		out.UpdatedAt = w.updatedAt
	}
	out.Balances = append(out.Balances, out.Balance)
	var others []string
	for c, v := range w.balances {
		if c != primary && v != 0 {
			others = append(others, c)
		}
	}
	slices.Sort(others)
	for _, c := range others {
		out.Balances = append(out.Balances, Money{w.balances[c], c})
	}
	return out
}

// ListInternalAccounts returns the embedded wallets of a customer (none for
// an unknown customer). A customerId that is not a Customer id is 400
// INVALID_INPUT.
func (s *Simulator) ListInternalAccounts(ctx context.Context, customerID string) ([]InternalAccount, error) {
	if !storage.ValidID(customerID, "Customer") {
		return nil, apierror.InvalidField("customerId", apierror.Pattern(`^Customer:[0-9a-fA-F-]{36}$`), "must be a Customer id")
	}
	var accts []storage.InternalAccount
	err := s.store.Atomic(ctx, func(tx storage.Tx) error {
		var err error
		accts, err = tx.InternalAccounts().ListByCustomer(ctx, customerID)
		return err
	})
	if err != nil {
		return nil, apierror.As(err)
	}
	out := []InternalAccount{}
	_ = s.locked(func(st *state, _ time.Time) error {
		for i := range accts {
			out = append(out, s.view(st, &accts[i]))
		}
		return nil
	})
	return out, nil
}

// GetInternalAccount returns one embedded wallet: 404 REFERENCE_NOT_FOUND
// when there is none.
func (s *Simulator) GetInternalAccount(ctx context.Context, id string) (*InternalAccount, error) {
	a, err := s.internalAccount(ctx, id)
	if err != nil {
		return nil, err
	}
	var out InternalAccount
	_ = s.locked(func(st *state, _ time.Time) error {
		out = s.view(st, &a)
		return nil
	})
	return &out, nil
}

// Signed-retry operation types of the simulator's wallet operations.
const (
	OpExportWallet  = "EXPORT_WALLET"
	OpWalletPrivacy = "UPDATE_WALLET_PRIVACY"
	OpExecuteQuote  = "EXECUTE_QUOTE"
)

// signed runs the two legs of a signed-retry operation: a call without
// either header issues op's challenge; a retry is completed (and its request
// consumed) and the parameters the first call bound are decoded into params,
// after which the caller applies the effect from params alone, never from
// the retry's body. The request is consumed at most once, so the effect runs
// at most once per challenge.
func (s *Simulator) signed(ctx context.Context, op signedretry.Operation, call signedretry.Retry, params any) (*signedretry.Authorization, *signedretry.Challenge, error) {
	retries := s.auth.Retries()
	if call.Signature == "" && call.RequestID == "" {
		op.Method, op.Path, op.Body = call.Method, call.Path, call.Body
		ch, err := retries.Issue(ctx, op)
		return nil, ch, err
	}
	call.Type = op.Type
	a, err := retries.Complete(ctx, call, func(_ storage.Tx, a *signedretry.Authorization) error {
		if a.AccountID != op.AccountID {
			return apierror.Unauthenticated("request id is bound to another account")
		}
		return a.DecodeParameters(params)
	})
	if err != nil {
		return nil, nil, err
	}
	return a, nil, nil
}

// defaults fills a Go caller's zero call from the route.
func (s *Simulator) defaults(call signedretry.Retry, method, path string, body any) (signedretry.Retry, error) {
	if call.Method == "" {
		call.Method = method
	}
	if call.Path == "" {
		call.Path = s.cfg.BasePath + path
	}
	if call.Body == nil && body != nil {
		b, err := marshalBody(body)
		if err != nil {
			return call, err
		}
		call.Body = b
	}
	return call, nil
}

// ExportRequest is the body of POST /internal-accounts/{id}/export.
type ExportRequest struct {
	// ClientPublicKey is the uncompressed P-256 key (130 hex characters)
	// the wallet's credentials are sealed to; the same on both legs.
	ClientPublicKey string `json:"clientPublicKey"`
}

// WalletExport is the 200 body of a completed export.
type WalletExport struct {
	ID string `json:"id"`
	// EncryptedWalletCredentials is the export envelope: a JSON string
	// {"version","data","dataSignature","enclaveQuorumPublic"} whose data is
	// hex of {"encappedPublic","ciphertext","organizationId"}; the
	// ciphertext is the wallet's mnemonic sealed to clientPublicKey. As in
	// the real sandbox, dataSignature and enclaveQuorumPublic are empty.
	EncryptedWalletCredentials string `json:"encryptedWalletCredentials"`
}

// ExportWallet exports an embedded wallet's mnemonic ([SandboxMnemonic])
// sealed to the client's key, through the signed retry (any active session
// of the wallet signs). call is the request as in [Simulator.UpdateCustomer].
//
// Errors: 400 INVALID_INPUT (clientPublicKey not an uncompressed P-256
// key), 404 REFERENCE_NOT_FOUND, the 401s of signedretry.
func (s *Simulator) ExportWallet(ctx context.Context, accountID string, req ExportRequest, call signedretry.Retry) (*WalletExport, *signedretry.Challenge, error) {
	call, err := s.defaults(call, http.MethodPost, "/internal-accounts/"+accountID+"/export", req)
	if err != nil {
		return nil, nil, err
	}
	key := strings.TrimSpace(req.ClientPublicKey)
	var signed ExportRequest
	if call.Signature == "" && call.RequestID == "" {
		if _, err := exportKey(key); err != nil {
			return nil, nil, err
		}
		if _, err := s.internalAccount(ctx, accountID); err != nil {
			return nil, nil, err
		}
	}
	op := signedretry.Operation{Type: OpExportWallet, AccountID: accountID, Signer: signedretry.Signer{Rule: signedretry.AnySession},
		Parameters: ExportRequest{ClientPublicKey: key}}
	a, ch, err := s.signed(ctx, op, call, &signed)
	if a == nil {
		return nil, ch, err
	}
	pub, err := exportKey(signed.ClientPublicKey)
	if err != nil {
		return nil, nil, apierror.Internal(err)
	}
	env, err := exportEnvelope(pub, s.rand)
	if err != nil {
		return nil, nil, err
	}
	return &WalletExport{ID: accountID, EncryptedWalletCredentials: env}, nil, nil
}

// exportKey parses the uncompressed P-256 key an export is sealed to.
func exportKey(key string) (*ecdsa.PublicKey, error) {
	if len(key) != 130 || !strings.HasPrefix(key, "04") {
		return nil, apierror.InvalidField("clientPublicKey", apierror.Pattern(`^04[0-9a-fA-F]{128}$`),
			"must be an uncompressed P-256 public key (130 hex characters)")
	}
	pub, err := signedretry.ParsePublicKey(key)
	if err != nil {
		return nil, apierror.InvalidField("clientPublicKey", apierror.Pattern(`^04[0-9a-fA-F]{128}$`), apierror.As(err).Message)
	}
	return pub, nil
}

// UpdateWalletRequest is the body of PATCH /internal-accounts/{id}.
type UpdateWalletRequest struct {
	PrivateEnabled *bool `json:"privateEnabled"`
}

// UpdateWallet changes an embedded wallet's privacy setting through the
// signed retry (any active session of the wallet signs) and returns the
// wallet.
//
// Errors: 400 INVALID_INPUT (privateEnabled missing), 404
// REFERENCE_NOT_FOUND, the 401s of signedretry.
func (s *Simulator) UpdateWallet(ctx context.Context, accountID string, req UpdateWalletRequest, call signedretry.Retry) (*InternalAccount, *signedretry.Challenge, error) {
	call, err := s.defaults(call, http.MethodPatch, "/internal-accounts/"+accountID, req)
	if err != nil {
		return nil, nil, err
	}
	retry := call.Signature != "" || call.RequestID != ""
	if !retry && req.PrivateEnabled == nil {
		return nil, nil, apierror.InvalidField("privateEnabled", nil, "is required")
	}
	acct, err := s.internalAccount(ctx, accountID)
	if err != nil {
		return nil, nil, err
	}
	op := signedretry.Operation{Type: OpWalletPrivacy, AccountID: accountID, Signer: signedretry.Signer{Rule: signedretry.AnySession},
		Parameters: req}
	var signed UpdateWalletRequest
	a, ch, err := s.signed(ctx, op, call, &signed)
	if a == nil {
		return nil, ch, err
	}
	if signed.PrivateEnabled == nil {
		return nil, nil, apierror.Internal(errors.New("sandbox: signed privacy update without privateEnabled"))
	}
	var out InternalAccount
	err = s.locked(func(st *state, now time.Time) error {
		w := st.wallet(accountID)
		w.privateEnabled, w.updatedAt = *signed.PrivateEnabled, now
		out = s.view(st, &acct)
		return nil
	})
	return &out, nil, err
}

// isInternal reports whether id names an internal account.
func isInternal(id string) bool { return strings.HasPrefix(id, "InternalAccount:") }

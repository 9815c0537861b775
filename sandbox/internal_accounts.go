package sandbox

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/walletauth"
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

// view builds the record of a stored wallet from the simulator's side of
// it, w, as of the state's now.
func (s *Simulator) view(w *wallet, a *storage.InternalAccount) InternalAccount {
	primary := s.cfg.WalletCurrency
	out := InternalAccount{ID: a.ID, CustomerID: a.CustomerID, Type: "EMBEDDED_WALLET", Status: "ACTIVE",
		Balance: Money{w.Balances[primary], primary}, PrivateEnabled: w.PrivateEnabled,
		CreatedAt: a.CreatedAt.UTC(), UpdatedAt: a.UpdatedAt.UTC()}
	if w.UpdatedAt.After(out.UpdatedAt) {
		out.UpdatedAt = w.UpdatedAt
	}
	out.Balances = append(out.Balances, out.Balance)
	var others []string
	for c, v := range w.Balances {
		if c != primary && v != 0 {
			others = append(others, c)
		}
	}
	slices.Sort(others)
	for _, c := range others {
		out.Balances = append(out.Balances, Money{w.Balances[c], c})
	}
	return out
}

// ListInternalAccounts returns one page of the embedded wallets of a
// customer, in creation order (an empty page for an unknown customer): the
// page GET /internal-accounts?customerId=&limit=&cursor= answers for the
// same options. A customerId that is not a Customer id, and invalid options
// ([ListOptions]), are 400 INVALID_INPUT.
func (s *Simulator) ListInternalAccounts(ctx context.Context, customerID string, opts ListOptions) (*Page[InternalAccount], error) {
	p, err := opts.page()
	if err != nil {
		return nil, err
	}
	if !storage.ValidID(customerID, "Customer") {
		return nil, apierror.InvalidField("customerId", apierror.Pattern(`^Customer:[0-9a-fA-F-]{36}$`), "must be a Customer id")
	}
	out := []InternalAccount{}
	err = s.read(ctx, func(st *state) error {
		accts, err := st.tx.InternalAccounts().ListByCustomer(ctx, customerID)
		if err != nil {
			return err
		}
		for i := range accts {
			w, err := st.wallet(accts[i].ID)
			if err != nil {
				return err
			}
			out = append(out, s.view(w, &accts[i]))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return paginate(out, internalKey, p), nil
}

// GetInternalAccount returns one embedded wallet: 404 REFERENCE_NOT_FOUND
// when there is none.
func (s *Simulator) GetInternalAccount(ctx context.Context, id string) (*InternalAccount, error) {
	var out InternalAccount
	err := s.read(ctx, func(st *state) error {
		a, err := internalIn(st, id)
		if err != nil {
			return err
		}
		w, err := st.wallet(id)
		if err != nil {
			return err
		}
		out = s.view(w, &a)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// Signed-retry operation types of the simulator's own wallet operations
// (wallet export and privacy are walletauth's: walletauth.OpExportWallet and
// walletauth.OpWalletPrivacy). They are for the wallet client under test: it
// stamps a payload only when its type is the operation it started (the Type
// of its signedretry/stamper Expectation).
const (
	OpExecuteQuote  = "EXECUTE_QUOTE"
	OpTransferOut   = "TRANSFER_OUT"
	OpApprovePayout = "APPROVE_PAYOUT"
)

// defaults fills a Go caller's zero call from the route.
func (s *Simulator) defaults(call signedretry.Request, method, path string, body any) (signedretry.Request, error) {
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

// ExportWallet exports an embedded wallet's mnemonic ([SandboxMnemonic])
// sealed to the client's key, through the signed retry of
// [walletauth.Service.ExportWallet] (any active session of the wallet
// signs; the key sealed to is the one the first call bound). call is the
// request as in [Simulator.UpdateCustomer]. req is the body of POST
// /internal-accounts/{id}/export.
//
// The result is walletauth's export envelope, whose ciphertext is
// [SandboxMnemonic] sealed to the signed clientPublicKey and whose
// organizationId is [SandboxOrganizationID]. dataSignature is made by the
// simulator's signing key and enclaveQuorumPublic is its public half
// (Auth().SigningPublicKey(), the key OTP target bundles carry), so
// @turnkey/crypto's decryptExportBundle opens it with that key as
// dangerouslyOverrideSignerPublicKey.
//
// Errors: 400 INVALID_INPUT (clientPublicKey not a compressed or
// uncompressed P-256 key), 404 REFERENCE_NOT_FOUND, the 401s of signedretry.
func (s *Simulator) ExportWallet(ctx context.Context, accountID string, req walletauth.ExportRequest, call signedretry.Request) (*walletauth.WalletExport, *signedretry.Challenge, error) {
	call, err := s.defaults(call, http.MethodPost, "/internal-accounts/"+accountID+"/export", req)
	if err != nil {
		return nil, nil, err
	}
	return s.auth.ExportWallet(ctx, accountID, req, call)
}

// walletSecrets is the simulator's walletauth.WalletSecrets: every wallet's
// secret is SandboxMnemonic.
type walletSecrets struct{}

func (walletSecrets) Secret(context.Context, string) ([]byte, error) {
	return []byte(SandboxMnemonic), nil
}

// UpdateWallet changes an embedded wallet's privacy setting through the
// signed retry of [walletauth.Service.UpdateWalletPrivacy] (any active
// session of the wallet signs), stores the signed value and returns the
// wallet. req is the body of PATCH /internal-accounts/{id}.
//
// Errors: 400 INVALID_INPUT (privateEnabled missing), 404
// REFERENCE_NOT_FOUND, the 401s of signedretry.
func (s *Simulator) UpdateWallet(ctx context.Context, accountID string, req walletauth.PrivacyRequest, call signedretry.Request) (*InternalAccount, *signedretry.Challenge, error) {
	call, err := s.defaults(call, http.MethodPatch, "/internal-accounts/"+accountID, req)
	if err != nil {
		return nil, nil, err
	}
	retry := call.Signature != "" || call.RequestID != ""
	if !retry && req.PrivateEnabled == nil {
		return nil, nil, apierror.InvalidField("privateEnabled", nil, "is required")
	}
	if !storage.ValidID(accountID, "InternalAccount") {
		return nil, nil, apierror.New(apierror.ReferenceNotFound, "internal account %s not found", accountID)
	}
	// The first leg reads the wallet (404 when there is none); the retry
	// reads it under the signer's lock of it, which holds the row already.
	var acct storage.InternalAccount
	p, ch, err := s.auth.UpdateWalletPrivacy(ctx, accountID, req, call, func(tx storage.Tx, _ bool) error {
		var err error
		acct, err = tx.InternalAccounts().Get(ctx, accountID)
		if errors.Is(err, storage.ErrNotFound) {
			return apierror.New(apierror.ReferenceNotFound, "internal account %s not found", accountID)
		}
		return err
	})
	if p == nil {
		return nil, ch, err
	}
	var out InternalAccount
	err = s.atomic(ctx, func(st *state) error {
		w, err := st.wallet(accountID)
		if err != nil {
			return err
		}
		w.PrivateEnabled, w.UpdatedAt = p.PrivateEnabled, st.now
		out = s.view(w, &acct)
		return nil
	})
	return &out, nil, err
}

// isInternal reports whether id names an internal account.
func isInternal(id string) bool { return strings.HasPrefix(id, "InternalAccount:") }

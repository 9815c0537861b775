package main

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/ownership"
	"github.com/walletgate/walletgate/ownership/policy"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/idempotency"
	"github.com/walletgate/walletgate/storage/postgres"
	"github.com/walletgate/walletgate/walletauth"
)

// PayoutType is the host operation a wallet session signs to pay out.
const PayoutType = "PAYOUT"

// PayoutEvent is the outbox event a payout commits with.
const PayoutEvent = "PAYOUT.CREATED"

// maxBody bounds every request body the host reads itself.
const maxBody = 64 << 10

// maxReruns bounds how often a host transaction that lost a conflict with
// another (postgres.Rerunnable) is run again.
const maxReruns = 5

// Server is the host: its own tables (customers, ledger, payouts) beside
// walletgate's in one PostgreSQL schema, and every write that touches both
// in one transaction the host begins and commits.
type Server struct {
	pool      *pgxpool.Pool
	store     *postgres.Store
	auth      *walletauth.Service
	owner     *ownership.Service
	limits    *policy.Policy
	guard     *idempotency.Guard
	platforms map[string]string // API key -> platform id
	log       *slog.Logger
	t         tables
}

// tables are the host's qualified table names.
type tables struct{ customers, ledger, payouts string }

func newTables(schema string) tables {
	q := func(n string) string { return pgx.Identifier{schema, n}.Sanitize() }
	return tables{customers: q("host_customers"), ledger: q("host_ledger"), payouts: q("host_payouts")}
}

// hostMigration creates the host's own tables. A real host keeps it in its
// migration tool beside postgres.Migrations; it is idempotent here so every
// replica may run it at start.
func hostMigration(t tables) string {
	return `
CREATE TABLE IF NOT EXISTS ` + t.customers + ` (
	id         text PRIMARY KEY,
	platform   text NOT NULL,
	email      text NOT NULL,
	wallet_id  text NOT NULL UNIQUE,
	created_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS ` + t.ledger + ` (
	customer_id text PRIMARY KEY REFERENCES ` + t.customers + ` (id),
	currency    text NOT NULL,
	balance     bigint NOT NULL CHECK (balance >= 0)
);
CREATE TABLE IF NOT EXISTS ` + t.payouts + ` (
	request_id    text PRIMARY KEY,
	customer_id   text NOT NULL REFERENCES ` + t.customers + ` (id),
	account_id    text NOT NULL,
	amount        bigint NOT NULL CHECK (amount > 0),
	currency      text NOT NULL,
	session_id    text NOT NULL,
	credential_id text NOT NULL,
	created_at    timestamptz NOT NULL DEFAULT now()
);`
}

// ServerConfig holds what NewServer needs; every field is required.
type ServerConfig struct {
	Pool      *pgxpool.Pool
	Store     *postgres.Store
	Auth      *walletauth.Service
	Owner     *ownership.Service
	Limits    *policy.Policy
	Platforms map[string]string // API key -> platform id
	// Telemetry receives the records of the host and of the Idempotency-Key
	// middleware, and every error the API answers (under apierror.Observe).
	Telemetry Telemetry
}

// NewServer creates the host's tables when missing and returns the host.
func NewServer(ctx context.Context, c ServerConfig) (*Server, error) {
	if c.Pool == nil || c.Store == nil || c.Auth == nil || c.Owner == nil || c.Limits == nil || c.Telemetry.Log == nil || len(c.Platforms) == 0 {
		return nil, errors.New("host: pool, store, services, logger and at least one platform key are required")
	}
	s := &Server{pool: c.Pool, store: c.Store, auth: c.Auth, owner: c.Owner, limits: c.Limits, platforms: c.Platforms, log: c.Telemetry.Log, t: newTables(c.Store.Schema())}
	if _, err := c.Pool.Exec(ctx, hostMigration(s.t)); err != nil {
		return nil, fmt.Errorf("host: migrate the host's tables: %w", err)
	}
	g, err := idempotency.New(idempotency.Config{Store: c.Store,
		Logger: c.Telemetry.Log, TracerProvider: c.Telemetry.TracerProvider, MeterProvider: c.Telemetry.MeterProvider})
	if err != nil {
		return nil, err
	}
	s.guard = g
	return s, nil
}

type platformKey struct{}

// platformOf is the authenticated platform of r (set by authenticate).
func platformOf(r *http.Request) string {
	p, _ := r.Context().Value(platformKey{}).(string)
	return p
}

// Handler routes the host's API. Every route needs a platform's API key
// (Authorization: Bearer); every POST runs behind the Idempotency-Key
// middleware, whose keys are scoped to the authenticated platform.
func (s *Server) Handler() (http.Handler, error) {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /customers", s.createCustomer)
	mux.HandleFunc("POST /customers/{id}/external-accounts", s.registerAccount)
	mux.HandleFunc("POST /customers/{id}/payouts", s.payout)
	// Ownership proof (challenge, verify) through ownership's own handler,
	// for accounts of the calling platform's customers only.
	proof, err := s.owner.Handler(ownership.HandlerConfig{Guard: s.ownAccount})
	if err != nil {
		return nil, err
	}
	mux.Handle("POST /customers/external-accounts/{id}/challenge", proof)
	mux.Handle("POST /customers/external-accounts/{id}/verify", proof)
	// EMAIL_OTP login and the wallet's credentials and sessions through
	// walletauth's, for wallets of the calling platform's customers only.
	auth, err := s.auth.Handler(walletauth.HandlerConfig{Guard: s.ownWallet})
	if err != nil {
		return nil, err
	}
	mux.Handle("/auth/", auth)
	// The Idempotency-Key middleware buffers the answers of keyed
	// requests; the Observe inside it reports what the routes write, the
	// outermost one everything else, each answer once, under one request
	// id (X-Request-Id, which the middleware logs as well).
	idem, err := s.guard.Middleware(platformOf, apierror.Observe(mux, s.log))
	if err != nil {
		return nil, err
	}
	return apierror.Observe(s.authenticate(idem), s.log), nil
}

func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		platform := ""
		for k, p := range s.platforms {
			if ok && subtle.ConstantTimeCompare([]byte(k), []byte(key)) == 1 {
				platform = p
			}
		}
		if platform == "" {
			const reason = "missing or unknown API key"
			s.log.LogAttrs(r.Context(), slog.LevelWarn, "refused", slog.String("operation", "host.authenticate"),
				slog.String("code", apierror.Unauthorized.String()), slog.String("reason", reason),
				slog.String("request_id", apierror.RequestID(r.Context())))
			apierror.Write(w, apierror.Unauthenticated(reason))
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), platformKey{}, platform)))
	})
}

// inTx runs fn in a host transaction bound to the store (WithTx) and
// commits it; a transaction that lost a conflict with another
// (postgres.Rerunnable: walletgate's postgres.ErrRerun, or a serialization
// failure or deadlock of the host's own statements or COMMIT) rolls back
// and runs it whole again, as walletgate cannot rerun the host's.
func (s *Server) inTx(ctx context.Context, fn func(hctx context.Context, tx pgx.Tx) error) error {
	for run := 0; ; run++ {
		err := s.once(ctx, fn)
		if !postgres.Rerunnable(err) || run == maxReruns {
			return err
		}
	}
}

func (s *Server) once(ctx context.Context, fn func(context.Context, pgx.Tx) error) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }() // a no-op after Commit
	if err := fn(s.store.WithTx(ctx, tx), tx); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

type newCustomer struct {
	Email    string `json:"email"`
	Currency string `json:"currency"`
}

// Customer is the 201 body of POST /customers.
type Customer struct {
	ID       string `json:"id"`
	WalletID string `json:"walletId"`
	// CredentialID is the wallet's EMAIL_OTP credential, to log in with.
	CredentialID string `json:"credentialId"`
}

// createCustomer creates the host's customer row, its ledger row and its
// embedded wallet in one host transaction.
func (s *Server) createCustomer(w http.ResponseWriter, r *http.Request) {
	var in newCustomer
	if err := apierror.Decode(r, &in); err != nil {
		apierror.Write(w, err)
		return
	}
	// Fail closed: a ledger in a currency the payout policy does not pay
	// out could never be paid from.
	if paid := Policy.Currencies(); !slices.Contains(paid, in.Currency) {
		apierror.Write(w, apierror.InvalidField("currency", apierror.OneOf(paid...), "is not a currency this host pays out"))
		return
	}
	id, err := storage.NewID(nil, "Customer")
	if err != nil {
		apierror.Write(w, err)
		return
	}
	var out Customer
	err = s.inTx(r.Context(), func(hctx context.Context, tx pgx.Tx) error {
		wallet, email, err := s.auth.CreateWallet(hctx, walletauth.NewWallet{CustomerID: id, Email: in.Email})
		if err != nil {
			return err
		}
		if _, err := tx.Exec(hctx, "INSERT INTO "+s.t.customers+" (id, platform, email, wallet_id) VALUES ($1, $2, $3, $4)",
			id, platformOf(r), in.Email, wallet.ID); err != nil {
			return err
		}
		if _, err := tx.Exec(hctx, "INSERT INTO "+s.t.ledger+" (customer_id, currency, balance) VALUES ($1, $2, 0)", id, in.Currency); err != nil {
			return err
		}
		out = Customer{ID: id, WalletID: wallet.ID, CredentialID: email.ID}
		return nil
	})
	if err != nil {
		apierror.Write(w, err)
		return
	}
	apierror.WriteJSON(w, http.StatusCreated, out)
}

// customer loads the customer of the path, of the calling platform.
func (s *Server) customer(r *http.Request) (id, wallet, currency string, err error) {
	id = r.PathValue("id")
	err = s.pool.QueryRow(r.Context(), "SELECT c.wallet_id, l.currency FROM "+s.t.customers+" c JOIN "+s.t.ledger+
		" l ON l.customer_id = c.id WHERE c.id = $1 AND c.platform = $2", id, platformOf(r)).Scan(&wallet, &currency)
	if errors.Is(err, pgx.ErrNoRows) {
		err = apierror.New(apierror.ReferenceNotFound, "no customer %s", id)
	}
	return id, wallet, currency, err
}

// ownAccount is the guard of ownership's routes: the account must belong
// to a customer of the calling platform. A refusal is a plain error, which
// the handler answers as it answers an account that does not exist (404).
func (s *Server) ownAccount(r *http.Request, a storage.ExternalAccount) error {
	return s.owns(r, "SELECT EXISTS (SELECT 1 FROM "+s.t.customers+" WHERE id = $1 AND platform = $2)", a.CustomerID)
}

// ownWallet is the guard of walletauth's routes, which the handler asks
// with the wallet of every credential, session and account id: the wallet
// must be the one of a customer of the calling platform.
func (s *Server) ownWallet(r *http.Request, w storage.InternalAccount) error {
	return s.owns(r, "SELECT EXISTS (SELECT 1 FROM "+s.t.customers+" WHERE wallet_id = $1 AND platform = $2)", w.ID)
}

// owns runs query, which asks whether the customers table has a row of
// the calling platform ($2) for id ($1): nil when it has, a plain error
// when it has not, 500 when the table cannot be read.
func (s *Server) owns(r *http.Request, query, id string) error {
	var ok bool
	if err := s.pool.QueryRow(r.Context(), query, id, platformOf(r)).Scan(&ok); err != nil {
		return apierror.Internal(err)
	}
	if !ok {
		return fmt.Errorf("host: %s is not the calling platform's", id)
	}
	return nil
}

type newAccount struct {
	AccountType string `json:"accountType"`
	Address     string `json:"address"`
}

// registerAccount registers a first-party self-custody wallet of the
// customer; it starts PENDING_OWNERSHIP_VERIFICATION and is proven through
// POST /external-accounts/{id}/challenge and /verify.
func (s *Server) registerAccount(w http.ResponseWriter, r *http.Request) {
	id, _, currency, err := s.customer(r)
	if err != nil {
		apierror.Write(w, err)
		return
	}
	var in newAccount
	if err := apierror.Decode(r, &in); err != nil {
		apierror.Write(w, err)
		return
	}
	a, err := s.owner.RegisterAccount(r.Context(), ownership.NewAccount{CustomerID: id, AccountType: in.AccountType,
		Address: in.Address, Currency: currency, OwnershipType: ownership.FirstParty})
	if err != nil {
		apierror.Write(w, err)
		return
	}
	apierror.WriteJSON(w, http.StatusCreated, ownership.AccountJSON(*a))
}

// payoutParams are what the wallet's session signs: everything the payout
// acts on. The check and the effect get them as the first call stored
// them, never from the retry.
type payoutParams struct {
	CustomerID string `json:"customerId"`
	AccountID  string `json:"accountId"`
	Amount     int64  `json:"amount"`
	Currency   string `json:"currency"`
}

type payoutBody struct {
	AccountID string `json:"accountId"`
	Amount    int64  `json:"amount"`
}

// Payout is the 200 body of a paid payout.
type Payout struct {
	ID        string `json:"id"`
	AccountID string `json:"accountId"`
	Amount    int64  `json:"amount"`
	Currency  string `json:"currency"`
	SessionID string `json:"sessionId"`
}

// payout is one signed host operation. The first leg runs the payout rule
// (payoutCheck: the customer's own account, the payout gate), so a payout
// the gate refuses asks for no signature, then binds the parameters and
// answers 202 with the payload to stamp. The retry, in one host
// transaction: the signature check and consumption of the request, the
// same rule again on the signed parameters (the gate holding the external
// account), the ledger debit, the payout row naming the signer and the
// outbox event. Any failure rolls all of it back: the signed request stays
// usable.
func (s *Server) payout(w http.ResponseWriter, r *http.Request) {
	customer, wallet, currency, err := s.customer(r)
	if err != nil {
		apierror.Write(w, err)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		apierror.Write(w, apierror.New(apierror.InvalidInput, "the body exceeds %d bytes", maxBody))
		return
	}
	call := signedretry.RequestFrom(r, body)
	op := walletauth.HostOperation[payoutParams, Payout]{Type: PayoutType, AccountID: wallet, Check: s.payoutCheck, Effect: s.payoutEffect}
	if !call.IsRetry() {
		var in payoutBody
		if err := apierror.DecodeBytes(body, &in); err != nil {
			apierror.Write(w, err)
			return
		}
		if in.Amount <= 0 {
			apierror.Write(w, apierror.InvalidField("amount", nil, "must be positive"))
			return
		}
		op.Parameters = payoutParams{CustomerID: customer, AccountID: in.AccountID, Amount: in.Amount, Currency: currency}
	}
	var (
		paid Payout
		ch   *signedretry.Challenge
	)
	err = s.inTx(r.Context(), func(hctx context.Context, _ pgx.Tx) error {
		var err error
		paid, _, ch, err = walletauth.Authorize(hctx, s.auth, op, call)
		return err
	})
	switch {
	case err != nil:
		apierror.Write(w, err)
	case ch != nil:
		apierror.WriteJSON(w, http.StatusAccepted, ch)
	default:
		s.log.Info("payout committed", "request", paid.ID, "account", paid.AccountID, "amount", paid.Amount)
		apierror.WriteJSON(w, http.StatusOK, paid)
	}
}

// payoutCheck is the payout rule, run on both legs inside the host
// transaction: the destination must be the customer's own (its owner never
// changes), checked before the gate so that another customer's account
// reveals nothing of its state, and the payout gate must allow the payout,
// holding the account until the transaction ends.
func (s *Server) payoutCheck(ctx context.Context, wt storage.Tx, p payoutParams) error {
	acct, err := wt.ExternalAccounts().Get(ctx, p.AccountID)
	if errors.Is(err, storage.ErrNotFound) || err == nil && acct.CustomerID != p.CustomerID {
		return apierror.New(apierror.ReferenceNotFound, "no external account %s of customer %s", p.AccountID, p.CustomerID)
	}
	if err != nil {
		return err
	}
	_, err = s.owner.CheckPayoutIn(ctx, wt, ownership.Payout{AccountID: p.AccountID, Amount: p.Amount, Currency: p.Currency})
	return err
}

// payoutEffect runs inside the host transaction that consumes the signed
// request, once payoutCheck has allowed the signed parameters p, and
// returns the payout it wrote. The risk policy decides first, on the
// signer of the retry (a refusal leaves the signed request usable, for
// when the window has room); the payout it allows counts in its windows
// only if everything below commits.
func (s *Server) payoutEffect(ctx context.Context, wt storage.Tx, a *signedretry.Authorization, p payoutParams) (Payout, error) {
	if _, err := s.limits.Decide(ctx, wt, policy.Payout{ID: a.RequestID, CustomerID: p.CustomerID, SourceID: a.AccountID,
		DestinationID: p.AccountID, Amount: p.Amount, Currency: p.Currency, Authorization: a}); err != nil {
		return Payout{}, err
	}
	pg, err := postgres.HostTx(ctx, wt)
	if err != nil {
		return Payout{}, err
	}
	if err := debit(ctx, pg, s.t, p.CustomerID, p.Amount); err != nil {
		return Payout{}, err
	}
	if _, err := pg.Exec(ctx, "INSERT INTO "+s.t.payouts+
		" (request_id, customer_id, account_id, amount, currency, session_id, credential_id) VALUES ($1, $2, $3, $4, $5, $6, $7)",
		a.RequestID, p.CustomerID, p.AccountID, p.Amount, p.Currency, a.SessionID, a.CredentialID); err != nil {
		return Payout{}, err
	}
	eid, err := storage.NewID(nil, "Webhook")
	if err != nil {
		return Payout{}, err
	}
	payload, err := eventPayload(eid, a.RequestID, p)
	if err != nil {
		return Payout{}, err
	}
	if err := wt.Outbox().Append(ctx, &storage.Event{ID: eid, Type: PayoutEvent, AccountID: p.AccountID, Payload: payload, CreatedAt: time.Now().UTC()}); err != nil {
		return Payout{}, err
	}
	return Payout{ID: a.RequestID, AccountID: p.AccountID, Amount: p.Amount, Currency: p.Currency, SessionID: a.SessionID}, nil
}

// InsufficientFunds is this host's own error code: 409 when a payout is
// more than the customer's balance. apierror.Define refuses a name the
// service already uses.
var InsufficientFunds = func() apierror.Code {
	c, err := apierror.Define(http.StatusConflict, "INSUFFICIENT_FUNDS")
	if err != nil {
		panic(err)
	}
	return c
}()

// debit takes amount from the customer's balance, refusing an overdraft
// with [InsufficientFunds].
// It is a variable so that tests can make it fail after the gate.
var debit = func(ctx context.Context, pg pgx.Tx, t tables, customer string, amount int64) error {
	tag, err := pg.Exec(ctx, "UPDATE "+t.ledger+" SET balance = balance - $1 WHERE customer_id = $2 AND balance >= $1", amount, customer)
	if err != nil {
		return err
	}
	if tag.RowsAffected() != 1 {
		return apierror.New(InsufficientFunds, "the balance is below the payout's %d", amount).WithDetail("field", "amount")
	}
	return nil
}

// eventPayload is the webhook envelope of a payout event.
func eventPayload(id, requestID string, p payoutParams) ([]byte, error) {
	return json.Marshal(map[string]any{"id": id, "type": PayoutEvent, "timestamp": time.Now().UTC().Format(time.RFC3339),
		"data": map[string]any{"id": requestID, "customerId": p.CustomerID, "accountId": p.AccountID, "amount": p.Amount, "currency": p.Currency}})
}

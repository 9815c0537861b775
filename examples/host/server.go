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
	"github.com/walletgate/walletgate/apierror/operation"
	"github.com/walletgate/walletgate/ownership"
	"github.com/walletgate/walletgate/ownership/payout"
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

// Server is the host: its own tables (customers, ledger, payouts) beside
// walletgate's in one PostgreSQL schema, and every write that touches both
// in one transaction the host begins and commits.
type Server struct {
	pool      *pgxpool.Pool
	store     *postgres.Store
	auth      *walletauth.Service
	owner     *ownership.Service
	payouts   *payout.Service
	idem      *idempotency.Once
	platforms map[string]string // API key -> platform id
	operators map[string]string // operator key -> operator name
	clock     func() time.Time
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
);
ALTER TABLE ` + t.payouts + ` ADD COLUMN IF NOT EXISTS approval_id text;`
}

// ServerConfig holds what NewServer needs; every field is required but
// Operators.
type ServerConfig struct {
	Pool  *pgxpool.Pool
	Store *postgres.Store
	Auth  *walletauth.Service
	Owner *ownership.Service
	// Payouts runs the payouts and their approvals (ownership/payout), on
	// the services above.
	Payouts   *payout.Service
	Platforms map[string]string // API key -> platform id
	// Operators are the risk desk's keys (operator key -> operator name,
	// as the payout policy's approval rules name operators).
	Operators map[string]string
	// Clock is the services' (ServicesConfig.Clock); nil means time.Now.
	Clock func() time.Time
	// Telemetry receives the records of the host and of the Idempotency-Key
	// middleware, and every error the API answers (under apierror.Observe).
	Telemetry operation.Telemetry
}

// NewServer creates the host's tables when missing and returns the host.
func NewServer(ctx context.Context, c ServerConfig) (*Server, error) {
	if c.Pool == nil || c.Store == nil || c.Auth == nil || c.Owner == nil || c.Payouts == nil || c.Telemetry.Logger == nil || len(c.Platforms) == 0 {
		return nil, errors.New("host: pool, store, services, logger and at least one platform key are required")
	}
	s := &Server{pool: c.Pool, store: c.Store, auth: c.Auth, owner: c.Owner, payouts: c.Payouts, platforms: c.Platforms,
		operators: c.Operators, clock: c.Clock, log: c.Telemetry.Logger, t: newTables(c.Store.Schema())}
	if s.clock == nil {
		s.clock = time.Now
	}
	if _, err := c.Pool.Exec(ctx, hostMigration(s.t)); err != nil {
		return nil, fmt.Errorf("host: migrate the host's tables: %w", err)
	}
	g, err := idempotency.New(idempotency.Config{Store: c.Store,
		Telemetry: c.Telemetry})
	if err != nil {
		return nil, err
	}
	s.idem = g
	return s, nil
}

type platformKey struct{}

// withPlatform is ctx acting as platform: what the services' guards
// compare a wallet's tenant, or an external account's customer, with.
// authenticate sets it for every request of a platform's API key.
func withPlatform(ctx context.Context, platform string) context.Context {
	return context.WithValue(ctx, platformKey{}, platform)
}

// platformIn is the platform ctx acts as; "" when none.
func platformIn(ctx context.Context) string {
	p, _ := ctx.Value(platformKey{}).(string)
	return p
}

// platformOf is the authenticated platform of r.
func platformOf(r *http.Request) string { return platformIn(r.Context()) }

// platformWallet is walletauth's guard: a wallet is of the platform that
// created it, its tenant. It reads nothing: the tenant is on the row the
// operation reads. A refusal is a plain error, which the service answers
// as it answers an id that does not exist (404).
func platformWallet(ctx context.Context, w storage.InternalAccount) error {
	if p := platformIn(ctx); p == "" || p != w.Tenant {
		return fmt.Errorf("host: wallet %s is not the calling platform's", w.ID)
	}
	return nil
}

// platformAccount is ownership's guard: an external account is of the
// platform its customer registered it through, its tenant. Like
// platformWallet it reads nothing: a guard that queried the database from
// inside the operation's transaction would hold one connection while it
// waits for another.
func platformAccount(ctx context.Context, a storage.ExternalAccount) error {
	if p := platformIn(ctx); p == "" || p != a.Tenant {
		return fmt.Errorf("host: %s is not the calling platform's", a.ID)
	}
	return nil
}

// Handler routes the host's API. Every route but the risk desk's needs a
// platform's API key (Authorization: Bearer); every POST runs behind the
// Idempotency-Key middleware, whose keys are scoped to the authenticated
// platform. The risk desk's routes under /operator/ need an operator key.
func (s *Server) Handler() (http.Handler, error) {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /customers", s.createCustomer)
	mux.HandleFunc("POST /customers/{id}/external-accounts", s.registerAccount)
	mux.HandleFunc("POST /customers/{id}/payouts", s.payout)
	mux.HandleFunc("GET /customers/{id}/payout-approvals/{approvalId}", s.getApproval)
	// Ownership proof (challenge, verify) through ownership's own handler;
	// the service's guard admits accounts of the calling platform's
	// customers only.
	proof, err := s.owner.Handler()
	if err != nil {
		return nil, err
	}
	mux.Handle("POST /customers/external-accounts/{id}/challenge", proof)
	mux.Handle("POST /customers/external-accounts/{id}/verify", proof)
	// EMAIL_OTP login and the wallet's credentials and sessions through
	// walletauth's handler; its guard admits the calling platform's
	// wallets only.
	auth, err := s.auth.Handler()
	if err != nil {
		return nil, err
	}
	mux.Handle("/auth/", auth)
	// The Idempotency-Key middleware buffers the answers of keyed
	// requests; the Observe inside it reports what the routes write, the
	// outermost one everything else, each answer once, under one request
	// id (X-Request-Id, which the middleware logs as well).
	idem, err := s.idem.Middleware(platformOf, apierror.Observe(mux, s.log))
	if err != nil {
		return nil, err
	}
	desk := http.NewServeMux()
	desk.HandleFunc("POST /operator/payout-approvals/{approvalId}/approve", s.operatorDecides(true))
	desk.HandleFunc("POST /operator/payout-approvals/{approvalId}/refuse", s.operatorDecides(false))
	top := http.NewServeMux()
	top.Handle("/operator/", s.authenticate(s.operators, operatorKey{}, apierror.Observe(desk, s.log)))
	top.Handle("/", s.authenticate(s.platforms, platformKey{}, idem))
	return apierror.Observe(top, s.log), nil
}

type operatorKey struct{}

// operatorOf is the authenticated operator of r.
func operatorOf(r *http.Request) string {
	o, _ := r.Context().Value(operatorKey{}).(string)
	return o
}

// authenticate admits requests whose bearer key is one of keys and binds
// the principal it names to the context under ctxKey.
func (s *Server) authenticate(keys map[string]string, ctxKey any, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		principal := ""
		for k, p := range keys {
			if ok && subtle.ConstantTimeCompare([]byte(k), []byte(key)) == 1 {
				principal = p
			}
		}
		if principal == "" {
			const reason = "missing or unknown API key"
			s.log.LogAttrs(r.Context(), slog.LevelWarn, "refused", slog.String("operation", "host.authenticate"),
				slog.String("code", apierror.Unauthorized.String()), slog.String("reason", reason),
				slog.String("request_id", apierror.RequestID(r.Context())))
			apierror.Write(w, apierror.Unauthenticated(reason))
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ctxKey, principal)))
	})
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
	if paid := PayoutGate.Currencies(); !slices.Contains(paid, in.Currency) {
		apierror.Write(w, apierror.InvalidField("currency", apierror.OneOf(paid...), "is not a currency this host pays out"))
		return
	}
	id, err := storage.NewID(nil, "Customer")
	if err != nil {
		apierror.Write(w, err)
		return
	}
	var out Customer
	err = s.store.InTx(r.Context(), func(hctx context.Context, tx pgx.Tx) error {
		// The wallet's tenant is the calling platform: its email is
		// unique among this platform's customers only.
		wallet, email, err := s.auth.CreateWallet(hctx, walletauth.NewWallet{CustomerID: id, Tenant: platformOf(r), Email: in.Email})
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
	a, err := s.owner.RegisterAccount(r.Context(), ownership.NewAccount{CustomerID: id, Tenant: platformOf(r), AccountType: in.AccountType,
		Address: in.Address, Currency: currency, OwnershipType: ownership.FirstParty})
	if err != nil {
		apierror.Write(w, err)
		return
	}
	apierror.WriteJSON(w, http.StatusCreated, ownership.AccountJSON(*a))
}

// payoutParams are what the wallet's session signs: everything the payout
// acts on. The chain and the payout get them as the first call stored
// them, never from the retry.
type payoutParams struct {
	CustomerID string `json:"customerId"`
	WalletID   string `json:"walletId"`
	AccountID  string `json:"accountId"`
	Amount     int64  `json:"amount"`
	Currency   string `json:"currency"`
}

// transfer is the payout the parameters name, from the customer's wallet.
func (p payoutParams) transfer() payout.Transfer {
	return payout.Transfer{SourceID: p.WalletID, DestinationID: p.AccountID, Amount: p.Amount, Currency: p.Currency}
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
	// SessionID is the session that signed it; empty for a payout the
	// risk desk approved (ApprovalID).
	SessionID  string `json:"sessionId,omitempty"`
	ApprovalID string `json:"approvalId,omitempty"`
}

// PayoutApproval is a payout the policy holds for the risk desk: the 202
// body of a payout's signed retry that the policy held, and the body of
// GET /customers/{id}/payout-approvals/{approvalId}.
type PayoutApproval struct {
	ID         string `json:"id"`
	CustomerID string `json:"customerId"`
	AccountID  string `json:"accountId"`
	Amount     int64  `json:"amount"`
	Currency   string `json:"currency"`
	// Rule names the rule that holds it; State is WAITING, APPROVED,
	// REFUSED or EXPIRED.
	Rule      string    `json:"rule"`
	State     string    `json:"state"`
	Approvers []string  `json:"approvers"`
	ExpiresAt time.Time `json:"expiresAt"`
}

func approvalView(ap *storage.PayoutApproval, now time.Time) PayoutApproval {
	return PayoutApproval{ID: ap.ID, CustomerID: ap.CustomerID, AccountID: ap.DestinationID, Amount: ap.Amount, Currency: ap.Currency,
		Rule: ap.Rule, State: policy.StateOf(ap, now), Approvers: append([]string{}, ap.Approvers...), ExpiresAt: ap.ExpiresAt}
}

// payout is one signed host operation, the payout of ownership/payout
// (payout.Operation). Its first leg runs the payout's chain (the
// destination the customer's own, checked before the gate so that another
// customer's account reveals nothing of its state, and the payout gate),
// so a payout the gate refuses asks for no signature, then binds the
// parameters and answers 202 with the payload to stamp. The retry, in one
// host transaction: the signature check and consumption of the request,
// the chain again on the signed parameters (the gate holding the external
// account), the payout policy's decision and, for an allowed payout only,
// the host's payout (pay: the ledger debit, the payout row naming the
// signer and the outbox event). A held payout answers 202 with its
// approval and debits nothing. Any failure rolls all of it back: the
// signed request stays usable.
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
	spec := payout.Spec[payoutParams, Payout]{Type: PayoutType, AccountID: wallet, DestinationField: "accountId",
		Transfer: payoutParams.transfer, Pay: s.paySigned}
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
		spec.Parameters = payoutParams{CustomerID: customer, WalletID: wallet, AccountID: in.AccountID, Amount: in.Amount, Currency: currency}
	}
	var (
		out payout.Outcome[Payout]
		ch  *signedretry.Challenge
	)
	err = s.store.InTx(r.Context(), func(hctx context.Context, _ pgx.Tx) error {
		var err error
		out, _, ch, err = walletauth.Authorize(hctx, s.auth, payout.Operation(s.payouts, spec, call), call)
		return err
	})
	switch {
	case err != nil:
		apierror.Write(w, err)
	case ch != nil:
		apierror.WriteJSON(w, http.StatusAccepted, ch)
	case out.Held != nil:
		s.log.Info("payout held for approval", "approval", out.Held.ID, "rule", out.Held.Rule)
		apierror.WriteJSON(w, http.StatusAccepted, approvalView(out.Held, s.clock()))
	default:
		s.log.Info("payout committed", "request", out.Paid.ID, "account", out.Paid.AccountID, "amount", out.Paid.Amount)
		apierror.WriteJSON(w, http.StatusOK, out.Paid)
	}
}

// paySigned is the host's payout of the signed parameters p, which the
// chain and the policy allowed as pay.
func (s *Server) paySigned(ctx context.Context, wt storage.Tx, p payoutParams, pay *payout.Payment) (Payout, error) {
	if p.CustomerID != pay.CustomerID {
		return Payout{}, apierror.Internal(fmt.Errorf("host: the signed payout is of customer %s, its wallet of %s", p.CustomerID, pay.CustomerID))
	}
	return s.pay(ctx, wt, p, pay)
}

// payApproved is the host's payout of a held payout the risk desk
// approved: the payout the approval holds.
func (s *Server) payApproved(ctx context.Context, wt storage.Tx, pay *payout.Payment) (Payout, error) {
	t := pay.Transfer
	return s.pay(ctx, wt, payoutParams{CustomerID: pay.CustomerID, WalletID: t.SourceID, AccountID: t.DestinationID,
		Amount: t.Amount, Currency: t.Currency}, pay)
}

// pay makes the payout p that the policy allowed, in its transaction: the
// ledger debit, the payout row and the outbox event, through the host's
// transaction. The row names the credential whose session signed the
// payout and that session; for a payout the risk desk approved, the
// session is empty and the approval named.
func (s *Server) pay(ctx context.Context, wt storage.Tx, p payoutParams, pay *payout.Payment) (Payout, error) {
	session, approval := "", ""
	if a := pay.Authorization; a != nil {
		session = a.SessionID
	}
	if ap := pay.Allowed.Approval; ap != nil {
		approval = ap.ID
	}
	pg, err := postgres.HostTx(ctx, wt)
	if err != nil {
		return Payout{}, err
	}
	if err := debit(ctx, pg, s.t, p.CustomerID, p.Amount); err != nil {
		return Payout{}, err
	}
	if _, err := pg.Exec(ctx, "INSERT INTO "+s.t.payouts+
		" (request_id, customer_id, account_id, amount, currency, session_id, credential_id, approval_id) VALUES ($1, $2, $3, $4, $5, $6, $7, NULLIF($8, ''))",
		pay.ID, p.CustomerID, p.AccountID, p.Amount, p.Currency, session, pay.SignedBy, approval); err != nil {
		return Payout{}, err
	}
	eid, err := storage.NewID(nil, "Webhook")
	if err != nil {
		return Payout{}, err
	}
	payload, err := eventPayload(eid, pay.ID, p)
	if err != nil {
		return Payout{}, err
	}
	if err := wt.Outbox().Append(ctx, &storage.Event{ID: eid, Type: PayoutEvent, AccountID: p.AccountID, Payload: payload, CreatedAt: time.Now().UTC()}); err != nil {
		return Payout{}, err
	}
	return Payout{ID: pay.ID, AccountID: p.AccountID, Amount: p.Amount, Currency: p.Currency, SessionID: session, ApprovalID: approval}, nil
}

// getApproval answers a held payout of the calling platform's customer:
// another customer's approval answers as an unknown one.
func (s *Server) getApproval(w http.ResponseWriter, r *http.Request) {
	customer, _, _, err := s.customer(r)
	if err != nil {
		apierror.Write(w, err)
		return
	}
	id := r.PathValue("approvalId")
	ap, err := s.payouts.Get(r.Context(), id)
	if err == nil && ap.CustomerID != customer {
		err = apierror.New(apierror.ReferenceNotFound, "payout approval %q not found", id)
	}
	if err != nil {
		apierror.Write(w, err)
		return
	}
	apierror.WriteJSON(w, http.StatusOK, approvalView(ap, s.clock()))
}

// operatorDecides is the risk desk's decision of a held payout, as the
// authenticated operator, in one host transaction: an approval
// (payout.Approve) records it and, with the last one, makes the payout
// through the payout's chain again (the destination's gate, as it is now)
// and the same payout as a signed one (pay); a refusal ends it. Answers:
// 200 with the Payout when it was paid, 200 with the PayoutApproval
// otherwise; 409 CONFLICT when it is no longer waiting (approved, refused,
// expired), 403 FORBIDDEN for an operator its rule does not name, the
// chain's and the policy's refusals (the approval then still waits), 404
// for an unknown id.
func (s *Server) operatorDecides(approve bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		operator, id := operatorOf(r), r.PathValue("approvalId")
		var (
			paid *Payout
			ap   *storage.PayoutApproval
		)
		err := s.store.InTx(r.Context(), func(hctx context.Context, _ pgx.Tx) error {
			paid, ap = nil, nil
			if !approve {
				var err error
				ap, err = s.payouts.Refuse(hctx, id, operator)
				return err
			}
			pctx, err := s.asPlatformOf(hctx, id)
			if err != nil {
				return err
			}
			done, err := payout.Approve(pctx, s.payouts, id, operator, s.payApproved)
			if err != nil {
				return err
			}
			ap, paid = &done.Approval, done.Paid
			return nil
		})
		switch {
		case err != nil:
			apierror.Write(w, err)
		case paid != nil:
			s.log.Info("held payout approved and paid", "approval", id, "amount", paid.Amount)
			apierror.WriteJSON(w, http.StatusOK, paid)
		default:
			apierror.WriteJSON(w, http.StatusOK, approvalView(ap, s.clock()))
		}
	}
}

// asPlatformOf is ctx acting as the platform of the wallet the held payout
// id is paid from: the risk desk makes the payout for that platform, whose
// accounts the services' guards admit. 404 REFERENCE_NOT_FOUND for an
// unknown approval.
func (s *Server) asPlatformOf(ctx context.Context, id string) (context.Context, error) {
	ap, err := s.payouts.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	var tenant string
	err = s.store.Atomic(ctx, func(wt storage.Tx) error {
		wallet, err := wt.InternalAccounts().Get(ctx, ap.SourceID)
		tenant = wallet.Tenant
		return apierror.From(err)
	})
	return withPlatform(ctx, tenant), err
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

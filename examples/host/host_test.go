package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/apierror/operation"
	"github.com/walletgate/walletgate/apierror/webhooksig"
	"github.com/walletgate/walletgate/ownership"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/signedretry/stamper"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/idempotency"
	"github.com/walletgate/walletgate/storage/postgres"
	"github.com/walletgate/walletgate/storage/postgres/pgtest"
	"github.com/walletgate/walletgate/storage/storagetest"
	"github.com/walletgate/walletgate/walletauth"
	"github.com/walletgate/walletgate/walletauth/authclient"
	"github.com/walletgate/walletgate/walletauth/secret"
)

const (
	apiKey      = "test-platform-key-0123456789abcdef"
	riskDeskKey = "test-risk-desk-key-0123456789abcdef"
)

// codes is the test's OTP Sender: it keeps the last code per credential.
type codes struct {
	mu   sync.Mutex
	last map[string]string
}

func (c *codes) Send(_ context.Context, m walletauth.Message) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last[m.CredentialID] = m.Code
	return nil
}

type env struct {
	t       testing.TB
	pool    *pgxpool.Pool
	appName string
	svc     *Services
	srv     *Server
	h       http.Handler
	codes   *codes
	clock   *storagetest.Clock // the services' clock
	tel     operation.Telemetry
	metrics http.Handler // GET /metrics
	logs    *syncBuffer  // the JSON records of tel.Logger
}

// syncBuffer is a bytes.Buffer safe for the concurrent writes of a logger.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// newEnv starts the host on a fresh schema of the test database; it skips
// without WALLETGATE_POSTGRES_DSN.
func newEnv(t testing.TB, conns int32) *env {
	t.Helper()
	dsn := pgtest.DSN(t)
	ctx := t.Context()
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "host_" + hex.EncodeToString(b[:])
	pc, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	pc.MaxConns = conns
	pc.ConnConfig.RuntimeParams["application_name"] = schema
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = pool.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
		pool.Close()
	})
	if _, err := postgres.Migrate(ctx, pool, postgres.Config{Schema: schema}); err != nil {
		t.Fatal(err)
	}
	if err := postgres.CheckSchema(ctx, pool, postgres.Config{Schema: schema}); err != nil {
		t.Fatal(err)
	}
	keys, err := walletauth.EphemeralKeys(nil) // one process; production reads them from the environment
	if err != nil {
		t.Fatal(err)
	}
	c := &codes{last: map[string]string{}}
	mp, metrics, err := NewMetrics()
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	tel := operation.Telemetry{Logger: slog.New(slog.NewJSONHandler(logs, nil)), MeterProvider: mp}
	clock := storagetest.NewClock(time.Now().UTC())
	svc, err := NewServices(ServicesConfig{Pool: pool, Schema: schema, Keys: keys, Sender: c, Telemetry: tel, Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := NewServer(ctx, ServerConfig{Pool: pool, Store: svc.Store, Auth: svc.Auth, Owner: svc.Owner, Payouts: svc.Payouts,
		Platforms: map[string]string{apiKey: "Platform:test"}, Operators: map[string]string{riskDeskKey: RiskDesk}, Telemetry: tel,
		Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	h, err := srv.Handler()
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, pool: pool, appName: schema, svc: svc, srv: srv, h: h, codes: c, clock: clock, tel: tel, metrics: metricsMux(metrics), logs: logs}
}

// ctx is the test's context acting as the test platform, as the host's
// authentication makes a request's: the services' guards admit its
// wallets and accounts only.
func (e *env) ctx() context.Context { return withPlatform(e.t.Context(), "Platform:test") }

// call sends one request to the host and returns the recorded response.
func (e *env) call(method, path string, body any, hdr map[string]string) *httptest.ResponseRecorder {
	e.t.Helper()
	var raw []byte
	switch b := body.(type) {
	case nil:
	case []byte:
		raw = b
	default:
		var err error
		if raw, err = json.Marshal(b); err != nil {
			e.t.Fatal(err)
		}
	}
	r := httptest.NewRequestWithContext(e.t.Context(), method, path, bytes.NewReader(raw))
	r.Header.Set("Authorization", "Bearer "+apiKey)
	r.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	e.h.ServeHTTP(w, r)
	return w
}

// want fails unless w has status; it decodes the body into dst when not nil.
func want(t testing.TB, w *httptest.ResponseRecorder, status int, dst any) {
	t.Helper()
	if w.Code != status {
		t.Fatalf("status %d, want %d: %s", w.Code, status, w.Body)
	}
	if dst != nil {
		if err := json.Unmarshal(w.Body.Bytes(), dst); err != nil {
			t.Fatal(err)
		}
	}
}

// wantAPIError checks an error response's status and code, and returns the
// error as the client reads it.
func wantAPIError(t testing.TB, w *httptest.ResponseRecorder, code apierror.Code) *apierror.Error {
	t.Helper()
	if w.Code != code.Status() {
		t.Fatalf("status %d, want %d (%s): %s", w.Code, code.Status(), code, w.Body)
	}
	var got apierror.Error
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
		t.Fatalf("error body %s: %v", w.Body, err)
	}
	return apierrortest.Want(t, &got, code, "")
}

// customer creates a customer (and its wallet) and logs the wallet in over
// EMAIL_OTP, returning the customer and the session's key.
func (e *env) customer(email string) (Customer, *authclient.ClientKey) {
	t := e.t
	t.Helper()
	var c Customer
	want(t, e.call(http.MethodPost, "/customers", map[string]string{"email": email, "currency": "USDC"}, nil), http.StatusCreated, &c)
	return c, e.login(c)
}

// login logs the customer's wallet in over EMAIL_OTP and returns the
// session's key.
func (e *env) login(c Customer) *authclient.ClientKey {
	t := e.t
	t.Helper()
	ctx := e.ctx()
	m, err := e.svc.Auth.Challenge(ctx, c.CredentialID, walletauth.ChallengeRequest{})
	if err != nil {
		t.Fatal(err)
	}
	e.codes.mu.Lock()
	code := e.codes.last[c.CredentialID]
	e.codes.mu.Unlock()
	key, err := authclient.NewClientKey()
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := key.SealOTP(m.OTPEncryptionTargetBundle, e.svc.Auth.SigningPublicKey(), code, nil)
	if err != nil {
		t.Fatal(err)
	}
	req := walletauth.VerifyRequest{Type: storage.EmailOTP, EncryptedOTPBundle: sealed}
	vc := signedretry.Request{Method: http.MethodPost, Path: "/auth/credentials/" + c.CredentialID + "/verify",
		Body: []byte(`{"type":"EMAIL_OTP"}`)}
	_, ch, err := e.svc.Auth.Verify(ctx, c.CredentialID, req, vc)
	if err != nil {
		t.Fatalf("login, leg 1: %v", err)
	}
	sig, err := key.Stamp(ch.PayloadToSign)
	if err != nil {
		t.Fatal(err)
	}
	vc.Signature, vc.RequestID = sig, ch.RequestID
	if _, _, err := e.svc.Auth.Verify(ctx, c.CredentialID, req, vc); err != nil {
		t.Fatalf("login, leg 2: %v", err)
	}
	return key
}

// fund credits the customer's ledger (deposits are outside this slice).
func (e *env) fund(customer string, amount int64) {
	e.t.Helper()
	if _, err := e.pool.Exec(e.t.Context(), "UPDATE "+e.srv.t.ledger+" SET balance = balance + $1 WHERE customer_id = $2", amount, customer); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) balance(customer string) int64 {
	e.t.Helper()
	var b int64
	if err := e.pool.QueryRow(e.t.Context(), "SELECT balance FROM "+e.srv.t.ledger+" WHERE customer_id = $1", customer).Scan(&b); err != nil {
		e.t.Fatal(err)
	}
	return b
}

func (e *env) payoutRows(customer string) int {
	e.t.Helper()
	var n int
	if err := e.pool.QueryRow(e.t.Context(), "SELECT count(*) FROM "+e.srv.t.payouts+" WHERE customer_id = $1", customer).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

// events returns the outbox events of the external account, in Seq order.
func (e *env) events(account string) []storage.Event {
	e.t.Helper()
	return storagetest.Events(e.t, e.svc.Store, account)
}

func countType(evs []storage.Event, typ string) int {
	n := 0
	for _, ev := range evs {
		if ev.Type == typ {
			n++
		}
	}
	return n
}

// wallet registers an Ethereum wallet of the customer over HTTP and
// returns its id and key.
func (e *env) wallet(customer string) (string, *ecdsa.PrivateKey) {
	e.t.Helper()
	k, err := crypto.GenerateKey()
	if err != nil {
		e.t.Fatal(err)
	}
	var a ownership.Account
	want(e.t, e.call(http.MethodPost, "/customers/"+customer+"/external-accounts",
		map[string]string{"accountType": ownership.AccountEthereum, "address": crypto.PubkeyToAddress(k.PublicKey).Hex()}, nil), http.StatusCreated, &a)
	return a.ID, k
}

// prove proves the wallet: a challenge, then its messageToSign signed
// (EIP-191) with k, or with another key when bad.
func (e *env) prove(account string, k *ecdsa.PrivateKey, bad bool) error {
	ch, err := e.svc.Owner.StartChallenge(e.ctx(), account, ownership.MethodWalletSignature, ownership.AnyTree)
	if err != nil {
		return err
	}
	return e.verify(account, ch.MessageToSign, k, bad)
}

// verify answers the outstanding challenge with msg signed by k (another
// key when bad).
func (e *env) verify(account, msg string, k *ecdsa.PrivateKey, bad bool) error {
	signer := k
	if bad {
		var err error
		if signer, err = crypto.GenerateKey(); err != nil {
			return err
		}
	}
	_, err := e.svc.Owner.Verify(e.ctx(), account, ownership.VerifyRequest{Signature: eip191(e.t, msg, signer)}, ownership.AnyTree)
	return err
}

// eip191 signs msg as an Ethereum personal message, 0x-prefixed hex.
func eip191(t testing.TB, msg string, k *ecdsa.PrivateKey) string {
	t.Helper()
	sig, err := crypto.Sign(crypto.Keccak256([]byte("\x19Ethereum Signed Message:\n"+strconv.Itoa(len(msg))+msg)), k)
	if err != nil {
		t.Fatal(err)
	}
	sig[64] += 27
	return "0x" + hex.EncodeToString(sig)
}

// firstLeg asks for a payout and returns the challenge to stamp.
func (e *env) firstLeg(customer, account string, amount int64) ([]byte, *signedretry.Challenge) {
	e.t.Helper()
	body, _ := json.Marshal(payoutBody{AccountID: account, Amount: amount})
	var ch signedretry.Challenge
	want(e.t, e.call(http.MethodPost, "/customers/"+customer+"/payouts", body, nil), http.StatusAccepted, &ch)
	return body, &ch
}

// retryHeaders stamps the challenge with the session's key.
func retryHeaders(t testing.TB, ch *signedretry.Challenge, key *authclient.ClientKey) map[string]string {
	t.Helper()
	sig, err := key.Stamp(ch.PayloadToSign)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]string{stamper.HeaderSignature: sig, stamper.HeaderRequestID: ch.RequestID}
}

// TestPayoutEndToEnd: first leg 202, signed retry 200; the ledger is
// debited once, the payout names the signing session, the event is in the
// outbox; the same signed retry again is refused and pays nothing.
func TestPayoutEndToEnd(t *testing.T) {
	e := newEnv(t, 4)
	c, key := e.customer("alice@example.com")
	e.fund(c.ID, 50_000_000)
	account, _ := e.wallet(c.ID)
	body, ch := e.firstLeg(c.ID, account, 5_000_000)
	if e.balance(c.ID) != 50_000_000 {
		t.Fatal("the first leg debited the ledger")
	}
	hdr := retryHeaders(t, ch, key)
	var p Payout
	want(t, e.call(http.MethodPost, "/customers/"+c.ID+"/payouts", body, hdr), http.StatusOK, &p)
	if p.ID != ch.RequestID || p.Amount != 5_000_000 || p.SessionID == "" {
		t.Fatalf("payout %+v", p)
	}
	if got := e.balance(c.ID); got != 45_000_000 {
		t.Fatalf("balance %d, want 45000000", got)
	}
	var session string
	if err := e.pool.QueryRow(t.Context(), "SELECT session_id FROM "+e.srv.t.payouts+" WHERE request_id = $1", p.ID).Scan(&session); err != nil || session != p.SessionID {
		t.Fatalf("payout row: session %q, %v; want %q", session, err, p.SessionID)
	}
	if n := countType(e.events(account), PayoutEvent); n != 1 {
		t.Fatalf("%d payout events, want 1", n)
	}
	wantAPIError(t, e.call(http.MethodPost, "/customers/"+c.ID+"/payouts", body, hdr), apierror.Unauthorized)
	if e.balance(c.ID) != 45_000_000 || e.payoutRows(c.ID) != 1 {
		t.Fatal("a replayed retry paid again")
	}
}

// TestPayoutDebitFailsAfterGate: the gate passes, the debit fails (the
// balance is short): nothing of walletgate's commits (no event, the signed
// request still usable) and nothing of the host's; once funded, the same
// signed retry pays.
func TestPayoutDebitFailsAfterGate(t *testing.T) {
	e := newEnv(t, 4)
	c, key := e.customer("bob@example.com")
	e.fund(c.ID, 1_000_000)
	account, _ := e.wallet(c.ID)
	body, ch := e.firstLeg(c.ID, account, 5_000_000)
	hdr := retryHeaders(t, ch, key)
	before := len(e.events(account))
	err := wantAPIError(t, e.call(http.MethodPost, "/customers/"+c.ID+"/payouts", body, hdr), InsufficientFunds)
	if err.Details["field"] != "amount" {
		t.Fatalf("details %v do not name the amount", err.Details)
	}
	if e.balance(c.ID) != 1_000_000 || e.payoutRows(c.ID) != 0 || len(e.events(account)) != before {
		t.Fatal("a failed debit left a trace")
	}
	e.fund(c.ID, 9_000_000)
	want(t, e.call(http.MethodPost, "/customers/"+c.ID+"/payouts", body, hdr), http.StatusOK, nil)
	if e.balance(c.ID) != 5_000_000 || e.payoutRows(c.ID) != 1 || countType(e.events(account), PayoutEvent) != 1 {
		t.Fatal("the signed retry after funding did not pay exactly once")
	}
}

// TestPayoutReplayedRetryPaysOnce: the same signed retry sent eight times
// at once, half with one Idempotency-Key, pays once: one request executes
// with 200; the others are refused (401 once consumed, 409 while the key is
// in progress) or, with the key, replay the stored 200 without executing.
func TestPayoutReplayedRetryPaysOnce(t *testing.T) {
	e := newEnv(t, 8)
	c, key := e.customer("carol@example.com")
	e.fund(c.ID, 50_000_000)
	account, _ := e.wallet(c.ID)
	body, ch := e.firstLeg(c.ID, account, 5_000_000)
	hdr := retryHeaders(t, ch, key)
	keyed := map[string]string{"Idempotency-Key": "6c1f0a52-35b5-4c3c-9a57-0e0d1d0a6a11"}
	for k, v := range hdr {
		keyed[k] = v
	}
	var wg sync.WaitGroup
	res := make([]*httptest.ResponseRecorder, 8)
	for i := range res {
		h := hdr
		if i%2 == 0 {
			h = keyed
		}
		wg.Go(func() { res[i] = e.call(http.MethodPost, "/customers/"+c.ID+"/payouts", body, h) })
	}
	wg.Wait()
	ok := 0
	for i, w := range res {
		switch {
		case w.Code == http.StatusOK && w.Header().Get(idempotency.ReplayedHeader) == "true":
			if i%2 != 0 {
				t.Fatal("a request without a key was answered with a replay")
			}
		case w.Code == http.StatusOK:
			ok++
		case w.Code == http.StatusUnauthorized:
			wantAPIError(t, w, apierror.Unauthorized)
		case w.Code == http.StatusConflict:
			wantAPIError(t, w, apierror.Conflict)
		default:
			t.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
	if ok != 1 || e.balance(c.ID) != 45_000_000 || e.payoutRows(c.ID) != 1 || countType(e.events(account), PayoutEvent) != 1 {
		t.Fatalf("%d successes, balance %d, %d payouts: want one payout", ok, e.balance(c.ID), e.payoutRows(c.ID))
	}
	// Later, the keyed retry replays the 200 (if its key's request paid) or
	// is refused: it never pays again.
	w := e.call(http.MethodPost, "/customers/"+c.ID+"/payouts", body, keyed)
	if w.Code != http.StatusOK && w.Code != http.StatusUnauthorized {
		t.Fatalf("keyed replay: %d %s", w.Code, w.Body)
	}
	if e.balance(c.ID) != 45_000_000 || e.payoutRows(c.ID) != 1 {
		t.Fatal("a replay paid again")
	}
}

// TestPayoutRaceFailedProof: a payout at the verification threshold to a
// wallet pending its proof is refused on the first leg, before a signature
// is asked for. Signed payouts below the threshold race a proof with a
// wrong signature that flips the wallet to UNVERIFIED: the same rule,
// checked again at the retry, lets no payout commit after the flip (no
// PAYOUT event after the status event, in commit order); every refusal is
// 400 EXTERNAL_ACCOUNT_VERIFICATION_REQUIRED, on either leg. A wallet proven
// with the right key is paid at the threshold.
func TestPayoutRaceFailedProof(t *testing.T) {
	e := newEnv(t, 12)
	c, key := e.customer("dave@example.com")
	e.fund(c.ID, 1_000_000_000_000)
	account, wk := e.wallet(c.ID)
	threshold := PayoutGate.VerificationThresholds.ByCurrency["USDC"]
	const n = 24
	type leg struct {
		body []byte
		hdr  map[string]string
	}
	atThreshold, _ := json.Marshal(payoutBody{AccountID: account, Amount: threshold})
	wantAPIError(t, e.call(http.MethodPost, "/customers/"+c.ID+"/payouts", atThreshold, nil), apierror.ExternalAccountVerificationRequired)
	legs := make([]leg, n)
	for i := range legs {
		body, ch := e.firstLeg(c.ID, account, 5_000_000)
		legs[i] = leg{body, retryHeaders(t, ch, key)}
	}
	challenge, err := e.svc.Owner.StartChallenge(e.ctx(), account, ownership.MethodWalletSignature, ownership.AnyTree)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	res := make([]*httptest.ResponseRecorder, n)
	start, firstPaid := make(chan struct{}), make(chan struct{})
	var once sync.Once
	for i := range legs {
		wg.Go(func() {
			<-start
			res[i] = e.call(http.MethodPost, "/customers/"+c.ID+"/payouts", legs[i].body, legs[i].hdr)
			if res[i].Code == http.StatusOK {
				once.Do(func() { close(firstPaid) })
			}
		})
	}
	var proofErr error
	wg.Go(func() {
		<-start
		select { // the flip lands among payouts still running
		case <-firstPaid:
		case <-time.After(10 * time.Second):
		}
		proofErr = e.verify(account, challenge.MessageToSign, wk, true)
	})
	close(start)
	wg.Wait()
	apierrortest.Want(t, proofErr, apierror.InvalidInput, "")
	paid := 0
	for _, w := range res {
		switch {
		case w.Code == http.StatusOK:
			paid++
		default:
			wantAPIError(t, w, apierror.ExternalAccountVerificationRequired)
		}
	}
	var above int
	if err := e.pool.QueryRow(t.Context(), "SELECT count(*) FROM "+e.srv.t.payouts+" WHERE amount >= $1", threshold).Scan(&above); err != nil || above != 0 {
		t.Fatalf("%d payouts at the threshold committed (%v)", above, err)
	}
	evs := e.events(account)
	flip := -1
	for i, ev := range evs {
		if ev.Type == ownership.EventStatusUpdated {
			flip = i
		}
	}
	if flip < 0 {
		t.Fatal("no status event of the failed proof")
	}
	if countType(evs[flip:], PayoutEvent) != 0 || countType(evs, PayoutEvent) != paid || e.payoutRows(c.ID) != paid {
		t.Fatalf("%d payouts answered 200; events %v", paid, evs)
	}
	t.Logf("%d of %d payouts below the threshold paid before the flip", paid, n)

	// After the flip, a payout below the threshold is refused too, on the
	// first leg.
	below, _ := json.Marshal(payoutBody{AccountID: account, Amount: 5_000_000})
	wantAPIError(t, e.call(http.MethodPost, "/customers/"+c.ID+"/payouts", below, nil), apierror.ExternalAccountVerificationRequired)

	// A wallet proven with its own key, over HTTP, is paid at the threshold.
	proven, pk := e.wallet(c.ID)
	var pc ownership.Challenge
	want(t, e.call(http.MethodPost, "/customers/external-accounts/"+proven+"/challenge", map[string]string{"method": ownership.MethodWalletSignature}, nil),
		http.StatusCreated, &pc)
	var acct ownership.Account
	want(t, e.call(http.MethodPost, "/customers/external-accounts/"+proven+"/verify",
		map[string]string{"signature": eip191(t, pc.MessageToSign, pk)}, nil), http.StatusOK, &acct)
	if acct.Status != string(storage.StatusActive) {
		t.Fatalf("proven account status %s", acct.Status)
	}
	wantAPIError(t, e.call(http.MethodPost, "/customers/external-accounts/ExternalAccount:00000000-0000-4000-8000-000000000000/verify",
		map[string]string{"signature": "0x00"}, nil), apierror.ReferenceNotFound)
	body, ch := e.firstLeg(c.ID, proven, threshold)
	want(t, e.call(http.MethodPost, "/customers/"+c.ID+"/payouts", body, retryHeaders(t, ch, key)), http.StatusOK, nil)
}

// TestCreateCustomerOneTransaction: the customer row, its ledger row and
// its embedded wallet commit together; when the wallet is refused (its
// email is another customer's), no customer row is left.
func TestCreateCustomerOneTransaction(t *testing.T) {
	e := newEnv(t, 4)
	c, _ := e.customer("erin@example.com")
	var wallet string
	if err := e.pool.QueryRow(t.Context(), "SELECT wallet_id FROM "+e.srv.t.customers+" WHERE id = $1", c.ID).Scan(&wallet); err != nil || wallet != c.WalletID {
		t.Fatalf("customer row: wallet %q, %v; want %q", wallet, err, c.WalletID)
	}
	wantAPIError(t, e.call(http.MethodPost, "/customers", map[string]string{"email": "erin@example.com", "currency": "USDC"}, nil),
		apierror.EmailOTPEmailAlreadyExists)
	var n int
	if err := e.pool.QueryRow(t.Context(), "SELECT count(*) FROM "+e.srv.t.customers).Scan(&n); err != nil || n != 1 {
		t.Fatalf("%d customer rows (%v), want 1", n, err)
	}
	for _, cur := range []string{"usd", "XYZ", "USD"} { // not a code; a code the policy does not pay out
		err := wantAPIError(t, e.call(http.MethodPost, "/customers", map[string]string{"email": "x@example.com", "currency": cur}, nil), apierror.InvalidInput)
		apierrortest.WantFields(t, err, apierror.InvalidInput, "currency")
	}
	w := httptest.NewRecorder()
	r := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/customers", bytes.NewReader([]byte(`{}`)))
	e.h.ServeHTTP(w, r)
	wantAPIError(t, w, apierror.Unauthorized)
}

// TestPayoutConnectionKilled: the host transaction's connection is
// terminated after the gate and the debit, before the commit: neither
// walletgate's writes (the consumed request, the event) nor the host's (the
// debit, the payout row) commit, and the same signed retry pays afterwards.
func TestPayoutConnectionKilled(t *testing.T) {
	e := newEnv(t, 4)
	c, key := e.customer("frank@example.com")
	e.fund(c.ID, 50_000_000)
	account, _ := e.wallet(c.ID)
	body, ch := e.firstLeg(c.ID, account, 5_000_000)
	hdr := retryHeaders(t, ch, key)
	orig := debit
	t.Cleanup(func() { debit = orig })
	debit = func(ctx context.Context, pg pgx.Tx, tb tables, customer string, amount int64) error {
		if err := orig(ctx, pg, tb, customer, amount); err != nil {
			return err
		}
		var killed bool
		err := e.pool.QueryRow(context.WithoutCancel(ctx), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
			WHERE pid = $1 AND application_name = $2`, pg.Conn().PgConn().PID(), e.appName).Scan(&killed)
		if err != nil || !killed {
			t.Errorf("terminate the host transaction's backend: %v (killed %v)", err, killed)
		}
		return nil
	}
	w := e.call(http.MethodPost, "/customers/"+c.ID+"/payouts", body, hdr)
	if w.Code == http.StatusOK {
		t.Fatal("the payout succeeded on a killed connection")
	}
	wantAPIError(t, w, apierror.InternalError)
	if e.balance(c.ID) != 50_000_000 || e.payoutRows(c.ID) != 0 || countType(e.events(account), PayoutEvent) != 0 {
		t.Fatal("a write committed on a killed connection")
	}
	debit = orig
	want(t, e.call(http.MethodPost, "/customers/"+c.ID+"/payouts", body, hdr), http.StatusOK, nil)
	if e.balance(c.ID) != 45_000_000 || e.payoutRows(c.ID) != 1 {
		t.Fatal("the signed retry did not pay once after the kill")
	}
}

// BenchmarkPayout measures a paid payout through the host: the signed
// retry of a host operation (signature check, consumption of the request),
// the payout gate, the ledger debit, the payout row and the event, in one
// host transaction, over HTTP in process. The first leg and the stamp are
// made outside the timer.
func BenchmarkPayout(b *testing.B) {
	e := newEnv(b, 4)
	c, key := e.customer("bench@example.com")
	e.fund(c.ID, 1_000_000_000_000)
	account, _ := e.wallet(c.ID)
	path := "/customers/" + c.ID + "/payouts"
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		body, ch := e.firstLeg(c.ID, account, 1_000)
		hdr := retryHeaders(b, ch, key)
		b.StartTimer()
		if w := e.call(http.MethodPost, path, body, hdr); w.Code != http.StatusOK {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "payouts/s")
}

// BenchmarkRawPayout is the floor: one transaction doing the same kinds
// of writes with no walletgate in it (lock the destination, debit the
// ledger, insert the payout row and an event row).
func BenchmarkRawPayout(b *testing.B) {
	e := newEnv(b, 4)
	ctx := b.Context()
	c, _ := e.customer("raw@example.com")
	e.fund(c.ID, 1_000_000_000_000)
	events := pgx.Identifier{e.appName, "raw_events"}.Sanitize()
	if _, err := e.pool.Exec(ctx, "CREATE TABLE "+events+" (id text PRIMARY KEY, seq bigserial, payload jsonb NOT NULL)"); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range b.N {
		id := fmt.Sprintf("Request:raw-%d", i)
		err := pgx.BeginFunc(ctx, e.pool, func(tx pgx.Tx) error {
			var wallet string
			if err := tx.QueryRow(ctx, "SELECT wallet_id FROM "+e.srv.t.customers+" WHERE id = $1 FOR UPDATE", c.ID).Scan(&wallet); err != nil {
				return err
			}
			if err := debit(ctx, tx, e.srv.t, c.ID, 1_000); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, "INSERT INTO "+e.srv.t.payouts+
				" (request_id, customer_id, account_id, amount, currency, session_id, credential_id) VALUES ($1, $2, 'a', 1000, 'USDC', 's', 'c')", id, c.ID); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "INSERT INTO "+events+" (id, payload) VALUES ($1, '{}')", id)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "payouts/s")
}

// TestLoadConfigRequired: without its keys the host refuses to start, and
// the error names every missing one; a complete environment loads.
func TestLoadConfigRequired(t *testing.T) {
	required := []string{"WALLETGATE_POSTGRES_DSN", "WALLETGATE_SEAL_KEYS", "WALLETGATE_CODE_MAC_KEY",
		"WALLETGATE_BUNDLE_SIGNING_KEY", "WALLETGATE_WEBHOOK_SIGNING_KEY", "HOST_WEBHOOK_URL", "HOST_API_KEYS"}
	_, err := LoadConfig(func(string) string { return "" }, "")
	if err == nil {
		t.Fatal("an empty environment loaded")
	}
	for _, name := range required {
		if !strings.Contains(err.Error(), name+" is required") {
			t.Errorf("error %q does not name %s", err, name)
		}
	}
	seal, err := secret.GenerateKey(nil, "k1")
	if err != nil {
		t.Fatal(err)
	}
	p256 := func() string {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := k.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		return base64.StdEncoding.EncodeToString(raw)
	}
	env := map[string]string{
		"WALLETGATE_SEAL_KEYS":           seal.Encode(),
		"WALLETGATE_CODE_MAC_KEY":        base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, walletauth.MinCodeMACKeyLen)),
		"WALLETGATE_BUNDLE_SIGNING_KEY":  p256(),
		"WALLETGATE_WEBHOOK_SIGNING_KEY": p256(),
		"HOST_WEBHOOK_URL":               "https://hooks.example.com/walletgate",
		"HOST_API_KEYS":                  "Platform:a=" + apiKey,
	}
	cfg, err := LoadConfig(func(k string) string { return env[k] }, "postgres://db.internal/payments")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Keys.SigningKey == nil || cfg.Keys.Sealer == nil || cfg.WebhookKey == nil || cfg.Platforms[apiKey] != "Platform:a" {
		t.Fatal("the loaded config misses a key or the platform")
	}
	env["WALLETGATE_CODE_MAC_KEY"] = base64.StdEncoding.EncodeToString([]byte("short"))
	if _, err := LoadConfig(func(k string) string { return env[k] }, "postgres://db.internal/payments"); err == nil ||
		!strings.Contains(err.Error(), "WALLETGATE_CODE_MAC_KEY") {
		t.Fatalf("a short code MAC key: %v", err)
	}
}

// TestRelayRestartMidDelivery: a relay stopped while the receiver still
// holds a delivery releases it (no event stays leased until the lease
// ends); the next relay delivers the payout's event, signed, to a verifying
// receiver. No event is lost across the restart.
func TestRelayRestartMidDelivery(t *testing.T) {
	e := newEnv(t, 6)
	c, key := e.customer("gina@example.com")
	e.fund(c.ID, 50_000_000)
	account, _ := e.wallet(c.ID)
	body, ch := e.firstLeg(c.ID, account, 5_000_000)
	var p Payout
	want(t, e.call(http.MethodPost, "/customers/"+c.ID+"/payouts", body, retryHeaders(t, ch, key)), http.StatusOK, &p)

	hookKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	v, err := webhooksig.NewVerifier(&hookKey.PublicKey, webhooksig.VerifierConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu       sync.Mutex
		blocking = true
		paid     = make(chan webhooksig.Delivery, 1)
	)
	held := make(chan struct{}, 1)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d, err := v.Verify(r)
		if err != nil {
			t.Errorf("receiver: %v", err)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		mu.Lock()
		block := blocking
		mu.Unlock()
		if block { // the first relay's delivery hangs until the relay gives it up
			select {
			case held <- struct{}{}:
			default:
			}
			<-r.Context().Done()
			return
		}
		if d.Type == PayoutEvent {
			select {
			case paid <- d:
			default:
			}
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(recv.Close)
	run := func(shutdown time.Duration) (stop func()) {
		rel, err := NewRelay(e.svc.Store, recv.URL, hookKey, e.tel, shutdown)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { defer close(done); _ = rel.Run(ctx) }()
		return func() { cancel(); <-done }
	}

	stop := run(100 * time.Millisecond)
	select {
	case <-held:
	case <-time.After(10 * time.Second):
		t.Fatal("the first relay delivered nothing")
	}
	stop() // graceful: returns once the held delivery is abandoned and released
	mu.Lock()
	blocking = false
	mu.Unlock()

	stop = run(0)
	defer stop()
	select {
	case d := <-paid:
		if !strings.Contains(string(d.Data), p.ID) {
			t.Fatalf("payout event %s does not name payout %s", d.Data, p.ID)
		}
	case <-time.After(20 * time.Second): // far below the relay's one-minute lease
		t.Fatal("the payout's event was not delivered after the restart")
	}
}

// TestPayoutOtherCustomersAccount: a payout by one customer to another
// customer's external account is refused with 404 on the first leg, before
// a signature is asked for, and pays nothing; another platform does not see
// the customer at all.
func TestPayoutOtherCustomersAccount(t *testing.T) {
	e := newEnv(t, 4)
	c, _ := e.customer("hana@example.com")
	e.fund(c.ID, 50_000_000)
	other, _ := e.customer("ivan@example.com")
	theirs, _ := e.wallet(other.ID)
	body, _ := json.Marshal(payoutBody{AccountID: theirs, Amount: 5_000_000})
	wantAPIError(t, e.call(http.MethodPost, "/customers/"+c.ID+"/payouts", body, nil), apierror.ReferenceNotFound)
	if e.balance(c.ID) != 50_000_000 || e.payoutRows(c.ID) != 0 {
		t.Fatal("a payout to another customer's account debited the ledger")
	}
	e.srv.platforms["other-platform-key-0123456789abcdef"] = "Platform:other"
	r := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/customers/"+c.ID+"/payouts", bytes.NewReader(body))
	r.Header.Set("Authorization", "Bearer other-platform-key-0123456789abcdef")
	w := httptest.NewRecorder()
	e.h.ServeHTTP(w, r)
	wantAPIError(t, w, apierror.ReferenceNotFound)
}

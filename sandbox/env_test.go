package sandbox_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/sandbox"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/walletauth"
)

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// env is a simulator served by httptest with a client speaking to it.
type env struct {
	t     testing.TB
	sim   *sandbox.Simulator
	srv   *httptest.Server
	clock *clock
	base  string
	user  string
	pass  string
	keys  map[string]*walletauth.ClientKey // session keys by wallet, see walletKey
}

func newEnv(t testing.TB) *env {
	t.Helper()
	return newEnvWith(t, sandbox.Config{})
}

// newEnvWith is newEnv for cfg; its Clock is the env's.
func newEnvWith(t testing.TB, cfg sandbox.Config) *env {
	t.Helper()
	c := newClock()
	cfg.Clock = c.Now
	sim, err := sandbox.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Close)
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	return &env{t: t, sim: sim, srv: srv, clock: c, base: sandbox.DefaultBasePath,
		user: sandbox.DefaultClientID, pass: sandbox.DefaultClientSecret}
}

// resp is an HTTP answer.
type resp struct {
	status int
	header http.Header
	body   []byte
}

// do sends a request under the base path with the platform credentials.
// body is sent as is when it is a string, otherwise JSON-encoded.
func (e *env) do(method, path string, body any, headers ...string) resp {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, e.srv.URL+e.base+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if e.user != "" || e.pass != "" {
		req.SetBasicAuth(e.user, e.pass)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return resp{status: res.StatusCode, header: res.Header, body: raw}
}

// ok asserts the status and decodes the body into dst.
func (r resp) ok(t testing.TB, status int, dst any) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	if dst != nil {
		if err := json.Unmarshal(r.body, dst); err != nil {
			t.Fatalf("decoding %s: %v", r.body, err)
		}
	}
}

// fails asserts an error answer over HTTP: the status, a JSON body that
// decodes to an apierror with code ([apierrortest.Want]), and the
// Content-Type. status is stated beside code so that a test reads as the
// wire does; it must be code's status.
func (r resp) fails(t testing.TB, status int, code apierror.Code) *apierror.Error {
	t.Helper()
	var e apierror.Error
	if err := json.Unmarshal(r.body, &e); err != nil {
		t.Fatalf("status %d: body is not an error (%v): %s", r.status, err, r.body)
	}
	if r.status != status || code.Status() != status {
		t.Fatalf("got %d %s, want %d %s: %s", r.status, e.Code, status, code, r.body)
	}
	apierrortest.Want(t, &e, code, "")
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q", ct)
	}
	return &e
}

// fields returns the field paths of details.errors in their order, for the
// tests that assert the order the checks run in ([apierrortest.WantFields]
// ignores it).
func fields(e *apierror.Error) []string {
	var out []string
	for _, fe := range e.FieldErrors() {
		out = append(out, fe.Field)
	}
	return out
}

var seq struct {
	sync.Mutex
	n int
}

func uniq() int {
	seq.Lock()
	defer seq.Unlock()
	seq.n++
	return seq.n
}

// customer creates an individual customer and returns it with its wallet id.
func (e *env) customer(fullName string) (sandbox.Customer, string) {
	e.t.Helper()
	var c sandbox.Customer
	e.do("POST", "/customers", map[string]any{"customerType": "INDIVIDUAL", "fullName": fullName,
		"email": fmt.Sprintf("user%d@example.com", uniq())}).ok(e.t, 201, &c)
	return c, e.wallet(c.ID)
}

// wallet returns the id of a customer's embedded wallet.
func (e *env) wallet(customerID string) string {
	e.t.Helper()
	var l struct{ Data []sandbox.InternalAccount }
	e.do("GET", "/internal-accounts?customerId="+customerID, nil).ok(e.t, 200, &l)
	if len(l.Data) != 1 {
		e.t.Fatalf("customer %s has %d wallets", customerID, len(l.Data))
	}
	return l.Data[0].ID
}

// balance returns a wallet's balance in cur.
func (e *env) balance(walletID, cur string) int64 {
	e.t.Helper()
	var a sandbox.InternalAccount
	e.do("GET", "/internal-accounts/"+walletID, nil).ok(e.t, 200, &a)
	for _, m := range a.Balances {
		if m.Currency == cur {
			return m.Amount
		}
	}
	return 0
}

// login runs the EMAIL_OTP login of a wallet over HTTP (code 000000, real
// HPKE and stamps) and returns the session key.
func (e *env) login(walletID string) *walletauth.ClientKey {
	e.t.Helper()
	var creds struct{ Data []walletauth.AuthMethod }
	e.do("GET", "/auth/credentials?accountId="+walletID, nil).ok(e.t, 200, &creds)
	if len(creds.Data) == 0 {
		e.t.Fatal("wallet has no credential")
	}
	id := creds.Data[0].ID
	var m walletauth.AuthMethod
	e.do("POST", "/auth/credentials/"+id+"/challenge", "{}").ok(e.t, 200, &m)
	key, err := walletauth.NewClientKey()
	if err != nil {
		e.t.Fatal(err)
	}
	bundle, err := key.SealOTP(m.OTPEncryptionTargetBundle, e.sim.Auth().SigningPublicKey(), walletauth.SandboxOTPCode, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	body := map[string]string{"type": "EMAIL_OTP", "encryptedOtpBundle": bundle}
	var sess walletauth.AuthSession
	e.signed(key, "POST", "/auth/credentials/"+id+"/verify", body).ok(e.t, 200, &sess)
	return key
}

// walletKey returns a session key of the wallet, logging in once.
func (e *env) walletKey(walletID string) *walletauth.ClientKey {
	e.t.Helper()
	if k := e.keys[walletID]; k != nil {
		return k
	}
	if e.keys == nil {
		e.keys = map[string]*walletauth.ClientKey{}
	}
	e.keys[walletID] = e.login(walletID)
	return e.keys[walletID]
}

// signed sends a request that needs a signed retry: the first call must
// answer 202; the retry is stamped by key and its answer returned.
func (e *env) signed(key *walletauth.ClientKey, method, path string, body any, headers ...string) resp {
	e.t.Helper()
	ch := e.challenge(method, path, body, headers...)
	return e.retry(key, ch, method, path, body, headers...)
}

// challenge sends the first leg and returns its 202 challenge.
func (e *env) challenge(method, path string, body any, headers ...string) signedretry.Challenge {
	e.t.Helper()
	var ch signedretry.Challenge
	e.do(method, path, body, headers...).ok(e.t, 202, &ch)
	if ch.RequestID == "" || ch.PayloadToSign == "" {
		e.t.Fatalf("incomplete challenge %+v", ch)
	}
	return ch
}

// retry sends the second leg stamped by key.
func (e *env) retry(key *walletauth.ClientKey, ch signedretry.Challenge, method, path string, body any, headers ...string) resp {
	e.t.Helper()
	sig, err := key.Stamp(ch.PayloadToSign)
	if err != nil {
		e.t.Fatal(err)
	}
	h := append([]string{signedretry.HeaderSignature, sig, signedretry.HeaderRequestID, ch.RequestID}, headers...)
	return e.do(method, path, body, h...)
}

// external creates an external account for a customer.
func (e *env) external(customerID string, body map[string]any) sandbox.ExternalAccount {
	e.t.Helper()
	body["customerId"] = customerID
	var a sandbox.ExternalAccount
	e.do("POST", "/customers/external-accounts", body).ok(e.t, 201, &a)
	return a
}

// usdAccount returns the body of a USD bank account with the given number.
func usdAccount(number string) map[string]any {
	return map[string]any{"currency": "USD", "accountInfo": map[string]any{
		"accountType": "USD_ACCOUNT", "accountNumber": number, "routingNumber": "021000021",
		"beneficiary": map[string]any{"beneficiaryType": "INDIVIDUAL", "fullName": "Jane Doe"}}}
}

// evmWallet returns the body of a FIRST_PARTY self-custody Ethereum wallet
// in USDC whose address ends in suffix.
func evmWallet(suffix string) map[string]any {
	addr := "0x" + strings.Repeat("a", 40-len(suffix)) + suffix
	return map[string]any{"currency": "USDC", "ownershipType": "FIRST_PARTY",
		"accountInfo": map[string]any{"accountType": "ETHEREUM_WALLET", "address": addr}}
}

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

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/sandbox"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/signedretry/stamper"
	"github.com/walletgate/walletgate/walletauth"
	"github.com/walletgate/walletgate/walletauth/authclient"
)

// env is a simulator with a client speaking HTTP to it: over a socket of
// httptest.NewServer (srv), or in process when srv is nil (see
// newBubbleEnv).
type env struct {
	t    testing.TB
	sim  *sandbox.Simulator
	srv  *httptest.Server
	base string
	user string
	pass string
	keys map[string]*authclient.ClientKey // session keys by wallet, see walletKey
}

// newEnv serves a simulator on the real clock with httptest.NewServer.
func newEnv(t testing.TB) *env {
	t.Helper()
	return newEnvWith(t, sandbox.Config{})
}

// newEnvWith is newEnv for cfg.
func newEnvWith(t testing.TB, cfg sandbox.Config) *env {
	t.Helper()
	e := newBubbleEnv(t, cfg)
	e.srv = httptest.NewServer(e.sim.Handler())
	t.Cleanup(e.srv.Close)
	return e
}

// newBubbleEnv is the env of a test that needs time to pass, run inside
// synctest.Test: the simulator's Clock is time.Now, which the bubble fakes,
// and requests are served in process, without sockets, so that a
// time.Sleep of the test moves the clock as soon as the simulator is idle.
func newBubbleEnv(t testing.TB, cfg sandbox.Config) *env {
	t.Helper()
	sim, err := sandbox.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Close)
	return &env{t: t, sim: sim, base: sandbox.DefaultBasePath,
		user: sandbox.DefaultClientID, pass: sandbox.DefaultClientSecret}
}

// inProcess serves a request with a handler in the calling goroutine.
type inProcess struct{ h http.Handler }

func (p inProcess) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if r.Body == nil {
		r.Body = http.NoBody
	}
	r.RequestURI = r.URL.RequestURI()
	w := httptest.NewRecorder()
	p.h.ServeHTTP(w, r)
	return w.Result(), nil
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
	url, client := "http://sandbox.test", &http.Client{Transport: inProcess{e.sim.Handler()}}
	if e.srv != nil {
		url, client = e.srv.URL, e.srv.Client()
	}
	req, err := http.NewRequest(method, url+e.base+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if e.user != "" || e.pass != "" {
		req.SetBasicAuth(e.user, e.pass)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := client.Do(req)
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

// get reads the record at path: a 200 decoded into a T.
func get[T any](e *env, path string) T {
	e.t.Helper()
	var v T
	e.do("GET", path, nil).ok(e.t, 200, &v)
	return v
}

// balance returns a wallet's balance in cur.
func (e *env) balance(walletID, cur string) int64 {
	e.t.Helper()
	a := get[sandbox.InternalAccount](e, "/internal-accounts/"+walletID)
	for _, m := range a.Balances {
		if m.Currency == cur {
			return m.Amount
		}
	}
	return 0
}

// login runs the EMAIL_OTP login of a wallet over HTTP (code 000000, real
// HPKE and stamps) and returns the session key.
func (e *env) login(walletID string) *authclient.ClientKey {
	e.t.Helper()
	var creds struct{ Data []walletauth.AuthMethod }
	e.do("GET", "/auth/credentials?accountId="+walletID, nil).ok(e.t, 200, &creds)
	if len(creds.Data) == 0 {
		e.t.Fatal("wallet has no credential")
	}
	id := creds.Data[0].ID
	var m walletauth.AuthMethod
	e.do("POST", "/auth/credentials/"+id+"/challenge", "{}").ok(e.t, 200, &m)
	key, err := authclient.NewClientKey()
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
func (e *env) walletKey(walletID string) *authclient.ClientKey {
	e.t.Helper()
	if k := e.keys[walletID]; k != nil {
		return k
	}
	if e.keys == nil {
		e.keys = map[string]*authclient.ClientKey{}
	}
	e.keys[walletID] = e.login(walletID)
	return e.keys[walletID]
}

// signed sends a request that needs a signed retry: the first call must
// answer 202; the retry is stamped by key and its answer returned.
func (e *env) signed(key *authclient.ClientKey, method, path string, body any, headers ...string) resp {
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
func (e *env) retry(key *authclient.ClientKey, ch signedretry.Challenge, method, path string, body any, headers ...string) resp {
	e.t.Helper()
	sig, err := key.Stamp(ch.PayloadToSign)
	if err != nil {
		e.t.Fatal(err)
	}
	h := append([]string{stamper.HeaderSignature, sig, stamper.HeaderRequestID, ch.RequestID}, headers...)
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

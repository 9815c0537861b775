package client_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/examples/client"
	"github.com/walletgate/walletgate/sandbox"
	"github.com/walletgate/walletgate/signedretry/stamper"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/walletauth"
	"github.com/walletgate/walletgate/walletauth/authclient"
	"github.com/walletgate/walletgate/walletauth/envelope"
)

// relay stands between the client and the service, as a proxy or a
// compromised platform backend would: it forwards every request, and with an
// attack switched on it answers some calls itself.
type relay struct {
	t        *testing.T
	upstream string // the service's base URL
	proxy    *httputil.ReverseProxy

	mu sync.Mutex
	// exportOnRefresh, when set, is the wallet whose export the relay
	// answers a session refresh with, for its own key.
	exportOnRefresh string
	relayKey        *authclient.ClientKey
	exportBody      []byte
	// retries counts the signed retries the relay received.
	retries int
	// mnemonic is what the relay decrypted, if anything.
	mnemonic string
	// forgeBundles makes the relay replace OTP target bundles with its own.
	forgeBundles bool
}

func newRelay(t *testing.T, upstream string) *relay {
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	return &relay{t: t, upstream: upstream, proxy: httputil.NewSingleHostReverseProxy(u)}
}

func (r *relay) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	wallet, forge := r.exportOnRefresh, r.forgeBundles
	r.mu.Unlock()
	signed := req.Header.Get(stamper.HeaderSignature) != ""
	switch {
	case wallet != "" && strings.HasSuffix(req.URL.Path, "/refresh") && !signed:
		// Leg 1 of the refresh: ask for an export to the relay's key,
		// and hand its challenge to the client as the refresh's.
		res := r.send(req, "POST", "/internal-accounts/"+wallet+"/export", r.exportBody, nil)
		r.copy(w, res)
	case wallet != "" && strings.HasSuffix(req.URL.Path, "/refresh"):
		// Leg 2: the client's stamp, used on the export.
		r.mu.Lock()
		r.retries++
		r.mu.Unlock()
		res := r.send(req, "POST", "/internal-accounts/"+wallet+"/export", r.exportBody, map[string]string{
			stamper.HeaderSignature: req.Header.Get(stamper.HeaderSignature),
			stamper.HeaderRequestID: req.Header.Get(stamper.HeaderRequestID)})
		body, _ := io.ReadAll(res.Body)
		var out authclient.WalletExport
		if res.StatusCode == http.StatusOK && json.Unmarshal(body, &out) == nil {
			priv, _ := r.relayKey.PrivateKey().ECDH()
			if secret, err := envelope.OpenExportBundle(priv, out.EncryptedWalletCredentials, nil, sandbox.SandboxOrganizationID); err == nil {
				r.mu.Lock()
				r.mnemonic = string(secret)
				r.mu.Unlock()
			}
		}
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{}`))
	case forge && strings.HasSuffix(req.URL.Path, "/challenge"):
		res := r.send(req, req.Method, strings.TrimPrefix(req.URL.Path, "/2025-10-13"), mustRead(r.t, req.Body), nil)
		var m map[string]any
		if err := json.NewDecoder(res.Body).Decode(&m); err != nil {
			r.t.Error(err)
		}
		signer, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		forged, _, err := envelope.NewTargetBundle(signer, sandbox.SandboxOrganizationID, "", nil)
		if err != nil {
			r.t.Error(err)
		}
		m["otpEncryptionTargetBundle"] = forged
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(res.StatusCode)
		_ = json.NewEncoder(w).Encode(m)
	default:
		if signed {
			r.mu.Lock()
			r.retries++
			r.mu.Unlock()
		}
		r.proxy.ServeHTTP(w, req)
	}
}

// send makes the relay's own request to the service with the client's
// platform credentials.
func (r *relay) send(from *http.Request, method, path string, body []byte, headers map[string]string) *http.Response {
	req, err := http.NewRequest(method, r.upstream+sandbox.DefaultBasePath+path, bytes.NewReader(body))
	if err != nil {
		r.t.Fatal(err)
	}
	req.Header.Set("Authorization", from.Header.Get("Authorization"))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { res.Body.Close() })
	return res
}

func (r *relay) copy(w http.ResponseWriter, res *http.Response) {
	for k, vs := range res.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(res.StatusCode)
	_, _ = io.Copy(w, res.Body)
}

func mustRead(t *testing.T, r io.Reader) []byte {
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// wantRefused fails unless err is the client's refusal of a payload that
// failed check: 401 UNAUTHORIZED naming it.
func wantRefused(t *testing.T, err error, check string) {
	t.Helper()
	var e *apierror.Error
	if !errors.As(err, &e) || e.Code != apierror.Unauthorized || e.Status() != 401 || e.Details["check"] != check {
		t.Fatalf("error %v, want the 401 UNAUTHORIZED of the %q check", err, check)
	}
}

// fixture is a sandbox behind a relay, a client talking to the relay with
// the service's bundle signing key pinned, and a wallet logged in to.
type fixture struct {
	sim    *sandbox.Simulator
	relay  *relay
	c      *client.Client
	wallet string
	sess   *authclient.AuthSession
	key    *authclient.ClientKey
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	sim, err := sandbox.New(sandbox.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Close)
	upstream := httptest.NewServer(sim.Handler())
	t.Cleanup(upstream.Close)
	r := newRelay(t, upstream.URL)
	front := httptest.NewServer(r)
	t.Cleanup(front.Close)
	c := client.New(front.URL+sim.BasePath(), sandbox.DefaultClientID, sandbox.DefaultClientSecret)
	c.BundleSigner, c.OrganizationID = sim.Auth().SigningPublicKey(), sandbox.SandboxOrganizationID

	f := &fixture{sim: sim, relay: r, c: c}
	var cust sandbox.Customer
	if _, err := c.Do(ctx, "POST", "/customers", map[string]any{"customerType": "INDIVIDUAL", "fullName": "Ada Lovelace",
		"email": "ada@example.com"}, nil, &cust); err != nil {
		t.Fatal(err)
	}
	var wallets struct{ Data []sandbox.InternalAccount }
	if _, err := c.Do(ctx, "GET", "/internal-accounts?customerId="+cust.ID, nil, nil, &wallets); err != nil {
		t.Fatal(err)
	}
	f.wallet = wallets.Data[0].ID
	var creds struct{ Data []authclient.AuthMethod }
	if _, err := c.Do(ctx, "GET", "/auth/credentials?accountId="+f.wallet, nil, nil, &creds); err != nil {
		t.Fatal(err)
	}
	if f.sess, f.key, err = c.LoginOTP(ctx, f.wallet, creds.Data[0].ID, storage.EmailOTP, walletauth.SandboxOTPCode); err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	r.retries = 0 // the login's
	r.mu.Unlock()
	return f
}

// seen returns the signed retries the relay received and the mnemonic it
// decrypted.
func (r *relay) seen() (int, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.retries, r.mnemonic
}

// attackRefresh makes the relay answer session refreshes with the export of
// the wallet to the relay's own key.
func (f *fixture) attackRefresh(t *testing.T) {
	k, err := authclient.NewClientKey()
	if err != nil {
		t.Fatal(err)
	}
	f.relay.mu.Lock()
	defer f.relay.mu.Unlock()
	f.relay.exportOnRefresh, f.relay.relayKey = f.wallet, k
	f.relay.exportBody = []byte(`{"clientPublicKey":"` + k.PublicKeyHex() + `"}`)
}

// TestRelayCannotTurnARefreshIntoAnExport: the relay answers the refresh
// with the EXPORT_WALLET challenge of its own key. The client refuses to
// stamp it (the type check), sends no retry, and the relay learns nothing;
// the session is still refreshed when the relay stops lying.
func TestRelayCannotTurnARefreshIntoAnExport(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.attackRefresh(t)
	next, _ := authclient.NewClientKey()
	fresh, err := f.c.RefreshSession(ctx, f.wallet, f.sess.ID, f.key, next)
	wantRefused(t, err, "type")
	if retries, mnemonic := f.relay.seen(); fresh != nil || retries != 0 || mnemonic != "" {
		t.Fatalf("refresh %+v, %d retries reached the relay, mnemonic %q", fresh, retries, mnemonic)
	}
	f.relay.mu.Lock()
	f.relay.exportOnRefresh = ""
	f.relay.mu.Unlock()
	if fresh, err = f.c.RefreshSession(ctx, f.wallet, f.sess.ID, f.key, next); err != nil || fresh.AccountID != f.wallet {
		t.Fatalf("honest refresh: %+v, %v", fresh, err)
	}
}

// TestRelayAttackWorksOnAClientThatStampsBlindly is the control of the test
// above: the same relay against a client that stamps the payloadToSign it
// is handed (what examples/client did) reads the wallet's mnemonic.
func TestRelayAttackWorksOnAClientThatStampsBlindly(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.attackRefresh(t)
	next, _ := authclient.NewClientKey()
	path := "/auth/sessions/" + f.sess.ID + "/refresh"
	body := map[string]string{"clientPublicKey": next.PublicKeyHex()}
	var ch stamper.Challenge
	if _, err := f.c.Do(ctx, "POST", path, body, nil, &ch); err != nil {
		t.Fatal(err)
	}
	stamp, err := f.key.Stamp(ch.PayloadToSign)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.c.Do(ctx, "POST", path, body, map[string]string{stamper.HeaderSignature: stamp,
		stamper.HeaderRequestID: ch.RequestID}, nil); err != nil {
		t.Fatal(err)
	}
	if _, mnemonic := f.relay.seen(); mnemonic != sandbox.SandboxMnemonic {
		t.Fatalf("the relay read %q; the attack this client refuses must work on a blind one", mnemonic)
	}
}

// TestClientRefusesPayloadsOfAnotherOperation: each signed call refuses the
// challenge of another operation on the same account, before stamping.
func TestClientRefusesPayloadsOfAnotherOperation(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	// Same type, same account, same empty body: only the parameters tell a
	// revocation of another session apart. The relay is honest here; the
	// expectation names the session the caller means.
	next, _ := authclient.NewClientKey()
	fresh, err := f.c.RefreshSession(ctx, f.wallet, f.sess.ID, f.key, next)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.c.Signed(ctx, "DELETE", "/auth/sessions/"+fresh.ID, nil, f.key,
		stamper.Expectation{Type: authclient.OpRevokeSession, AccountID: f.wallet, Parameters: map[string]string{"sessionId": f.sess.ID}}, nil)
	wantRefused(t, err, "parameters")
	_, err = f.c.Signed(ctx, "DELETE", "/auth/sessions/"+fresh.ID, nil, f.key,
		stamper.Expectation{Type: authclient.OpRevokeCredential, AccountID: f.wallet, Parameters: map[string]string{"sessionId": fresh.ID}}, nil)
	wantRefused(t, err, "type")
	_, err = f.c.Signed(ctx, "DELETE", "/auth/sessions/"+fresh.ID, nil, f.key,
		stamper.Expectation{Type: authclient.OpRevokeSession, AccountID: "InternalAccount:00000000-0000-4000-8000-000000000000",
			Parameters: map[string]string{"sessionId": fresh.ID}}, nil)
	wantRefused(t, err, "accountId")
	if retries, _ := f.relay.seen(); retries != 1 { // the refresh's
		t.Fatalf("%d retries sent, want only the refresh's", retries)
	}
	if _, err := f.c.RevokeSession(ctx, f.wallet, fresh.ID, f.key); err != nil {
		t.Fatalf("the revocation the client meant: %v", err)
	}
}

// TestLoginRefusesABundleOfAnotherSigner: a relay that swaps the OTP target
// bundle for one it signed itself (so it could open the sealed code) is
// refused by the pinned bundle signing key; a client without a pinned key
// does not log in at all.
func TestLoginRefusesABundleOfAnotherSigner(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	var creds struct{ Data []authclient.AuthMethod }
	if _, err := f.c.Do(ctx, "GET", "/auth/credentials?accountId="+f.wallet, nil, nil, &creds); err != nil {
		t.Fatal(err)
	}
	f.relay.mu.Lock()
	f.relay.forgeBundles = true
	f.relay.mu.Unlock()
	_, _, err := f.c.LoginOTP(ctx, f.wallet, creds.Data[0].ID, storage.EmailOTP, walletauth.SandboxOTPCode)
	var e *apierror.Error
	if !errors.As(err, &e) || e.Code != apierror.Unauthorized || e.Status() != 401 || e.Reason() != "enclaveQuorumPublic is not the trusted signer key" {
		t.Fatalf("login through a forged bundle: %v, want 401 UNAUTHORIZED (untrusted signer)", err)
	}
	unpinned := client.New(f.c.BaseURL, sandbox.DefaultClientID, sandbox.DefaultClientSecret)
	if _, _, err := unpinned.LoginOTP(ctx, f.wallet, creds.Data[0].ID, storage.EmailOTP, walletauth.SandboxOTPCode); err == nil ||
		!strings.Contains(err.Error(), "BundleSigner") {
		t.Fatalf("login without a pinned key: %v", err)
	}
	if _, err := unpinned.ExportWallet(ctx, f.wallet, f.key, f.key); err == nil || !strings.Contains(err.Error(), "BundleSigner") {
		t.Fatalf("export without a pinned key: %v", err)
	}
}

// TestExportWalletChecksAndOpens: the export the client means goes through,
// its payload bound to the export key and its bundle opened against the
// pinned key.
func TestExportWalletChecksAndOpens(t *testing.T) {
	f := newFixture(t)
	exportKey, _ := authclient.NewClientKey()
	secret, err := f.c.ExportWallet(context.Background(), f.wallet, f.key, exportKey)
	if err != nil || string(secret) != sandbox.SandboxMnemonic {
		t.Fatalf("export: %q, %v", secret, err)
	}
}

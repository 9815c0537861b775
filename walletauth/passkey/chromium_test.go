package passkey_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/webauthn"
	"github.com/chromedp/chromedp"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/walletauth/passkey"
)

const chromiumPath = "/usr/bin/chromium"

// chromiumPage registers a passkey and authenticates with it through
// navigator.credentials; the JSON of each ceremony goes to the server as the
// platform backend would relay it.
const chromiumPage = `<!doctype html><meta charset="utf-8"><title>passkey</title><script>
async function post(path, body) {
  const r = await fetch(path, {method: "POST", body: JSON.stringify(body || {})});
  return {status: r.status, body: await r.json()};
}
async function register(nickname) {
  const begin = await post("/register/begin");
  const cred = await navigator.credentials.create({publicKey: PublicKeyCredential.parseCreationOptionsFromJSON(begin.body.options)});
  const j = cred.toJSON();
  return post("/register/finish", {challenge: begin.body.challenge, nickname, attestation: {
    credentialId: j.rawId, clientDataJson: j.response.clientDataJSON,
    attestationObject: j.response.attestationObject, transports: j.response.transports}});
}
let last;
async function login() {
  const kp = await crypto.subtle.generateKey({name: "ECDSA", namedCurve: "P-256"}, false, ["sign"]);
  const raw = new Uint8Array(await crypto.subtle.exportKey("raw", kp.publicKey));
  const clientPublicKey = Array.from(raw, b => b.toString(16).padStart(2, "0")).join("");
  const begin = await post("/login/begin", {clientPublicKey});
  const cred = await navigator.credentials.get({publicKey: PublicKeyCredential.parseRequestOptionsFromJSON(begin.body.options)});
  const j = cred.toJSON();
  last = {requestId: begin.body.requestId, assertion: {credentialId: j.rawId, clientDataJson: j.response.clientDataJSON,
    authenticatorData: j.response.authenticatorData, signature: j.response.signature, userHandle: j.response.userHandle}};
  return post("/login/finish", last);
}
async function replay() { return post("/login/finish", last); }
</script>`

// browserBackend is the platform backend of the browser test: it issues
// challenges, relays ceremonies to the verifier and keeps credentials in a
// memory store. Pending authentication challenges live in a map here; a
// real host keeps them as pending requests.
type browserBackend struct {
	v       *passkey.Verifier
	s       storage.Store
	mu      sync.Mutex
	pending map[string]string // request id -> challenge hex
	credID  string            // AuthMethod id of the registered passkey
}

func (b *browserBackend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	reply := func(v any, err error) {
		w.Header().Set("Content-Type", "application/json")
		if err != nil {
			apierror.Write(w, err)
			return
		}
		_ = json.NewEncoder(w).Encode(v)
	}
	switch r.URL.Path {
	case "/":
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(chromiumPage))
	case "/register/begin":
		var opts []byte
		err := b.s.Atomic(ctx, func(tx storage.Tx) error {
			rc, err := b.v.IssueRegistrationChallenge(ctx, tx, account1, time.Now())
			if err != nil {
				return err
			}
			opts, err = b.v.CreationOptions(rc, passkey.User{Name: "jane@example.com", DisplayName: "Jane"}, nil)
			return err
		})
		var challenge struct {
			Challenge string `json:"challenge"`
		}
		_ = json.Unmarshal(opts, &challenge)
		reply(map[string]any{"options": json.RawMessage(opts), "challenge": challenge.Challenge}, err)
	case "/register/finish":
		var req struct {
			Challenge   string              `json:"challenge"`
			Nickname    string              `json:"nickname"`
			Attestation passkey.Attestation `json:"attestation"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			reply(nil, apierror.New(apierror.InvalidInput, "body"))
			return
		}
		var reg *passkey.Registration
		err := b.s.Atomic(ctx, func(tx storage.Tx) error {
			var err error
			reg, err = b.v.VerifyRegistration(ctx, tx, passkey.RegistrationRequest{AccountID: account1, Nickname: req.Nickname,
				Challenge: req.Challenge, Attestation: req.Attestation}, time.Now())
			if err != nil {
				return err
			}
			id, _ := storage.NewID(nil, "AuthMethod")
			b.credID = id
			return tx.Credentials().Create(ctx, &storage.Credential{ID: id, AccountID: account1, Type: storage.Passkey,
				Nickname: reg.Nickname, WebAuthn: reg.Credential})
		})
		if err != nil {
			reply(nil, err)
			return
		}
		reply(map[string]any{"nickname": reg.Nickname, "format": reg.AttestationFormat, "transports": reg.Credential.Transports,
			"uv": reg.Credential.UserVerified, "be": reg.Credential.BackupEligible}, nil)
	case "/login/begin":
		var req struct {
			ClientPublicKey string `json:"clientPublicKey"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		var cred storage.Credential
		if err := b.s.Atomic(ctx, func(tx storage.Tx) error {
			var err error
			cred, err = tx.Credentials().Get(ctx, b.credID)
			return err
		}); err != nil {
			reply(nil, err)
			return
		}
		requestID, _ := storage.NewID(nil, "Request")
		ch := b.v.AssertionChallenge(req.ClientPublicKey, cred.ID, requestID)
		b.mu.Lock()
		b.pending[requestID] = ch
		b.mu.Unlock()
		opts, err := b.v.RequestOptions(ch, [][]byte{cred.WebAuthn.CredentialID})
		reply(map[string]any{"options": json.RawMessage(opts), "requestId": requestID}, err)
	case "/login/finish":
		var req struct {
			RequestID string            `json:"requestId"`
			Assertion passkey.Assertion `json:"assertion"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			reply(nil, apierror.New(apierror.InvalidInput, "body"))
			return
		}
		b.mu.Lock()
		ch := b.pending[req.RequestID]
		b.mu.Unlock()
		var updated *storage.WebAuthnCredential
		err := b.s.Atomic(ctx, func(tx storage.Tx) error {
			cred, err := tx.Credentials().Get(ctx, b.credID)
			if err != nil {
				return err
			}
			if updated, err = b.v.VerifyAssertion(cred.WebAuthn, ch, req.Assertion); err != nil {
				return err
			}
			cred.WebAuthn = updated
			return tx.Credentials().Update(ctx, &cred)
		})
		if err != nil {
			reply(nil, err)
			return
		}
		reply(map[string]any{"signCount": updated.SignCount, "uv": updated.UserVerified}, nil)
	default:
		http.NotFound(w, r)
	}
}

type pageResult struct {
	Status int            `json:"status"`
	Body   map[string]any `json:"body"`
}

func TestChromiumVirtualAuthenticator(t *testing.T) {
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Skipf("Chromium is not installed at %s (apt-get install -y chromium); skipping the browser interop test", chromiumPath)
	}
	backend := &browserBackend{s: newStore(), pending: map[string]string{}}
	srv := httptest.NewServer(backend)
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	origin := "http://localhost:" + u.Port()
	v, err := passkey.New(passkey.Config{RelyingParty: passkey.RelyingParty{ID: "localhost", Name: "walletgate test", Origins: []string{origin}, RequireUserVerification: true}})
	if err != nil {
		t.Fatal(err)
	}
	backend.v = v

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(chromiumPath),
		chromedp.Flag("headless", true), chromedp.Flag("no-sandbox", true), chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true), chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.UserDataDir(t.TempDir()))
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(allocCtx)
	defer cancelBrowser()

	if _, err := chromedp.Run(bctx, chromedp.Navigate(origin+"/")); err != nil {
		t.Fatalf("navigate: %v", err)
	}
	off := false
	if _, err := chromedp.Call(bctx, webauthn.Enable, webauthn.EnableParams{EnableUI: &off}); err != nil {
		t.Fatalf("WebAuthn.enable: %v", err)
	}
	// AutomaticPresenceSimulation and IsUserVerified have no omitempty: leaving
	// them unset sends false and every ceremony waits for a touch forever.
	if _, err := chromedp.Call(bctx, webauthn.AddVirtualAuthenticator, webauthn.AddVirtualAuthenticatorParams{Options: &webauthn.VirtualAuthenticatorOptions{
		Protocol: webauthn.AuthenticatorProtocolCtap2, Ctap2version: webauthn.Ctap2versionCtap21,
		Transport: webauthn.AuthenticatorTransportInternal, HasResidentKey: true, HasUserVerification: true,
		IsUserVerified: true, AutomaticPresenceSimulation: true, DefaultBackupEligibility: true, DefaultBackupState: true}}); err != nil {
		t.Fatalf("WebAuthn.addVirtualAuthenticator: %v", err)
	}
	run := func(expr string) pageResult {
		t.Helper()
		got, err := chromedp.Run(bctx, chromedp.Evaluate[pageResult](expr, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		return got
	}

	reg := run(`register("  Chromium virtual key ")`)
	if reg.Status != 200 || reg.Body["nickname"] != "Chromium virtual key" || reg.Body["format"] != "none" || reg.Body["uv"] != true || reg.Body["be"] != true {
		t.Fatalf("registration: %+v", reg)
	}
	// Chromium's authenticator counts every signature, the registration's
	// included: each authentication must store a higher counter.
	last := 0.0
	for i := 1; i <= 2; i++ {
		got := run(`login()`)
		count, _ := got.Body["signCount"].(float64)
		if got.Status != 200 || count <= last || got.Body["uv"] != true {
			t.Fatalf("authentication %d: %+v", i, got)
		}
		last = count
	}
	replayed := run(`replay()`)
	if replayed.Status != 401 || replayed.Body["details"].(map[string]any)["reason"] != passkey.ReasonCounterNotIncreased {
		t.Fatalf("replayed assertion: %+v", replayed)
	}
	t.Logf("registered with transports %v, authenticated twice (counter %v), replay rejected", reg.Body["transports"], last)
}

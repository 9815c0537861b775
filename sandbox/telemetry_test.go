package sandbox_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/accounts"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/operation/telemetrytest"
	"github.com/walletgate/walletgate/ownership"
	"github.com/walletgate/walletgate/sandbox"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/postgres"
	"github.com/walletgate/walletgate/storage/postgres/pgtest"
	"github.com/walletgate/walletgate/walletauth"
	"github.com/walletgate/walletgate/walletauth/authclient"
	"github.com/walletgate/walletgate/walletauth/oidc"
	"github.com/walletgate/walletgate/walletauth/secret"
)

// TestTelemetryCarriesNoSecrets drives every flow of the simulator over
// HTTP — OTP start, a wrong code and logins, session refresh, export, OIDC
// and passkey credentials and logins (one forged), signed retries (one
// stamped by a stranger), an ownership proof (a bad signature, then a good
// one), payouts through the gate, an Idempotency-Key replay and the
// webhooks the relay delivers — with a span recorder, a manual metric
// reader and a capturing log handler in sandbox.Config, which hands them to
// every component it builds. It then scans every span, metric and log
// record for every secret those flows met: the request bodies and every
// string in them, the stamps and platform credentials of the requests, the
// bundles, keys, tokens, challenges and payloads of the answers (decoded
// down to their bytes), the session keys, the simulator's sealing, MAC,
// bundle-signing and webhook-signing keys, and the signatures of the
// webhooks delivered.
//
// It runs on the memory store and, with WALLETGATE_POSTGRES_DSN, on
// PostgreSQL with the store's telemetry wired too.
func TestTelemetryCarriesNoSecrets(t *testing.T) {
	t.Run("memory", func(t *testing.T) { telemetryNoSecrets(t, false) })
	t.Run("postgres", func(t *testing.T) { telemetryNoSecrets(t, true) })
}

func telemetryNoSecrets(t *testing.T, pg bool) {
	sec := secretSet{}
	tc := telemetrytest.New(t)
	var store storage.Store
	if pg {
		dsn := pgtest.DSN(t)
		store = telemetryPostgres(t, dsn, postgres.Config{Telemetry: tc.Telemetry()})
	}

	// The receiver of the webhooks records their signatures.
	var hooksMu sync.Mutex
	hooks := 0
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		hooksMu.Lock()
		defer hooksMu.Unlock()
		hooks++
		for name, vs := range r.Header {
			if strings.Contains(strings.ToLower(name), "signature") {
				for _, v := range vs {
					sec.addSealed("webhook "+name, v)
				}
			}
		}
		_ = body
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(recv.Close)

	// Keys given, so the test knows them.
	sealKey, err := secret.GenerateKey(nil, "telemetry-1")
	if err != nil {
		t.Fatal(err)
	}
	ring, _ := secret.NewKeyring(sealKey)
	sec.addString("sealer key (encoded)", sealKey.Encode())
	mac := make([]byte, 32)
	_, _ = rand.Read(mac)
	sec.addBytes("code MAC key", mac)
	signing, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	sec.addPrivateKey("bundle signing key", signing)
	hookKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	sec.addPrivateKey("webhook signing key", hookKey)
	clientSecret := "telemetry-client-secret-" + hex.EncodeToString(mac[:8])
	sec.addString("platform client secret", clientSecret)

	sim, err := sandbox.New(sandbox.Config{Store: store, ClientSecret: clientSecret, Sealer: ring, CodeMACKey: mac, SigningKey: signing,
		WebhookURL: recv.URL + "/hooks", WebhookKey: hookKey,
		Telemetry: tc.Telemetry()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Close)
	srv := httptest.NewServer(sec.tap(sim.Handler()))
	t.Cleanup(srv.Close)
	e := &env{t: t, sim: sim, srv: srv, base: sandbox.DefaultBasePath, user: sandbox.DefaultClientID, pass: clientSecret}

	// OTP: a wrong code, then logins (challenge, both legs).
	cust, wallet := e.customer("Tele Metry")
	var creds struct{ Data []walletauth.AuthMethod }
	e.do("GET", "/auth/credentials?accountId="+wallet, nil).ok(t, 200, &creds)
	credID := creds.Data[0].ID
	var m walletauth.AuthMethod
	e.do("POST", "/auth/credentials/"+credID+"/challenge", "{}").ok(t, 200, &m)
	wrongKey, _ := authclient.NewClientKey()
	sec.addClientKey("OTP client key", wrongKey)
	wrong, err := wrongKey.SealOTP(m.OTPEncryptionTargetBundle, sim.Auth().SigningPublicKey(), "111111", nil)
	if err != nil {
		t.Fatal(err)
	}
	e.do("POST", "/auth/credentials/"+credID+"/verify", map[string]string{"type": "EMAIL_OTP", "encryptedOtpBundle": wrong}).
		fails(t, 401, apierror.Unauthorized)
	key := e.login(wallet)
	sec.addClientKey("session key", key)

	// A retry stamped by a stranger, then the refresh stamped by the session.
	stranger, _ := authclient.NewClientKey()
	sec.addClientKey("stranger key", stranger)
	next, _ := authclient.NewClientKey()
	sec.addClientKey("refreshed session key", next)
	refresh := "/auth/sessions/" + e.sessionID(wallet) + "/refresh"
	body := map[string]string{"clientPublicKey": next.PublicKeyHex()}
	ch := e.challenge("POST", refresh, body)
	e.retry(stranger, ch, "POST", refresh, body).fails(t, 401, apierror.WalletSignatureInvalid)
	var sess walletauth.AuthSession
	e.retry(key, ch, "POST", refresh, body).ok(t, 201, &sess)
	if sk, err := next.OpenSessionKey(sess.EncryptedSessionSigningKey); err == nil {
		sec.addClientKey("refreshed session's server-made key", sk)
	}
	key = e.login(wallet)
	sec.addClientKey("session key", key)

	// Export.
	exportPriv, exportPub := exportKey(t)
	sec.addBytes("export client key", exportPriv.Bytes())
	e.signed(key, "POST", "/internal-accounts/"+wallet+"/export", map[string]string{"clientPublicKey": exportPub}).ok(t, 200, nil)

	// OIDC: add the credential, a login, a stale token.
	claims := func(extra map[string]any) map[string]any {
		c := map[string]any{"iss": "https://accounts.google.com", "aud": sandbox.DefaultOIDCAudience, "sub": "1234567890",
			"email": "tele@example.com", "iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix()}
		for k, v := range extra {
			c[k] = v
		}
		return c
	}
	var oa walletauth.AuthMethod
	e.signed(key, "POST", "/auth/credentials", map[string]any{"type": "OAUTH", "accountId": wallet,
		"oidcToken": dummyToken(claims(nil))}).ok(t, 201, &oa)
	oidcClient, _ := authclient.NewClientKey()
	sec.addClientKey("OIDC client key", oidcClient)
	e.do("POST", "/auth/credentials/"+oa.ID+"/verify", map[string]any{"type": "OAUTH", "clientPublicKey": oidcClient.PublicKeyHex(),
		"oidcToken": dummyToken(claims(map[string]any{"nonce": oidc.NonceFor(oidcClient.PublicKeyHex())}))}).ok(t, 200, nil)
	stale := claims(map[string]any{"nonce": oidc.NonceFor(oidcClient.PublicKeyHex()), "iat": time.Now().Add(-2 * time.Minute).Unix()})
	e.do("POST", "/auth/credentials/"+oa.ID+"/verify", map[string]any{"type": "OAUTH", "clientPublicKey": oidcClient.PublicKeyHex(),
		"oidcToken": dummyToken(stale)}).fails(t, 401, apierror.Unauthorized)

	// Passkey: registration, a login, a forged assertion.
	a := newAuthenticator(t)
	var rc struct{ Challenge string }
	e.do("POST", "/sandbox/passkeys/registration-challenge", map[string]string{"accountId": wallet}).ok(t, 201, &rc)
	var pk walletauth.AuthMethod
	e.signed(key, "POST", "/auth/credentials", map[string]any{"type": "PASSKEY", "accountId": wallet, "nickname": "Laptop",
		"challenge": rc.Challenge, "attestation": a.attest(t, rc.Challenge, wallet)}).ok(t, 201, &pk)
	for _, forged := range []bool{false, true} {
		client, _ := authclient.NewClientKey()
		sec.addClientKey("passkey client key", client)
		var pch walletauth.ChallengeResponse
		e.do("POST", "/auth/credentials/"+pk.ID+"/challenge", map[string]string{"clientPublicKey": client.PublicKeyHex()}).ok(t, 200, &pch)
		as := a.assert(t, pch.Challenge)
		want := 200
		if forged {
			as.Signature, want = base64.RawURLEncoding.EncodeToString([]byte("forged-signature")), 401
		}
		if r := e.do("POST", "/auth/credentials/"+pk.ID+"/verify", map[string]any{"type": "PASSKEY", "assertion": as},
			"Request-Id", pch.RequestID); r.status != want {
			t.Fatalf("passkey login (forged %v): %d %s", forged, r.status, r.body)
		}
	}

	// Ownership: a bad signature, then a proof.
	evm, _ := crypto.GenerateKey()
	sec.addBytes("wallet private key", crypto.FromECDSA(evm))
	ext := e.external(cust.ID, map[string]any{"currency": "USDC", "ownershipType": "FIRST_PARTY",
		"accountInfo": map[string]any{"accountType": "ETHEREUM_WALLET", "address": crypto.PubkeyToAddress(evm.PublicKey).Hex()}})
	path := "/customers/external-accounts/" + ext.ID
	var c ownership.Challenge
	e.do("POST", path+"/challenge", map[string]string{"method": "WALLET_SIGNATURE"}).ok(t, 201, &c)
	bad, _ := crypto.Sign(accounts.TextHash([]byte("something else")), evm)
	bad[64] += 27
	e.do("POST", path+"/verify", map[string]string{"signature": "0x" + hex.EncodeToString(bad)}).fails(t, 400, apierror.InvalidInput)
	e.do("POST", path+"/challenge", map[string]string{"method": "WALLET_SIGNATURE"}).ok(t, 201, &c)
	sig, _ := crypto.Sign(accounts.TextHash([]byte(c.MessageToSign)), evm)
	sig[64] += 27
	e.do("POST", path+"/verify", map[string]string{"signature": "0x" + hex.EncodeToString(sig)}).ok(t, 200, nil)

	// Payouts through the gate: a quote to the proven wallet executed with
	// an Idempotency-Key, then replayed; one to a wallet not proven.
	e.do("POST", "/sandbox/internal-accounts/"+wallet+"/fund", map[string]any{"amount": 5_000_000_000}).ok(t, 200, nil)
	p := payer{cust, wallet, key}
	q := e.quote(p, map[string]any{"accountId": ext.ID}, 1_000_000)
	idem := []string{"Idempotency-Key", "3f1c9a52-7d4e-4b8a-9c0d-2e6f8a1b4c7d"}
	e.execute(p, q.ID, idem...).ok(t, 200, nil)
	e.do("POST", "/quotes/"+q.ID+"/execute", nil, idem...).ok(t, 200, nil)
	pending := e.external(cust.ID, evmWallet("7e1"))
	q = e.quote(p, map[string]any{"accountId": pending.ID}, 1_000_000)
	e.execute(p, q.ID) // decided by the gate; whatever the answer, it is scanned

	// The relay delivers the events.
	deadline := time.Now().Add(10 * time.Second)
	for {
		hooksMu.Lock()
		n := hooks
		hooksMu.Unlock()
		if n >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d webhooks delivered", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	sim.Close() // the relay's last records

	hooksMu.Lock()
	defer hooksMu.Unlock()
	if len(sec) < 300 {
		t.Fatalf("only %d secrets collected", len(sec))
	}
	records := tc.Records(t)
	all := strings.Join(records, "\n")
	wants := []string{
		"span walletauth.otp.start", "span walletauth.otp.verify", "span walletauth.passkey.verify",
		"span walletauth.oidc.verify", "span walletauth.session.refresh", "span walletauth.wallet.export",
		"span signedretry.issue", "span signedretry.complete", "span ownership.verify", "event=ownership.payout.decide",
		"metric walletgate.ownership.verify.outcomes", "metric walletgate.ownership.payout.decisions",
		"metric walletgate.walletauth.otp.outcomes", "metric walletgate.signedretry.outcomes",
		"log WARN refused operation=ownership.verify code=INVALID_INPUT",
		"log WARN refused operation=walletauth.otp.verify code=UNAUTHORIZED reason=Invalid OTP code request_id=",
		"log WARN refused operation=signedretry.complete code=WALLET_SIGNATURE_INVALID",
		"log WARN refused operation=walletauth.passkey.verify",
		"log WARN refused operation=walletauth.oidc.verify",
		// The storage components the simulator builds.
		"span idempotency.do", "walletgate.reason=replayed", "metric walletgate.idempotency.outcomes",
		"span relay.lease", "span relay.publish", "metric walletgate.relay.deliveries", "metric walletgate.relay.backlog",
		"span webhook.deliver", "metric walletgate.webhook.deliveries",
	}
	if pg {
		wants = append(wants, "span storage.transaction", "metric walletgate.storage.transaction.duration")
	}
	for _, want := range wants {
		if !strings.Contains(all, want) {
			t.Errorf("the telemetry lacks %q", want)
		}
	}
	if t.Failed() || testing.Verbose() {
		for _, r := range records {
			t.Log(r)
		}
	}

	// The scanner finds what it looks for.
	for v := range sec {
		if telemetrytest.Leaks([]string{"log INFO x k=" + v}, sec) == nil {
			t.Fatalf("the scanner misses %q", v)
		}
		break
	}
	for _, l := range telemetrytest.Leaks(records, sec) {
		t.Error(l)
	}
	t.Logf("%d telemetry records scanned for %d secrets", len(records), len(sec))
}

// telemetryPostgres returns a PostgreSQL store on a fresh schema of the
// test database, configured with cfg (its Schema set here); the schema is
// dropped when the test ends.
func telemetryPostgres(t *testing.T, dsn string, cfg postgres.Config) storage.Store {
	ctx := t.Context()
	pc, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	pc.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	var id [8]byte
	_, _ = rand.Read(id[:])
	cfg.Schema = "wgtelemetry_" + hex.EncodeToString(id[:])
	t.Cleanup(func() { // registered after Close, so it runs before it
		if _, err := pool.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{cfg.Schema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("dropping schema %s: %v", cfg.Schema, err)
		}
	})
	if _, err := postgres.Migrate(ctx, pool, postgres.Config{Schema: cfg.Schema}); err != nil {
		t.Fatal(err)
	}
	store, err := postgres.New(pool, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return store
}

// secretSet maps each secret value the flows met to what it is.
type secretSet map[string]string

var secretMu sync.Mutex

// tap serves h and records the secrets of every exchange: the request body
// and every string in it, the stamp and the platform credentials, and the
// secrets of the answer (bundles, keys, tokens, challenges, payloads).
func (s secretSet) tap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		s.addString("request body of "+r.Method+" "+r.URL.Path, string(body))
		s.addSealed("request member", string(body))
		for _, name := range []string{"Authorization", "Service-Wallet-Signature"} {
			s.addSealed(name, r.Header.Get(name))
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		var v any
		if json.Unmarshal(rec.Body.Bytes(), &v) == nil {
			walkMembers(v, func(name, value string) {
				n := strings.ToLower(name)
				for _, w := range []string{"bundle", "key", "token", "challenge", "payload", "signature", "encrypted", "secret", "credentials"} {
					if strings.Contains(n, w) {
						s.addSealed("answer member "+name, value)
					}
				}
			})
		}
		for k, vs := range rec.Header() {
			w.Header()[k] = vs
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	})
}

func (s secretSet) put(v, what string) {
	secretMu.Lock()
	s[v] = what
	secretMu.Unlock()
}

// addString records a secret value and its JSON-escaped form.
func (s secretSet) addString(what, v string) {
	if len(v) < 12 {
		return
	}
	s.put(v, what)
	if b, err := json.Marshal(v); err == nil {
		s.put(string(b[1:len(b)-1]), what+" (JSON-escaped)")
	}
}

// addSealed records a secret container and every secret inside it: its
// JSON members and their hex or base64 contents, down to the bytes.
// Identifiers, enum values, URLs, addresses and short strings are skipped.
func (s secretSet) addSealed(what, v string) { s.addSealedDepth(what, v, 0) }

var (
	idLike   = regexp.MustCompile(`^[A-Za-z]+:[0-9a-fA-F-]{36}$`)
	enumLike = regexp.MustCompile(`^[A-Z_]+$`) // WALLET_SIGNATURE, FIRST_PARTY
)

func (s secretSet) addSealedDepth(what, v string, depth int) {
	v = strings.TrimPrefix(v, "Basic ")
	if len(v) < 16 || depth > 4 || idLike.MatchString(v) || enumLike.MatchString(v) || strings.HasPrefix(v, "http") || strings.Contains(v, "@") {
		return
	}
	s.addString(what, v)
	var x any
	if json.Unmarshal([]byte(v), &x) == nil {
		walkMembers(x, func(_, inner string) { s.addSealedDepth(what+" member", inner, depth+1) })
		return
	}
	for _, dec := range []func(string) ([]byte, error){hex.DecodeString, base64.StdEncoding.DecodeString,
		base64.RawStdEncoding.DecodeString, base64.URLEncoding.DecodeString, base64.RawURLEncoding.DecodeString} {
		if b, err := dec(strings.TrimPrefix(v, "0x")); err == nil && len(b) >= 8 {
			s.addBytes(what+" decoded", b)
			if json.Valid(b) {
				s.addSealedDepth(what+" decoded", string(b), depth+1)
			}
		}
	}
}

// addBytes records binary secret in every encoding a record could carry it in.
func (s secretSet) addBytes(what string, b []byte) {
	if len(b) < 8 {
		return
	}
	for _, enc := range []string{hex.EncodeToString(b), strings.ToUpper(hex.EncodeToString(b)),
		base64.StdEncoding.EncodeToString(b), base64.RawStdEncoding.EncodeToString(b),
		base64.URLEncoding.EncodeToString(b), base64.RawURLEncoding.EncodeToString(b)} {
		s.put(enc, what)
	}
}

func (s secretSet) addPrivateKey(what string, k *ecdsa.PrivateKey) {
	s.addBytes(what+" (private)", k.D.FillBytes(make([]byte, 32)))
	s.addBytes(what+" (public, compressed)", elliptic.MarshalCompressed(elliptic.P256(), k.X, k.Y))
	s.addBytes(what+" (public, uncompressed)", elliptic.Marshal(elliptic.P256(), k.X, k.Y)) //nolint:staticcheck // the wire form
	if der, err := x509.MarshalPKIXPublicKey(&k.PublicKey); err == nil {
		s.addBytes(what+" (public, DER)", der)
	}
}

func (s secretSet) addClientKey(what string, k *authclient.ClientKey) {
	s.addPrivateKey(what, k.PrivateKey())
	s.addString(what+" (public hex)", k.PublicKeyHex())
}

// walkMembers calls fn with every string in v and the name of the member
// holding it ("" in arrays and at the top).
func walkMembers(v any, fn func(name, value string)) {
	var walk func(name string, v any)
	walk = func(name string, v any) {
		switch v := v.(type) {
		case string:
			fn(name, v)
		case []any:
			for _, x := range v {
				walk(name, x)
			}
		case map[string]any:
			for k, x := range v {
				walk(k, x)
			}
		}
	}
	walk("", v)
}

package ownership_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ethereum/go-ethereum/accounts"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/mr-tron/base58"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/ownership"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/memory"
	"github.com/walletgate/walletgate/storage/relay"
	"github.com/walletgate/walletgate/storage/storagetest"
)

// livenessToken is the fake provider's SDK token.
const livenessToken = "liveness-sdk-token-5c1f0e9a"

type liveness struct{ calls int }

func (l *liveness) Start(_ context.Context, a storage.ExternalAccount, exp time.Time) (ownership.LivenessSession, error) {
	l.calls++
	return ownership.LivenessSession{VerificationLink: "https://verify.example.com/session/" + a.ID, Token: livenessToken}, nil
}

type lifecycle struct {
	svc *ownership.Service
	// cfg is the configuration svc was made from, for more services on
	// the same store (see with).
	cfg   ownership.Config
	store storage.Store
	evm   *ecdsa.PrivateKey
	sol   ed25519.PrivateKey
}

func newLifecycle(t *testing.T) *lifecycle {
	t.Helper()
	l := &lifecycle{store: memory.New()}
	l.cfg = ownership.Config{Store: l.store, Payouts: testPolicy, Service: "payments.example.com", Liveness: &liveness{}}
	var err error
	l.svc, err = ownership.New(l.cfg)
	if err != nil {
		t.Fatal(err)
	}
	l.evm, _ = crypto.HexToECDSA("4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318")
	l.sol = ed25519.NewKeyFromSeed(make([]byte, 32))
	return l
}

// account stores an external account and returns its id.
func (l *lifecycle) account(t *testing.T, mod func(*storage.ExternalAccount)) string {
	ctx := t.Context()
	t.Helper()
	id, _ := storage.NewID(nil, "ExternalAccount")
	a := storage.ExternalAccount{ID: id, CustomerID: "Customer:1", Status: storage.StatusPendingOwnershipVerification,
		OwnershipType: "FIRST_PARTY", Currency: "USDC", AccountType: ownership.AccountEthereum,
		Address:   crypto.PubkeyToAddress(l.evm.PublicKey).Hex(),
		Info:      json.RawMessage(`{"accountType":"ETHEREUM_WALLET","address":"` + crypto.PubkeyToAddress(l.evm.PublicKey).Hex() + `"}`),
		CreatedAt: time.Now(), UpdatedAt: time.Now()}
	if mod != nil {
		mod(&a)
	}
	if err := l.store.Atomic(ctx, func(tx storage.Tx) error { return tx.ExternalAccounts().Create(ctx, &a) }); err != nil {
		t.Fatal(err)
	}
	return a.ID
}

func (l *lifecycle) signEVM(t *testing.T, msg string) string {
	t.Helper()
	sig, err := crypto.Sign(accounts.TextHash([]byte(msg)), l.evm)
	if err != nil {
		t.Fatal(err)
	}
	sig[64] += 27
	return "0x" + hex.EncodeToString(sig)
}

func (l *lifecycle) status(t *testing.T, id string) storage.AccountStatus {
	ctx := t.Context()
	t.Helper()
	var a storage.ExternalAccount
	_ = l.store.Atomic(ctx, func(tx storage.Tx) error {
		var err error
		a, err = tx.ExternalAccounts().Get(ctx, id)
		return err
	})
	return a.Status
}

func (l *lifecycle) events(t *testing.T, id string) []string {
	t.Helper()
	var out []string
	for _, e := range storagetest.Events(t, l.store, id) {
		var body struct {
			ID, Type, Timestamp string
			Data                struct{ ID, Status string }
		}
		if err := json.Unmarshal(e.Payload, &body); err != nil || body.ID != e.ID || body.Type != ownership.EventStatusUpdated ||
			body.Data.ID != id || body.Timestamp == "" {
			t.Fatalf("event payload %s", e.Payload)
		}
		out = append(out, body.Data.Status)
	}
	return out
}

func TestChallengeMessage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The message names its instants: the bubble's clock is set to them.
		time.Sleep(time.Until(time.Date(2026, 7, 1, 10, 0, 0, 0, time.UTC)))
		ctx := t.Context()
		l := newLifecycle(t)
		id := l.account(t, nil)
		c, err := l.svc.StartChallenge(ctx, id, ownership.MethodWalletSignature, ownership.CustomerTree)
		if err != nil {
			t.Fatal(err)
		}
		addr := crypto.PubkeyToAddress(l.evm.PublicKey).Hex()
		lines := strings.Split(c.MessageToSign, "\n")
		want := []string{
			"payments.example.com asks you to prove that you control this wallet.",
			"Signing this message is free and authorizes nothing.",
			"",
			"Service: payments.example.com",
			"Address: " + addr,
			"Network: Ethereum mainnet",
			"Account: " + id,
		}
		for i, w := range want {
			if lines[i] != w {
				t.Fatalf("line %d = %q, want %q\n%s", i, lines[i], w, c.MessageToSign)
			}
		}
		if !strings.HasPrefix(lines[7], "Nonce: ") || len(lines[7]) != len("Nonce: ")+26 ||
			lines[8] != "Issued At: 2026-07-01T10:00:00Z" || lines[9] != "Expiration Time: 2026-07-01T10:30:00Z" || len(lines) != 10 {
			t.Fatalf("message tail %q", lines[7:])
		}
		for _, r := range c.MessageToSign {
			if r > 0x7e || r < 0x20 && r != '\n' {
				t.Fatalf("non-ASCII or control character %q", r)
			}
		}
		if _, err := hex.DecodeString(strings.TrimPrefix(c.MessageToSign, "0x")); err == nil {
			t.Fatal("message reads as hex")
		}
		if c.Method != "WALLET_SIGNATURE" || !c.ExpiresAt.Equal(time.Now().Add(ownership.DefaultChallengeTTL)) || c.VerificationLink != "" {
			t.Fatalf("challenge %+v", c)
		}
		// A fresh nonce per challenge.
		c2, _ := l.svc.StartChallenge(ctx, id, ownership.MethodWalletSignature, ownership.CustomerTree)
		if c2.MessageToSign == c.MessageToSign {
			t.Fatal("two challenges share a message")
		}
	})
}

func TestChallengeEligibility(t *testing.T) {
	ctx := t.Context()
	l := newLifecycle(t)
	tests := []struct {
		name   string
		mod    func(*storage.ExternalAccount)
		method string
		tree   ownership.Tree
		code   apierror.Code
	}{
		{"active", func(a *storage.ExternalAccount) { a.Status = storage.StatusActive }, "WALLET_SIGNATURE", ownership.CustomerTree, apierror.Conflict},
		{"pending", func(a *storage.ExternalAccount) { a.Status = storage.StatusPending }, "WALLET_SIGNATURE", ownership.CustomerTree, apierror.Conflict},
		{"third party", func(a *storage.ExternalAccount) { a.OwnershipType = "THIRD_PARTY" }, "WALLET_SIGNATURE", ownership.CustomerTree, apierror.Conflict},
		{"no ownership type", func(a *storage.ExternalAccount) { a.OwnershipType = "" }, "WALLET_SIGNATURE", ownership.CustomerTree, apierror.Conflict},
		{"custodial", func(a *storage.ExternalAccount) { a.VaspName = "Coinbase" }, "WALLET_SIGNATURE", ownership.CustomerTree, apierror.Conflict},
		{"fiat", func(a *storage.ExternalAccount) { a.AccountType = "USD_ACCOUNT" }, "WALLET_SIGNATURE", ownership.CustomerTree, apierror.Conflict},
		{"lightning", func(a *storage.ExternalAccount) { a.AccountType = "LIGHTNING" }, "WALLET_SIGNATURE", ownership.CustomerTree, apierror.Conflict},
		{"lightning alias liveness", func(a *storage.ExternalAccount) { a.AccountType = "LIGHTNING_ACCOUNT" }, "LIVENESS", ownership.CustomerTree, apierror.Conflict},
		{"platform tree for a customer account", nil, "WALLET_SIGNATURE", ownership.PlatformTree, apierror.ReferenceNotFound},
		{"customer tree for a platform account", func(a *storage.ExternalAccount) { a.CustomerID = "" }, "WALLET_SIGNATURE", ownership.CustomerTree, apierror.ReferenceNotFound},
		{"unknown method", nil, "SELFIE", ownership.CustomerTree, apierror.InvalidInput},
		{"empty method", nil, "", ownership.CustomerTree, apierror.InvalidInput},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := l.account(t, tt.mod)
			_, err := l.svc.StartChallenge(ctx, id, tt.method, tt.tree)
			apierrortest.Want(t, err, tt.code, "")
		})
	}
	_, err := l.svc.StartChallenge(ctx, "ExternalAccount:nope", "WALLET_SIGNATURE", ownership.CustomerTree)
	apierrortest.Want(t, err, apierror.ReferenceNotFound, "")
	noLiveness, _ := ownership.New(ownership.Config{Store: l.store, Payouts: testPolicy})
	_, err = noLiveness.StartChallenge(ctx, l.account(t, nil), "LIVENESS", ownership.AnyTree)
	apierrortest.Want(t, err, apierror.InvalidInput, "")
	platform := l.account(t, func(a *storage.ExternalAccount) { a.CustomerID = "" })
	if _, err := l.svc.StartChallenge(ctx, platform, "WALLET_SIGNATURE", ownership.PlatformTree); err != nil {
		t.Fatalf("platform account through the platform tree: %v", err)
	}
}

func TestVerifyLifecycle(t *testing.T) {
	ctx := t.Context()
	t.Run("valid", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx := t.Context()
			l := newLifecycle(t)
			id := l.account(t, nil)
			c, _ := l.svc.StartChallenge(ctx, id, "WALLET_SIGNATURE", ownership.CustomerTree)
			time.Sleep(ownership.DefaultChallengeTTL - time.Second)
			got, err := l.svc.Verify(ctx, id, ownership.VerifyRequest{Signature: l.signEVM(t, c.MessageToSign)}, ownership.CustomerTree)
			if err != nil {
				t.Fatal(err)
			}
			if a := ownership.AccountJSON(*got); a.Status != "ACTIVE" || a.ID != id || string(a.AccountInfo) == "" {
				t.Fatalf("account %+v", a)
			}
			if l.status(t, id) != storage.StatusActive || strings.Join(l.events(t, id), ",") != "ACTIVE" {
				t.Fatalf("status %s events %v", l.status(t, id), l.events(t, id))
			}
			_, err = l.svc.Verify(ctx, id, ownership.VerifyRequest{Signature: l.signEVM(t, c.MessageToSign)}, ownership.CustomerTree)
			apierrortest.Want(t, err, apierror.Conflict, "")
			_, err = l.svc.StartChallenge(ctx, id, "WALLET_SIGNATURE", ownership.CustomerTree)
			apierrortest.Want(t, err, apierror.Conflict, "the account is already verified")
		})
	})
	t.Run("invalid, then a new challenge", func(t *testing.T) {
		l := newLifecycle(t)
		id := l.account(t, nil)
		c, _ := l.svc.StartChallenge(ctx, id, "WALLET_SIGNATURE", ownership.CustomerTree)
		_, err := l.svc.Verify(ctx, id, ownership.VerifyRequest{Signature: l.signEVM(t, c.MessageToSign+" ")}, ownership.CustomerTree)
		apierrortest.Want(t, err, apierror.InvalidInput, "")
		if l.status(t, id) != storage.StatusUnverified {
			t.Fatalf("status %s after a bad signature", l.status(t, id))
		}
		_, err = l.svc.Verify(ctx, id, ownership.VerifyRequest{Signature: l.signEVM(t, c.MessageToSign)}, ownership.CustomerTree)
		apierrortest.Want(t, err, apierror.Conflict, "")
		c2, err := l.svc.StartChallenge(ctx, id, "WALLET_SIGNATURE", ownership.CustomerTree)
		if err != nil || l.status(t, id) != storage.StatusPendingOwnershipVerification {
			t.Fatalf("new challenge: %v, status %s", err, l.status(t, id))
		}
		if _, err := l.svc.Verify(ctx, id, ownership.VerifyRequest{Signature: l.signEVM(t, c2.MessageToSign)}, ownership.CustomerTree); err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(l.events(t, id), ","); got != "UNVERIFIED,PENDING_OWNERSHIP_VERIFICATION,ACTIVE" {
			t.Fatalf("events %s", got)
		}
	})
	t.Run("expired at expiresAt", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx := t.Context()
			l := newLifecycle(t)
			id := l.account(t, nil)
			c, _ := l.svc.StartChallenge(ctx, id, "WALLET_SIGNATURE", ownership.CustomerTree)
			time.Sleep(ownership.DefaultChallengeTTL)
			_, err := l.svc.Verify(ctx, id, ownership.VerifyRequest{Signature: l.signEVM(t, c.MessageToSign)}, ownership.CustomerTree)
			apierrortest.Want(t, err, apierror.InvalidInput, "challenge expired")
			if l.status(t, id) != storage.StatusUnverified {
				t.Fatal("an expired signature did not make the account UNVERIFIED")
			}
		})
	})
	t.Run("superseded challenge", func(t *testing.T) {
		l := newLifecycle(t)
		id := l.account(t, nil)
		old, _ := l.svc.StartChallenge(ctx, id, "WALLET_SIGNATURE", ownership.CustomerTree)
		if _, err := l.svc.StartChallenge(ctx, id, "WALLET_SIGNATURE", ownership.CustomerTree); err != nil {
			t.Fatal(err)
		}
		_, err := l.svc.Verify(ctx, id, ownership.VerifyRequest{Signature: l.signEVM(t, old.MessageToSign)}, ownership.CustomerTree)
		apierrortest.Want(t, err, apierror.InvalidInput, "")
	})
	t.Run("no challenge, liveness outstanding, bad requests", func(t *testing.T) {
		l := newLifecycle(t)
		id := l.account(t, nil)
		_, err := l.svc.Verify(ctx, id, ownership.VerifyRequest{Signature: "0x00"}, ownership.CustomerTree)
		apierrortest.Want(t, err, apierror.Conflict, "")
		if _, err := l.svc.StartChallenge(ctx, id, "LIVENESS", ownership.CustomerTree); err != nil {
			t.Fatal(err)
		}
		_, err = l.svc.Verify(ctx, id, ownership.VerifyRequest{Signature: "0x00"}, ownership.CustomerTree)
		apierrortest.Want(t, err, apierror.Conflict, "")
		_, err = l.svc.Verify(ctx, id, ownership.VerifyRequest{}, ownership.CustomerTree)
		apierrortest.Want(t, err, apierror.InvalidInput, "")
		_, err = l.svc.Verify(ctx, "ExternalAccount:nope", ownership.VerifyRequest{Signature: "x"}, ownership.CustomerTree)
		apierrortest.Want(t, err, apierror.ReferenceNotFound, "")
		if l.status(t, id) != storage.StatusPendingOwnershipVerification {
			t.Fatal("a 409 changed the status")
		}
	})
	t.Run("solana", func(t *testing.T) {
		l := newLifecycle(t)
		pub := l.sol.Public().(ed25519.PublicKey)
		id := l.account(t, func(a *storage.ExternalAccount) {
			a.AccountType, a.Address, a.Info = ownership.AccountSolana, base58.Encode(pub), nil
		})
		c, _ := l.svc.StartChallenge(ctx, id, "WALLET_SIGNATURE", ownership.CustomerTree)
		if !strings.Contains(c.MessageToSign, "Network: Solana mainnet") {
			t.Fatalf("message %q", c.MessageToSign)
		}
		sig := base58.Encode(ed25519.Sign(l.sol, []byte(c.MessageToSign)))
		if _, err := l.svc.Verify(ctx, id, ownership.VerifyRequest{Signature: sig}, ownership.CustomerTree); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("bitcoin scheme", func(t *testing.T) {
		l := newLifecycle(t)
		id := l.account(t, func(a *storage.ExternalAccount) {
			a.AccountType, a.Address = ownership.AccountBitcoin, "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4"
		})
		if _, err := l.svc.StartChallenge(ctx, id, "WALLET_SIGNATURE", ownership.CustomerTree); err != nil {
			t.Fatal(err)
		}
		_, err := l.svc.Verify(ctx, id, ownership.VerifyRequest{Signature: "AAAA", SignatureScheme: "trezor"}, ownership.CustomerTree)
		apierrortest.Want(t, err, apierror.InvalidInput, "")
		if l.status(t, id) != storage.StatusPendingOwnershipVerification {
			t.Fatal("an unknown scheme changed the status")
		}
	})
}

func TestConcurrentVerify(t *testing.T) {
	ctx := t.Context()
	l := newLifecycle(t)
	id := l.account(t, nil)
	c, _ := l.svc.StartChallenge(ctx, id, "WALLET_SIGNATURE", ownership.CustomerTree)
	sig := l.signEVM(t, c.MessageToSign)
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok, conflicts := 0, 0
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := l.svc.Verify(ctx, id, ownership.VerifyRequest{Signature: sig}, ownership.CustomerTree)
			mu.Lock()
			defer mu.Unlock()
			switch apierror.CodeOf(err) {
			case apierror.Code{}:
				ok++
			case apierror.Conflict:
				conflicts++
			default:
				t.Errorf("unexpected %v", err)
			}
		}()
	}
	wg.Wait()
	if ok != 1 || conflicts != 15 {
		t.Fatalf("%d successes and %d conflicts, want 1 and 15", ok, conflicts)
	}
	if got := l.events(t, id); len(got) != 1 {
		t.Fatalf("events %v", got)
	}
}

func TestLiveness(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		l := newLifecycle(t)
		passed, failed, late := l.account(t, nil), l.account(t, nil), l.account(t, nil)
		for _, id := range []string{passed, failed, late} {
			c, err := l.svc.StartChallenge(ctx, id, "LIVENESS", ownership.CustomerTree)
			if err != nil || c.VerificationLink == "" || c.Token != livenessToken || c.MessageToSign != "" {
				t.Fatalf("liveness challenge %+v %v", c, err)
			}
		}
		if _, err := l.svc.CompleteLiveness(ctx, passed, true); err != nil || l.status(t, passed) != storage.StatusActive {
			t.Fatalf("passed: %v %s", err, l.status(t, passed))
		}
		if _, err := l.svc.CompleteLiveness(ctx, failed, false); err != nil || l.status(t, failed) != storage.StatusUnverified {
			t.Fatalf("failed: %v %s", err, l.status(t, failed))
		}
		time.Sleep(ownership.DefaultChallengeTTL)
		if _, err := l.svc.CompleteLiveness(ctx, late, true); err != nil || l.status(t, late) != storage.StatusUnverified {
			t.Fatalf("late: %v %s", err, l.status(t, late))
		}
		_, err := l.svc.CompleteLiveness(ctx, passed, true)
		apierrortest.Want(t, err, apierror.Conflict, "")
		wsig := l.account(t, nil)
		_, _ = l.svc.StartChallenge(ctx, wsig, "WALLET_SIGNATURE", ownership.CustomerTree)
		_, err = l.svc.CompleteLiveness(ctx, wsig, true)
		apierrortest.Want(t, err, apierror.Conflict, "")
	})
}

// TestStatusEventsCarryNoSecrets: the STATUS_UPDATED events of both methods
// carry none of the proof material: no message to sign, signature,
// liveness token or verification link.
func TestStatusEventsCarryNoSecrets(t *testing.T) {
	ctx := t.Context()
	l := newLifecycle(t)
	signed, live := l.account(t, nil), l.account(t, nil)
	c, _ := l.svc.StartChallenge(ctx, signed, "WALLET_SIGNATURE", ownership.CustomerTree)
	sig := l.signEVM(t, c.MessageToSign)
	if _, err := l.svc.Verify(ctx, signed, ownership.VerifyRequest{Signature: sig}, ownership.CustomerTree); err != nil {
		t.Fatal(err)
	}
	lc, _ := l.svc.StartChallenge(ctx, live, "LIVENESS", ownership.CustomerTree)
	if _, err := l.svc.CompleteLiveness(ctx, live, true); err != nil {
		t.Fatal(err)
	}
	secrets := []string{c.MessageToSign, sig, strings.TrimPrefix(sig, "0x"), lc.Token, lc.VerificationLink,
		`"messageToSign"`, `"signature"`, `"token"`, `"verificationLink"`}
	for _, id := range []string{signed, live} {
		evs := storagetest.Events(t, l.store, id)
		if len(evs) == 0 {
			t.Fatalf("no event for %s", id)
		}
		for _, e := range evs {
			for _, s := range secrets {
				if strings.Contains(string(e.Payload), s) {
					t.Fatalf("event %s carries %q: %s", e.Type, s, e.Payload)
				}
			}
		}
	}
}

type publisher struct {
	got  []string
	fail map[string]bool
}

func (p *publisher) Publish(_ context.Context, e storage.Event) error {
	if p.fail[e.ID] {
		return errors.New("receiver down")
	}
	p.got = append(p.got, e.ID)
	return nil
}

// TestRelayDeliversEvents: the status events reach a publisher through
// storage/relay; a failed one is tried again after its backoff.
func TestRelayDeliversEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		l := newLifecycle(t)
		var ids []string
		for range 3 {
			id := l.account(t, nil)
			c, _ := l.svc.StartChallenge(ctx, id, "WALLET_SIGNATURE", ownership.CustomerTree)
			_, _ = l.svc.Verify(ctx, id, ownership.VerifyRequest{Signature: l.signEVM(t, c.MessageToSign)}, ownership.CustomerTree)
			ids = append(ids, id)
		}
		var evs []storage.Event
		for _, id := range ids {
			evs = append(evs, storagetest.Events(t, l.store, id)...)
		}
		if len(evs) != 3 {
			t.Fatalf("%d events, want 3", len(evs))
		}
		p := &publisher{fail: map[string]bool{evs[1].ID: true}}
		r, err := relay.New(relay.Config{Store: l.store, Publisher: p, Workers: 1})
		if err != nil {
			t.Fatal(err)
		}
		res, err := r.RunOnce(ctx)
		if err != nil || res != (relay.Result{Delivered: 2, Retried: 1}) {
			t.Fatalf("first pass %+v, %v", res, err)
		}
		p.fail = nil
		if res, _ = r.RunOnce(ctx); res != (relay.Result{}) {
			t.Fatalf("before the backoff %+v", res)
		}
		time.Sleep(relay.DefaultMinBackoff)
		if res, _ = r.RunOnce(ctx); res != (relay.Result{Delivered: 1}) || len(p.got) != 3 {
			t.Fatalf("after the backoff %+v; delivered %v", res, p.got)
		}
		if res, _ := r.RunOnce(ctx); res != (relay.Result{}) {
			t.Fatalf("delivered again: %+v", res)
		}
	})
}

func TestHTTP(t *testing.T) {
	l := newLifecycle(t)
	srv := httptest.NewServer(handler(t, l.with(t, admitAll)))
	defer srv.Close()
	id := l.account(t, nil)
	platform := l.account(t, func(a *storage.ExternalAccount) { a.CustomerID = "" })
	post := func(path, body string) (int, map[string]any) {
		resp, err := srv.Client().Post(srv.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	code, c := post("/customers/external-accounts/"+id+"/challenge", `{"method":"WALLET_SIGNATURE"}`)
	if code != http.StatusCreated || c["messageToSign"] == nil {
		t.Fatalf("challenge: %d %v", code, c)
	}
	sig := l.signEVM(t, c["messageToSign"].(string))
	code, a := post("/customers/external-accounts/"+id+"/verify", `{"signature":"`+sig+`"}`)
	if code != http.StatusOK || a["status"] != "ACTIVE" {
		t.Fatalf("verify: %d %v", code, a)
	}
	for _, tt := range []struct {
		path, body string
		status     int
		code       string
	}{
		{"/customers/external-accounts/" + id + "/verify", `{"signature":"` + sig + `"}`, 409, "CONFLICT"},
		{"/customers/external-accounts/" + id + "/challenge", `{"method":"WALLET_SIGNATURE"}`, 409, "CONFLICT"},
		{"/customers/external-accounts/" + platform + "/challenge", `{"method":"WALLET_SIGNATURE"}`, 404, "REFERENCE_NOT_FOUND"},
		{"/platform/external-accounts/" + platform + "/challenge", `{"method":"NOPE"}`, 400, "INVALID_INPUT"},
		{"/platform/external-accounts/" + platform + "/verify", `{"signature":1}`, 400, "INVALID_INPUT"},
		{"/platform/external-accounts/" + platform + "/challenge", `{`, 400, "INVALID_INPUT"},
	} {
		code, body := post(tt.path, tt.body)
		if code != tt.status || body["code"] != tt.code || body["status"] != float64(tt.status) {
			t.Errorf("%s %s: %d %v, want %d %s", tt.path, tt.body, code, body, tt.status, tt.code)
		}
	}
	if code, _ := post("/platform/external-accounts/"+platform+"/challenge", `{"method":"WALLET_SIGNATURE"}`); code != 201 {
		t.Fatalf("platform challenge: %d", code)
	}
}

// TestStatusEventEnvelope: a status event is storage.NewEvent's envelope
// {"id","type","timestamp","data"} and nothing more. After a valid signature
// the ACTIVE event's data is the rendered account with one more member,
// "proof" last, byte for byte as encoding/json writes it.
func TestStatusEventEnvelope(t *testing.T) {
	ctx := t.Context()
	l := newLifecycle(t)
	id := l.account(t, nil)
	c, err := l.svc.StartChallenge(ctx, id, ownership.MethodWalletSignature, ownership.CustomerTree)
	if err != nil {
		t.Fatal(err)
	}
	a, err := l.svc.Verify(ctx, id, ownership.VerifyRequest{Signature: l.signEVM(t, c.MessageToSign)}, ownership.CustomerTree)
	if err != nil {
		t.Fatal(err)
	}
	evs := storagetest.Events(t, l.store, id)
	if len(evs) != 1 {
		t.Fatalf("events %v", evs)
	}
	e, got := evs[0], envelope(t, evs[0].Payload)
	account, _ := json.Marshal(ownership.AccountJSON(*a))
	wantData := string(account[:len(account)-1]) + `,"proof":{"method":"WALLET_SIGNATURE","address":"` +
		crypto.PubkeyToAddress(l.evm.PublicKey).Hex() + `"}}`
	if got.ID != e.ID || got.Type != ownership.EventStatusUpdated || !got.Timestamp.Equal(e.CreatedAt) || string(got.Data) != wantData {
		t.Fatalf("payload\n%s\nwant data\n%s", e.Payload, wantData)
	}
}

// TestStatusEventUnverifiedHasNoProof: the UNVERIFIED event of a failed
// signature check names no proof, neither in data nor beside it: nothing
// was proved.
func TestStatusEventUnverifiedHasNoProof(t *testing.T) {
	ctx := t.Context()
	l := newLifecycle(t)
	id := l.account(t, nil)
	c, err := l.svc.StartChallenge(ctx, id, ownership.MethodWalletSignature, ownership.CustomerTree)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := crypto.HexToECDSA(strings.Repeat("1", 64))
	sig, err := crypto.Sign(accounts.TextHash([]byte(c.MessageToSign)), other)
	if err != nil {
		t.Fatal(err)
	}
	sig[64] += 27
	_, err = l.svc.Verify(ctx, id, ownership.VerifyRequest{Signature: "0x" + hex.EncodeToString(sig)}, ownership.CustomerTree)
	apierrortest.Want(t, err, apierror.InvalidInput, "")
	evs := storagetest.Events(t, l.store, id)
	if len(evs) != 1 {
		t.Fatalf("events %v", evs)
	}
	got := envelope(t, evs[0].Payload)
	var data map[string]json.RawMessage
	if err := json.Unmarshal(got.Data, &data); err != nil {
		t.Fatal(err)
	}
	if _, ok := data["proof"]; ok || string(data["status"]) != `"UNVERIFIED"` {
		t.Fatalf("UNVERIFIED event %s", evs[0].Payload)
	}
}

// statusEvent is the envelope of a status event.
type statusEvent struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	Timestamp time.Time       `json:"timestamp"`
	Data      json.RawMessage `json:"data"`
}

// envelope decodes payload and fails t unless it is exactly the envelope
// {"id","type","timestamp","data"} as encoding/json writes it: no member
// before, between or after.
func envelope(t *testing.T, payload []byte) statusEvent {
	t.Helper()
	var got statusEvent
	if err := json.Unmarshal(payload, &got); err != nil {
		t.Fatal(err)
	}
	if want, _ := json.Marshal(got); string(payload) != string(want) {
		t.Fatalf("payload\n%s\nis not the envelope\n%s", payload, want)
	}
	return got
}

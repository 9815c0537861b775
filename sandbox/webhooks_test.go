package sandbox_test

import (
	"encoding/hex"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/accounts"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/webhooksig"
	"github.com/walletgate/walletgate/ownership"
	"github.com/walletgate/walletgate/sandbox"
)

// hookReceiver verifies each delivery with the simulator's public key and
// answers with status.
type hookReceiver struct {
	mu     sync.Mutex
	got    []webhooksig.Delivery
	status int
	srv    *httptest.Server
}

func (h *hookReceiver) deliveries() []webhooksig.Delivery {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]webhooksig.Delivery(nil), h.got...)
}

// newWebhookEnv starts a receiver and a simulator that delivers to it.
func newWebhookEnv(t *testing.T) (*env, *hookReceiver) {
	t.Helper()
	h := &hookReceiver{status: http.StatusOK}
	var v *webhooksig.Verifier
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d, err := v.Verify(r)
		if err != nil {
			t.Errorf("delivery refused: %v", err)
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		h.mu.Lock()
		h.got = append(h.got, d)
		status := h.status
		h.mu.Unlock()
		w.WriteHeader(status)
		_, _ = w.Write([]byte("thanks"))
	}))
	t.Cleanup(h.srv.Close)
	sim, err := sandbox.New(sandbox.Config{WebhookURL: h.srv.URL + "/hooks"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Close)
	if v, err = webhooksig.NewVerifierPEM(sim.WebhookPublicKeyPEM(), webhooksig.VerifierConfig{}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	return &env{t: t, sim: sim, srv: srv, base: sandbox.DefaultBasePath,
		user: sandbox.DefaultClientID, pass: sandbox.DefaultClientSecret}, h
}

// TestWebhookLivenessOutcome: the LIVENESS outcome reaches the platform's
// receiver as a signed EXTERNAL_ACCOUNT.STATUS_UPDATED webhook.
func TestWebhookLivenessOutcome(t *testing.T) {
	e, h := newWebhookEnv(t)
	cust, _ := e.customer("Grace Hopper")
	a := e.external(cust.ID, evmWallet("1234"))
	e.do("POST", "/customers/external-accounts/"+a.ID+"/challenge", map[string]string{"method": "LIVENESS"}).ok(t, 201, nil)
	e.do("POST", "/sandbox/external-accounts/"+a.ID+"/liveness", map[string]any{"passed": true}).ok(t, 200, nil)

	deadline := time.Now().Add(10 * time.Second)
	for {
		for _, d := range h.deliveries() {
			var acct struct {
				ID     string `json:"id"`
				Status string `json:"status"`
			}
			if d.Type == "EXTERNAL_ACCOUNT.STATUS_UPDATED" && json.Unmarshal(d.Data, &acct) == nil &&
				acct.ID == a.ID && acct.Status == "ACTIVE" {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no ACTIVE status webhook within 10 s; got %d deliveries", len(h.deliveries()))
		}
		time.Sleep(sandbox.WebhookPoll)
	}
}

// TestWebhookSignatureProof: the signed STATUS_UPDATED webhooks of a
// signature check, as a receiver verifying with webhooksig gets them (it
// refuses an envelope with any member besides id, type, timestamp and
// data): the UNVERIFIED of a wrong signature names no proof; the ACTIVE of
// a valid one has data.proof, the method and the address proved.
func TestWebhookSignatureProof(t *testing.T) {
	e, h := newWebhookEnv(t)
	cust, _ := e.customer("Proof Webhook")
	key, _ := crypto.HexToECDSA("4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318")
	addr := crypto.PubkeyToAddress(key.PublicKey).Hex()
	a := e.external(cust.ID, map[string]any{"currency": "USDC", "ownershipType": "FIRST_PARTY",
		"accountInfo": map[string]any{"accountType": "ETHEREUM_WALLET", "address": addr}})
	path := "/customers/external-accounts/" + a.ID
	sign := func(msg string) string {
		sig, _ := crypto.Sign(accounts.TextHash([]byte(msg)), key)
		sig[64] += 27
		return "0x" + hex.EncodeToString(sig)
	}
	var c ownership.Challenge
	e.do("POST", path+"/challenge", map[string]string{"method": "WALLET_SIGNATURE"}).ok(t, 201, &c)
	e.do("POST", path+"/verify", map[string]string{"signature": sign("something else")}).fails(t, 400, apierror.InvalidInput)
	e.do("POST", path+"/challenge", map[string]string{"method": "WALLET_SIGNATURE"}).ok(t, 201, &c)
	e.do("POST", path+"/verify", map[string]string{"signature": sign(c.MessageToSign)}).ok(t, 200, nil)

	type data struct {
		ID     string                            `json:"id"`
		Status string                            `json:"status"`
		Proof  *struct{ Method, Address string } `json:"proof"`
	}
	byStatus := map[string]data{}
	deadline := time.Now().Add(10 * time.Second)
	for byStatus["ACTIVE"].ID == "" || byStatus["UNVERIFIED"].ID == "" {
		if time.Now().After(deadline) {
			t.Fatalf("no UNVERIFIED and ACTIVE status webhooks within 10 s; got %d deliveries", len(h.deliveries()))
		}
		time.Sleep(sandbox.WebhookPoll)
		for _, d := range h.deliveries() {
			var got data
			if d.Type == "EXTERNAL_ACCOUNT.STATUS_UPDATED" && json.Unmarshal(d.Data, &got) == nil && got.ID == a.ID {
				byStatus[got.Status] = got
			}
		}
	}
	if p := byStatus["UNVERIFIED"].Proof; p != nil {
		t.Fatalf("the UNVERIFIED webhook of a wrong signature names a proof: %+v", *p)
	}
	if p := byStatus["ACTIVE"].Proof; p == nil || p.Method != ownership.MethodWalletSignature || p.Address != addr {
		t.Fatalf("the ACTIVE webhook's data.proof is %+v, want %s %s", p, ownership.MethodWalletSignature, addr)
	}
}

// TestWebhookTestRoute: POST /sandbox/webhooks/test sends a signed TEST
// event and reports the receiver's answer, whatever it is.
func TestWebhookTestRoute(t *testing.T) {
	e, h := newWebhookEnv(t)
	var res sandbox.WebhookTestResult
	e.do("POST", "/sandbox/webhooks/test", nil).ok(t, 200, &res)
	if res.ResponseStatus != 200 || res.ResponseBody != "thanks" || res.URL != h.srv.URL+"/hooks" {
		t.Fatalf("result %+v", res)
	}
	got := h.deliveries()
	if len(got) != 1 || got[0].Type != sandbox.EventTest || string(got[0].Data) != "{}" {
		t.Fatalf("deliveries %+v", got)
	}
	h.mu.Lock()
	h.status = http.StatusInternalServerError
	h.mu.Unlock()
	e.do("POST", "/sandbox/webhooks/test", nil).ok(t, 200, &res)
	if res.ResponseStatus != 500 || res.ResponseBody != "thanks" {
		t.Fatalf("result %+v", res)
	}
}

func TestWebhookTestRouteErrors(t *testing.T) {
	e := newEnv(t) // no webhook URL
	e.do("POST", "/sandbox/webhooks/test", nil).fails(t, 400, apierror.WebhookEndpointNotSet)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String()
	ln.Close()
	sim, err := sandbox.New(sandbox.Config{WebhookURL: down})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Close)
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	e = &env{t: t, sim: sim, srv: srv, base: sandbox.DefaultBasePath, user: sandbox.DefaultClientID, pass: sandbox.DefaultClientSecret}
	e.do("POST", "/sandbox/webhooks/test", nil).fails(t, 400, apierror.WebhookDeliveryError)

	if _, err := sandbox.New(sandbox.Config{WebhookURL: "ftp://example.com"}); err == nil {
		t.Fatal("New accepted an ftp webhook URL")
	}
}

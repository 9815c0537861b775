package walletauth_test

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/apierror/operation/telemetrytest"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/walletauth"
)

// TestTelemetryCarriesNoSecrets runs the flows of every event type (OTP
// start, verify and login, wrong codes, a lockout, signed retries well and
// badly signed, passkey registration and login, OIDC, session refresh and
// revokes, email changes), an export, and calls over the HTTP handler (a
// wrong code, a 5xx), with a span recorder, a manual metric reader and a
// capturing log handler in the Config; then scans every span (name,
// attributes, events, status), metric (name, attributes) and log record
// (message, attributes) for every secret the flows met: codes, MACs, sealed
// keys, bundles, private and session keys in every encoding, OIDC tokens,
// stamps, payloads to sign and request bodies.
func TestTelemetryCarriesNoSecrets(t *testing.T) {
	ctx := t.Context()
	tc := telemetrytest.New(t)
	sec := secrets{}
	e := runFlows(t, func(c *walletauth.Config) {
		c.Telemetry = tc.Telemetry()
		c.WalletSecrets = sec
	})

	// An export of a new wallet, logged in over EMAIL_OTP.
	wallet, cred, err := e.svc.CreateWallet(ctx, walletauth.NewWallet{CustomerID: "Customer:9", Email: "exporter@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	sec[wallet.ID] = testMnemonic
	e.addString("wallet secret", testMnemonic)
	_, key := e.otpLogin(t, cred.ID, storage.EmailOTP, e.challenge(t, cred.ID))
	client := e.newKey(t, "export client key")
	req := walletauth.ExportRequest{ClientPublicKey: client.PublicKeyHex()}
	c := e.call("POST", "/internal-accounts/"+wallet.ID+"/export", `{"clientPublicKey":"`+client.PublicKeyHex()+`"}`)
	_, ch, err := e.svc.ExportWallet(ctx, wallet.ID, req, c)
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := e.svc.ExportWallet(ctx, wallet.ID, req, e.sign(t, c, ch, key))
	if err != nil {
		t.Fatal(err)
	}
	e.addSealed("export bundle", out.EncryptedWalletCredentials)

	// Over HTTP: a wrong code (401, Warn) and an export of a wallet the
	// host holds no secret for (500, Error with its cause).
	h := handler(t, e.with(t, admitAll)) // a replica serving HTTP behind its tenant guard
	bundle := e.challenge(t, cred.ID)
	code := e.issued(t, cred.ID, bundle)
	wrong, _ := e.seal(t, bundle, otherEvCode(code))
	body := `{"type":"EMAIL_OTP","encryptedOtpBundle":` + quote(wrong) + `}`
	e.addString("request body", body)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequestWithContext(ctx, http.MethodPost, "/auth/credentials/"+cred.ID+"/verify", strings.NewReader(body)))
	if w.Code != http.StatusUnauthorized {
		t.Fatalf("wrong code over HTTP: %d %s", w.Code, w.Body)
	}
	delete(sec, wallet.ID)
	_, k2 := e.otpLogin(t, cred.ID, storage.EmailOTP, e.challenge(t, cred.ID))
	_, ch, err = e.svc.ExportWallet(ctx, wallet.ID, req, c)
	if err != nil {
		t.Fatal(err)
	}
	retry := e.sign(t, c, ch, k2)
	r := httptest.NewRequestWithContext(ctx, http.MethodPost, "/internal-accounts/"+wallet.ID+"/export", strings.NewReader(string(c.Body)))
	r.Header.Set("Service-Wallet-Signature", retry.Signature)
	r.Header.Set("Request-Id", retry.RequestID)
	w = httptest.NewRecorder()
	// The export route is the host's: mount it the way a host would.
	apierror.Observe(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _, err := e.svc.ExportWallet(r.Context(), wallet.ID, req, retry)
		apierrortest.Want(t, err, apierror.InternalError, "")
		apierror.Write(w, err)
	}), tc.Logger).ServeHTTP(w, r)
	if w.Code != http.StatusInternalServerError {
		t.Fatalf("export without a secret: %d %s", w.Code, w.Body)
	}

	for _, m := range e.outbox.sent {
		e.secrets[m.Code] = "OTP code"
	}
	if len(e.secrets) < 200 {
		t.Fatalf("only %d secrets collected", len(e.secrets))
	}
	records := tc.Records(t)

	// The records are there to scan.
	var joined strings.Builder
	for _, r := range records {
		joined.WriteString(r + "\n")
	}
	all := joined.String()
	for _, want := range []string{
		"span walletauth.otp.start", "span walletauth.otp.verify", "span walletauth.passkey.verify",
		"span walletauth.oidc.verify", "span walletauth.session.refresh", "span walletauth.wallet.export",
		"span signedretry.issue", "span signedretry.complete",
		"metric walletgate.walletauth.otp.outcomes", "metric walletgate.walletauth.outcomes",
		"metric walletgate.walletauth.operation.duration", "metric walletgate.signedretry.outcomes",
		"metric walletgate.signedretry.operation.duration",
		"walletgate.reason=invalid_code", "walletgate.reason=lockout", "walletgate.code=WALLET_SIGNATURE_INVALID",
		"log WARN refused operation=walletauth.otp.verify code=UNAUTHORIZED reason=lockout",
		"log WARN refused operation=signedretry.complete code=WALLET_SIGNATURE_INVALID",
		"log ERROR request failed request_id=",
		"log WARN refused operation=walletauth.passkey.verify code=UNAUTHORIZED reason=",
		"log DEBUG request refused request_id=",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("the telemetry lacks %q", want)
		}
	}
	if !slices.ContainsFunc(records, func(r string) bool {
		return strings.HasPrefix(r, "log ERROR") && strings.Contains(r, "code=INTERNAL_ERROR") && strings.Contains(r, "error=")
	}) {
		t.Error("the 5xx is not logged with its cause")
	}

	// The scanner finds what it looks for.
	for v := range e.secrets {
		if telemetrytest.Leaks([]string{"log INFO x k=" + v}, e.secrets) == nil {
			t.Fatalf("the scanner misses %q", v)
		}
		break
	}
	if l := telemetrytest.Leaks(records, e.secrets); len(l) != 0 {
		for _, x := range l {
			t.Error(x)
		}
	}
	if testing.Verbose() {
		for _, r := range records {
			t.Log(r)
		}
	}
	t.Logf("%d telemetry records scanned for %d secrets", len(records), len(e.secrets))
}

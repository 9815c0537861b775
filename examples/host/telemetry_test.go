package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/walletauth"
	"github.com/walletgate/walletgate/walletauth/authclient"
)

// TestMetricsAfterLogin: after a login over EMAIL_OTP, one wrong code and a
// call with a wrong API key, GET /metrics (the OpenTelemetry Prometheus
// exporter) shows the outcome counters and the duration histograms, the
// store's transactions included; the log is JSON, the refusals are WARN
// records with their code, and every answer carries an X-Request-Id.
func TestMetricsAfterLogin(t *testing.T) {
	e := newEnv(t, 4)
	c, _ := e.customer("otto@example.com")

	// A wrong code over walletauth's handler.
	ctx := e.ctx()
	m, err := e.svc.Auth.Challenge(ctx, c.CredentialID, walletauth.ChallengeRequest{})
	if err != nil {
		t.Fatal(err)
	}
	key, _ := authclient.NewClientKey()
	wrong := "000000"
	if e.codes.last[c.CredentialID] == wrong {
		wrong = "111111"
	}
	sealed, err := key.SealOTP(m.OTPEncryptionTargetBundle, e.svc.Auth.SigningPublicKey(), wrong, nil)
	if err != nil {
		t.Fatal(err)
	}
	w := e.call(http.MethodPost, "/auth/credentials/"+c.CredentialID+"/verify",
		walletauth.VerifyRequest{Type: storage.EmailOTP, EncryptedOTPBundle: sealed}, nil)
	wantAPIError(t, w, apierror.Unauthorized)
	if id := w.Header().Get(apierror.RequestIDHeader); id == "" {
		t.Fatal("no X-Request-Id on the answer")
	}

	// A wrong API key: refused by the host itself, logged as well.
	r := httptest.NewRequestWithContext(ctx, http.MethodPost, "/customers", strings.NewReader("{}"))
	r.Header.Set("Authorization", "Bearer not-a-key")
	r.Header.Set(apierror.RequestIDHeader, "req-42")
	w = httptest.NewRecorder()
	e.h.ServeHTTP(w, r)
	wantAPIError(t, w, apierror.Unauthorized)
	if got := w.Header().Get(apierror.RequestIDHeader); got != "req-42" {
		t.Fatalf("X-Request-Id %q, want the caller's req-42", got)
	}

	// Scrape.
	srv := httptest.NewServer(e.metrics)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", resp.StatusCode, body)
	}
	text := string(body)
	for _, want := range []string{
		`walletgate_walletauth_otp_outcomes_total{`,
		`walletgate_operation="walletauth.otp.verify"`,
		`walletgate_operation="walletauth.otp.start"`,
		`walletgate_reason="invalid_code"`,
		`walletgate_code="UNAUTHORIZED"`,
		`walletgate_signedretry_outcomes_total{`,
		`walletgate_operation="signedretry.complete"`,
		`walletgate_walletauth_operation_duration_seconds_bucket{`,
		`walletgate_signedretry_operation_duration_seconds_count{`,
		`walletgate_storage_transaction_duration_seconds_count{`,
		`db_system_name="postgresql"`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if !strings.Contains(text, `walletgate_outcome="ok"`) || !strings.Contains(text, `walletgate_outcome="refused"`) {
		t.Error("/metrics lacks the ok and refused outcomes")
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", text)
	}

	// Neither carries a secret of the flows, nor an address.
	for what, v := range map[string]string{"API key": apiKey, "sealed code": sealed, "target bundle": m.OTPEncryptionTargetBundle,
		"client key": key.PublicKeyHex(), "email": "otto@example.com", "customer id": c.ID, "credential id": c.CredentialID} {
		if strings.Contains(text, v) || strings.Contains(e.logs.String(), v) {
			t.Errorf("the %s is in the metrics or the log", what)
		}
	}

	// The log: JSON records, the refusals at WARN with their code.
	var warns []map[string]any
	sc := bufio.NewScanner(strings.NewReader(e.logs.String()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("log line %q is not JSON: %v", sc.Text(), err)
		}
		if rec["level"] == "WARN" {
			warns = append(warns, rec)
		}
	}
	found := map[string]bool{}
	for _, rec := range warns {
		if rec["code"] == "UNAUTHORIZED" && rec["operation"] == "walletauth.otp.verify" && rec["reason"] == "Invalid OTP code" {
			found["otp"] = true
		}
		if rec["code"] == "UNAUTHORIZED" && rec["request_id"] == "req-42" {
			found["apikey"] = true
		}
	}
	if !found["otp"] || !found["apikey"] {
		t.Fatalf("WARN records %v lack the wrong code or the wrong API key", warns)
	}
}

package walletauth_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/signedretry/stamper"
	"github.com/walletgate/walletgate/walletauth"
)

type httpClient struct {
	t   *testing.T
	srv *httptest.Server
}

// do sends a request and decodes the JSON answer into out (when not nil).
func (c httpClient) do(method, path, body string, headers map[string]string, out any) (int, map[string]any) {
	c.t.Helper()
	var r io.Reader
	if body != "" {
		r = bytes.NewBufferString(body)
	}
	req, _ := http.NewRequest(method, c.srv.URL+path, r)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := c.srv.Client().Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var generic map[string]any
	_ = json.Unmarshal(raw, &generic)
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			c.t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, raw)
		}
	}
	if resp.StatusCode >= 400 && generic["status"] != float64(resp.StatusCode) {
		c.t.Fatalf("error body status %v differs from %d", generic["status"], resp.StatusCode)
	}
	return resp.StatusCode, generic
}

func TestHTTPLogin(t *testing.T) {
	e := newEnv(t, nil)
	srv := httptest.NewServer(handler(t, e.with(t, admitAll)))
	defer srv.Close()
	c := httpClient{t, srv}

	var m walletauth.AuthMethod
	if code, _ := c.do("POST", "/auth/credentials/"+e.email.ID+"/challenge", "", nil, &m); code != 200 || m.OTPEncryptionTargetBundle == "" {
		t.Fatalf("challenge: %d %+v", code, m)
	}
	key := newKey(t)
	bundle, _ := key.SealOTP(m.OTPEncryptionTargetBundle, e.svc.SigningPublicKey(), e.outbox.last(t).Code, nil)
	body, _ := json.Marshal(map[string]string{"type": "EMAIL_OTP", "encryptedOtpBundle": bundle})
	verify := "/auth/credentials/" + e.email.ID + "/verify"
	var ch signedretry.Challenge
	if code, _ := c.do("POST", verify, string(body), nil, &ch); code != 202 || ch.RequestID == "" {
		t.Fatalf("leg 1: %d %+v", code, ch)
	}
	sig, _ := key.Stamp(ch.PayloadToSign)
	headers := map[string]string{stamper.HeaderSignature: sig, stamper.HeaderRequestID: ch.RequestID}
	// The retry may reformat the body.
	var pretty bytes.Buffer
	_ = json.Indent(&pretty, body, "", "  ")
	var sess walletauth.AuthSession
	if code, _ := c.do("POST", verify, pretty.String(), headers, &sess); code != 200 || sess.ID == "" {
		t.Fatalf("leg 2: %d %+v", code, sess)
	}
	if code, got := c.do("POST", verify, string(body), headers, nil); code != 401 || got["code"] != "UNAUTHORIZED" {
		t.Fatalf("replayed leg 2: %d %v", code, got)
	}

	var sessions struct{ Data []walletauth.AuthSession }
	if code, _ := c.do("GET", "/auth/sessions?accountId="+e.wallet.ID, "", nil, &sessions); code != 200 || len(sessions.Data) != 1 {
		t.Fatalf("list sessions: %d %+v", code, sessions)
	}
	var creds struct{ Data []walletauth.AuthMethod }
	if code, _ := c.do("GET", "/auth/credentials?accountId="+e.wallet.ID, "", nil, &creds); code != 200 || len(creds.Data) != 1 {
		t.Fatalf("list credentials: %d %+v", code, creds)
	}
	// The guard needs the wallet: an unknown one is 404, not an empty list.
	if code, got := c.do("GET", "/auth/sessions?accountId=InternalAccount:00000000-0000-4000-8000-000000000000", "", nil, nil); code != 404 || got["code"] != "REFERENCE_NOT_FOUND" {
		t.Fatalf("unknown account: %d %v", code, got)
	}

	// Add SMS_OTP: 202 then 201.
	add := `{"type":"SMS_OTP","accountId":"` + e.wallet.ID + `"}`
	if code, _ := c.do("POST", "/auth/credentials", add, nil, &ch); code != 202 {
		t.Fatalf("add leg 1: %d", code)
	}
	sig, _ = key.Stamp(ch.PayloadToSign)
	var added walletauth.AuthMethod
	code, _ := c.do("POST", "/auth/credentials", add, map[string]string{stamper.HeaderSignature: sig, stamper.HeaderRequestID: ch.RequestID}, &added)
	if code != 201 || added.Type != "SMS_OTP" || added.OTPEncryptionTargetBundle == "" {
		t.Fatalf("add leg 2: %d %+v", code, added)
	}

	// Revoke the session: 202 then 204, then 404.
	path := "/auth/sessions/" + sess.ID
	if code, _ := c.do("DELETE", path, "", nil, &ch); code != 202 {
		t.Fatalf("revoke leg 1: %d", code)
	}
	sig, _ = key.Stamp(ch.PayloadToSign)
	if code, _ := c.do("DELETE", path, "", map[string]string{stamper.HeaderSignature: sig, stamper.HeaderRequestID: ch.RequestID}, nil); code != 204 {
		t.Fatalf("revoke leg 2: %d", code)
	}
	if code, got := c.do("DELETE", path, "", nil, nil); code != 404 || got["code"] != "REFERENCE_NOT_FOUND" {
		t.Fatalf("revoke again: %d %v", code, got)
	}

	errors := []struct {
		method, path, body string
		headers            map[string]string
		status             int
		code               string
	}{
		{"POST", "/auth/credentials", `{"type":`, nil, 400, "INVALID_INPUT"},
		{"POST", "/auth/credentials", `{"type":"SMS_OTP","accountId":"x"}`, nil, 400, "INVALID_INPUT"},
		{"POST", "/auth/credentials/" + e.email.ID + "/verify", `{"type":"EMAIL_OTP","encryptedOtpBundle":"{}"}`,
			map[string]string{stamper.HeaderRequestID: ch.RequestID}, 401, "WALLET_SIGNATURE_MISSING"},
		{"POST", "/auth/credentials/" + e.email.ID + "/verify", `{"type":"EMAIL_OTP","encryptedOtpBundle":"{}"}`,
			map[string]string{stamper.HeaderSignature: sig}, 401, "REQUEST_ID_MISSING"},
		{"POST", "/auth/credentials/AuthMethod:x/challenge", "", nil, 404, "REFERENCE_NOT_FOUND"},
		{"GET", "/auth/credentials", "", nil, 400, "INVALID_INPUT"},
		{"GET", "/auth/sessions?accountId=x", "", nil, 400, "INVALID_INPUT"},
		{"POST", "/auth/sessions/" + sess.ID + "/refresh", `{"clientPublicKey":"02"}`, nil, 400, "INVALID_INPUT"},
		{"DELETE", "/auth/credentials/AuthMethod:x", "", nil, 404, "REFERENCE_NOT_FOUND"},
		{"POST", "/auth/credentials/" + e.email.ID + "/challenge", "[1", nil, 400, "INVALID_INPUT"},
	}
	for _, tt := range errors {
		code, got := c.do(tt.method, tt.path, tt.body, tt.headers, nil)
		if code != tt.status || got["code"] != tt.code {
			t.Errorf("%s %s %s: %d %v, want %d %s", tt.method, tt.path, tt.body, code, got, tt.status, tt.code)
		}
	}
}

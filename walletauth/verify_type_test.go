package walletauth_test

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/signedretry/stamper"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/walletauth"
)

// TestVerifyTypeMismatchHTTP sends every credential type to every other type's
// credential over the HTTP API: each mismatch is the same 400 INVALID_INPUT on
// "type" naming both types, and an unknown credential stays 404.
func TestVerifyTypeMismatchHTTP(t *testing.T) {
	ctx := t.Context()
	e, p := federatedEnv(t)
	_, key := e.login(t, e.email.ID, storage.EmailOTP)
	sms := e.addSMS(t, key)

	// A passkey.
	a := newAuthenticator(t)
	rc, err := e.svc.PasskeyRegistrationChallenge(ctx, e.wallet.ID)
	if err != nil {
		t.Fatal(err)
	}
	preq := walletauth.AddCredentialRequest{Type: storage.Passkey, AccountID: e.wallet.ID, Nickname: "key", Challenge: rc.Challenge,
		Attestation: a.attest(t, rc.Challenge, e.wallet.ID)}
	body, _ := json.Marshal(preq)
	c := call("POST", "/auth/credentials", string(body))
	_, ch, err := e.svc.AddCredential(ctx, preq, c)
	if err != nil {
		t.Fatal(err)
	}
	pk, _, err := e.svc.AddCredential(ctx, preq, signed(t, c, ch, key))
	if err != nil {
		t.Fatal(err)
	}

	// An OAUTH credential.
	now := e.clock.Now()
	oreq := walletauth.AddCredentialRequest{Type: storage.OAuth, AccountID: e.wallet.ID, OIDCToken: p.token(t, map[string]any{
		"iss": "https://idp.example.com", "aud": "client-1", "sub": "user-7", "iat": now.Unix(), "exp": now.Unix() + 3600})}
	c = call("POST", "/auth/credentials", `{"type":"OAUTH"}`)
	_, ch, err = e.svc.AddCredential(ctx, oreq, c)
	if err != nil {
		t.Fatal(err)
	}
	oa, _, err := e.svc.AddCredential(ctx, oreq, signed(t, c, ch, key))
	if err != nil {
		t.Fatal(err)
	}

	srv := httptest.NewServer(handler(t, e.with(t, admitAll)))
	defer srv.Close()
	client := httpClient{t, srv}
	creds := map[storage.CredentialType]string{storage.EmailOTP: e.email.ID, storage.SMSOTP: sms.ID, storage.Passkey: pk.ID, storage.OAuth: oa.ID}
	types := []storage.CredentialType{storage.EmailOTP, storage.SMSOTP, storage.Passkey, storage.OAuth}
	// Bodies plausible for the sent type, so no other check answers first.
	bodies := map[storage.CredentialType]string{
		storage.EmailOTP: `{"type":"EMAIL_OTP","encryptedOtpBundle":"{}"}`,
		storage.SMSOTP:   `{"type":"SMS_OTP","encryptedOtpBundle":"{}"}`,
		storage.Passkey:  `{"type":"PASSKEY","assertion":{}}`,
		storage.OAuth:    `{"type":"OAUTH","oidcToken":"a.b.c","clientPublicKey":"` + newKey(t).PublicKeyHex() + `"}`,
	}
	for _, credType := range types {
		for _, sent := range types {
			if sent == credType {
				continue
			}
			for _, headers := range []map[string]string{nil, {stamper.HeaderRequestID: "Request:00000000-0000-4000-8000-000000000000"}} {
				status, got := client.do("POST", "/auth/credentials/"+creds[credType]+"/verify", bodies[sent], headers, nil)
				msg, _ := got["message"].(string)
				if status != 400 || got["code"] != "INVALID_INPUT" || !strings.Contains(msg, string(sent)) || !strings.Contains(msg, string(credType)) {
					t.Errorf("%s sent to a %s credential (headers %v): %d %v", sent, credType, headers, status, got)
					continue
				}
				raw, _ := json.Marshal(got["details"])
				if !strings.Contains(string(raw), `"field":"type"`) {
					t.Errorf("%s sent to a %s credential: details %s do not name the field type", sent, credType, raw)
				}
			}
		}
	}
	for _, sent := range types {
		status, got := client.do("POST", "/auth/credentials/AuthMethod:00000000-0000-4000-8000-000000000000/verify", bodies[sent], nil, nil)
		if status != 404 || got["code"] != "REFERENCE_NOT_FOUND" {
			t.Errorf("%s to an unknown credential: %d %v", sent, status, got)
		}
	}
	status, got := client.do("POST", "/auth/credentials/"+e.email.ID+"/verify", `{"type":"FAX"}`, nil, nil)
	if status != 400 || got["code"] != "INVALID_INPUT" {
		t.Errorf("unknown type: %d %v", status, got)
	}
}

// TestVerifyOTPRetryAnswersTypeFirst checks the answers of a one-time
// code's signed retry that reads no credential before it runs: an unknown
// credential and a type mismatch still answer 404 and 400 before the
// retry's 401s, also when the retry is stamped right, and a credential
// deleted between the legs answers 404 and leaves the request unconsumed.
func TestVerifyOTPRetryAnswersTypeFirst(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t, nil)
	_, key := e.login(t, e.email.ID, storage.EmailOTP)
	sms := e.addSMS(t, key)
	smsKey := newKey(t)
	bundle, err := smsKey.SealOTP(sms.OTPEncryptionTargetBundle, e.svc.SigningPublicKey(), e.outbox.last(t).Code, nil)
	if err != nil {
		t.Fatal(err)
	}
	req := walletauth.VerifyRequest{Type: storage.SMSOTP, EncryptedOTPBundle: bundle}
	c := call("POST", "/auth/credentials/"+sms.ID+"/verify", `{"type":"SMS_OTP","encryptedOtpBundle":`+quote(bundle)+`}`)
	_, ch, err := e.svc.Verify(ctx, sms.ID, req, c)
	if err != nil || ch == nil {
		t.Fatalf("leg 1: %v", err)
	}
	good, bad := signed(t, c, ch, smsKey), signed(t, c, ch, newKey(t))
	unknown := "AuthMethod:00000000-0000-4000-8000-000000000000"

	// Stamped right or not: the other type's credential is 400 on "type",
	// an unknown credential 404.
	for _, retry := range []signedretry.Request{good, bad} {
		_, _, err = e.svc.Verify(ctx, e.email.ID, req, retry)
		apierrortest.WantFields(t, err, apierror.InvalidInput, "type")
		_, _, err = e.svc.Verify(ctx, unknown, req, retry)
		apierrortest.Want(t, err, apierror.ReferenceNotFound, "")
	}
	_, _, err = e.svc.Verify(ctx, sms.ID, req, bad)
	apierrortest.Want(t, err, apierror.WalletSignatureInvalid, "")

	// The credential deleted between the legs: 404, and the request is
	// still live.
	if err := e.store.Atomic(ctx, func(tx storage.Tx) error { return tx.Credentials().Delete(ctx, sms.ID) }); err != nil {
		t.Fatal(err)
	}
	for _, retry := range []signedretry.Request{good, bad} {
		_, _, err = e.svc.Verify(ctx, sms.ID, req, retry)
		apierrortest.Want(t, err, apierror.ReferenceNotFound, "")
	}
	if err := e.store.Atomic(ctx, func(tx storage.Tx) error {
		p, err := tx.PendingRequests().Get(ctx, ch.RequestID)
		if err == nil && !p.ConsumedAt.IsZero() {
			t.Error("the refused retry consumed the request")
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

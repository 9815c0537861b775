package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/storagetest"
	"github.com/walletgate/walletgate/walletauth"
	"github.com/walletgate/walletgate/walletauth/authclient"
)

const otherKey = "other-platform-key-0123456789abcdef"

// callAs is call with another platform's API key.
func (e *env) callAs(key, method, path string, body []byte, hdr map[string]string) *httptest.ResponseRecorder {
	e.t.Helper()
	r := httptest.NewRequestWithContext(e.t.Context(), method, path, bytes.NewReader(body))
	r.Header.Set("Authorization", "Bearer "+key)
	r.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	e.h.ServeHTTP(w, r)
	return w
}

// issuance reads the live one-time code issuance of a credential.
func (e *env) issuance(credID string) storage.OTPIssuance {
	e.t.Helper()
	ctx := e.t.Context()
	var iss *storage.OTPIssuance
	err := e.svc.Store.Atomic(ctx, func(tx storage.Tx) error {
		var err error
		iss, err = storagetest.Issuance(ctx, tx, credID)
		return err
	})
	if err != nil {
		e.t.Fatal(err)
	}
	if iss == nil {
		e.t.Fatalf("no issuance stored for %s", credID)
	}
	return *iss
}

// challengeOf reads the outstanding ownership challenge of an account.
func (e *env) challengeOf(account string) (storage.OwnershipChallenge, error) {
	ctx := e.t.Context()
	var c storage.OwnershipChallenge
	err := e.svc.Store.Atomic(ctx, func(tx storage.Tx) error {
		var err error
		c, err = tx.Challenges().Get(ctx, account)
		return err
	})
	return c, err
}

// TestOtherPlatformCannotActOnCustomer: platform B names platform A's
// customer, its wallet, credential, session and external account on every
// route the host serves, and every request is 404 REFERENCE_NOT_FOUND, as
// for ids that do not exist. Nothing of A's changes: no code is mailed, the
// live code's attempts are not charged, no challenge fills the wallet's
// cap, the session stays active, the account keeps its challenge and
// status, nothing is paid. Afterwards A's customer logs in with the right
// code and A's payout first leg answers 202.
func TestOtherPlatformCannotActOnCustomer(t *testing.T) {
	e := newEnv(t, 4)
	e.srv.platforms[otherKey] = "Platform:other"
	c, key := e.customer("ana@example.com")
	e.fund(c.ID, 50_000_000)
	account, _ := e.wallet(c.ID)
	var ch struct{ MessageToSign string }
	want(t, e.call(http.MethodPost, "/customers/external-accounts/"+account+"/challenge", map[string]string{"method": "WALLET_SIGNATURE"}, nil),
		http.StatusCreated, &ch)
	var sessions struct{ Data []walletauth.AuthSession }
	want(t, e.call(http.MethodGet, "/auth/sessions?accountId="+c.WalletID, nil, nil), http.StatusOK, &sessions)
	if len(sessions.Data) != 1 {
		t.Fatalf("sessions %+v", sessions)
	}
	session := sessions.Data[0].ID
	// A's customer asks for a code; B will try wrong ones.
	var m walletauth.AuthMethod
	want(t, e.call(http.MethodPost, "/auth/credentials/"+c.CredentialID+"/challenge", nil, nil), http.StatusOK, &m)
	e.codes.mu.Lock()
	code := e.codes.last[c.CredentialID]
	e.codes.mu.Unlock()
	iss := e.issuance(c.CredentialID)
	wrongCode := "000000"
	if code == wrongCode {
		wrongCode = "111111"
	}
	sealed, err := authclient.NewClientKey()
	if err != nil {
		t.Fatal(err)
	}
	wrong, err := sealed.SealOTP(m.OTPEncryptionTargetBundle, e.svc.Auth.SigningPublicKey(), wrongCode, nil)
	if err != nil {
		t.Fatal(err)
	}
	verifyBody, _ := json.Marshal(map[string]string{"type": "EMAIL_OTP", "encryptedOtpBundle": wrong})
	refreshBody, _ := json.Marshal(map[string]string{"clientPublicKey": sealed.PublicKeyHex()})
	addBody, _ := json.Marshal(map[string]string{"type": "SMS_OTP", "accountId": c.WalletID})
	payBody, _ := json.Marshal(payoutBody{AccountID: account, Amount: 5_000_000})
	// A's own payout first leg, whose signed retry B replays.
	_, payCh := e.firstLeg(c.ID, account, 5_000_000)
	signed := retryHeaders(t, payCh, key)

	routes := []struct {
		name, method, path string
		body               []byte
		hdr                map[string]string
	}{
		{"list credentials", http.MethodGet, "/auth/credentials?accountId=" + c.WalletID, nil, nil},
		{"list sessions", http.MethodGet, "/auth/sessions?accountId=" + c.WalletID, nil, nil},
		{"add credential", http.MethodPost, "/auth/credentials", addBody, nil},
		{"revoke credential", http.MethodDelete, "/auth/credentials/" + c.CredentialID, nil, nil},
		{"issue a code", http.MethodPost, "/auth/credentials/" + c.CredentialID + "/challenge", nil, nil},
		{"verify a code", http.MethodPost, "/auth/credentials/" + c.CredentialID + "/verify", verifyBody, nil},
		{"revoke session", http.MethodDelete, "/auth/sessions/" + session, nil, nil},
		{"refresh session", http.MethodPost, "/auth/sessions/" + session + "/refresh", refreshBody, nil},
		{"ownership challenge", http.MethodPost, "/customers/external-accounts/" + account + "/challenge", []byte(`{"method":"WALLET_SIGNATURE"}`), nil},
		{"ownership verify", http.MethodPost, "/customers/external-accounts/" + account + "/verify",
			[]byte(`{"signature":"0x` + string(bytes.Repeat([]byte("ab"), 65)) + `"}`), nil},
		{"register an account", http.MethodPost, "/customers/" + c.ID + "/external-accounts",
			[]byte(`{"accountType":"ETHEREUM_WALLET","address":"0x52908400098527886E0F7030069857D2E4169EE7"}`), nil},
		{"payout", http.MethodPost, "/customers/" + c.ID + "/payouts", payBody, nil},
		{"payout signed retry", http.MethodPost, "/customers/" + c.ID + "/payouts", payBody, signed},
	}
	for _, rt := range routes {
		// More than an issuance's attempts, and every first leg more than
		// once, as an attacker would.
		for range 6 {
			w := e.callAs(otherKey, rt.method, rt.path, rt.body, rt.hdr)
			if w.Code != http.StatusNotFound {
				t.Errorf("%s by another platform: %d %s", rt.name, w.Code, w.Body)
				break
			}
			wantAPIError(t, w, apierror.ReferenceNotFound)
		}
	}
	// Fill the wallet's cap of live challenges, if refusals stored any.
	for range signedretry.DefaultMaxPending {
		e.callAs(otherKey, http.MethodDelete, "/auth/sessions/"+session, nil, nil)
	}

	if got := e.issuance(c.CredentialID); got.ID != iss.ID || got.Attempts != iss.Attempts {
		t.Fatalf("another platform's requests touched the live code: %+v, was %+v", got, iss)
	}
	want(t, e.call(http.MethodGet, "/auth/sessions?accountId="+c.WalletID, nil, nil), http.StatusOK, &sessions)
	if len(sessions.Data) != 1 || sessions.Data[0].ID != session {
		t.Fatalf("sessions after another platform's requests: %+v", sessions)
	}
	var creds struct{ Data []walletauth.AuthMethod }
	want(t, e.call(http.MethodGet, "/auth/credentials?accountId="+c.WalletID, nil, nil), http.StatusOK, &creds)
	if len(creds.Data) != 1 {
		t.Fatalf("credentials after another platform's requests: %+v", creds)
	}
	if e.balance(c.ID) != 50_000_000 || e.payoutRows(c.ID) != 0 {
		t.Fatal("another platform's requests paid out")
	}
	ownCh, err := e.challengeOf(account)
	if err != nil || ownCh.Message != ch.MessageToSign {
		t.Fatalf("the account's challenge after another platform's requests: %+v, %v", ownCh, err)
	}
	var acct storage.ExternalAccount
	if err := e.svc.Store.Atomic(t.Context(), func(tx storage.Tx) error {
		var err error
		acct, err = tx.ExternalAccounts().Get(t.Context(), account)
		return err
	}); err != nil || acct.Status != storage.StatusPendingOwnershipVerification {
		t.Fatalf("the account after another platform's requests: %+v, %v", acct, err)
	}
	// A's customer logs in with the right code: no attempt, budget or
	// challenge of B's counted.
	right, err := sealed.SealOTP(m.OTPEncryptionTargetBundle, e.svc.Auth.SigningPublicKey(), code, nil)
	if err != nil {
		t.Fatal(err)
	}
	rightBody, _ := json.Marshal(map[string]string{"type": "EMAIL_OTP", "encryptedOtpBundle": right})
	want(t, e.call(http.MethodPost, "/auth/credentials/"+c.CredentialID+"/verify", rightBody, nil), http.StatusAccepted, nil)
	// B's replayed retry paid nothing; A's own retry pays once.
	want(t, e.call(http.MethodPost, "/customers/"+c.ID+"/payouts", payBody, signed), http.StatusOK, nil)
	if e.balance(c.ID) != 45_000_000 || e.payoutRows(c.ID) != 1 {
		t.Fatal("A's signed payout did not pay exactly once")
	}
}

// TestEmailPerPlatform: each platform's customers are a tenant of their
// own. Two platforms onboard a customer with the same email address and
// both succeed; neither learns that the other has the address, and each
// customer logs in. Within one platform the address stays unique.
func TestEmailPerPlatform(t *testing.T) {
	e := newEnv(t, 4)
	e.srv.platforms[otherKey] = "Platform:other"
	body, _ := json.Marshal(map[string]string{"email": "shared@example.com", "currency": "USDC"})
	var a, b Customer
	want(t, e.call(http.MethodPost, "/customers", body, nil), http.StatusCreated, &a)
	want(t, e.callAs(otherKey, http.MethodPost, "/customers", body, nil), http.StatusCreated, &b)
	if a.WalletID == b.WalletID {
		t.Fatal("two platforms share a wallet")
	}
	// Each platform's own rule still holds.
	wantAPIError(t, e.callAs(otherKey, http.MethodPost, "/customers", body, nil), apierror.EmailOTPEmailAlreadyExists)
	// A's customer logs in; B's sees nothing of A's.
	e.login(a)
	wantAPIError(t, e.callAs(otherKey, http.MethodPost, "/auth/credentials/"+a.CredentialID+"/challenge", nil, nil), apierror.ReferenceNotFound)
	var m walletauth.AuthMethod
	want(t, e.callAs(otherKey, http.MethodPost, "/auth/credentials/"+b.CredentialID+"/challenge", nil, nil), http.StatusOK, &m)
	if m.ID != b.CredentialID {
		t.Fatalf("B's challenge answered %+v", m)
	}
}

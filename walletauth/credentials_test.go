package walletauth_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/walletauth"
	"github.com/walletgate/walletgate/walletauth/authclient"
)

// addSMS adds the SMS_OTP credential through the signed retry stamped by key.
func (e *env) addSMS(t *testing.T, key *authclient.ClientKey) *walletauth.AuthMethod {
	t.Helper()
	ctx := t.Context()
	req := walletauth.AddCredentialRequest{Type: storage.SMSOTP, AccountID: e.wallet.ID}
	c := call("POST", "/auth/credentials", `{"type":"SMS_OTP","accountId":"`+e.wallet.ID+`"}`)
	m, ch, err := e.svc.AddCredential(ctx, req, c)
	if err != nil || m != nil || ch == nil || ch.Type != "SMS_OTP" {
		t.Fatalf("add leg 1: %+v %+v %v", m, ch, err)
	}
	m, ch, err = e.svc.AddCredential(ctx, req, signed(t, c, ch, key))
	if err != nil || ch != nil || m == nil {
		t.Fatalf("add leg 2: %+v %+v %v", m, ch, err)
	}
	return m
}

func TestAddCredential(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t, nil)
	_, key := e.login(t, e.email.ID, storage.EmailOTP)
	sms := e.addSMS(t, key)
	if sms.Type != storage.SMSOTP || sms.Nickname != "+14155550123" || sms.OTPEncryptionTargetBundle == "" {
		t.Fatalf("added %+v", sms)
	}
	if msg := e.outbox.last(t); msg.Channel != storage.SMSOTP || msg.To != "+14155550123" {
		t.Fatalf("code sent %+v", msg)
	}
	// The bundle on the 201 activates the new credential.
	k2 := newKey(t)
	bundle, err := k2.SealOTP(sms.OTPEncryptionTargetBundle, e.svc.SigningPublicKey(), e.outbox.last(t).Code, nil)
	if err != nil {
		t.Fatal(err)
	}
	sess, _ := e.verify(t, sms.ID, storage.SMSOTP, bundle, k2)
	if sess.Type != storage.SMSOTP {
		t.Fatalf("session %+v", sess)
	}

	tests := []struct {
		name string
		req  walletauth.AddCredentialRequest
		code apierror.Code
	}{
		{"second EMAIL_OTP", walletauth.AddCredentialRequest{Type: storage.EmailOTP, AccountID: e.wallet.ID}, apierror.EmailOTPCredentialAlreadyExists},
		{"second SMS_OTP", walletauth.AddCredentialRequest{Type: storage.SMSOTP, AccountID: e.wallet.ID}, apierror.SMSOTPCredentialAlreadyExists},
		{"unknown account", walletauth.AddCredentialRequest{Type: storage.SMSOTP, AccountID: "InternalAccount:00000000-0000-4000-8000-000000000000"}, apierror.ReferenceNotFound},
		{"bad account id", walletauth.AddCredentialRequest{Type: storage.SMSOTP, AccountID: "x"}, apierror.InvalidInput},
		{"unknown type", walletauth.AddCredentialRequest{Type: "PIN", AccountID: e.wallet.ID}, apierror.InvalidInput},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := e.svc.AddCredential(ctx, tt.req, call("POST", "/auth/credentials", `{}`))
			apierrortest.Want(t, err, tt.code, "")
		})
	}

	t.Run("no phone", func(t *testing.T) {
		e := newEnv(t, nil)
		w, _, err := e.svc.CreateWallet(ctx, walletauth.NewWallet{CustomerID: "Customer:9", Email: "x@example.com"})
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = e.svc.AddCredential(ctx, walletauth.AddCredentialRequest{Type: storage.SMSOTP, AccountID: w.ID}, call("POST", "/auth/credentials", `{}`))
		apierrortest.Want(t, err, apierror.MissingMandatoryUserInfo, "")
	})
	t.Run("retry not signed by a session of the account", func(t *testing.T) {
		e := newEnv(t, nil)
		req := walletauth.AddCredentialRequest{Type: storage.SMSOTP, AccountID: e.wallet.ID}
		c := call("POST", "/auth/credentials", `{"type":"SMS_OTP"}`)
		_, ch, err := e.svc.AddCredential(ctx, req, c)
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = e.svc.AddCredential(ctx, req, signed(t, c, ch, newKey(t)))
		apierrortest.Want(t, err, apierror.WalletSignatureInvalid, "")
	})
	t.Run("added while the challenge was out", func(t *testing.T) {
		e := newEnv(t, nil)
		_, key := e.login(t, e.email.ID, storage.EmailOTP)
		req := walletauth.AddCredentialRequest{Type: storage.SMSOTP, AccountID: e.wallet.ID}
		c1 := call("POST", "/auth/credentials", `{"n":1}`)
		_, ch1, _ := e.svc.AddCredential(ctx, req, c1)
		e.addSMS(t, key)
		_, _, err := e.svc.AddCredential(ctx, req, signed(t, c1, ch1, key))
		apierrortest.Want(t, err, apierror.SMSOTPCredentialAlreadyExists, "")
	})
}

func TestRevokeCredential(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t, nil)
	path := "/auth/credentials/" + e.email.ID
	_, err := e.svc.RevokeCredential(ctx, e.email.ID, call("DELETE", path, ""))
	apierrortest.Want(t, err, apierror.InvalidInput, "")
	_, err = e.svc.RevokeCredential(ctx, "AuthMethod:nope", call("DELETE", "/x", ""))
	apierrortest.Want(t, err, apierror.ReferenceNotFound, "")

	emailSess, emailKey := e.login(t, e.email.ID, storage.EmailOTP)
	sms := e.addSMS(t, emailKey)
	k2 := newKey(t)
	bundle, _ := k2.SealOTP(sms.OTPEncryptionTargetBundle, nil, e.outbox.last(t).Code, nil)
	_, smsKey := e.verify(t, sms.ID, storage.SMSOTP, bundle, k2)

	c := call("DELETE", path, "")
	ch, err := e.svc.RevokeCredential(ctx, e.email.ID, c)
	if err != nil || ch == nil || ch.Type != "EMAIL_OTP" {
		t.Fatalf("leg 1: %+v %v", ch, err)
	}
	// A session of the credential being revoked may not sign.
	_, err = e.svc.RevokeCredential(ctx, e.email.ID, signed(t, c, ch, emailKey))
	apierrortest.Want(t, err, apierror.WalletSignatureInvalid, "")
	if _, err := e.svc.RevokeCredential(ctx, e.email.ID, signed(t, c, ch, smsKey)); err != nil {
		t.Fatalf("leg 2: %v", err)
	}
	list, _ := e.svc.ListCredentials(ctx, e.wallet.ID)
	if len(list) != 1 || list[0].ID != sms.ID {
		t.Fatalf("credentials after revoke: %+v", list)
	}
	sessions, _ := e.svc.ListSessions(ctx, e.wallet.ID)
	for _, s := range sessions {
		if s.ID == emailSess.ID {
			t.Fatal("the revoked credential's session is still active")
		}
	}
	if len(sessions) != 1 {
		t.Fatalf("sessions after revoke: %+v", sessions)
	}
	// The revoked credential's key signs nothing any more.
	c2 := call("POST", "/auth/credentials", `{}`)
	_, ch2, err := e.svc.AddCredential(ctx, walletauth.AddCredentialRequest{Type: storage.EmailOTP, AccountID: e.wallet.ID}, c2)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = e.svc.AddCredential(ctx, walletauth.AddCredentialRequest{Type: storage.EmailOTP, AccountID: e.wallet.ID}, signed(t, c2, ch2, emailKey))
	apierrortest.Want(t, err, apierror.WalletSignatureInvalid, "")
	if _, _, err := e.svc.AddCredential(ctx, walletauth.AddCredentialRequest{Type: storage.EmailOTP, AccountID: e.wallet.ID}, signed(t, c2, ch2, smsKey)); err != nil {
		t.Fatalf("EMAIL_OTP again after revoke: %v", err)
	}
}

func TestSessions(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t, nil)
	s1, k1 := e.login(t, e.email.ID, storage.EmailOTP)
	e.clock.Add(time.Minute)
	s2, _ := e.login(t, e.email.ID, storage.EmailOTP)

	t.Run("refresh", func(t *testing.T) {
		client := newKey(t)
		body := `{"clientPublicKey":"` + client.PublicKeyHex() + `"}`
		req := walletauth.RefreshRequest{ClientPublicKey: client.PublicKeyHex()}
		c := call("POST", "/auth/sessions/"+s1.ID+"/refresh", body)
		_, ch, err := e.svc.RefreshSession(ctx, s1.ID, req, c)
		if err != nil || ch == nil || ch.Type != "" {
			t.Fatalf("leg 1: %+v %v", ch, err)
		}
		// Only the session itself may sign.
		_, _, err = e.svc.RefreshSession(ctx, s1.ID, req, signed(t, c, ch, newKey(t)))
		apierrortest.Want(t, err, apierror.WalletSignatureInvalid, "")
		// Another clientPublicKey on the retry is another body.
		other := newKey(t)
		c2 := c
		c2.Body = []byte(`{"clientPublicKey":"` + other.PublicKeyHex() + `"}`)
		_, _, err = e.svc.RefreshSession(ctx, s1.ID, walletauth.RefreshRequest{ClientPublicKey: other.PublicKeyHex()}, signed(t, c2, ch, k1))
		apierrortest.Want(t, err, apierror.WalletSignatureBodyMismatch, "")

		fresh, _, err := e.svc.RefreshSession(ctx, s1.ID, req, signed(t, c, ch, k1))
		if err != nil {
			t.Fatal(err)
		}
		if fresh.ID == s1.ID || fresh.EncryptedSessionSigningKey == "" || fresh.Type != storage.EmailOTP {
			t.Fatalf("refreshed session %+v", fresh)
		}
		sessionKey, err := client.OpenSessionKey(fresh.EncryptedSessionSigningKey)
		if err != nil {
			t.Fatal(err)
		}
		// The sealed key is the new session's key: it revokes the old one.
		rc := call("DELETE", "/auth/sessions/"+s1.ID, "")
		ch, err = e.svc.RevokeSession(ctx, s1.ID, rc)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.RevokeSession(ctx, s1.ID, signed(t, rc, ch, sessionKey)); err != nil {
			t.Fatalf("revoke signed by the refreshed session's key: %v", err)
		}
		_, err = e.svc.RevokeSession(ctx, s1.ID, call("DELETE", "/auth/sessions/"+s1.ID, ""))
		apierrortest.Want(t, err, apierror.ReferenceNotFound, "")
		_, _, err = e.svc.RefreshSession(ctx, s1.ID, req, call("POST", "/r", body))
		apierrortest.Want(t, err, apierror.ReferenceNotFound, "")
		_, _, err = e.svc.RefreshSession(ctx, s1.ID, walletauth.RefreshRequest{ClientPublicKey: "04zz"}, call("POST", "/r", body))
		apierrortest.Want(t, err, apierror.InvalidInput, "")
	})
	t.Run("revoke twice", func(t *testing.T) {
		c := call("DELETE", "/auth/sessions/"+s2.ID, "")
		ch1, err := e.svc.RevokeSession(ctx, s2.ID, c)
		if err != nil {
			t.Fatal(err)
		}
		ch2, _ := e.svc.RevokeSession(ctx, s2.ID, c)
		_, k := e.login(t, e.email.ID, storage.EmailOTP)
		if _, err := e.svc.RevokeSession(ctx, s2.ID, signed(t, c, ch1, k)); err != nil {
			t.Fatal(err)
		}
		_, err = e.svc.RevokeSession(ctx, s2.ID, signed(t, c, ch2, k))
		apierrortest.Want(t, err, apierror.ReferenceNotFound, "")
	})
	t.Run("expired session", func(t *testing.T) {
		s, k := e.login(t, e.email.ID, storage.EmailOTP)
		c := call("DELETE", "/auth/sessions/"+s.ID, "")
		ch, err := e.svc.RevokeSession(ctx, s.ID, c)
		if err != nil {
			t.Fatal(err)
		}
		e.clock.Add(walletauth.DefaultSessionTTL)
		_, err = e.svc.RevokeSession(ctx, s.ID, signed(t, c, ch, k))
		apierrortest.Want(t, err, apierror.Unauthorized, "request id expired")
		_, err = e.svc.RevokeSession(ctx, s.ID, c)
		apierrortest.Want(t, err, apierror.ReferenceNotFound, "")
		list, _ := e.svc.ListSessions(ctx, e.wallet.ID)
		if len(list) != 0 {
			t.Fatalf("sessions listed after expiry: %+v", list)
		}
	})
	_, err := e.svc.ListSessions(ctx, "nope")
	apierrortest.Want(t, err, apierror.InvalidInput, "")
}

func TestClientHeldKeys(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t, func(c *walletauth.Config) { c.ClientHeldKeys = true })
	s, k := e.login(t, e.email.ID, storage.EmailOTP)
	client := newKey(t)
	req := walletauth.RefreshRequest{ClientPublicKey: client.PublicKeyHex()}
	c := call("POST", "/auth/sessions/"+s.ID+"/refresh", `{"clientPublicKey":"`+client.PublicKeyHex()+`"}`)
	_, ch, _ := e.svc.RefreshSession(ctx, s.ID, req, c)
	fresh, _, err := e.svc.RefreshSession(ctx, s.ID, req, signed(t, c, ch, k))
	if err != nil || fresh.EncryptedSessionSigningKey != "" {
		t.Fatalf("client-held refresh: %+v %v", fresh, err)
	}
	rc := call("DELETE", "/auth/sessions/"+fresh.ID, "")
	ch, _ = e.svc.RevokeSession(ctx, fresh.ID, rc)
	if _, err := e.svc.RevokeSession(ctx, fresh.ID, signed(t, rc, ch, client)); err != nil {
		t.Fatalf("the client's own key signs for the new session: %v", err)
	}
}

func TestUpdateEmail(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t, nil)
	_, key := e.login(t, e.email.ID, storage.EmailOTP)
	body := `{"email":"ada@lovelace.example"}`
	c := call("PATCH", "/customers/Customer:1", body)
	done, ch, err := e.svc.UpdateEmail(ctx, "Customer:1", "Ada@Lovelace.example", nil, c)
	if err != nil || done != nil || ch == nil || ch.Type != "EMAIL_OTP" {
		t.Fatalf("leg 1: %+v %+v %v", done, ch, err)
	}
	done, _, err = e.svc.UpdateEmail(ctx, "Customer:1", "ada@lovelace.example", nil, signed(t, c, ch, key))
	if err != nil || done.Email != "ada@lovelace.example" || len(done.CredentialIDs) != 1 || done.CredentialIDs[0] != e.email.ID {
		t.Fatalf("leg 2: %+v %v", done, err)
	}
	list, _ := e.svc.ListCredentials(ctx, e.wallet.ID)
	if list[0].Nickname != "ada@lovelace.example" {
		t.Fatalf("credential email not synced: %+v", list[0])
	}

	t.Run("taken by another wallet", func(t *testing.T) {
		if _, _, err := e.svc.CreateWallet(ctx, walletauth.NewWallet{CustomerID: "Customer:2", Email: "grace@example.com"}); err != nil {
			t.Fatal(err)
		}
		_, _, err := e.svc.UpdateEmail(ctx, "Customer:1", "grace@example.com", nil, call("PATCH", "/customers/Customer:1", `{}`))
		apierrortest.Want(t, err, apierror.EmailOTPEmailAlreadyExists, "")
	})
	t.Run("set changed", func(t *testing.T) {
		c := call("PATCH", "/customers/Customer:1", `{"email":"x@example.com"}`)
		_, ch, err := e.svc.UpdateEmail(ctx, "Customer:1", "x@example.com", nil, c)
		if err != nil {
			t.Fatal(err)
		}
		// The EMAIL_OTP credential is replaced meanwhile.
		sms := e.addSMS(t, key)
		k2 := newKey(t)
		bundle, _ := k2.SealOTP(sms.OTPEncryptionTargetBundle, nil, e.outbox.last(t).Code, nil)
		_, smsKey := e.verify(t, sms.ID, storage.SMSOTP, bundle, k2)
		rc := call("DELETE", "/auth/credentials/"+e.email.ID, "")
		rch, _ := e.svc.RevokeCredential(ctx, e.email.ID, rc)
		if _, err := e.svc.RevokeCredential(ctx, e.email.ID, signed(t, rc, rch, smsKey)); err != nil {
			t.Fatal(err)
		}
		ac := call("POST", "/auth/credentials", `{"t":"EMAIL_OTP"}`)
		areq := walletauth.AddCredentialRequest{Type: storage.EmailOTP, AccountID: e.wallet.ID}
		_, ach, _ := e.svc.AddCredential(ctx, areq, ac)
		if _, _, err := e.svc.AddCredential(ctx, areq, signed(t, ac, ach, smsKey)); err != nil {
			t.Fatal(err)
		}
		_, _, err = e.svc.UpdateEmail(ctx, "Customer:1", "x@example.com", nil, signed(t, c, ch, smsKey))
		apierrortest.Want(t, err, apierror.EmailOTPCredentialSetChanged, "")
	})
	t.Run("no tied credential", func(t *testing.T) {
		e := newEnv(t, nil)
		_, key := e.login(t, e.email.ID, storage.EmailOTP)
		sms := e.addSMS(t, key)
		k2 := newKey(t)
		bundle, _ := k2.SealOTP(sms.OTPEncryptionTargetBundle, nil, e.outbox.last(t).Code, nil)
		_, smsKey := e.verify(t, sms.ID, storage.SMSOTP, bundle, k2)
		rc := call("DELETE", "/auth/credentials/"+e.email.ID, "")
		rch, _ := e.svc.RevokeCredential(ctx, e.email.ID, rc)
		if _, err := e.svc.RevokeCredential(ctx, e.email.ID, signed(t, rc, rch, smsKey)); err != nil {
			t.Fatal(err)
		}
		done, ch, err := e.svc.UpdateEmail(ctx, "Customer:1", "new@example.com", nil, call("PATCH", "/c", `{}`))
		if err != nil || ch != nil || done.Email != "new@example.com" || len(done.CredentialIDs) != 0 {
			t.Fatalf("direct change: %+v %+v %v", done, ch, err)
		}
	})
	t.Run("errors", func(t *testing.T) {
		_, _, err := e.svc.UpdateEmail(ctx, "Customer:1", "nope", nil, call("PATCH", "/c", `{}`))
		apierrortest.Want(t, err, apierror.InvalidInput, "")
		_, _, err = e.svc.UpdateEmail(ctx, "Customer:404", "a@b.example", nil, call("PATCH", "/c", `{}`))
		apierrortest.Want(t, err, apierror.UserNotFound, "")
	})
}

// dropEmailOTP adds an SMS_OTP credential to e's wallet (signed by key, a
// session of its EMAIL_OTP credential), logs in with it and revokes the
// EMAIL_OTP credential. It returns the SMS_OTP session's key.
func (e *env) dropEmailOTP(t *testing.T, key *authclient.ClientKey) *authclient.ClientKey {
	t.Helper()
	ctx := t.Context()
	sms := e.addSMS(t, key)
	k := newKey(t)
	bundle, err := k.SealOTP(sms.OTPEncryptionTargetBundle, nil, e.outbox.last(t).Code, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, smsKey := e.verify(t, sms.ID, storage.SMSOTP, bundle, k)
	rc := call("DELETE", "/auth/credentials/"+e.email.ID, "")
	rch, err := e.svc.RevokeCredential(ctx, e.email.ID, rc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.RevokeCredential(ctx, e.email.ID, signed(t, rc, rch, smsKey)); err != nil {
		t.Fatal(err)
	}
	return smsKey
}

// takeAddress has a new wallet of customer take address through a signed
// email change of that customer: it creates the wallet with another
// address, logs in and runs the change's first call; complete runs its
// stamped retry.
func (e *env) takeAddress(t *testing.T, customer, address string) (complete func() error) {
	t.Helper()
	ctx := t.Context()
	_, cred, err := e.svc.CreateWallet(ctx, walletauth.NewWallet{CustomerID: customer, Email: "first-" + address})
	if err != nil {
		t.Fatal(err)
	}
	_, key := e.login(t, cred.ID, storage.EmailOTP)
	c := call("PATCH", "/customers/"+customer, `{"email":"`+address+`"}`)
	_, ch, err := e.svc.UpdateEmail(ctx, customer, address, nil, c)
	if err != nil {
		t.Fatal(err)
	}
	retry := signed(t, c, ch, key)
	return func() error {
		_, _, err := e.svc.UpdateEmail(ctx, customer, address, nil, retry)
		return err
	}
}

// TestAddEmailOTPAddressTaken re-adds an EMAIL_OTP credential to a wallet
// whose address another customer's EMAIL_OTP credential took after the
// wallet's own was revoked: both legs of the add answer 409
// EMAIL_OTP_EMAIL_ALREADY_EXISTS and the address stays tied to one customer.
func TestAddEmailOTPAddressTaken(t *testing.T) {
	ctx := t.Context()
	addEmail := walletauth.AddCredentialRequest{Type: storage.EmailOTP}
	wantTaken := func(t *testing.T, err error) {
		t.Helper()
		if !isAPIError(err, http.StatusConflict, apierror.EmailOTPEmailAlreadyExists, "") {
			t.Fatalf("add of EMAIL_OTP for a taken address: %v, want 409 EMAIL_OTP_EMAIL_ALREADY_EXISTS", err)
		}
	}
	tiedTo := func(t *testing.T, e *env, address string) []string {
		t.Helper()
		var owners []string
		if err := e.store.Atomic(ctx, func(tx storage.Tx) error {
			owners = nil
			tied, err := tx.Credentials().ListEmailOTPByEmail(ctx, "", address)
			for _, c := range tied {
				owners = append(owners, c.AccountID)
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return owners
	}

	t.Run("taken before the first call", func(t *testing.T) {
		e := newEnv(t, nil)
		_, key := e.login(t, e.email.ID, storage.EmailOTP)
		e.dropEmailOTP(t, key)
		if err := e.takeAddress(t, "Customer:2", "ada@example.com")(); err != nil {
			t.Fatal(err)
		}
		req := addEmail
		req.AccountID = e.wallet.ID
		_, ch, err := e.svc.AddCredential(ctx, req, call("POST", "/auth/credentials", `{"type":"EMAIL_OTP"}`))
		wantTaken(t, err)
		if ch != nil {
			t.Fatal("a refused add answered a challenge")
		}
		if owners := tiedTo(t, e, "ada@example.com"); len(owners) != 1 || owners[0] == e.wallet.ID {
			t.Fatalf("EMAIL_OTP credentials of the address belong to %v, want only the other customer's wallet", owners)
		}
	})
	t.Run("taken between the legs", func(t *testing.T) {
		e := newEnv(t, nil)
		_, key := e.login(t, e.email.ID, storage.EmailOTP)
		smsKey := e.dropEmailOTP(t, key)
		req := addEmail
		req.AccountID = e.wallet.ID
		c := call("POST", "/auth/credentials", `{"type":"EMAIL_OTP"}`)
		_, ch, err := e.svc.AddCredential(ctx, req, c)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.takeAddress(t, "Customer:2", "ada@example.com")(); err != nil {
			t.Fatal(err)
		}
		_, _, err = e.svc.AddCredential(ctx, req, signed(t, c, ch, smsKey))
		wantTaken(t, err)
		if owners := tiedTo(t, e, "ada@example.com"); len(owners) != 1 || owners[0] == e.wallet.ID {
			t.Fatalf("EMAIL_OTP credentials of the address belong to %v, want only the other customer's wallet", owners)
		}
	})
	t.Run("the same customer's other wallet", func(t *testing.T) {
		e := newEnv(t, nil)
		_, key := e.login(t, e.email.ID, storage.EmailOTP)
		smsKey := e.dropEmailOTP(t, key)
		// A second wallet of Customer:1 on the address does not block the
		// first one's EMAIL_OTP.
		if _, _, err := e.svc.CreateWallet(ctx, walletauth.NewWallet{CustomerID: "Customer:1", Email: "ada@example.com"}); err != nil {
			t.Fatal(err)
		}
		req := addEmail
		req.AccountID = e.wallet.ID
		c := call("POST", "/auth/credentials", `{"type":"EMAIL_OTP"}`)
		_, ch, err := e.svc.AddCredential(ctx, req, c)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := e.svc.AddCredential(ctx, req, signed(t, c, ch, smsKey)); err != nil {
			t.Fatalf("add for the customer's own address: %v", err)
		}
	})
}

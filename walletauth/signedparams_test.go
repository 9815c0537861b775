package walletauth_test

import (
	"context"
	"slices"
	"testing"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/walletauth"
)

// TestRetryRunsSignedParameters gives every signed-retry method of the
// service, on the retry, a request value that differs from the one the first
// call bound (the body itself is the signed one, so the retry is accepted):
// the effect must run the payload's parameters and ignore the request.
func TestRetryRunsSignedParameters(t *testing.T) {
	ctx := t.Context()
	t.Run("refresh session", func(t *testing.T) {
		e := newEnv(t, nil)
		s, key := e.login(t, e.email.ID, storage.EmailOTP)
		user, attacker := newKey(t), newKey(t)
		c := call("POST", "/auth/sessions/"+s.ID+"/refresh", `{"clientPublicKey":"`+user.PublicKeyHex()+`"}`)
		_, ch, err := e.svc.RefreshSession(ctx, s.ID, walletauth.RefreshRequest{ClientPublicKey: user.PublicKeyHex()}, c)
		if err != nil {
			t.Fatal(err)
		}
		fresh, _, err := e.svc.RefreshSession(ctx, s.ID, walletauth.RefreshRequest{ClientPublicKey: attacker.PublicKeyHex()}, signed(t, c, ch, key))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := user.OpenSessionKey(fresh.EncryptedSessionSigningKey); err != nil {
			t.Fatalf("not sealed to the signed key: %v", err)
		}
		if _, err := attacker.OpenSessionKey(fresh.EncryptedSessionSigningKey); err == nil {
			t.Fatal("sealed to the retry's key")
		}
	})
	t.Run("add credential", func(t *testing.T) {
		e := newEnv(t, nil)
		_, key := e.login(t, e.email.ID, storage.EmailOTP)
		c := call("POST", "/auth/credentials", `{"type":"SMS_OTP","accountId":"`+e.wallet.ID+`"}`)
		_, ch, err := e.svc.AddCredential(ctx, walletauth.AddCredentialRequest{Type: storage.SMSOTP, AccountID: e.wallet.ID}, c)
		if err != nil {
			t.Fatal(err)
		}
		m, _, err := e.svc.AddCredential(ctx, walletauth.AddCredentialRequest{Type: storage.OAuth, AccountID: "InternalAccount:x"}, signed(t, c, ch, key))
		if err != nil {
			t.Fatal(err)
		}
		if m.Type != storage.SMSOTP || m.Nickname != "+14155550123" {
			t.Fatalf("added %+v, signed an SMS_OTP", m)
		}
	})
	t.Run("update email", func(t *testing.T) {
		e := newEnv(t, nil)
		_, key := e.login(t, e.email.ID, storage.EmailOTP)
		c := call("PATCH", "/customers/Customer:1", `{"email":"new@example.com"}`)
		_, ch, err := e.svc.UpdateEmail(ctx, "Customer:1", "new@example.com", map[string]string{"note": "signed"}, c)
		if err != nil {
			t.Fatal(err)
		}
		done, _, err := e.svc.UpdateEmail(ctx, "Customer:1", "mallory@example.com", map[string]string{"note": "forged"}, signed(t, c, ch, key))
		if err != nil {
			t.Fatal(err)
		}
		if done.Email != "new@example.com" || string(done.Host) != `{"note":"signed"}` {
			t.Fatalf("changed %+v, signed new@example.com", done)
		}
		ms, err := e.svc.ListCredentials(ctx, e.wallet.ID)
		if err != nil || ms[0].Nickname != "new@example.com" {
			t.Fatalf("credentials %+v %v", ms, err)
		}
	})
	t.Run("export wallet", func(t *testing.T) {
		e := walletEnv(t)
		_, key := e.login(t, e.email.ID, storage.EmailOTP)
		user, attacker := newKey(t), newKey(t)
		c := call("POST", "/internal-accounts/"+e.wallet.ID+"/export", `{"clientPublicKey":"`+user.PublicKeyHex()+`"}`)
		_, ch, err := e.svc.ExportWallet(ctx, e.wallet.ID, walletauth.ExportRequest{ClientPublicKey: user.PublicKeyHex()}, c)
		if err != nil {
			t.Fatal(err)
		}
		out, _, err := e.svc.ExportWallet(ctx, e.wallet.ID, walletauth.ExportRequest{ClientPublicKey: attacker.PublicKeyHex()}, signed(t, c, ch, key))
		if err != nil {
			t.Fatal(err)
		}
		if plain, _, err := openExport(t, e.svc.SigningPublicKey(), user, out); err != nil || plain != testMnemonic {
			t.Fatalf("not sealed to the signed key: %v", err)
		}
		_, _, err = openExport(t, e.svc.SigningPublicKey(), attacker, out)
		wantStatus(t, err, 401, apierror.Unauthorized)
		apierrortest.Want(t, err, apierror.Unauthorized, "encryptedWalletCredentials was not sealed to this client key")
	})
	t.Run("wallet privacy", func(t *testing.T) {
		e := newEnv(t, nil)
		_, key := e.login(t, e.email.ID, storage.EmailOTP)
		on, off := true, false
		c := call("PATCH", "/internal-accounts/"+e.wallet.ID, `{"privateEnabled":true}`)
		_, ch, err := e.svc.UpdateWalletPrivacy(ctx, e.wallet.ID, walletauth.PrivacyRequest{PrivateEnabled: &on}, c, nil)
		if err != nil {
			t.Fatal(err)
		}
		var applied bool
		p, _, err := e.svc.UpdateWalletPrivacy(ctx, e.wallet.ID, walletauth.PrivacyRequest{PrivateEnabled: &off}, signed(t, c, ch, key),
			func(_ storage.Tx, v bool) error { applied = v; return nil })
		if err != nil || !p.PrivateEnabled || !applied {
			t.Fatalf("privacy %+v %v applied %v, signed true", p, err, applied)
		}
	})
	t.Run("host operation", func(t *testing.T) {
		e := newEnv(t, nil)
		_, key := e.login(t, e.email.ID, storage.EmailOTP)
		c := call("POST", "/pay", `{"amount":5}`)
		type pay struct {
			Amount int `json:"amount"`
		}
		_, _, ch, err := walletauth.Authorize(ctx, e.svc, walletauth.HostOperation[pay, int]{Type: "PAY", AccountID: e.wallet.ID, Parameters: pay{5}}, c)
		if err != nil {
			t.Fatal(err)
		}
		// The retry's own parameters (500) are not read: check and effect
		// get the signed 5.
		var checked []int
		check := func(_ context.Context, _ storage.Tx, p pay) error { checked = append(checked, p.Amount); return nil }
		got, a, _, err := walletauth.Authorize(ctx, e.svc, walletauth.HostOperation[pay, int]{Type: "PAY", AccountID: e.wallet.ID, Parameters: pay{500},
			Check: check,
			Effect: func(_ context.Context, _ storage.Tx, _ *signedretry.Authorization, p pay) (int, error) {
				return p.Amount, nil
			}}, signed(t, c, ch, key))
		if err != nil || string(a.Parameters) != `{"amount":5}` || got != 5 || !slices.Equal(checked, []int{5}) {
			t.Fatalf("authorized %+v %v, effect %d, checked %v; signed amount 5", a, err, got, checked)
		}
	})
}

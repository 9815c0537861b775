package walletauth_test

import (
	"context"
	"crypto/ecdsa"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/walletauth"
	"github.com/walletgate/walletgate/walletauth/authclient"
	"github.com/walletgate/walletgate/walletauth/envelope"
)

// secrets is a WalletSecrets keeping one secret per account.
type secrets map[string]string

func (s secrets) Secret(_ context.Context, accountID string) ([]byte, error) {
	v, ok := s[accountID]
	if !ok {
		return nil, errors.New("no secret")
	}
	return []byte(v), nil
}

const testMnemonic = "legal winner thank year wave sausage worth useful legal winner thank yellow"

// walletEnv is an env whose service holds testMnemonic for its wallet.
func walletEnv(t *testing.T) *env {
	t.Helper()
	var e *env
	sec := secrets{}
	e = newEnv(t, func(c *walletauth.Config) { c.WalletSecrets = sec })
	sec[e.wallet.ID] = testMnemonic
	return e
}

// wantStatus asserts an API error's code and its HTTP status.
// wantStatus is apierrortest.Want that also pins the HTTP status of code.
func wantStatus(t testing.TB, err error, status int, code apierror.Code) {
	t.Helper()
	e := apierrortest.Want(t, err, code, "")
	if e.Code.Status() != status {
		t.Fatalf("%s: status %d, want %d", code, e.Code.Status(), status)
	}
}

// openExport checks an export bundle the way @turnkey/crypto's
// decryptExportBundle does, with the service's signing key pinned
// (envelope.OpenExportBundle), and opens it with the client key it was
// sealed to. It returns the secret and the signed organizationId.
func openExport(t *testing.T, signer *ecdsa.PublicKey, k *authclient.ClientKey, out *walletauth.WalletExport) (string, string, error) {
	t.Helper()
	var env struct{ Version, Data, DataSignature, EnclaveQuorumPublic string }
	if err := json.Unmarshal([]byte(out.EncryptedWalletCredentials), &env); err != nil {
		t.Fatal(err)
	}
	signerHex, err := signer.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	if env.Version != "v1.0.0" || env.DataSignature == "" || env.EnclaveQuorumPublic != hex.EncodeToString(signerHex) {
		t.Fatalf("envelope %+v is not signed by the service key", env)
	}
	raw, _ := hex.DecodeString(env.Data)
	var data struct{ OrganizationID string }
	if err := json.Unmarshal(raw, &data); err != nil {
		t.Fatal(err)
	}
	priv, err := k.PrivateKey().ECDH()
	if err != nil {
		t.Fatal(err)
	}
	plain, err := envelope.OpenExportBundle(priv, out.EncryptedWalletCredentials, signer, data.OrganizationID)
	return string(plain), data.OrganizationID, err
}

// uncompressed returns the uncompressed hex form of a client key.
func uncompressed(k *authclient.ClientKey) string {
	pub, _ := k.PrivateKey().PublicKey.ECDH()
	return hex.EncodeToString(pub.Bytes())
}

func TestExportWallet(t *testing.T) {
	ctx := t.Context()
	e := walletEnv(t)
	_, key := e.login(t, e.email.ID, storage.EmailOTP)
	path := "/internal-accounts/" + e.wallet.ID + "/export"
	for _, form := range []string{"compressed", "uncompressed"} {
		t.Run(form, func(t *testing.T) {
			client := newKey(t)
			hexKey := client.PublicKeyHex()
			if form == "uncompressed" {
				hexKey = uncompressed(client)
			}
			req := walletauth.ExportRequest{ClientPublicKey: hexKey}
			c := call("POST", path, `{"clientPublicKey":"`+hexKey+`"}`)
			out, ch, err := e.svc.ExportWallet(ctx, e.wallet.ID, req, c)
			if err != nil || out != nil || ch == nil {
				t.Fatalf("first leg %+v %+v %v", out, ch, err)
			}
			out, ch, err = e.svc.ExportWallet(ctx, e.wallet.ID, req, signed(t, c, ch, key))
			if err != nil || ch != nil || out.ID != e.wallet.ID {
				t.Fatalf("retry %+v %+v %v", out, ch, err)
			}
			plain, org, err := openExport(t, e.svc.SigningPublicKey(), client, out)
			if err != nil || plain != testMnemonic || org != "org-test" {
				t.Fatalf("opened %q %q %v", plain, org, err)
			}
			// The bundle is attested by the service's signing key, the one
			// OTP target bundles carry: a client pinning another key, or
			// expecting another organization, refuses it.
			priv, _ := client.PrivateKey().ECDH()
			_, err = envelope.OpenExportBundle(priv, out.EncryptedWalletCredentials, &newKey(t).PrivateKey().PublicKey, "org-test")
			wantStatus(t, err, 401, apierror.Unauthorized)
			_, err = envelope.OpenExportBundle(priv, out.EncryptedWalletCredentials, e.svc.SigningPublicKey(), "org-other")
			wantStatus(t, err, 400, apierror.InvalidInput)
		})
	}

	client := newKey(t)
	req := walletauth.ExportRequest{ClientPublicKey: client.PublicKeyHex()}
	c := call("POST", path, `{"clientPublicKey":"`+client.PublicKeyHex()+`"}`)
	t.Run("errors", func(t *testing.T) {
		for _, bad := range []string{"", "04abcd", "02ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff"} {
			_, _, err := e.svc.ExportWallet(ctx, e.wallet.ID, walletauth.ExportRequest{ClientPublicKey: bad}, c)
			wantStatus(t, err, 400, apierror.InvalidInput)
		}
		_, _, err := e.svc.ExportWallet(ctx, "InternalAccount:00000000-0000-4000-8000-000000000000", req, c)
		wantStatus(t, err, 404, apierror.ReferenceNotFound)
		_, _, err = e.svc.ExportWallet(ctx, "nope", req, c)
		wantStatus(t, err, 404, apierror.ReferenceNotFound)

		_, ch, err := e.svc.ExportWallet(ctx, e.wallet.ID, req, c)
		if err != nil {
			t.Fatal(err)
		}
		retry := signed(t, c, ch, key)
		noSig := retry
		noSig.Signature = ""
		_, _, err = e.svc.ExportWallet(ctx, e.wallet.ID, req, noSig)
		wantStatus(t, err, 401, apierror.WalletSignatureMissing)
		noID := retry
		noID.RequestID = ""
		_, _, err = e.svc.ExportWallet(ctx, e.wallet.ID, req, noID)
		wantStatus(t, err, 401, apierror.RequestIDMissing)
		bad := retry
		bad.Signature = "!!"
		_, _, err = e.svc.ExportWallet(ctx, e.wallet.ID, req, bad)
		wantStatus(t, err, 401, apierror.WalletSignatureMalformed)
		_, _, err = e.svc.ExportWallet(ctx, e.wallet.ID, req, signed(t, c, ch, newKey(t)))
		wantStatus(t, err, 401, apierror.WalletSignatureInvalid)
		other := retry
		other.Body = []byte(`{"clientPublicKey":"` + newKey(t).PublicKeyHex() + `"}`)
		_, _, err = e.svc.ExportWallet(ctx, e.wallet.ID, req, other)
		wantStatus(t, err, 401, apierror.WalletSignatureBodyMismatch)
		// Another wallet's path: the request is bound to this account.
		_, _, err = e.svc.ExportWallet(ctx, "InternalAccount:00000000-0000-4000-8000-000000000000", req, retry)
		wantStatus(t, err, 401, apierror.Unauthorized)
		// None of the failures consumed the request.
		if _, _, err = e.svc.ExportWallet(ctx, e.wallet.ID, req, retry); err != nil {
			t.Fatal(err)
		}
		_, _, err = e.svc.ExportWallet(ctx, e.wallet.ID, req, retry)
		wantStatus(t, err, 401, apierror.Unauthorized)
		// Expired.
		_, ch, _ = e.svc.ExportWallet(ctx, e.wallet.ID, req, c)
		e.clock.Add(signedretry.DefaultTTL)
		_, _, err = e.svc.ExportWallet(ctx, e.wallet.ID, req, signed(t, c, ch, key))
		wantStatus(t, err, 401, apierror.Unauthorized)
	})
}

func TestExportWalletSecrets(t *testing.T) {
	ctx := t.Context()
	t.Run("not configured", func(t *testing.T) {
		e := newEnv(t, nil)
		_, key := e.login(t, e.email.ID, storage.EmailOTP)
		client := newKey(t)
		req := walletauth.ExportRequest{ClientPublicKey: client.PublicKeyHex()}
		c := call("POST", "/export", `{"clientPublicKey":"`+client.PublicKeyHex()+`"}`)
		_, ch, err := e.svc.ExportWallet(ctx, e.wallet.ID, req, c)
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = e.svc.ExportWallet(ctx, e.wallet.ID, req, signed(t, c, ch, key))
		wantStatus(t, err, 500, apierror.InternalError)
	})
	t.Run("host failure leaves the request usable", func(t *testing.T) {
		sec := secrets{}
		e := newEnv(t, func(c *walletauth.Config) { c.WalletSecrets = sec })
		_, key := e.login(t, e.email.ID, storage.EmailOTP)
		client := newKey(t)
		req := walletauth.ExportRequest{ClientPublicKey: client.PublicKeyHex()}
		c := call("POST", "/export", `{"clientPublicKey":"`+client.PublicKeyHex()+`"}`)
		_, ch, err := e.svc.ExportWallet(ctx, e.wallet.ID, req, c)
		if err != nil {
			t.Fatal(err)
		}
		retry := signed(t, c, ch, key)
		_, _, err = e.svc.ExportWallet(ctx, e.wallet.ID, req, retry)
		wantStatus(t, err, 500, apierror.InternalError)
		sec[e.wallet.ID] = testMnemonic
		out, _, err := e.svc.ExportWallet(ctx, e.wallet.ID, req, retry)
		if err != nil {
			t.Fatal(err)
		}
		if plain, _, err := openExport(t, e.svc.SigningPublicKey(), client, out); err != nil || plain != testMnemonic {
			t.Fatalf("opened %q %v", plain, err)
		}
	})
}

func TestUpdateWalletPrivacy(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t, nil)
	_, key := e.login(t, e.email.ID, storage.EmailOTP)
	path := "/internal-accounts/" + e.wallet.ID
	on := true
	req := walletauth.PrivacyRequest{PrivateEnabled: &on}
	c := call("PATCH", path, `{"privateEnabled":true}`)

	p, ch, err := e.svc.UpdateWalletPrivacy(ctx, e.wallet.ID, req, c, nil)
	if err != nil || p != nil || ch == nil {
		t.Fatalf("first leg %+v %+v %v", p, ch, err)
	}
	var applied []bool
	apply := func(tx storage.Tx, v bool) error {
		if tx == nil {
			t.Error("no transaction")
		}
		applied = append(applied, v)
		return nil
	}
	p, ch, err = e.svc.UpdateWalletPrivacy(ctx, e.wallet.ID, req, signed(t, c, ch, key), apply)
	if err != nil || ch != nil || *p != (walletauth.WalletPrivacy{AccountID: e.wallet.ID, PrivateEnabled: true}) || len(applied) != 1 || !applied[0] {
		t.Fatalf("retry %+v %+v %v applied %v", p, ch, err, applied)
	}

	// Errors.
	_, _, err = e.svc.UpdateWalletPrivacy(ctx, e.wallet.ID, walletauth.PrivacyRequest{}, c, nil)
	wantStatus(t, err, 400, apierror.InvalidInput)
	_, _, err = e.svc.UpdateWalletPrivacy(ctx, "InternalAccount:00000000-0000-4000-8000-000000000000", req, c, nil)
	wantStatus(t, err, 404, apierror.ReferenceNotFound)
	_, ch, _ = e.svc.UpdateWalletPrivacy(ctx, e.wallet.ID, req, c, nil)
	_, _, err = e.svc.UpdateWalletPrivacy(ctx, e.wallet.ID, req, signed(t, c, ch, newKey(t)), nil)
	wantStatus(t, err, 401, apierror.WalletSignatureInvalid)
	other := signed(t, c, ch, key)
	other.Body = []byte(`{"privateEnabled":false}`)
	_, _, err = e.svc.UpdateWalletPrivacy(ctx, e.wallet.ID, req, other, nil)
	wantStatus(t, err, 401, apierror.WalletSignatureBodyMismatch)
	// A failing apply leaves the request unconsumed and errors unchanged.
	refuse := apierror.New(apierror.Conflict, "host refuses")
	_, _, err = e.svc.UpdateWalletPrivacy(ctx, e.wallet.ID, req, signed(t, c, ch, key), func(storage.Tx, bool) error { return refuse })
	wantStatus(t, err, 409, apierror.Conflict)
	if _, _, err = e.svc.UpdateWalletPrivacy(ctx, e.wallet.ID, req, signed(t, c, ch, key), nil); err != nil {
		t.Fatal(err)
	}
	_, _, err = e.svc.UpdateWalletPrivacy(ctx, e.wallet.ID, req, signed(t, c, ch, key), nil)
	wantStatus(t, err, 401, apierror.Unauthorized)
}

func TestAuthorize(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t, nil)
	_, key := e.login(t, e.email.ID, storage.EmailOTP)
	type params struct {
		To     string `json:"to"`
		Amount int64  `json:"amount"`
	}
	c := call("POST", "/transfer-out", `{"to":"bob","amount":5}`)
	op := walletauth.HostOperation[params, params]{Type: "TRANSFER_OUT", AccountID: e.wallet.ID, Parameters: params{"bob", 5}}

	res, a, ch, err := walletauth.Authorize(ctx, e.svc, op, c)
	if err != nil || a != nil || ch == nil || res != (params{}) {
		t.Fatalf("first leg %+v %+v %+v %v", res, a, ch, err)
	}
	runs := 0
	op.Parameters = params{"mallory", 500} // not read on the retry
	op.Effect = func(_ context.Context, tx storage.Tx, a *signedretry.Authorization, p params) (params, error) {
		runs++
		return p, nil
	}
	res, a, ch, err = walletauth.Authorize(ctx, e.svc, op, signed(t, c, ch, key))
	if err != nil || ch != nil {
		t.Fatalf("retry %+v %v", ch, err)
	}
	if res != (params{"bob", 5}) {
		t.Fatalf("effect result %+v, want the signed parameters", res)
	}
	if a.Type != "TRANSFER_OUT" || a.AccountID != e.wallet.ID || a.SessionID == "" || a.CredentialID != e.email.ID || a.Sandbox ||
		runs != 1 || string(a.Parameters) != `{"to":"bob","amount":5}` {
		t.Fatalf("authorized %+v, effect ran %d times", a, runs)
	}

	t.Run("errors", func(t *testing.T) {
		type none = walletauth.HostOperation[struct{}, struct{}]
		for _, typ := range []string{"", walletauth.OpRefreshSession, walletauth.OpExportWallet, walletauth.OpUpdateEmail} {
			_, _, _, err := walletauth.Authorize(ctx, e.svc, none{Type: typ, AccountID: e.wallet.ID}, c)
			wantStatus(t, err, 500, apierror.InternalError)
		}
		_, _, _, err := walletauth.Authorize(ctx, e.svc, none{Type: "X", AccountID: "InternalAccount:00000000-0000-4000-8000-000000000000"}, c)
		wantStatus(t, err, 404, apierror.ReferenceNotFound)
		_, _, _, err = walletauth.Authorize(ctx, e.svc, walletauth.HostOperation[[]int, struct{}]{Type: "X", AccountID: e.wallet.ID, Parameters: []int{1}}, c)
		wantStatus(t, err, 500, apierror.InternalError)

		_, _, ch, err := walletauth.Authorize(ctx, e.svc, none{Type: "X", AccountID: e.wallet.ID}, c)
		if err != nil {
			t.Fatal(err)
		}
		retry := signed(t, c, ch, key)
		// Another type or account does not complete it.
		_, _, _, err = walletauth.Authorize(ctx, e.svc, none{Type: "Y", AccountID: e.wallet.ID}, retry)
		wantStatus(t, err, 401, apierror.Unauthorized)
		_, _, _, err = walletauth.Authorize(ctx, e.svc, none{Type: "X", AccountID: "InternalAccount:00000000-0000-4000-8000-000000000000"}, retry)
		wantStatus(t, err, 401, apierror.Unauthorized)
		// A failing effect: its error, the request still usable.
		fail := none{Type: "X", AccountID: e.wallet.ID, Effect: func(context.Context, storage.Tx, *signedretry.Authorization, struct{}) (struct{}, error) {
			return struct{}{}, apierror.New(apierror.InvalidAmount, "too low")
		}}
		_, _, _, err = walletauth.Authorize(ctx, e.svc, fail, retry)
		wantStatus(t, err, 400, apierror.InvalidAmount)
		// A revoked session no longer signs.
		sessions, _ := e.svc.ListSessions(ctx, e.wallet.ID)
		for _, s := range sessions {
			rc := call("DELETE", "/auth/sessions/"+s.ID, "")
			rch, err := e.svc.RevokeSession(ctx, s.ID, rc)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.svc.RevokeSession(ctx, s.ID, signed(t, rc, rch, key)); err != nil {
				t.Fatal(err)
			}
		}
		_, _, _, err = walletauth.Authorize(ctx, e.svc, none{Type: "X", AccountID: e.wallet.ID}, retry)
		wantStatus(t, err, 401, apierror.WalletSignatureInvalid)
	})
}

// TestAuthorizeCheck: a host operation's Check refuses on the first leg,
// before a challenge is issued, and runs
// again on the retry, on the stored parameters and the state as it is then:
// a refusal there is its error, the effect does not run and the request
// stays usable.
func TestAuthorizeCheck(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t, nil)
	_, key := e.login(t, e.email.ID, storage.EmailOTP)
	type payout struct {
		Amount int64 `json:"amount"`
	}
	limit := int64(100)
	var checked []int64
	op := walletauth.HostOperation[payout, int64]{Type: "PAYOUT", AccountID: e.wallet.ID,
		Check: func(_ context.Context, _ storage.Tx, p payout) error {
			checked = append(checked, p.Amount)
			if p.Amount > limit {
				return apierror.New(apierror.InvalidAmount, "amount %d is over the limit %d", p.Amount, limit)
			}
			return nil
		},
		Effect: func(_ context.Context, _ storage.Tx, _ *signedretry.Authorization, p payout) (int64, error) {
			return p.Amount, nil
		}}

	c := call("POST", "/payouts", `{"amount":500}`)
	op.Parameters = payout{500}
	_, _, ch, err := walletauth.Authorize(ctx, e.svc, op, c)
	wantStatus(t, err, 400, apierror.InvalidAmount)
	if ch != nil {
		t.Fatalf("a refused first leg issued %+v", ch)
	}

	c = call("POST", "/payouts", `{"amount":50}`)
	op.Parameters = payout{50}
	if _, _, ch, err = walletauth.Authorize(ctx, e.svc, op, c); err != nil || ch == nil {
		t.Fatalf("first leg within the limit: %+v %v", ch, err)
	}
	// The limit drops before the retry: the same rule refuses it.
	limit = 10
	retry := signed(t, c, ch, key)
	_, _, _, err = walletauth.Authorize(ctx, e.svc, op, retry)
	wantStatus(t, err, 400, apierror.InvalidAmount)
	limit = 100
	got, _, _, err := walletauth.Authorize(ctx, e.svc, op, retry)
	if err != nil || got != 50 {
		t.Fatalf("retry within the limit: %d, %v", got, err)
	}
	if !slices.Equal(checked, []int64{500, 50, 50, 50}) {
		t.Fatalf("Check saw %v, want each leg's run on the bound parameters", checked)
	}
}

package sandbox_test

import (
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"testing"
	"testing/synctest"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/sandbox"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/signedretry/stamper"
	"github.com/walletgate/walletgate/walletauth"
	"github.com/walletgate/walletgate/walletauth/authclient"
	"github.com/walletgate/walletgate/walletauth/envelope"
)

func TestInternalAccounts(t *testing.T) {
	e := newEnv(t)
	c, walletID := e.customer("Ivy Internal")
	var l struct {
		Data       []sandbox.InternalAccount
		HasMore    bool
		TotalCount int
	}
	e.do("GET", "/internal-accounts?customerId="+c.ID, nil).ok(t, 200, &l)
	a := l.Data[0]
	if l.TotalCount != 1 || a.CustomerID != c.ID || a.Type != "EMBEDDED_WALLET" || a.Balance != (sandbox.Money{Currency: "USDB"}) ||
		len(a.Balances) != 1 {
		t.Fatalf("list %+v", l)
	}
	var got sandbox.InternalAccount
	e.do("GET", "/internal-accounts/"+walletID, nil).ok(t, 200, &got)
	if got.ID != walletID {
		t.Fatalf("get %+v", got)
	}
	e.do("GET", "/internal-accounts?customerId=Customer:00000000-0000-4000-8000-000000000000", nil).ok(t, 200, &l)
	if len(l.Data) != 0 {
		t.Fatalf("unknown customer %+v", l)
	}
	e.do("GET", "/internal-accounts", nil).fails(t, 400, apierror.InvalidInput)
	e.do("GET", "/internal-accounts?customerId=bob", nil).fails(t, 400, apierror.InvalidInput)
	e.do("GET", "/internal-accounts/InternalAccount:00000000-0000-4000-8000-000000000000", nil).fails(t, 404, apierror.ReferenceNotFound)
	e.do("GET", "/internal-accounts/nope", nil).fails(t, 404, apierror.ReferenceNotFound)
}

// exportKey returns a fresh uncompressed export key pair.
func exportKey(t *testing.T) (*ecdh.PrivateKey, string) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	priv, err := k.ECDH()
	if err != nil {
		t.Fatal(err)
	}
	return priv, hex.EncodeToString(priv.PublicKey().Bytes())
}

func TestExportWallet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newBubbleEnv(t, sandbox.Config{})
		_, walletID := e.customer("Exa Export")
		key := e.login(walletID)
		priv, pubHex := exportKey(t)
		path := "/internal-accounts/" + walletID + "/export"
		body := map[string]string{"clientPublicKey": pubHex}

		var out walletauth.WalletExport
		e.signed(key, "POST", path, body).ok(t, 200, &out)
		var env struct{ Version, Data, DataSignature, EnclaveQuorumPublic string }
		if err := json.Unmarshal([]byte(out.EncryptedWalletCredentials), &env); err != nil {
			t.Fatal(err)
		}
		// The envelope is signed by the simulator's signing key (the one its OTP
		// target bundles carry), as decryptExportBundle with that key given as
		// dangerouslyOverrideSignerPublicKey requires.
		signerPub, err := e.sim.Auth().SigningPublicKey().Bytes()
		if err != nil {
			t.Fatal(err)
		}
		if out.ID != walletID || env.Version != "v1.0.0" || env.DataSignature == "" || env.EnclaveQuorumPublic != hex.EncodeToString(signerPub) {
			t.Fatalf("export %+v %+v", out, env)
		}
		raw, _ := hex.DecodeString(env.Data)
		var data struct{ EncappedPublic, Ciphertext, OrganizationID string }
		if err := json.Unmarshal(raw, &data); err != nil {
			t.Fatal(err)
		}
		if data.OrganizationID != sandbox.SandboxOrganizationID {
			t.Fatalf("organizationId %q", data.OrganizationID)
		}
		plain, err := openExport(t, e, priv, out)
		if err != nil || string(plain) != sandbox.SandboxMnemonic {
			t.Fatalf("open: %v %q", err, plain)
		}
		// A client pinning another signer refuses the envelope (401), one
		// expecting another organization too (400).
		otherSigner, _ := authclient.NewClientKey()
		_, err = envelope.OpenExportBundle(priv, out.EncryptedWalletCredentials, &otherSigner.PrivateKey().PublicKey, sandbox.SandboxOrganizationID)
		apierrortest.Want(t, err, apierror.Unauthorized, "")
		_, err = envelope.OpenExportBundle(priv, out.EncryptedWalletCredentials, e.sim.Auth().SigningPublicKey(), "org_other")
		apierrortest.Want(t, err, apierror.InvalidInput, "")

		// Failures of the signed retry.
		ch := e.challenge("POST", path, body)
		stranger, _ := authclient.NewClientKey()
		e.retry(stranger, ch, "POST", path, body).fails(t, 401, apierror.WalletSignatureInvalid)
		e.do("POST", path, body, stamper.HeaderRequestID, ch.RequestID).fails(t, 401, apierror.WalletSignatureMissing)
		e.do("POST", path, body, stamper.HeaderSignature, "abc").fails(t, 401, apierror.RequestIDMissing)
		e.do("POST", path, body, stamper.HeaderSignature, "!!", stamper.HeaderRequestID, ch.RequestID).fails(t, 401, apierror.WalletSignatureMalformed)
		_, other := exportKey(t)
		e.retry(key, ch, "POST", path, map[string]string{"clientPublicKey": other}).fails(t, 401, apierror.WalletSignatureBodyMismatch)
		e.retry(key, ch, "POST", path, body).ok(t, 200, nil)
		e.retry(key, ch, "POST", path, body).fails(t, 401, apierror.Unauthorized)
		// The sandbox literal stands in for the stamp (a session must exist).
		ch = e.challenge("POST", path, body)
		e.do("POST", path, body, stamper.HeaderSignature, signedretry.SandboxSignature, stamper.HeaderRequestID, ch.RequestID).ok(t, 200, nil)
		// Expired challenge.
		ch = e.challenge("POST", path, body)
		time.Sleep(signedretry.DefaultTTL)
		e.retry(key, ch, "POST", path, body).fails(t, 401, apierror.Unauthorized)

		// A compressed client key is accepted too.
		compressed, _ := authclient.NewClientKey()
		e.signed(key, "POST", path, map[string]string{"clientPublicKey": compressed.PublicKeyHex()}).ok(t, 200, &out)
		cpriv, err := compressed.PrivateKey().ECDH()
		if err != nil {
			t.Fatal(err)
		}
		if plain, err := openExport(t, e, cpriv, out); err != nil || string(plain) != sandbox.SandboxMnemonic {
			t.Fatalf("open (compressed key): %v %q", err, plain)
		}

		// Bad requests.
		e.do("POST", path, map[string]string{"clientPublicKey": "02ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff"}).fails(t, 400, apierror.InvalidInput)
		e.do("POST", path, map[string]string{"clientPublicKey": "04" + pubHex[4:] + "00"}).fails(t, 400, apierror.InvalidInput)
		e.do("POST", path, `{}`).fails(t, 400, apierror.InvalidInput)
		e.do("POST", "/internal-accounts/InternalAccount:00000000-0000-4000-8000-000000000000/export", body).fails(t, 404, apierror.ReferenceNotFound)
	})
}

func TestWalletPrivacy(t *testing.T) {
	e := newEnv(t)
	_, walletID := e.customer("Pia Private")
	key := e.login(walletID)
	path := "/internal-accounts/" + walletID
	var a sandbox.InternalAccount
	e.signed(key, "PATCH", path, map[string]bool{"privateEnabled": true}).ok(t, 200, &a)
	if !a.PrivateEnabled {
		t.Fatalf("privacy %+v", a)
	}
	e.do("GET", path, nil).ok(t, 200, &a)
	if !a.PrivateEnabled {
		t.Fatalf("not kept: %+v", a)
	}
	e.do("PATCH", path, `{}`).fails(t, 400, apierror.InvalidInput)
	e.do("PATCH", path, `{"privateEnabled":"yes"}`).fails(t, 400, apierror.InvalidInput)
	e.do("PATCH", "/internal-accounts/InternalAccount:00000000-0000-4000-8000-000000000000", `{"privateEnabled":true}`).
		fails(t, 404, apierror.ReferenceNotFound)
	// A session of another wallet cannot sign.
	_, otherWallet := e.customer("Oscar Other")
	otherKey := e.login(otherWallet)
	ch := e.challenge("PATCH", path, map[string]bool{"privateEnabled": false})
	e.retry(otherKey, ch, "PATCH", path, map[string]bool{"privateEnabled": false}).fails(t, 401, apierror.WalletSignatureInvalid)
}

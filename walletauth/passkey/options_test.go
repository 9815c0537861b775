package passkey_test

import (
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/walletauth/authclient"
	"github.com/walletgate/walletgate/walletauth/passkey"
)

func TestCreationAndRequestOptions(t *testing.T) {
	v := newVerifier(t, func(rp *passkey.RelyingParty) { rp.RequireUserVerification = true })
	rc := issue(t, v, newStore(), account1, t0)
	b, err := v.CreationOptions(rc, passkey.User{Name: "jane@example.com", DisplayName: "Jane"}, [][]byte{{1, 2, 3}})
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		RP                     struct{ ID, Name string }
		User                   struct{ ID, Name, DisplayName string }
		Challenge              string
		PubKeyCredParams       []struct{ Alg int }
		ExcludeCredentials     []struct{ ID, Type string }
		AuthenticatorSelection struct{ ResidentKey, UserVerification string }
		Attestation            string
	}
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	if c.RP.ID != testRPID || c.RP.Name != "Wallet" || c.User.ID != base64.RawURLEncoding.EncodeToString([]byte(account1)) ||
		c.User.Name != "jane@example.com" || c.Challenge != rc.Challenge || len(c.PubKeyCredParams) == 0 || c.PubKeyCredParams[0].Alg != -7 ||
		len(c.ExcludeCredentials) != 1 || c.ExcludeCredentials[0].ID != "AQID" || c.AuthenticatorSelection.ResidentKey != "required" ||
		c.AuthenticatorSelection.UserVerification != "required" || c.Attestation != "none" {
		t.Errorf("creation options %s", b)
	}

	ch := challengeFor(v, "Request:1")
	b, err = v.RequestOptions(ch, [][]byte{{1, 2, 3}})
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Challenge, RPID, UserVerification string
		AllowCredentials                  []struct{ ID string }
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if r.Challenge != authclient.ClientDataChallenge(ch) || r.RPID != testRPID || r.UserVerification != "required" || len(r.AllowCredentials) != 1 {
		t.Errorf("request options %s", b)
	}
	if b, _ := newVerifier(t, nil).RequestOptions(ch, nil); !json.Valid(b) || string(b) == "" {
		t.Errorf("discoverable request options %s", b)
	}

	_, err = v.CreationOptions(nil, passkey.User{}, nil)
	apierrortest.Want(t, err, apierror.InternalError, "")
	_, err = v.CreationOptions(&passkey.RegistrationChallenge{Challenge: "AAAA"}, passkey.User{}, nil)
	apierrortest.Want(t, err, apierror.InternalError, "")
	_, err = v.RequestOptions("not hex", nil)
	apierrortest.Want(t, err, apierror.InternalError, "")
}

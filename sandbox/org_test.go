package sandbox_test

import (
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/walletgate/walletgate/sandbox"
	"github.com/walletgate/walletgate/walletauth"
	"github.com/walletgate/walletgate/walletauth/envelope"
)

// TestOrganizationIDSameInEveryEnvelope checks that every envelope the
// sandbox issues that carries an organizationId (the OTP target bundle of a
// challenge, the export bundle) carries
// sandbox.SandboxOrganizationID.
func TestOrganizationIDSameInEveryEnvelope(t *testing.T) {
	e := newEnv(t)
	_, walletID := e.customer("Org Anisation")
	key := e.login(walletID)
	signer := e.sim.Auth().SigningPublicKey()
	checkTarget := func(what, bundle string) {
		t.Helper()
		tb, err := envelope.ParseTargetBundle(bundle, signer)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if tb.OrganizationID != sandbox.SandboxOrganizationID {
			t.Errorf("%s: organizationId %q, want %q", what, tb.OrganizationID, sandbox.SandboxOrganizationID)
		}
	}

	var creds struct{ Data []walletauth.AuthMethod }
	e.do("GET", "/auth/credentials?accountId="+walletID, nil).ok(t, 200, &creds)
	var m walletauth.AuthMethod
	e.do("POST", "/auth/credentials/"+creds.Data[0].ID+"/challenge", "{}").ok(t, 200, &m)
	checkTarget("challenge", m.OTPEncryptionTargetBundle)

	_, pubHex := exportKey(t)
	var out walletauth.WalletExport
	e.signed(key, "POST", "/internal-accounts/"+walletID+"/export", map[string]string{"clientPublicKey": pubHex}).ok(t, 200, &out)
	var env struct{ Data string }
	if err := json.Unmarshal([]byte(out.EncryptedWalletCredentials), &env); err != nil {
		t.Fatal(err)
	}
	raw, _ := hex.DecodeString(env.Data)
	var data struct{ OrganizationID string }
	if err := json.Unmarshal(raw, &data); err != nil || data.OrganizationID != sandbox.SandboxOrganizationID {
		t.Errorf("export: organizationId %q (%v), want %q", data.OrganizationID, err, sandbox.SandboxOrganizationID)
	}
}

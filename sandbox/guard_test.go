package sandbox_test

import (
	"testing"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/sandbox"
)

// TestPlatformTreeGuard: the platform tree acts on the platform's own live
// accounts only. A deleted platform account is not found there, as on the
// customer tree, instead of answering for its INACTIVE status; a
// customer's account is not found either.
func TestPlatformTreeGuard(t *testing.T) {
	e := newEnv(t)
	body := evmWallet("78")
	body["customerId"] = nil
	var w sandbox.ExternalAccount
	e.do("POST", "/platform/external-accounts", body).ok(t, 201, &w)
	if err := e.sim.DeleteExternalAccount(t.Context(), w.ID); err != nil {
		t.Fatal(err)
	}
	for _, op := range []string{"challenge", "verify"} {
		e.do("POST", "/platform/external-accounts/"+w.ID+"/"+op, map[string]string{"method": "WALLET_SIGNATURE", "signature": "0x00"}).
			fails(t, 404, apierror.ReferenceNotFound)
	}
	cust, _ := e.customer("Platform Guard")
	a := e.external(cust.ID, evmWallet("79"))
	e.do("POST", "/platform/external-accounts/"+a.ID+"/challenge", map[string]string{"method": "WALLET_SIGNATURE"}).
		fails(t, 404, apierror.ReferenceNotFound)
}

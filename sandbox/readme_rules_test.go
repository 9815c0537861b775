package sandbox_test

import (
	"slices"
	"testing"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/walletauth"
	"github.com/walletgate/walletgate/walletauth/passkey"
)

// TestStatusEventsOverHTTP: the EXTERNAL_ACCOUNT.STATUS_UPDATED events a
// wallet's life writes, in order, all under the external account's id (the
// unit of ordering): the starting status, UNVERIFIED after a failed proof,
// PENDING_OWNERSHIP_VERIFICATION after the new challenge that re-opens it
// (a challenge on a pending wallet writes nothing), ACTIVE after a proof,
// INACTIVE on delete.
func TestStatusEventsOverHTTP(t *testing.T) {
	e := newEnv(t)
	c, _ := e.customer("Event Order")
	w := e.external(c.ID, evmWallet("ee1"))
	path := "/customers/external-accounts/" + w.ID
	e.do("POST", path+"/challenge", map[string]string{"method": "WALLET_SIGNATURE"}).ok(t, 201, nil)
	e.do("POST", path+"/verify", map[string]string{"signature": "0x00"}).fails(t, 400, apierror.InvalidInput)
	e.do("POST", path+"/challenge", map[string]string{"method": "WALLET_SIGNATURE"}).ok(t, 201, nil)
	e.do("POST", path+"/challenge", map[string]string{"method": "WALLET_SIGNATURE"}).ok(t, 201, nil)
	e.do("DELETE", path, nil).ok(t, 204, nil)
	want := []string{"PENDING_OWNERSHIP_VERIFICATION", "UNVERIFIED", "PENDING_OWNERSHIP_VERIFICATION", "INACTIVE"}
	if got := statusEvents(t, e, w.ID); !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
}

// TestWalletEventsOrderedByWallet: walletauth's events are ordered under
// the embedded wallet's id (InternalAccount), the accountId of their data.
func TestWalletEventsOrderedByWallet(t *testing.T) {
	e := newEnv(t)
	_, wallet := e.customer("Wallet Events")
	e.login(wallet)
	var types []string
	err := e.sim.Store().Atomic(t.Context(), func(tx storage.Tx) error {
		events, err := tx.Outbox().ListByAccount(t.Context(), wallet)
		for _, ev := range events {
			types = append(types, ev.Type)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(types, walletauth.EventCredentialAdded) || !slices.Contains(types, walletauth.EventSessionCreated) {
		t.Fatalf("events under the wallet's id: %v", types)
	}
}

// TestPasskeyRegistrationRefusalOrder: a registration sent again (the same
// challenge) is refused for the used challenge (401 UNAUTHORIZED, reason
// "registration challenge already used") before the credential is looked
// up; the same authenticator credential under a fresh challenge is 400
// PASSKEY_CREDENTIAL_ALREADY_EXISTS. Both refusals come on the first leg,
// before any signed-retry challenge.
func TestPasskeyRegistrationRefusalOrder(t *testing.T) {
	e := newEnv(t)
	_, wallet := e.customer("Passkey Order")
	session := e.login(wallet)
	a := newAuthenticator(t)
	body := func(challenge string) map[string]any {
		return map[string]any{"type": "PASSKEY", "accountId": wallet, "nickname": "Laptop",
			"challenge": challenge, "attestation": a.attest(t, challenge, wallet)}
	}
	register := func(challenge string) resp {
		body := body(challenge)
		r := e.do("POST", "/auth/credentials", body)
		var ch struct{ PayloadToSign, RequestID string }
		r.ok(t, 202, &ch)
		sig, err := session.Stamp(ch.PayloadToSign)
		if err != nil {
			t.Fatal(err)
		}
		return e.do("POST", "/auth/credentials", body, "Service-Wallet-Signature", sig, "Request-Id", ch.RequestID)
	}
	challenge := func() string {
		var rc struct{ Challenge string }
		e.do("POST", "/sandbox/passkeys/registration-challenge", map[string]string{"accountId": wallet}).ok(t, 201, &rc)
		return rc.Challenge
	}
	first := challenge()
	register(first).ok(t, 201, nil)
	again := e.do("POST", "/auth/credentials", body(first))
	if f := again.fails(t, 401, apierror.Unauthorized); f.Reason() != passkey.ReasonRegistrationChallengeUsed {
		t.Fatalf("reason %q", f.Reason())
	}
	e.do("POST", "/auth/credentials", body(challenge())).fails(t, 400, apierror.PasskeyCredentialAlreadyExists)
}

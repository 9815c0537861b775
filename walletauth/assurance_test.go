package walletauth_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/memory"
	"github.com/walletgate/walletgate/walletauth"
	"github.com/walletgate/walletgate/walletauth/authclient"
)

// stored reads credential id from the env's store.
func (e *env) stored(t *testing.T, id string) storage.Credential {
	t.Helper()
	var c storage.Credential
	if err := e.store.Atomic(t.Context(), func(tx storage.Tx) error {
		var err error
		c, err = tx.Credentials().Get(t.Context(), id)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return c
}

// revoke revokes credential id through its signed retry, stamped by key.
func (e *env) revoke(t *testing.T, id string, key *authclient.ClientKey) error {
	t.Helper()
	c := call("DELETE", "/auth/credentials/"+id, "")
	ch, err := e.svc.RevokeCredential(t.Context(), id, c)
	if err != nil {
		t.Fatalf("revoke leg 1: %v", err)
	}
	_, err = e.svc.RevokeCredential(t.Context(), id, signed(t, c, ch, key))
	return err
}

// TestPhishedSessionEnrollsNoSecondFactor is the attack of one phished
// EMAIL_OTP session: it registers its own passkey through a signed retry.
// The passkey records its enrolment (by that session and credential, at
// EMAIL_OTP's assurance, until the security-change period ends), so it
// cannot revoke the owner's older EMAIL_OTP credential during the period;
// the owner's EMAIL_OTP can revoke it; and once the period has passed the
// passkey is worth its own type. A passkey enrolled by a passkey session
// carries a passkey's assurance at once, and a credential enrolled by a
// credential still within its period carries what that one carried.
func TestPhishedSessionEnrollsNoSecondFactor(t *testing.T) {
	e := passkeyEnvOn(t, memory.New(), nil)
	otp, phished := e.login(t, e.email.ID, storage.EmailOTP)
	enrolledAt := e.clock.Now()
	pk, a := e.addPasskey(t, phished)

	c := e.stored(t, pk.ID)
	settles := enrolledAt.Add(walletauth.DefaultSecurityChangePeriod)
	want := storage.Enrolment{SessionID: otp.ID, CredentialID: e.email.ID, Origin: e.email.ID, Assurance: storage.EmailOTP, SettlesAt: settles}
	if c.Enrolment != want {
		t.Fatalf("enrolment %+v, want %+v", c.Enrolment, want)
	}
	if c.AssuredAs(e.clock.Now()) != storage.EmailOTP || c.AssuredAs(settles) != storage.Passkey {
		t.Fatalf("assured as %s now, %s at the period's end", c.AssuredAs(e.clock.Now()), c.AssuredAs(settles))
	}

	// The attacker's passkey cannot remove the owner's EMAIL_OTP.
	pkKey := e.passkeySession(t, pk, a)
	err := e.revoke(t, e.email.ID, pkKey)
	fe := apierrortest.Want(t, err, apierror.Forbidden, "")
	if fe.Details["assurance"] != "EMAIL_OTP" || fe.Details["availableAt"] != settles.Format(time.RFC3339) {
		t.Fatalf("refusal details %v", fe.Details)
	}
	if got := e.stored(t, e.email.ID); got.ID != e.email.ID {
		t.Fatal("the EMAIL_OTP credential is gone")
	}

	// A credential the weak passkey enrolls carries EMAIL_OTP's assurance
	// too, and answers to the same origin.
	pk2, _ := e.addPasskey(t, pkKey)
	if c2 := e.stored(t, pk2.ID); c2.Enrolment.Assurance != storage.EmailOTP || c2.Enrolment.Origin != e.email.ID ||
		c2.Enrolment.CredentialID != pk.ID {
		t.Fatalf("second passkey's enrolment %+v", c2.Enrolment)
	}

	// The owner's EMAIL_OTP removes the passkey the attacker added.
	if err := e.revoke(t, pk2.ID, phished); err != nil {
		t.Fatalf("the owner's EMAIL_OTP revoking a passkey: %v", err)
	}

	// Past the period the passkey is worth its own type, may revoke older
	// credentials, and a passkey it enrolls carries a passkey's assurance
	// at once (and answers to it for the period).
	e.clock.Add(walletauth.DefaultSecurityChangePeriod)
	pkKey = e.passkeySession(t, pk, a)
	pk3, _ := e.addPasskey(t, pkKey)
	if c3 := e.stored(t, pk3.ID); c3.Enrolment.Assurance != storage.Passkey || c3.Enrolment.Origin != pk.ID ||
		c3.AssuredAs(e.clock.Now()) != storage.Passkey || c3.OriginAt(e.clock.Now()) != pk.ID {
		t.Fatalf("a passkey enrolled by a settled passkey: %+v", c3.Enrolment)
	}
	if err := e.revoke(t, e.email.ID, pkKey); err != nil {
		t.Fatalf("the settled passkey revoking the EMAIL_OTP: %v", err)
	}
}

// passkeySession logs in with passkey pk and its authenticator a and
// returns the session's key.
func (e *env) passkeySession(t *testing.T, pk *walletauth.AuthMethod, a *authenticator) *authclient.ClientKey {
	t.Helper()
	client := newKey(t)
	cr, err := e.svc.Challenge(t.Context(), pk.ID, walletauth.ChallengeRequest{ClientPublicKey: client.PublicKeyHex()})
	if err != nil {
		t.Fatal(err)
	}
	s, _, err := e.svc.Verify(t.Context(), pk.ID, walletauth.VerifyRequest{Type: storage.Passkey, Assertion: a.assert(t, cr.Challenge)},
		signedretry.Request{Method: "POST", Path: "/auth/credentials/" + pk.ID + "/verify", RequestID: cr.RequestID})
	if err != nil {
		t.Fatal(err)
	}
	return openRefreshed(t, client, s)
}

// TestRefreshKeepsAuthenticationTime: a refresh, signed by the old
// session alone, makes a session authenticated when the old one was: ten
// refreshes 42 minutes after the only assertion leave authenticatedAt at
// the assertion.
func TestRefreshKeepsAuthenticationTime(t *testing.T) {
	e := newEnv(t, nil)
	s, key := e.login(t, e.email.ID, storage.EmailOTP)
	authenticated := s.AuthenticatedAt
	if !authenticated.Equal(e.clock.Now()) {
		t.Fatalf("a login's authenticatedAt %v, want %v", authenticated, e.clock.Now())
	}
	for range 10 {
		e.clock.Add(42 * time.Minute / 10)
		next := newKey(t)
		body, _ := json.Marshal(walletauth.RefreshRequest{ClientPublicKey: next.PublicKeyHex()})
		c := call("POST", "/auth/sessions/"+s.ID+"/refresh", string(body))
		req := walletauth.RefreshRequest{ClientPublicKey: next.PublicKeyHex()}
		_, ch, err := e.svc.RefreshSession(t.Context(), s.ID, req, c)
		if err != nil {
			t.Fatal(err)
		}
		fresh, _, err := e.svc.RefreshSession(t.Context(), s.ID, req, signed(t, c, ch, key))
		if err != nil {
			t.Fatal(err)
		}
		if !fresh.AuthenticatedAt.Equal(authenticated) || !fresh.CreatedAt.Equal(e.clock.Now()) {
			t.Fatalf("refreshed session: authenticated %v created %v; want authenticated %v", fresh.AuthenticatedAt, fresh.CreatedAt, authenticated)
		}
		s, key = fresh, openRefreshed(t, next, fresh)
	}
	var stored storage.Session
	if err := e.store.Atomic(t.Context(), func(tx storage.Tx) error {
		var err error
		stored, err = tx.Sessions().Get(t.Context(), s.ID)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if !stored.Authenticated().Equal(authenticated) || e.clock.Now().Sub(stored.Authenticated()) < 42*time.Minute {
		t.Fatalf("stored session authenticated %v", stored.Authenticated())
	}
}

// openRefreshed returns the key of a refreshed session: the sealed key,
// opened with the client key it was sealed to.
func openRefreshed(t *testing.T, client *authclient.ClientKey, s *walletauth.AuthSession) *authclient.ClientKey {
	t.Helper()
	if s.EncryptedSessionSigningKey == "" {
		return client
	}
	k, err := client.OpenSessionKey(s.EncryptedSessionSigningKey)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestSecurityChangePeriodConfig: the period has a default and bounds.
func TestSecurityChangePeriodConfig(t *testing.T) {
	for _, d := range []time.Duration{-time.Hour, time.Minute, 31 * 24 * time.Hour} {
		cfg := walletauth.Config{Store: memory.New(), Sandbox: true, SecurityChangePeriod: d,
			Keys: walletauth.Keys{SigningKey: testSigningKey, Sealer: testKeyring(t, "k"), CodeMACKey: testCodeMACKey}}
		if _, err := walletauth.New(cfg); err == nil || !strings.Contains(err.Error(), "SecurityChangePeriod") {
			t.Errorf("period %v: %v, want a refusal naming SecurityChangePeriod", d, err)
		}
	}
	e := passkeyEnvOn(t, memory.New(), func(c *walletauth.Config) { c.SecurityChangePeriod = 2 * time.Hour })
	_, key := e.login(t, e.email.ID, storage.EmailOTP)
	pk, _ := e.addPasskey(t, key)
	if c := e.stored(t, pk.ID); !c.Enrolment.SettlesAt.Equal(e.clock.Now().Add(2 * time.Hour)) {
		t.Fatalf("settles at %v with a two-hour period", c.Enrolment.SettlesAt)
	}
}

package passkey_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/descope/virtualwebauthn"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/walletauth/passkey"
)

func TestRegistrationSucceeds(t *testing.T) {
	for _, kt := range []virtualwebauthn.KeyType{virtualwebauthn.KeyTypeEC2, virtualwebauthn.KeyTypeRSA} {
		t.Run(string(kt), func(t *testing.T) {
			v, s := newVerifier(t, nil), newStore()
			rc := issue(t, v, s, account1, t0)
			if rc.AccountID != account1 || !rc.ExpiresAt.Equal(t0.Add(passkey.DefaultRegistrationTTL)) || len(mustB64(t, rc.Challenge)) != 32 {
				t.Fatalf("challenge %+v", rc)
			}
			auth := virtualwebauthn.NewAuthenticatorWithOptions(virtualwebauthn.AuthenticatorOptions{BackupEligible: true, BackupState: true})
			cred := newCredential(t, kt)
			att := virtualAttestation(t, virtualRP, auth, cred, rc.Challenge, account1)
			reg, err := register(v, s, passkey.RegistrationRequest{AccountID: account1, Nickname: "  iPhone Face-ID ", Challenge: rc.Challenge, Attestation: att}, t0.Add(time.Minute))
			if err != nil {
				t.Fatalf("VerifyRegistration: %v", err)
			}
			c := reg.Credential
			if reg.AccountID != account1 || reg.Nickname != "iPhone Face-ID" || reg.AttestationFormat != "packed" {
				t.Errorf("registration %+v", reg)
			}
			if !bytes.Equal(c.CredentialID, cred.ID) || len(c.PublicKey) == 0 || !bytes.Equal(c.AAGUID, auth.Aaguid[:]) ||
				!c.UserPresent || !c.UserVerified || !c.BackupEligible || !c.BackupState || c.CloneWarning || c.SignCount != 0 ||
				strings.Join(c.Transports, ",") != "internal,hybrid" || c.AttestationType == "" {
				t.Errorf("credential %+v", c)
			}
		})
	}
}

func TestRegistrationNoneFormatEdDSA(t *testing.T) {
	v, s := newVerifier(t, nil), newStore()
	rc := issue(t, v, s, account1, t0)
	a := newEdAuthenticator(t)
	a.counter = 7
	reg, err := register(v, s, passkey.RegistrationRequest{AccountID: account1, Nickname: "Ключ (YubiKey) 5", Challenge: rc.Challenge, Attestation: a.attest(rc.Challenge)}, t0)
	if err != nil {
		t.Fatalf("VerifyRegistration: %v", err)
	}
	if reg.AttestationFormat != "none" || reg.Credential.AttestationType != "none" || reg.Credential.SignCount != 7 || !bytes.Equal(reg.Credential.CredentialID, a.id) {
		t.Errorf("registration %+v %+v", reg, reg.Credential)
	}
}

func TestRegistrationChallengeLifecycle(t *testing.T) {
	v, s := newVerifier(t, nil, func(c *passkey.Config) { c.RegistrationTTL = 2 * time.Minute }), newStore()
	auth := virtualwebauthn.NewAuthenticator()
	req := func(rc *passkey.RegistrationChallenge, account string) passkey.RegistrationRequest {
		cred := newCredential(t, virtualwebauthn.KeyTypeEC2)
		return passkey.RegistrationRequest{AccountID: account, Nickname: "Laptop", Challenge: rc.Challenge,
			Attestation: virtualAttestation(t, virtualRP, auth, cred, rc.Challenge, account)}
	}

	t.Run("reuse", func(t *testing.T) {
		rc := issue(t, v, s, account1, t0)
		if _, err := register(v, s, req(rc, account1), t0); err != nil {
			t.Fatal(err)
		}
		_, err := register(v, s, req(rc, account1), t0)
		apierrortest.Want(t, err, apierror.Unauthorized, passkey.ReasonRegistrationChallengeUsed)
	})
	t.Run("expiry", func(t *testing.T) {
		rc := issue(t, v, s, account1, t0)
		_, err := register(v, s, req(rc, account1), t0.Add(2*time.Minute))
		apierrortest.Want(t, err, apierror.Unauthorized, passkey.ReasonRegistrationChallengeExpired)
		if _, err := register(v, s, req(rc, account1), t0.Add(2*time.Minute-time.Second)); err != nil {
			t.Fatalf("before expiry: %v", err)
		}
	})
	t.Run("another account", func(t *testing.T) {
		rc := issue(t, v, s, account2, t0)
		_, err := register(v, s, req(rc, account1), t0)
		apierrortest.Want(t, err, apierror.Unauthorized, passkey.ReasonRegistrationChallengeAccount)
		// The failed attempt rolled back: the owner can still use it.
		if _, err := register(v, s, req(rc, account2), t0); err != nil {
			t.Fatalf("owner after a foreign attempt: %v", err)
		}
	})
	t.Run("unknown", func(t *testing.T) {
		rc := &passkey.RegistrationChallenge{Challenge: base64.RawURLEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))}
		_, err := register(v, s, req(rc, account1), t0)
		apierrortest.Want(t, err, apierror.Unauthorized, passkey.ReasonRegistrationChallengeUnknown)
	})
	t.Run("failed verification keeps the challenge", func(t *testing.T) {
		rc := issue(t, v, s, account1, t0)
		bad := req(rc, account1)
		bad.Attestation = virtualAttestation(t, virtualwebauthn.RelyingParty{ID: testRPID, Origin: "https://evil.example"},
			auth, newCredential(t, virtualwebauthn.KeyTypeEC2), rc.Challenge, account1)
		_, err := register(v, s, bad, t0)
		apierrortest.Want(t, err, apierror.Unauthorized, passkey.ReasonOriginNotAllowed)
		if _, err := register(v, s, req(rc, account1), t0); err != nil {
			t.Fatalf("after a rolled-back failure: %v", err)
		}
	})
	t.Run("bounded per account", func(t *testing.T) {
		bounded := newVerifier(t, nil, func(c *passkey.Config) { c.MaxRegistrationChallenges = 2 })
		first := issue(t, bounded, s, account2, t0)
		second := issue(t, bounded, s, account2, t0.Add(time.Second))
		issue(t, bounded, s, account2, t0.Add(2*time.Second)) // supersedes the oldest
		_, err := register(bounded, s, req(first, account2), t0.Add(3*time.Second))
		apierrortest.Want(t, err, apierror.Unauthorized, passkey.ReasonRegistrationChallengeUnknown)
		if _, err := register(bounded, s, req(second, account2), t0.Add(3*time.Second)); err != nil {
			t.Fatalf("a challenge within the bound: %v", err)
		}
	})
	t.Run("challenge field differs from the signed one", func(t *testing.T) {
		a, b := issue(t, v, s, account1, t0), issue(t, v, s, account1, t0)
		r := req(b, account1)
		r.Challenge = a.Challenge
		_, err := register(v, s, r, t0)
		apierrortest.Want(t, err, apierror.Unauthorized, passkey.ReasonChallengeMismatch)
	})
}

func TestRegistrationChecks(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*passkey.RelyingParty)
		rp     virtualwebauthn.RelyingParty
		opts   virtualwebauthn.AuthenticatorOptions
		reason string
	}{
		{"wrong origin", nil, virtualwebauthn.RelyingParty{ID: testRPID, Origin: "https://wallet.example.com.evil.example"}, virtualwebauthn.AuthenticatorOptions{}, passkey.ReasonOriginNotAllowed},
		{"wrong RP id", nil, virtualwebauthn.RelyingParty{ID: "example.com", Origin: testOrigin}, virtualwebauthn.AuthenticatorOptions{}, passkey.ReasonRPIDMismatch},
		{"no user presence", nil, virtualRP, virtualwebauthn.AuthenticatorOptions{UserNotPresent: true}, passkey.ReasonUserNotPresent},
		{"UV required but absent", func(rp *passkey.RelyingParty) { rp.RequireUserVerification = true }, virtualRP, virtualwebauthn.AuthenticatorOptions{UserNotVerified: true}, passkey.ReasonUserNotVerified},
		{"backup state without eligibility", nil, virtualRP, virtualwebauthn.AuthenticatorOptions{BackupState: true}, passkey.ReasonBackupFlags},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v, s := newVerifier(t, tc.mutate), newStore()
			rc := issue(t, v, s, account1, t0)
			att := virtualAttestation(t, tc.rp, virtualwebauthn.NewAuthenticatorWithOptions(tc.opts), newCredential(t, virtualwebauthn.KeyTypeEC2), rc.Challenge, account1)
			_, err := register(v, s, passkey.RegistrationRequest{AccountID: account1, Nickname: "Key", Challenge: rc.Challenge, Attestation: att}, t0)
			apierrortest.Want(t, err, apierror.Unauthorized, tc.reason)
		})
	}
	t.Run("UV not required", func(t *testing.T) {
		v, s := newVerifier(t, nil), newStore()
		rc := issue(t, v, s, account1, t0)
		att := virtualAttestation(t, virtualRP, virtualwebauthn.NewAuthenticatorWithOptions(virtualwebauthn.AuthenticatorOptions{UserNotVerified: true}), newCredential(t, virtualwebauthn.KeyTypeEC2), rc.Challenge, account1)
		reg, err := register(v, s, passkey.RegistrationRequest{AccountID: account1, Nickname: "Key", Challenge: rc.Challenge, Attestation: att}, t0)
		if err != nil || reg.Credential.UserVerified {
			t.Fatalf("registration without UV: %v %+v", err, reg)
		}
	})

	ed := func(t *testing.T, change func(*edAuthenticator), reason string) {
		v, s := newVerifier(t, nil), newStore()
		rc := issue(t, v, s, account1, t0)
		a := newEdAuthenticator(t)
		change(a)
		_, err := register(v, s, passkey.RegistrationRequest{AccountID: account1, Nickname: "Key", Challenge: rc.Challenge, Attestation: a.attest(rc.Challenge)}, t0)
		apierrortest.Want(t, err, apierror.Unauthorized, reason)
	}
	t.Run("type webauthn.get", func(t *testing.T) {
		ed(t, func(a *edAuthenticator) { a.typ = "webauthn.get" }, passkey.ReasonClientDataType)
	})
	t.Run("cross origin", func(t *testing.T) {
		ed(t, func(a *edAuthenticator) { a.crossOrigin = true }, passkey.ReasonCrossOrigin)
	})

	t.Run("rawId differs from the attested id", func(t *testing.T) {
		v, s := newVerifier(t, nil), newStore()
		rc := issue(t, v, s, account1, t0)
		att := newEdAuthenticator(t).attest(rc.Challenge)
		att.CredentialID = base64.RawURLEncoding.EncodeToString([]byte("another id"))
		_, err := register(v, s, passkey.RegistrationRequest{AccountID: account1, Nickname: "Key", Challenge: rc.Challenge, Attestation: att}, t0)
		apierrortest.Want(t, err, apierror.Unauthorized, passkey.ReasonCredentialIDMismatch)
	})
	t.Run("tampered attestation signature", func(t *testing.T) {
		v, s := newVerifier(t, nil), newStore()
		rc := issue(t, v, s, account1, t0)
		att := virtualAttestation(t, virtualRP, virtualwebauthn.NewAuthenticator(), newCredential(t, virtualwebauthn.KeyTypeEC2), rc.Challenge, account1)
		// Swap the client data for another with the same challenge: the
		// packed self-attestation no longer covers it.
		cd := mustB64(t, att.ClientDataJSON)
		cd = bytes.Replace(cd, []byte(`"type"`), []byte(` "type"`), 1)
		att.ClientDataJSON = base64.RawURLEncoding.EncodeToString(cd)
		_, err := register(v, s, passkey.RegistrationRequest{AccountID: account1, Nickname: "Key", Challenge: rc.Challenge, Attestation: att}, t0)
		apierrortest.Want(t, err, apierror.Unauthorized, passkey.ReasonAttestationInvalid)
	})
}

func TestRegistrationDuplicateCredential(t *testing.T) {
	v, s := newVerifier(t, nil), newStore()
	auth := virtualwebauthn.NewAuthenticator()
	cred := newCredential(t, virtualwebauthn.KeyTypeEC2)
	rc := issue(t, v, s, account1, t0)
	reg, err := register(v, s, passkey.RegistrationRequest{AccountID: account1, Nickname: "One", Challenge: rc.Challenge, Attestation: virtualAttestation(t, virtualRP, auth, cred, rc.Challenge, account1)}, t0)
	if err != nil {
		t.Fatal(err)
	}
	store(t, s, reg)
	for _, acct := range []string{account1, account2} {
		rc := issue(t, v, s, acct, t0)
		_, err = register(v, s, passkey.RegistrationRequest{AccountID: acct, Nickname: "Two", Challenge: rc.Challenge, Attestation: virtualAttestation(t, virtualRP, auth, cred, rc.Challenge, acct)}, t0)
		apierrortest.Want(t, err, apierror.PasskeyCredentialAlreadyExists, "")
	}
	// A second, distinct passkey on the same account is fine.
	rc = issue(t, v, s, account1, t0)
	if _, err := register(v, s, passkey.RegistrationRequest{AccountID: account1, Nickname: "Three", Challenge: rc.Challenge,
		Attestation: virtualAttestation(t, virtualRP, auth, newCredential(t, virtualwebauthn.KeyTypeEC2), rc.Challenge, account1)}, t0); err != nil {
		t.Fatalf("second passkey: %v", err)
	}
}

func TestRegistrationMalformedInput(t *testing.T) {
	v, s := newVerifier(t, nil), newStore()
	rc := issue(t, v, s, account1, t0)
	good := virtualAttestation(t, virtualRP, virtualwebauthn.NewAuthenticator(), newCredential(t, virtualwebauthn.KeyTypeEC2), rc.Challenge, account1)

	_, err := register(v, s, passkey.RegistrationRequest{Nickname: " ", Challenge: "a+b", Attestation: passkey.Attestation{
		CredentialID: "", ClientDataJSON: "x\ny", AttestationObject: "!!", Transports: []string{"usb", "carrier-pigeon"}}}, t0)
	wantFields(t, err, "nickname", "accountId", "challenge", "attestation.credentialId", "attestation.clientDataJson",
		"attestation.attestationObject", "attestation.transports[1]")

	_, err = register(v, s, passkey.RegistrationRequest{AccountID: account1, Nickname: "Key", Challenge: "AAAA", Attestation: good}, t0)
	wantFields(t, err, "challenge")

	bad := good
	bad.ClientDataJSON = base64.RawURLEncoding.EncodeToString([]byte(`["not","an","object"]`))
	_, err = register(v, s, passkey.RegistrationRequest{AccountID: account1, Nickname: "Key", Challenge: rc.Challenge, Attestation: bad}, t0)
	wantFields(t, err, "attestation.clientDataJson")

	bad = good
	bad.AttestationObject = base64.RawURLEncoding.EncodeToString([]byte{0xa1, 0x63, 'f', 'm', 't'})
	_, err = register(v, s, passkey.RegistrationRequest{AccountID: account1, Nickname: "Key", Challenge: rc.Challenge, Attestation: bad}, t0)
	wantFields(t, err, "attestation.attestationObject")

	// None of the malformed requests consumed the challenge.
	if _, err := register(v, s, passkey.RegistrationRequest{AccountID: account1, Nickname: "Key", Challenge: rc.Challenge, Attestation: good}, t0); err != nil {
		t.Fatalf("after malformed requests: %v", err)
	}
}

func TestIssueRegistrationChallenge(t *testing.T) {
	v, s := newVerifier(t, nil, func(c *passkey.Config) { c.Rand = bytes.NewReader(bytes.Repeat([]byte{1}, 32)) }), newStore()
	err := atomic(t, s, func(tx storage.Tx) error {
		_, err := v.IssueRegistrationChallenge(context.Background(), tx, "", t0)
		return err
	})
	wantFields(t, err, "accountId")
	rc := issue(t, v, s, account1, t0)
	if rc.Challenge != base64.RawURLEncoding.EncodeToString(bytes.Repeat([]byte{1}, 32)) {
		t.Errorf("challenge %q does not come from the injected randomness", rc.Challenge)
	}
	err = atomic(t, s, func(tx storage.Tx) error {
		_, err := v.IssueRegistrationChallenge(context.Background(), tx, account1, t0)
		return err
	})
	apierrortest.Want(t, err, apierror.InternalError, "")
}

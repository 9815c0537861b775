package storagetest

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/walletgate/walletgate/storage"
)

func newExternal(t *testing.T, customer string) storage.ExternalAccount {
	return storage.ExternalAccount{
		ID:            id(t, "ExternalAccount"),
		CustomerID:    customer,
		Status:        storage.StatusPendingOwnershipVerification,
		OwnershipType: "FIRST_PARTY",
		Currency:      "USDC",
		AccountType:   "ETHEREUM_WALLET",
		Address:       "0x52908400098527886E0F7030069857D2E4169EE7",
		Info:          json.RawMessage(`{"accountType":"ETHEREUM_WALLET","address":"0x52908400098527886E0F7030069857D2E4169EE7"}`),
		CreatedAt:     t0,
		UpdatedAt:     t0,
	}
}

func testExternalAccounts(t *testing.T, newStore Factory) {
	ctx := t.Context()
	s := newStore(t)
	cust, other := id(t, "Customer"), id(t, "Customer")
	a, b, c := newExternal(t, cust), newExternal(t, cust), newExternal(t, other)
	a.Tenant = "tenant-a"
	run(t, s, func(tx storage.Tx) error {
		r := tx.ExternalAccounts()
		for _, x := range []*storage.ExternalAccount{&a, &b, &c} {
			wantErr(t, "Create", r.Create(ctx, x), nil)
			if x.Version != 1 {
				t.Fatalf("Create set Version %d, want 1", x.Version)
			}
		}
		dup := a
		wantErr(t, "Create duplicate id", r.Create(ctx, &dup), storage.ErrDuplicate)
		return nil
	})
	run(t, s, func(tx storage.Tx) error {
		r := tx.ExternalAccounts()
		got, err := r.Get(ctx, a.ID)
		wantErr(t, "Get", err, nil)
		diff(t, "Get", got, a)
		_, err = r.Get(ctx, "ExternalAccount:unknown")
		wantErr(t, "Get unknown", err, storage.ErrNotFound)

		list, err := r.ListByCustomer(ctx, cust)
		wantErr(t, "ListByCustomer", err, nil)
		diff(t, "ListByCustomer", list, []storage.ExternalAccount{a, b})
		list, err = r.ListByCustomer(ctx, id(t, "Customer"))
		wantErr(t, "ListByCustomer unknown", err, nil)
		if len(list) != 0 {
			t.Fatalf("ListByCustomer of an unknown customer returned %d accounts", len(list))
		}

		// Mutating what Get returned must not reach the store.
		got.Info[0] = 'X'
		again, _ := r.Get(ctx, a.ID)
		diff(t, "Get after caller mutation", again, a)

		upd := a
		upd.Status = storage.StatusActive
		upd.UpdatedAt = t0.Add(time.Minute)
		upd.Tenant = "another" // kept as stored, and set back on upd
		wantErr(t, "Update", r.Update(ctx, &upd), nil)
		if upd.Version != 2 || upd.Tenant != a.Tenant {
			t.Fatalf("Update set Version %d and Tenant %q, want 2 and the stored %q", upd.Version, upd.Tenant, a.Tenant)
		}
		stale := a // still Version 1
		stale.Status = storage.StatusUnverified
		wantErr(t, "Update with a stale version", r.Update(ctx, &stale), storage.ErrConflict)
		got, _ = r.Get(ctx, a.ID)
		diff(t, "Get after Update", got, upd)

		ghost := newExternal(t, cust)
		ghost.Version = 1
		wantErr(t, "Update unknown", r.Update(ctx, &ghost), storage.ErrNotFound)
		return nil
	})
}

func testChallenges(t *testing.T, newStore Factory) {
	ctx := t.Context()
	s := newStore(t)
	acct := id(t, "ExternalAccount")
	c1 := storage.OwnershipChallenge{ID: id(t, "Challenge"), AccountID: acct, Method: "WALLET_SIGNATURE",
		Message: "sign this\nnonce: 1", Nonce: "1", IssuedAt: t0, ExpiresAt: t0.Add(30 * time.Minute)}
	c2 := c1
	c2.ID, c2.Nonce, c2.Message = id(t, "Challenge"), "2", "sign this\nnonce: 2"
	run(t, s, func(tx storage.Tx) error {
		r := tx.Challenges()
		_, err := r.Get(ctx, acct)
		wantErr(t, "Get before Put", err, storage.ErrNotFound)
		wantErr(t, "Put", r.Put(ctx, &c1), nil)
		got, err := r.Get(ctx, acct)
		wantErr(t, "Get", err, nil)
		diff(t, "Get", got, c1)
		wantErr(t, "Put superseding", r.Put(ctx, &c2), nil)
		got, _ = r.Get(ctx, acct)
		diff(t, "Get after supersede", got, c2)
		_, err = r.Consume(ctx, acct, c1.ID)
		wantErr(t, "Consume superseded", err, storage.ErrNotFound)
		got, err = r.Consume(ctx, acct, c2.ID)
		wantErr(t, "Consume", err, nil)
		diff(t, "Consume", got, c2)
		_, err = r.Consume(ctx, acct, c2.ID)
		wantErr(t, "Consume twice", err, storage.ErrNotFound)
		_, err = r.Get(ctx, acct)
		wantErr(t, "Get after Consume", err, storage.ErrNotFound)
		return nil
	})
}

func testInternalAccounts(t *testing.T, newStore Factory) {
	ctx := t.Context()
	s := newStore(t)
	cust := id(t, "Customer")
	a := storage.InternalAccount{ID: id(t, "InternalAccount"), CustomerID: cust, Tenant: "tenant-a", Email: "ada@example.com",
		Phone: "+14155550123", CreatedAt: t0, UpdatedAt: t0}
	b := a
	b.ID, b.CustomerID, b.Tenant = id(t, "InternalAccount"), id(t, "Customer"), ""
	run(t, s, func(tx storage.Tx) error {
		r := tx.InternalAccounts()
		wantErr(t, "Create", r.Create(ctx, &a), nil)
		wantErr(t, "Create other", r.Create(ctx, &b), nil)
		dup := a
		wantErr(t, "Create duplicate", r.Create(ctx, &dup), storage.ErrDuplicate)
		got, err := r.Get(ctx, a.ID)
		wantErr(t, "Get", err, nil)
		diff(t, "Get", got, a)
		_, err = r.Get(ctx, id(t, "InternalAccount"))
		wantErr(t, "Get unknown", err, storage.ErrNotFound)
		list, err := r.ListByCustomer(ctx, cust)
		wantErr(t, "ListByCustomer", err, nil)
		diff(t, "ListByCustomer", list, []storage.InternalAccount{a})

		upd := a
		upd.Email = "ada@lovelace.example"
		upd.SecurityChangedAt = t0.Add(time.Hour)
		upd.Tenant = "another" // kept as stored, and set back on upd
		wantErr(t, "Update", r.Update(ctx, &upd), nil)
		if upd.Tenant != a.Tenant {
			t.Fatalf("Update set Tenant %q, want the stored %q", upd.Tenant, a.Tenant)
		}
		stale := a
		wantErr(t, "Update stale", r.Update(ctx, &stale), storage.ErrConflict)
		got, _ = r.Get(ctx, a.ID)
		diff(t, "Get after Update", got, upd)
		ghost := storage.InternalAccount{ID: id(t, "InternalAccount"), Version: 1}
		wantErr(t, "Update unknown", r.Update(ctx, &ghost), storage.ErrNotFound)
		return nil
	})
	// The owner of a credential and of a session, read in one call.
	c := emailCred(t, b.ID, "b@example.com")
	sess := storage.Session{ID: id(t, "Session"), AccountID: b.ID, CredentialID: c.ID,
		PublicKey: append([]byte{2}, make([]byte, 32)...), CreatedAt: t0, ExpiresAt: t0.Add(time.Minute)}
	run(t, s, func(tx storage.Tx) error {
		return errors.Join(tx.Credentials().Create(ctx, &c), tx.Sessions().Create(ctx, &sess))
	})
	run(t, s, func(tx storage.Tx) error {
		r := tx.InternalAccounts()
		got, err := r.OfCredential(ctx, c.ID)
		wantErr(t, "OfCredential", err, nil)
		diff(t, "OfCredential", got, b)
		got, err = r.OfSession(ctx, sess.ID)
		wantErr(t, "OfSession", err, nil)
		diff(t, "OfSession", got, b)
		_, err = r.OfCredential(ctx, id(t, "AuthMethod"))
		wantErr(t, "OfCredential unknown", err, storage.ErrNotFound)
		_, err = r.OfSession(ctx, id(t, "Session"))
		wantErr(t, "OfSession unknown", err, storage.ErrNotFound)
		_, err = r.OfSession(ctx, "not an id")
		wantErr(t, "OfSession of a malformed id", err, storage.ErrNotFound)
		return nil
	})
}

func emailCred(t *testing.T, acct, email string) storage.Credential {
	return storage.Credential{ID: id(t, "AuthMethod"), AccountID: acct, Type: storage.EmailOTP,
		Nickname: email, Email: email, CreatedAt: t0, UpdatedAt: t0}
}

func passkeyCred(t *testing.T, acct string, rawID []byte) storage.Credential {
	return storage.Credential{ID: id(t, "AuthMethod"), AccountID: acct, Type: storage.Passkey,
		Nickname: "iPhone", CreatedAt: t0, UpdatedAt: t0,
		WebAuthn: &storage.WebAuthnCredential{CredentialID: rawID, PublicKey: []byte{0xa5, 1, 2, 3, 0x26},
			AttestationType: "none", AAGUID: make([]byte, 16), SignCount: 7, Transports: []string{"internal", "hybrid"},
			UserPresent: true, UserVerified: true}}
}

func oauthCred(t *testing.T, acct, sub string) storage.Credential {
	return storage.Credential{ID: id(t, "AuthMethod"), AccountID: acct, Type: storage.OAuth,
		Nickname: "ada@example.com", CreatedAt: t0, UpdatedAt: t0,
		OAuth: &storage.OAuthIdentity{Issuer: "https://accounts.google.com", Audience: "client-1", Subject: sub}}
}

func testCredentials(t *testing.T, newStore Factory) {
	ctx := t.Context()
	s := newStore(t)
	acct, other := id(t, "InternalAccount"), id(t, "InternalAccount")
	email := emailCred(t, acct, "ada@example.com")
	sms := storage.Credential{ID: id(t, "AuthMethod"), AccountID: acct, Type: storage.SMSOTP,
		Nickname: "+14155550123", Phone: "+14155550123", CreatedAt: t0.Add(time.Second), UpdatedAt: t0}
	pk := passkeyCred(t, acct, []byte("credential-raw-id-1"))
	// Every field of an enrolment is kept.
	pk.Enrolment = storage.Enrolment{SessionID: id(t, "Session"), CredentialID: email.ID, Origin: email.ID,
		Assurance: storage.EmailOTP, SettlesAt: t0.Add(24 * time.Hour)}
	oa := oauthCred(t, acct, "sub-1")
	otherEmail := emailCred(t, other, "ada@example.com")
	otherEmail.CreatedAt = t0.Add(time.Hour)

	run(t, s, func(tx storage.Tx) error {
		r := tx.Credentials()
		for _, c := range []*storage.Credential{&email, &sms, &pk, &oa, &otherEmail} {
			wantErr(t, "Create "+string(c.Type), r.Create(ctx, c), nil)
			if c.Version != 1 {
				t.Fatalf("Create set Version %d, want 1", c.Version)
			}
		}
		secondEmail := emailCred(t, acct, "other@example.com")
		wantErr(t, "second EMAIL_OTP on an account", r.Create(ctx, &secondEmail), storage.ErrDuplicate)
		secondSMS := sms
		secondSMS.ID = id(t, "AuthMethod")
		wantErr(t, "second SMS_OTP on an account", r.Create(ctx, &secondSMS), storage.ErrDuplicate)
		samePasskey := passkeyCred(t, other, []byte("credential-raw-id-1"))
		wantErr(t, "WebAuthn id registered on another account", r.Create(ctx, &samePasskey), storage.ErrDuplicate)
		// Another tenant's rules are its own: the same WebAuthn id and the
		// same address are no clash there.
		tenantB := id(t, "InternalAccount")
		otherTenantPasskey := passkeyCred(t, tenantB, []byte("credential-raw-id-1"))
		otherTenantPasskey.Tenant = "tenant-b"
		wantErr(t, "WebAuthn id registered in another tenant", r.Create(ctx, &otherTenantPasskey), nil)
		otherTenantEmail := emailCred(t, tenantB, "ada@example.com")
		otherTenantEmail.Tenant = "tenant-b"
		wantErr(t, "address tied in another tenant", r.Create(ctx, &otherTenantEmail), nil)
		samePasskeyB := passkeyCred(t, id(t, "InternalAccount"), []byte("credential-raw-id-1"))
		samePasskeyB.Tenant = "tenant-b"
		wantErr(t, "WebAuthn id registered twice in tenant-b", r.Create(ctx, &samePasskeyB), storage.ErrDuplicate)
		sameOAuth := oauthCred(t, acct, "sub-1")
		wantErr(t, "same OAuth identity twice", r.Create(ctx, &sameOAuth), storage.ErrDuplicate)
		dupID := pk
		dupID.WebAuthn = &storage.WebAuthnCredential{CredentialID: []byte("fresh")}
		wantErr(t, "duplicate credential id", r.Create(ctx, &dupID), storage.ErrDuplicate)

		// Several passkeys and several OAuth identities are fine.
		pk2 := passkeyCred(t, acct, []byte("credential-raw-id-2"))
		wantErr(t, "second passkey", r.Create(ctx, &pk2), nil)
		oa2 := oauthCred(t, acct, "sub-2")
		wantErr(t, "second OAuth identity", r.Create(ctx, &oa2), nil)

		got, err := r.Get(ctx, pk.ID)
		wantErr(t, "Get", err, nil)
		diff(t, "Get passkey", got, pk)
		got.WebAuthn.CredentialID[0] = 'X'
		got.OAuth = nil
		again, _ := r.Get(ctx, pk.ID)
		diff(t, "Get after caller mutation", again, pk)
		_, err = r.Get(ctx, id(t, "AuthMethod"))
		wantErr(t, "Get unknown", err, storage.ErrNotFound)

		list, err := r.ListByAccount(ctx, acct)
		wantErr(t, "ListByAccount", err, nil)
		diff(t, "ListByAccount", list, []storage.Credential{email, sms, pk, oa, pk2, oa2})
		list, err = r.ListByAccount(ctx, id(t, "InternalAccount"))
		wantErr(t, "ListByAccount unknown", err, nil)
		if len(list) != 0 {
			t.Fatalf("ListByAccount of an unknown account returned %d", len(list))
		}

		found, err := r.FindByWebAuthnID(ctx, "", []byte("credential-raw-id-2"))
		wantErr(t, "FindByWebAuthnID", err, nil)
		diff(t, "FindByWebAuthnID", found, pk2)
		_, err = r.FindByWebAuthnID(ctx, "", []byte("nope"))
		wantErr(t, "FindByWebAuthnID unknown", err, storage.ErrNotFound)
		found, err = r.FindByWebAuthnID(ctx, "tenant-b", []byte("credential-raw-id-1"))
		wantErr(t, "FindByWebAuthnID in tenant-b", err, nil)
		diff(t, "FindByWebAuthnID in tenant-b", found, otherTenantPasskey)
		_, err = r.FindByWebAuthnID(ctx, "tenant-b", []byte("credential-raw-id-2"))
		wantErr(t, "FindByWebAuthnID of the empty tenant's id in tenant-b", err, storage.ErrNotFound)

		tied, err := r.ListEmailOTPByEmail(ctx, "", "ada@example.com")
		wantErr(t, "ListEmailOTPByEmail", err, nil)
		diff(t, "ListEmailOTPByEmail", tied, []storage.Credential{email, otherEmail})
		tied, err = r.ListEmailOTPByEmail(ctx, "tenant-b", "ada@example.com")
		wantErr(t, "ListEmailOTPByEmail in tenant-b", err, nil)
		diff(t, "ListEmailOTPByEmail in tenant-b", tied, []storage.Credential{otherTenantEmail})

		// Sign counter update by compare-and-set.
		upd := pk
		upd.WebAuthn = &storage.WebAuthnCredential{}
		*upd.WebAuthn = *pk.WebAuthn
		upd.WebAuthn.SignCount = 8
		wantErr(t, "Update", r.Update(ctx, &upd), nil)
		if upd.Version != 2 {
			t.Fatalf("Update set Version %d, want 2", upd.Version)
		}
		stale := pk
		wantErr(t, "Update stale", r.Update(ctx, &stale), storage.ErrConflict)
		got, _ = r.Get(ctx, pk.ID)
		diff(t, "Get after Update", got, upd)
		steal := pk2
		steal.WebAuthn = &storage.WebAuthnCredential{CredentialID: []byte("credential-raw-id-1")}
		wantErr(t, "Update to a WebAuthn id in use", r.Update(ctx, &steal), storage.ErrDuplicate)
		// Update keeps the stored tenant, and says so on the record.
		moved := otherTenantEmail
		moved.Tenant, moved.Nickname = "", "renamed"
		wantErr(t, "Update naming another tenant", r.Update(ctx, &moved), nil)
		if moved.Tenant != "tenant-b" {
			t.Fatalf("Update set Tenant %q, want the stored %q", moved.Tenant, "tenant-b")
		}
		got, _ = r.Get(ctx, otherTenantEmail.ID)
		diff(t, "Get after an Update naming another tenant", got, moved)

		wantErr(t, "Delete", r.Delete(ctx, pk.ID), nil)
		wantErr(t, "Delete twice", r.Delete(ctx, pk.ID), storage.ErrNotFound)
		_, err = r.FindByWebAuthnID(ctx, "", []byte("credential-raw-id-1"))
		wantErr(t, "FindByWebAuthnID after Delete", err, storage.ErrNotFound)
		reuse := passkeyCred(t, other, []byte("credential-raw-id-1"))
		wantErr(t, "WebAuthn id free again after Delete", r.Create(ctx, &reuse), nil)
		wantErr(t, "Delete EMAIL_OTP", r.Delete(ctx, email.ID), nil)
		newEmail := emailCred(t, acct, "new@example.com")
		wantErr(t, "EMAIL_OTP again after Delete", r.Create(ctx, &newEmail), nil)
		return nil
	})
}

func testOTPIssuances(t *testing.T, newStore Factory) {
	ctx := t.Context()
	s := newStore(t)
	acct := id(t, "InternalAccount")
	cred := storage.Credential{ID: id(t, "AuthMethod"), AccountID: acct, Type: storage.SMSOTP, Phone: "+14155550100",
		Nickname: "+14155550100", CreatedAt: t0, UpdatedAt: t0}
	o1 := storage.OTPIssuance{ID: id(t, "OTP"), CredentialID: cred.ID, AccountID: acct,
		Code: "123456", TargetKey: []byte{1, 2, 3}, IssuedAt: t0, ExpiresAt: t0.Add(5 * time.Minute)}
	o2 := o1
	o2.ID, o2.Code = id(t, "OTP"), "654321"
	attempt := &storage.OTPAttempt{Limit: 5, Now: t0, Key: "budget:" + cred.ID, Window: time.Minute, Budget: 10}
	run(t, s, func(tx storage.Tx) error {
		wantErr(t, "Create credential", tx.Credentials().Create(ctx, &cred), nil)
		got, err := Issuance(ctx, tx, cred.ID)
		wantErr(t, "Issuance before Put", err, nil)
		if got != nil {
			t.Fatalf("Issuance before Put read %+v", *got)
		}
		wantErr(t, "Put", tx.OTPIssuances().Put(ctx, &o1), nil)
		got, err = Issuance(ctx, tx, cred.ID)
		wantErr(t, "Issuance", err, nil)
		if got == nil {
			t.Fatal("Issuance after Put read nothing")
		}
		diff(t, "Issuance", *got, o1)

		for want := 1; want <= 2; want++ {
			l, err := tx.Credentials().Lock(ctx, cred.ID, attempt)
			wantErr(t, "Lock with an attempt", err, nil)
			if l.Reserved == nil || l.Reserved.ID != o1.ID || l.Reserved.Attempts != want {
				t.Fatalf("Lock with an attempt reserved %v, want attempt %d of %s", l.Reserved, want, o1.ID)
			}
		}

		wantErr(t, "Put superseding", tx.OTPIssuances().Put(ctx, &o2), nil)
		got, err = Issuance(ctx, tx, cred.ID)
		wantErr(t, "Issuance after supersede", err, nil)
		if got == nil {
			t.Fatal("Issuance after supersede read nothing")
		}
		diff(t, "Issuance after supersede", *got, o2)
		return nil
	})
	// Each failed consumption fails its transaction: one transaction each.
	err := consumeIn(ctx, s, func(tx storage.Tx) error { return tx.OTPIssuances().Consume(ctx, o1.ID, t0) })
	wantConsumeError(t, "Consume superseded", err, o1.ID, storage.ErrNotFound)
	err = consumeIn(ctx, s, func(tx storage.Tx) error { return tx.OTPIssuances().Consume(ctx, o2.ID, o2.ExpiresAt) })
	wantConsumeError(t, "Consume at expiresAt", err, o2.ID, storage.ErrExpired)
	at := o2.ExpiresAt.Add(-time.Microsecond)
	run(t, s, func(tx storage.Tx) error {
		got, err := Issuance(ctx, tx, cred.ID)
		wantErr(t, "Issuance after failed consumptions", err, nil)
		if got == nil || got.ID != o2.ID || !got.ConsumedAt.IsZero() {
			t.Fatalf("Issuance after failed consumptions read %+v, want %s unconsumed", got, o2.ID)
		}
		wantErr(t, "Consume just before expiresAt", tx.OTPIssuances().Consume(ctx, o2.ID, at), nil)
		got, err = Issuance(ctx, tx, cred.ID)
		wantErr(t, "Issuance after Consume", err, nil)
		want := o2
		want.ConsumedAt = at
		if got == nil {
			t.Fatal("Issuance after Consume read nothing")
		}
		diff(t, "Issuance after Consume", *got, want)
		return nil
	})
	err = consumeIn(ctx, s, func(tx storage.Tx) error { return tx.OTPIssuances().Consume(ctx, o2.ID, t0) })
	wantConsumeError(t, "Consume twice", err, o2.ID, storage.ErrConsumed)
}

func testSessions(t *testing.T, newStore Factory) {
	ctx := t.Context()
	s := newStore(t)
	acct, cred, cred2 := id(t, "InternalAccount"), id(t, "AuthMethod"), id(t, "AuthMethod")
	mk := func(credID string, created time.Time, ttl time.Duration) storage.Session {
		return storage.Session{ID: id(t, "Session"), AccountID: acct, CredentialID: credID,
			PublicKey: append([]byte{2}, make([]byte, 32)...), CreatedAt: created, ExpiresAt: created.Add(ttl)}
	}
	live := mk(cred, t0, 15*time.Minute)
	live.AuthenticatedAt = t0.Add(-40 * time.Minute) // refreshed since its ceremony: the time is kept
	expired := mk(cred, t0.Add(-time.Hour), 15*time.Minute)
	fromCred2 := mk(cred2, t0.Add(time.Second), 15*time.Minute)
	foreign := mk(cred, t0, 15*time.Minute)
	foreign.AccountID = id(t, "InternalAccount")
	run(t, s, func(tx storage.Tx) error {
		r := tx.Sessions()
		for _, x := range []*storage.Session{&expired, &live, &fromCred2, &foreign} {
			wantErr(t, "Create", r.Create(ctx, x), nil)
		}
		got, err := r.Get(ctx, expired.ID)
		wantErr(t, "Get expired", err, nil)
		diff(t, "Get", got, expired)
		if got.Active(t0) {
			t.Fatal("expired session reports Active")
		}
		_, err = r.Get(ctx, id(t, "Session"))
		wantErr(t, "Get unknown", err, storage.ErrNotFound)

		act, err := r.ListActive(ctx, acct, t0)
		wantErr(t, "ListActive", err, nil)
		diff(t, "ListActive", act, []storage.Session{live, fromCred2})
		act, _ = r.ListActive(ctx, acct, live.ExpiresAt)
		if len(act) != 1 || act[0].ID != fromCred2.ID {
			t.Fatalf("ListActive at the first expiry = %v, want only the later session", act)
		}

		wantErr(t, "Revoke", r.Revoke(ctx, fromCred2.ID, t0.Add(time.Minute)), nil)
		wantErr(t, "Revoke twice", r.Revoke(ctx, fromCred2.ID, t0.Add(time.Minute)), storage.ErrConflict)
		wantErr(t, "Revoke unknown", r.Revoke(ctx, id(t, "Session"), t0), storage.ErrNotFound)
		got, _ = r.Get(ctx, fromCred2.ID)
		if !got.RevokedAt.Equal(t0.Add(time.Minute)) {
			t.Fatalf("RevokedAt = %v", got.RevokedAt)
		}

		n, err := r.RevokeByCredential(ctx, cred, t0.Add(2*time.Minute))
		wantErr(t, "RevokeByCredential", err, nil)
		if n != 3 { // live, expired (unrevoked) and foreign share the credential id
			t.Fatalf("RevokeByCredential revoked %d, want 3", n)
		}
		n, _ = r.RevokeByCredential(ctx, cred, t0.Add(3*time.Minute))
		if n != 0 {
			t.Fatalf("RevokeByCredential again revoked %d, want 0", n)
		}
		act, _ = r.ListActive(ctx, acct, t0)
		if len(act) != 0 {
			t.Fatalf("ListActive after revocations = %v", act)
		}
		return nil
	})
	// A duplicate id may be reported by Create, by a later statement or by
	// the commit (a deferred write): Atomic fails with ErrDuplicate.
	dupErr := s.Atomic(ctx, func(tx storage.Tx) error {
		dup := live
		return tx.Sessions().Create(ctx, &dup)
	})
	wantErr(t, "Create duplicate", dupErr, storage.ErrDuplicate)
}

func newPending(t *testing.T, acct string) storage.PendingRequest {
	return storage.PendingRequest{ID: id(t, "Request"), Kind: "REVOKE_CREDENTIAL", AccountID: acct,
		Method: "DELETE", Path: "/auth/credentials/AuthMethod:1", BodyDigest: make([]byte, 32),
		Payload: []byte(`{"type":"REVOKE_CREDENTIAL"}`), SignerRule: "OTHER_CREDENTIAL", SignerRef: "AuthMethod:1",
		Data: json.RawMessage(`{"credentialId":"AuthMethod:1"}`), CreatedAt: t0, ExpiresAt: t0.Add(5 * time.Minute)}
}

func testPendingRequests(t *testing.T, newStore Factory) {
	ctx := t.Context()
	s := newStore(t)
	p := newPending(t, id(t, "InternalAccount"))
	run(t, s, func(tx storage.Tx) error { return tx.PendingRequests().Create(ctx, &p, roomy) })
	// A duplicate may be reported by Create, by a later statement or by
	// the commit (a deferred write): Atomic fails with ErrDuplicate.
	dup := p
	err := s.Atomic(ctx, func(tx storage.Tx) error { return tx.PendingRequests().Create(ctx, &dup, roomy) })
	wantErr(t, "Create duplicate", err, storage.ErrDuplicate)
	run(t, s, func(tx storage.Tx) error {
		r := tx.PendingRequests()
		got, err := r.Get(ctx, p.ID)
		wantErr(t, "Get", err, nil)
		diff(t, "Get", got, p)
		got.Payload[0] = 'X'
		again, _ := r.Get(ctx, p.ID)
		diff(t, "Get after caller mutation", again, p)
		_, err = r.Get(ctx, id(t, "Request"))
		wantErr(t, "Get unknown", err, storage.ErrNotFound)
		return nil
	})
	// Each failed consumption fails its transaction: one transaction each.
	consume := func(id string, now time.Time) error {
		return consumeIn(ctx, s, func(tx storage.Tx) error { return tx.PendingRequests().Consume(ctx, id, now) })
	}
	unknown := id(t, "Request")
	err = consume(unknown, t0)
	wantConsumeError(t, "Consume unknown", err, unknown, storage.ErrNotFound)
	err = consume(p.ID, p.ExpiresAt)
	wantConsumeError(t, "Consume at expiresAt", err, p.ID, storage.ErrExpired)
	err = consume(p.ID, p.ExpiresAt.Add(time.Second))
	wantConsumeError(t, "Consume after expiresAt", err, p.ID, storage.ErrExpired)
	at := p.ExpiresAt.Add(-time.Microsecond)
	want := p
	want.ConsumedAt = at
	run(t, s, func(tx storage.Tx) error {
		got, err := tx.PendingRequests().Get(ctx, p.ID)
		wantErr(t, "Get after failed consumptions", err, nil)
		diff(t, "Get after failed consumptions", got, p)
		got, err = storage.ConsumeNow(ctx, tx, p.ID, at)
		wantErr(t, "ConsumeNow before expiresAt", err, nil)
		diff(t, "ConsumeNow", got, want)
		return nil
	})
	err = consume(p.ID, at)
	wantConsumeError(t, "Consume twice", err, p.ID, storage.ErrConsumed)
	run(t, s, func(tx storage.Tx) error {
		got, err := tx.PendingRequests().Get(ctx, p.ID)
		wantErr(t, "Get consumed", err, nil)
		diff(t, "Get consumed", got, want)
		return nil
	})
}

func testOutbox(t *testing.T, newStore Factory) {
	ctx := t.Context()
	s := newStore(t)
	a1, a2 := id(t, "ExternalAccount"), id(t, "ExternalAccount")
	mk := func(acct string, i int) storage.Event {
		return storage.Event{ID: id(t, "Webhook"), Type: "EXTERNAL_ACCOUNT.STATUS_UPDATED", AccountID: acct,
			Payload: json.RawMessage(`{"n":` + string(rune('0'+i)) + `}`), CreatedAt: t0.Add(time.Duration(i) * time.Second)}
	}
	evs := []storage.Event{mk(a1, 0), mk(a2, 1), mk(a1, 2)}
	for i := range evs {
		run(t, s, func(tx storage.Tx) error { return tx.Outbox().Append(ctx, &evs[i]) })
		if i > 0 && evs[i].Seq <= evs[i-1].Seq {
			t.Fatalf("Seq %d after %d: not increasing", evs[i].Seq, evs[i-1].Seq)
		}
	}
	// A duplicate may be reported by Append, by a later statement or by
	// the commit (a deferred append): Atomic fails with ErrDuplicate and
	// nothing of the transaction persists.
	other := mk(a2, 3)
	dupErr := s.Atomic(ctx, func(tx storage.Tx) error {
		dup := evs[0]
		return errors.Join(tx.Outbox().Append(ctx, &other), tx.Outbox().Append(ctx, &dup))
	})
	wantErr(t, "Append duplicate", dupErr, storage.ErrDuplicate)
	diff(t, "Events after a failed append", Events(t, s, a2), []storage.Event{evs[1]})
	diff(t, "Events", Events(t, s, a1), []storage.Event{evs[0], evs[2]})

	now := t0.Add(time.Hour)
	lease := func(owner string, at time.Time, limit int) []storage.Event {
		t.Helper()
		var got []storage.Event
		run(t, s, func(tx storage.Tx) error {
			var err error
			got, err = tx.Outbox().Lease(ctx, owner, at, time.Minute, limit)
			return err
		})
		for _, e := range got {
			if e.LeaseOwner != owner || !e.LeasedUntil.Equal(at.Add(time.Minute)) {
				t.Fatalf("leased %s: owner %q until %v, want %q until %v", e.ID, e.LeaseOwner, e.LeasedUntil, owner, at.Add(time.Minute))
			}
		}
		return got
	}
	do := func(what string, want error, fn func(r storage.Outbox) error) {
		t.Helper()
		err := s.Atomic(ctx, func(tx storage.Tx) error { return fn(tx.Outbox()) })
		wantErr(t, what, err, want)
	}

	// A rolled-back lease leaves the events due.
	rollback := errors.New("roll back")
	do("Lease rolled back", rollback, func(r storage.Outbox) error {
		got, err := r.Lease(ctx, "r0", now, time.Minute, 10)
		if err != nil || len(got) != 2 {
			t.Fatalf("Lease = %d events, %v; want 2", len(got), err)
		}
		return rollback
	})
	// evs[2] waits for evs[0], the earlier event of its account.
	diff(t, "first lease", eventIDs(lease("r1", now, 10)), eventIDs(evs[:2]))
	diff(t, "lease while leased", eventIDs(lease("r2", now.Add(59*time.Second), 10)), []string{})
	diff(t, "lease after the lease ended", eventIDs(lease("r2", now.Add(2*time.Minute), 1)), eventIDs(evs[:1]))
	diff(t, "lease the rest", eventIDs(lease("r2", now.Add(2*time.Minute), 10)), eventIDs(evs[1:2]))

	at := now.Add(3 * time.Minute)
	do("Retry by a former owner", storage.ErrConflict, func(r storage.Outbox) error { return r.Retry(ctx, evs[0].ID, "r1", at, "x") })
	do("Retry unknown", storage.ErrNotFound, func(r storage.Outbox) error { return r.Retry(ctx, "Webhook:unknown", "r2", at, "x") })
	do("Retry", nil, func(r storage.Outbox) error { return r.Retry(ctx, evs[0].ID, "r2", at.Add(10*time.Minute), "HTTP 500") })
	do("Retry again", storage.ErrConflict, func(r storage.Outbox) error { return r.Retry(ctx, evs[0].ID, "r2", at, "x") })
	do("MarkDelivered", nil, func(r storage.Outbox) error {
		return r.MarkDelivered(ctx, []string{evs[1].ID, "Webhook:unknown"}, at)
	})
	do("MarkDelivered again", nil, func(r storage.Outbox) error { return r.MarkDelivered(ctx, []string{evs[1].ID}, at.Add(time.Hour)) })
	do("Retry delivered", storage.ErrNotFound, func(r storage.Outbox) error { return r.Retry(ctx, evs[1].ID, "r2", at, "x") })
	// evs[0] is not due before its next attempt, and evs[2] still waits.
	diff(t, "lease before the next attempt", eventIDs(lease("r3", at.Add(time.Minute), 10)), []string{})
	got := lease("r3", at.Add(10*time.Minute), 10)
	diff(t, "lease at the next attempt", eventIDs(got), eventIDs(evs[:1]))
	if got[0].Attempts != 1 || got[0].LastError != "HTTP 500" {
		t.Fatalf("after one failure: Attempts %d, LastError %q", got[0].Attempts, got[0].LastError)
	}

	parkAt := at.Add(11 * time.Minute)
	do("Park", nil, func(r storage.Outbox) error { return r.Park(ctx, evs[0].ID, "r3", parkAt, "too old") })
	do("Park again", storage.ErrNotFound, func(r storage.Outbox) error { return r.Park(ctx, evs[0].ID, "r3", parkAt, "x") })
	do("Retry parked", storage.ErrNotFound, func(r storage.Outbox) error { return r.Retry(ctx, evs[0].ID, "r3", parkAt, "x") })
	// A parked event no longer holds back the later events of its account.
	diff(t, "lease after park", eventIDs(lease("r3", parkAt, 10)), eventIDs(evs[2:]))
	var parked []storage.Event
	run(t, s, func(tx storage.Tx) error {
		var err error
		parked, err = tx.Outbox().Parked(ctx, 0, 10)
		return err
	})
	diff(t, "Parked", eventIDs(parked), eventIDs(evs[:1]))
	if p := parked[0]; !p.ParkedAt.Equal(parkAt) || p.Attempts != 2 || p.LastError != "too old" || p.LeaseOwner != "" {
		t.Fatalf("parked event: ParkedAt %v Attempts %d LastError %q LeaseOwner %q", p.ParkedAt, p.Attempts, p.LastError, p.LeaseOwner)
	}
	run(t, s, func(tx storage.Tx) error {
		parked, _ = tx.Outbox().Parked(ctx, evs[0].Seq, 10)
		return nil
	})
	diff(t, "Parked after its seq", eventIDs(parked), []string{})

	do("Redrive unknown", storage.ErrNotFound, func(r storage.Outbox) error { return r.Redrive(ctx, "Webhook:unknown", parkAt) })
	do("Redrive unparked", storage.ErrNotFound, func(r storage.Outbox) error { return r.Redrive(ctx, evs[2].ID, parkAt) })
	do("Redrive", nil, func(r storage.Outbox) error { return r.Redrive(ctx, evs[0].ID, parkAt.Add(time.Minute)) })
	diff(t, "lease before the re-drive time", eventIDs(lease("r4", parkAt, 10)), []string{})
	got = lease("r4", parkAt.Add(time.Minute), 10)
	diff(t, "lease after Redrive", eventIDs(got), eventIDs(evs[:1]))
	if got[0].Attempts != 0 || !got[0].ParkedAt.IsZero() || got[0].LastError != "too old" {
		t.Fatalf("re-driven event: Attempts %d ParkedAt %v LastError %q", got[0].Attempts, got[0].ParkedAt, got[0].LastError)
	}
	do("MarkDelivered all", nil, func(r storage.Outbox) error { return r.MarkDelivered(ctx, eventIDs(evs), parkAt) })
	if mine := Events(t, s, a2); len(mine) != 1 || !mine[0].DeliveredAt.Equal(at) || mine[0].LeaseOwner != "" {
		t.Fatalf("delivered event: %+v, want the first delivery %v and no lease", mine, at)
	}
	diff(t, "lease when all are delivered", eventIDs(lease("r5", parkAt.Add(time.Hour), 10)), []string{})
}

// eventIDs returns the ids of evs, never nil.
func eventIDs(evs []storage.Event) []string {
	out := []string{}
	for _, e := range evs {
		out = append(out, e.ID)
	}
	return out
}

func testRateLimits(t *testing.T, newStore Factory) {
	ctx := t.Context()
	s := newStore(t)
	// hit counts one hit in a transaction of its own and returns how long
	// the refusal said to wait, read from Atomic's error: 0 when allowed.
	hit := func(key string, now time.Time) time.Duration {
		t.Helper()
		err := s.Atomic(ctx, func(tx storage.Tx) error { return tx.RateLimits().Hit(ctx, key, now, time.Minute, 2) })
		var limited *storage.RateLimitError
		if errors.As(err, &limited) {
			wantErr(t, "a refused hit", err, storage.ErrExhausted)
			return limited.Wait
		}
		wantErr(t, "Hit", err, nil)
		return 0
	}
	if w := hit("otp:a", t0); w != 0 {
		t.Fatalf("first hit denied, wait %v", w)
	}
	if w := hit("otp:a", t0.Add(10*time.Second)); w != 0 {
		t.Fatalf("second hit denied, wait %v", w)
	}
	if w := hit("otp:a", t0.Add(20*time.Second)); w != 40*time.Second {
		t.Fatalf("third hit: wait %v, want 40s", w)
	}
	if w := hit("otp:b", t0.Add(20*time.Second)); w != 0 {
		t.Fatalf("another key denied, wait %v", w)
	}
	if w := hit("otp:a", t0.Add(time.Minute)); w != 0 {
		t.Fatalf("hit in a new window denied, wait %v", w)
	}
	// A transaction sees its own hits: its second hit at a limit of one is
	// refused, and the refusal rolls back the first.
	err := s.Atomic(ctx, func(tx storage.Tx) error {
		if err := tx.RateLimits().Hit(ctx, "otp:c", t0, time.Minute, 1); err != nil {
			return err
		}
		return tx.RateLimits().Hit(ctx, "otp:c", t0.Add(time.Second), time.Minute, 1)
	})
	if limited := (*storage.RateLimitError)(nil); !errors.As(err, &limited) || limited.Wait <= 0 {
		t.Fatalf("a second hit at a limit of one in one transaction: %v, want a *storage.RateLimitError with a wait", err)
	}
	if w := hit("otp:c", t0.Add(2*time.Second)); w != 0 {
		t.Fatalf("a hit after a refused transaction was denied, wait %v: the transaction's first hit was counted", w)
	}
}

package storagetest

import (
	"errors"
	"testing"
	"time"

	"github.com/walletgate/walletgate/storage"
)

// testGuards checks, one call at a time, the methods that keep check-then-act
// rules: the Lock methods, Credentials.Lock with an OTP attempt among them,
// and the consumption of an OTP issuance. testRaces checks them under
// concurrency.
func testGuards(t *testing.T, newStore Factory) {
	ctx := t.Context()
	t.Run("LockAccount", func(t *testing.T) {
		s := newStore(t)
		a := storage.InternalAccount{ID: id(t, "InternalAccount"), CustomerID: id(t, "Customer"), Email: "ada@example.com",
			CreatedAt: t0, UpdatedAt: t0}
		run(t, s, func(tx storage.Tx) error { return tx.InternalAccounts().Create(ctx, &a) })
		run(t, s, func(tx storage.Tx) error {
			r := tx.InternalAccounts()
			got, err := r.Lock(ctx, a.ID)
			wantErr(t, "Lock", err, nil)
			diff(t, "Lock", got, a)
			got, err = r.Lock(ctx, a.ID)
			wantErr(t, "Lock again in the same transaction", err, nil)
			diff(t, "Lock again", got, a)
			upd := got
			upd.Email = "ada@lovelace.example"
			wantErr(t, "Update of the locked account", r.Update(ctx, &upd), nil)
			got, err = r.Lock(ctx, a.ID)
			wantErr(t, "Lock after Update", err, nil)
			diff(t, "Lock after Update", got, upd)
			_, err = r.Lock(ctx, id(t, "InternalAccount"))
			wantErr(t, "Lock unknown", err, storage.ErrNotFound)
			return nil
		})
	})
	t.Run("LockExternalAccount", func(t *testing.T) {
		s := newStore(t)
		a := newExternal(t, id(t, "Customer"))
		run(t, s, func(tx storage.Tx) error { return tx.ExternalAccounts().Create(ctx, &a) })
		run(t, s, func(tx storage.Tx) error {
			r := tx.ExternalAccounts()
			got, err := r.Lock(ctx, a.ID)
			wantErr(t, "ExternalAccounts.Lock", err, nil)
			diff(t, "ExternalAccounts.Lock", got, a)
			upd := got
			upd.Status = storage.StatusUnverified
			wantErr(t, "Update of the locked account", r.Update(ctx, &upd), nil)
			got, err = r.Lock(ctx, a.ID)
			wantErr(t, "ExternalAccounts.Lock after Update", err, nil)
			diff(t, "ExternalAccounts.Lock after Update", got, upd)
			_, err = r.Lock(ctx, id(t, "ExternalAccount"))
			wantErr(t, "ExternalAccounts.Lock unknown", err, storage.ErrNotFound)
			return nil
		})
	})
	t.Run("LockCredential", func(t *testing.T) {
		s := newStore(t)
		c := passkeyCred(t, id(t, "InternalAccount"), []byte("lock-me"))
		run(t, s, func(tx storage.Tx) error { return tx.Credentials().Create(ctx, &c) })
		o := newIssuance(t)
		o.CredentialID, o.AccountID = c.ID, c.AccountID
		run(t, s, func(tx storage.Tx) error { return tx.OTPIssuances().Put(ctx, &o) })
		run(t, s, func(tx storage.Tx) error {
			r := tx.Credentials()
			got, err := r.Lock(ctx, c.ID, nil)
			wantErr(t, "Lock", err, nil)
			diff(t, "Lock", got.Credential, c)
			// Without an attempt it reads no issuance and charges nothing.
			if got.Issuance != nil || got.Reserved != nil || got.Wait != 0 {
				t.Fatalf("Lock without an attempt: issuance %v, reserved %v, wait %v; want none", got.Issuance, got.Reserved, got.Wait)
			}
			wantErr(t, "Delete of the locked credential", r.Delete(ctx, c.ID), nil)
			_, err = r.Lock(ctx, c.ID, nil)
			wantErr(t, "Lock after Delete", err, storage.ErrNotFound)
			_, err = r.Lock(ctx, id(t, "AuthMethod"), nil)
			wantErr(t, "Lock unknown", err, storage.ErrNotFound)
			return nil
		})
	})
	t.Run("LockEmail", func(t *testing.T) {
		s := newStore(t)
		run(t, s, func(tx storage.Tx) error {
			r := tx.Credentials()
			wantErr(t, "LockEmail of an address no credential has", r.LockEmail(ctx, "", "nobody@example.com"), nil)
			wantErr(t, "LockEmail again in the same transaction", r.LockEmail(ctx, "", "nobody@example.com"), nil)
			wantErr(t, "LockEmail of another address", r.LockEmail(ctx, "", "somebody@example.com"), nil)
			wantErr(t, "LockEmail of the address in another tenant", r.LockEmail(ctx, "tenant-b", "nobody@example.com"), nil)
			return nil
		})
		// The lock ends with the transaction: a later one takes it at once.
		run(t, s, func(tx storage.Tx) error {
			wantErr(t, "LockEmail in a later transaction", tx.Credentials().LockEmail(ctx, "", "nobody@example.com"), nil)
			return nil
		})
		// The address of another tenant is another lock: it is taken while
		// a transaction holds the address in the empty tenant.
		held, release := make(chan struct{}), make(chan struct{})
		done := make(chan error, 1)
		go func() {
			done <- s.Atomic(ctx, func(tx storage.Tx) error {
				if err := tx.Credentials().LockEmail(ctx, "", "shared@example.com"); err != nil {
					return err
				}
				close(held)
				<-release
				return nil
			})
		}()
		select {
		case <-held:
		case err := <-done:
			t.Fatalf("the holding transaction ended early: %v", err)
		}
		other := make(chan error, 1)
		go func() {
			other <- s.Atomic(ctx, func(tx storage.Tx) error {
				return tx.Credentials().LockEmail(ctx, "tenant-b", "shared@example.com")
			})
		}()
		select {
		case err := <-other:
			wantErr(t, "LockEmail of the address in another tenant while it is held", err, nil)
		case <-time.After(10 * time.Second):
			t.Fatal("LockEmail of the address in another tenant waited for the holder of the empty tenant's")
		}
		close(release)
		wantErr(t, "the holding transaction", <-done, nil)
	})
	t.Run("ConsumeOTP", func(t *testing.T) {
		s := newStore(t)
		cred, o := otpCredential(t, s)
		run(t, s, func(tx storage.Tx) error {
			l, err := tx.Credentials().Lock(ctx, cred.ID,
				&storage.OTPAttempt{Limit: 3, Now: t0, Key: "budget:" + cred.ID, Window: time.Minute, Budget: 3})
			if err != nil {
				return err
			}
			if l.Reserved == nil {
				t.Fatalf("Lock with an attempt on a live issuance reserved nothing (wait %v)", l.Wait)
			}
			return tx.OTPIssuances().Consume(ctx, o.ID, t0)
		})
		run(t, s, func(tx storage.Tx) error {
			got, err := Issuance(ctx, tx, cred.ID)
			wantErr(t, "Issuance of a consumed issuance", err, nil)
			if got == nil || !got.ConsumedAt.Equal(t0) || got.Attempts != 1 {
				t.Fatalf("consumed issuance: %+v; want ConsumedAt %v and 1 attempt", got, t0)
			}
			return nil
		})
		for bad, want := range map[string]error{o.ID: storage.ErrConsumed, id(t, "OTP"): storage.ErrNotFound, "not-an-id": storage.ErrNotFound} {
			err := consumeIn(ctx, s, func(tx storage.Tx) error { return tx.OTPIssuances().Consume(ctx, bad, t0) })
			wantConsumeError(t, "Consume of a consumed or unknown issuance", err, bad, want)
		}
	})
	t.Run("LockWithOTPAttempt", func(t *testing.T) {
		s := newStore(t)
		acct := id(t, "InternalAccount")
		c := storage.Credential{ID: id(t, "AuthMethod"), AccountID: acct, Type: storage.EmailOTP, Email: "ada@example.com",
			Nickname: "ada@example.com", CreatedAt: t0, UpdatedAt: t0}
		o := newIssuance(t)
		o.CredentialID, o.AccountID = c.ID, acct
		run(t, s, func(tx storage.Tx) error { return tx.Credentials().Create(ctx, &c) })
		key, window := "budget:"+c.ID, time.Minute
		at := func(limit int, now time.Time, key string, budget int) *storage.OTPAttempt {
			return &storage.OTPAttempt{Limit: limit, Now: now, Key: key, Window: window, Budget: budget}
		}
		// attempt is Lock of c with attempt a, which must return c.
		attempt := func(tx storage.Tx, what string, a *storage.OTPAttempt) storage.LockedCredential {
			t.Helper()
			r, err := tx.Credentials().Lock(ctx, c.ID, a)
			wantErr(t, what, err, nil)
			diff(t, what+": the credential", r.Credential, c)
			return r
		}
		// nothing fails unless a does nothing: no issuance reserved, no wait.
		nothing := func(tx storage.Tx, what string, a *storage.OTPAttempt) storage.LockedCredential {
			t.Helper()
			r := attempt(tx, what, a)
			if r.Reserved != nil || r.Wait != 0 {
				t.Fatalf("%s: reserved %v, wait %v; want nothing", what, r.Reserved, r.Wait)
			}
			return r
		}
		run(t, s, func(tx storage.Tx) error {
			if r := nothing(tx, "Lock with an attempt without an issuance", at(5, t0, key, 1)); r.Issuance != nil {
				t.Fatalf("Lock with an attempt without an issuance read %+v", *r.Issuance)
			}
			return nil
		})
		run(t, s, func(tx storage.Tx) error { return tx.OTPIssuances().Put(ctx, &o) })
		attemptsNow := func(tx storage.Tx) int {
			got, err := Issuance(ctx, tx, o.CredentialID)
			wantErr(t, "Issuance", err, nil)
			if got == nil {
				t.Fatal("Issuance read nothing")
			}
			return got.Attempts
		}
		// A caller that fails rolls back the hit and the attempt.
		err := s.Atomic(ctx, func(tx storage.Tx) error {
			if r := attempt(tx, "Lock with an attempt rolled back", at(5, t0, key, 1)); r.Reserved == nil || r.Reserved.Attempts != 1 {
				t.Fatalf("Lock with an attempt rolled back reserved %v, want attempt 1", r.Reserved)
			}
			return errRollback
		})
		wantErr(t, "rolled-back Lock with an attempt", err, errRollback)
		run(t, s, func(tx storage.Tx) error {
			for want := 1; want <= 2; want++ {
				r := attempt(tx, "Lock with an attempt within the budget", at(5, t0, key, 2))
				before, upd := o, o
				before.Attempts, upd.Attempts = want-1, want
				if r.Issuance == nil || r.Reserved == nil || r.Wait != 0 {
					t.Fatalf("Lock with an attempt %d within the budget: read %v, reserved %v, wait %v", want, r.Issuance, r.Reserved, r.Wait)
				}
				diff(t, "Lock with an attempt within the budget: the issuance read", *r.Issuance, before)
				diff(t, "Lock with an attempt within the budget: the issuance reserved", *r.Reserved, upd)
			}
			// Past the budget: nothing reserved, the window's end.
			r := attempt(tx, "Lock with an attempt past the budget", at(5, t0.Add(10*time.Second), key, 2))
			if r.Reserved != nil || r.Wait != 50*time.Second || attemptsNow(tx) != 2 {
				t.Fatalf("Lock with an attempt past the budget: reserved %v, wait %v, issuance attempts %d; want nothing, 50s and 2", r.Reserved, r.Wait, attemptsNow(tx))
			}
			// A budget below one refuses, and opens a window.
			r = attempt(tx, "Lock with an attempt with no budget", at(5, t0, "budget:none", 0))
			if r.Reserved != nil || r.Wait != window || attemptsNow(tx) != 2 {
				t.Fatalf("Lock with an attempt with no budget: reserved %v, wait %v, issuance attempts %d; want nothing, %v and 2", r.Reserved, r.Wait, attemptsNow(tx), window)
			}
			// The window over, the budget is whole again.
			r = attempt(tx, "Lock with an attempt in a new window", at(5, t0.Add(window), key, 2))
			if r.Reserved == nil || r.Reserved.Attempts != 3 {
				t.Fatalf("Lock with an attempt in a new window reserved %v, want attempt 3", r.Reserved)
			}
			// An issuance not live for an attempt hits nothing: the
			// budget of one is whole when it is.
			exhausted := "budget:exhausted"
			if r = nothing(tx, "Lock with an attempt at the limit of attempts", at(3, t0.Add(window), exhausted, 1)); r.Issuance == nil || r.Issuance.Attempts != 3 {
				t.Fatalf("Lock with an attempt at the limit of attempts read %v, want the issuance with 3 attempts", r.Issuance)
			}
			// A limit of zero attempts reads the issuance and charges
			// nothing (as Issuance does).
			if r = nothing(tx, "Lock with an attempt with a limit of 0", at(0, t0.Add(window), exhausted, 1)); r.Issuance == nil || r.Issuance.Attempts != 3 {
				t.Fatalf("Lock with an attempt with a limit of 0 read %v, want the issuance with 3 attempts", r.Issuance)
			}
			nothing(tx, "Lock with an attempt expired", at(5, o.ExpiresAt, exhausted, 1))
			if r = attempt(tx, "Lock with an attempt on an untouched budget", at(5, t0.Add(window), exhausted, 1)); r.Reserved == nil || r.Reserved.Attempts != 4 {
				t.Fatalf("Lock with an attempt on an untouched budget reserved %v, want attempt 4", r.Reserved)
			}
			// Live until just before ExpiresAt, under a higher limit.
			if r = attempt(tx, "Lock with an attempt just before expiry", at(6, o.ExpiresAt.Add(-time.Microsecond), "budget:edge", 1)); r.Reserved == nil || r.Reserved.Attempts != 5 {
				t.Fatalf("Lock with an attempt just before expiry reserved %v, want attempt 5", r.Reserved)
			}
			if err := tx.OTPIssuances().Consume(ctx, o.ID, t0.Add(window)); err != nil {
				return err
			}
			if r = nothing(tx, "Lock with an attempt consumed", at(5, t0.Add(window), "budget:consumed", 1)); r.Issuance == nil || r.Issuance.ConsumedAt.IsZero() {
				t.Fatalf("Lock with an attempt consumed read %v, want the consumed issuance", r.Issuance)
			}
			// A new issuance supersedes the consumed one: attempts start
			// over on it.
			next := newIssuance(t)
			next.CredentialID, next.AccountID = c.ID, acct
			if err := tx.OTPIssuances().Put(ctx, &next); err != nil {
				return err
			}
			r = attempt(tx, "Lock with an attempt superseded", at(5, t0.Add(window), "budget:next", 1))
			if r.Issuance == nil || r.Issuance.ID != next.ID || r.Reserved == nil || r.Reserved.ID != next.ID || r.Reserved.Attempts != 1 {
				t.Fatalf("Lock with an attempt after a new issuance read %v and reserved %v, want attempt 1 of %s", r.Issuance, r.Reserved, next.ID)
			}
			wantErr(t, "Delete of the locked credential", tx.Credentials().Delete(ctx, c.ID), nil)
			_, err := tx.Credentials().Lock(ctx, c.ID, at(5, t0, key, 2))
			wantErr(t, "Lock with an attempt after Delete", err, storage.ErrNotFound)
			_, err = tx.Credentials().Lock(ctx, id(t, "AuthMethod"), at(5, t0, key, 2))
			wantErr(t, "Lock with an attempt unknown", err, storage.ErrNotFound)
			return nil
		})
	})
	t.Run("TxAfterReturn", func(t *testing.T) {
		s := newStore(t)
		var kept storage.Tx
		run(t, s, func(tx storage.Tx) error { kept = tx; return nil })
		_, err := kept.InternalAccounts().Lock(ctx, id(t, "InternalAccount"))
		wantErr(t, "InternalAccounts.Lock through a finished Tx", err, storage.ErrTxDone)
		_, err = kept.ExternalAccounts().Lock(ctx, id(t, "ExternalAccount"))
		wantErr(t, "ExternalAccounts.Lock through a finished Tx", err, storage.ErrTxDone)
		_, err = kept.Credentials().Lock(ctx, id(t, "AuthMethod"), nil)
		wantErr(t, "Credentials.Lock through a finished Tx", err, storage.ErrTxDone)
		_, err = kept.Credentials().Lock(ctx, id(t, "AuthMethod"), &storage.OTPAttempt{Limit: 5, Now: t0, Key: "k", Window: time.Minute, Budget: 1})
		wantErr(t, "Credentials.Lock with an attempt through a finished Tx", err, storage.ErrTxDone)
		wantErr(t, "LockEmail through a finished Tx", kept.Credentials().LockEmail(ctx, "", "a@example.com"), storage.ErrTxDone)
		wantErr(t, "OTPIssuances.Consume through a finished Tx", kept.OTPIssuances().Consume(ctx, id(t, "OTP"), t0), storage.ErrTxDone)
	})
}

// newIssuance returns a live OTP issuance of a new credential, issued at t0
// for five minutes.
func newIssuance(t *testing.T) storage.OTPIssuance {
	return storage.OTPIssuance{ID: id(t, "OTP"), CredentialID: id(t, "AuthMethod"), AccountID: id(t, "InternalAccount"),
		IssuedAt: t0, ExpiresAt: t0.Add(5 * time.Minute)}
}

var (
	errGone = errors.New("storagetest: the credential is gone")
	errLast = errors.New("storagetest: the account's last credential")
	errHas  = errors.New("storagetest: the account has one already")
	errTied = errors.New("storagetest: the address is tied already")
)

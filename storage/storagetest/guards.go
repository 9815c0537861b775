package storagetest

import (
	"errors"
	"testing"
	"time"

	"github.com/walletgate/walletgate/storage"
)

// testGuards checks, one call at a time, the methods that keep check-then-act
// rules: the Lock methods and OTPIssuances.Attempt. testRaces checks them
// under concurrency.
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
		run(t, s, func(tx storage.Tx) error {
			r := tx.Credentials()
			got, err := r.Lock(ctx, c.ID)
			wantErr(t, "Lock", err, nil)
			diff(t, "Lock", got, c)
			wantErr(t, "Delete of the locked credential", r.Delete(ctx, c.ID), nil)
			_, err = r.Lock(ctx, c.ID)
			wantErr(t, "Lock after Delete", err, storage.ErrNotFound)
			_, err = r.Lock(ctx, id(t, "AuthMethod"))
			wantErr(t, "Lock unknown", err, storage.ErrNotFound)
			return nil
		})
	})
	t.Run("LockEmail", func(t *testing.T) {
		s := newStore(t)
		run(t, s, func(tx storage.Tx) error {
			r := tx.Credentials()
			wantErr(t, "LockEmail of an address no credential has", r.LockEmail(ctx, "nobody@example.com"), nil)
			wantErr(t, "LockEmail again in the same transaction", r.LockEmail(ctx, "nobody@example.com"), nil)
			wantErr(t, "LockEmail of another address", r.LockEmail(ctx, "somebody@example.com"), nil)
			return nil
		})
		// The lock ends with the transaction: a later one takes it at once.
		run(t, s, func(tx storage.Tx) error {
			wantErr(t, "LockEmail in a later transaction", tx.Credentials().LockEmail(ctx, "nobody@example.com"), nil)
			return nil
		})
	})
	t.Run("SpendOTP", func(t *testing.T) {
		s := newStore(t)
		o := newIssuance(t)
		run(t, s, func(tx storage.Tx) error { return tx.OTPIssuances().Put(ctx, &o) })
		run(t, s, func(tx storage.Tx) error {
			if _, err := tx.OTPIssuances().Attempt(ctx, o.ID, 3, t0); err != nil {
				return err
			}
			return tx.OTPIssuances().Spend(ctx, o.ID, t0)
		})
		run(t, s, func(tx storage.Tx) error {
			got, err := tx.OTPIssuances().GetByCredential(ctx, o.CredentialID)
			wantErr(t, "GetByCredential of a spent issuance", err, nil)
			if !got.ConsumedAt.Equal(t0) || got.Attempts != 1 {
				t.Fatalf("spent issuance: ConsumedAt %v, Attempts %d; want %v, 1", got.ConsumedAt, got.Attempts, t0)
			}
			return nil
		})
		for _, bad := range []string{o.ID, id(t, "OTP")} {
			err := s.Atomic(ctx, func(tx storage.Tx) error { return tx.OTPIssuances().Spend(ctx, bad, t0) })
			var spent *storage.SpendError
			if !errors.As(err, &spent) || spent.ID != bad {
				t.Fatalf("Spend of a spent or unknown issuance: %v, want a *storage.SpendError for %s", err, bad)
			}
		}
	})
	t.Run("Attempt", func(t *testing.T) {
		s := newStore(t)
		o := newIssuance(t)
		run(t, s, func(tx storage.Tx) error { return tx.OTPIssuances().Put(ctx, &o) })
		run(t, s, func(tx storage.Tx) error {
			r := tx.OTPIssuances()
			for want := 1; want <= 3; want++ {
				got, err := r.Attempt(ctx, o.ID, 3, t0)
				wantErr(t, "Attempt under the limit", err, nil)
				if got.ID != o.ID || got.Attempts != want {
					t.Fatalf("Attempt %d returned id %s with Attempts %d", want, got.ID, got.Attempts)
				}
			}
			_, err := r.Attempt(ctx, o.ID, 3, t0)
			wantErr(t, "Attempt at the limit", err, storage.ErrExhausted)
			got, _ := r.GetByCredential(ctx, o.CredentialID)
			if got.Attempts != 3 {
				t.Fatalf("Attempts after a refused attempt = %d, want 3", got.Attempts)
			}
			_, err = r.Attempt(ctx, o.ID, 4, t0)
			wantErr(t, "Attempt under a higher limit", err, nil)
			_, err = r.Attempt(ctx, o.ID, 0, t0)
			wantErr(t, "Attempt with limit 0", err, storage.ErrExhausted)
			_, err = r.Attempt(ctx, id(t, "OTP"), 3, t0)
			wantErr(t, "Attempt unknown", err, storage.ErrNotFound)
			return nil
		})
		// A rolled-back attempt does not count.
		err := s.Atomic(ctx, func(tx storage.Tx) error {
			if _, err := tx.OTPIssuances().Attempt(ctx, o.ID, 10, t0); err != nil {
				return err
			}
			return errRollback
		})
		wantErr(t, "rolled-back Attempt", err, errRollback)
		run(t, s, func(tx storage.Tx) error {
			got, _ := tx.OTPIssuances().GetByCredential(ctx, o.CredentialID)
			if got.Attempts != 4 {
				t.Fatalf("Attempts after a rolled-back attempt = %d, want 4", got.Attempts)
			}
			return nil
		})
	})
	t.Run("AttemptRefusals", func(t *testing.T) {
		s := newStore(t)
		o := newIssuance(t)
		run(t, s, func(tx storage.Tx) error {
			r := tx.OTPIssuances()
			wantErr(t, "Put", r.Put(ctx, &o), nil)
			_, err := r.Attempt(ctx, o.ID, 5, o.ExpiresAt)
			wantErr(t, "Attempt at ExpiresAt", err, storage.ErrExpired)
			_, err = r.Attempt(ctx, o.ID, 5, o.ExpiresAt.Add(-time.Microsecond))
			wantErr(t, "Attempt just before ExpiresAt", err, nil)
			_, err = r.Consume(ctx, o.ID, t0)
			wantErr(t, "Consume", err, nil)
			// Consumed comes before expired and exhausted.
			_, err = r.Attempt(ctx, o.ID, 0, o.ExpiresAt)
			wantErr(t, "Attempt on a consumed issuance", err, storage.ErrConsumed)

			next := newIssuance(t)
			next.CredentialID = o.CredentialID
			wantErr(t, "Put superseding", r.Put(ctx, &next), nil)
			_, err = r.Attempt(ctx, o.ID, 5, t0)
			wantErr(t, "Attempt on a superseded issuance", err, storage.ErrNotFound)
			got, err := r.Attempt(ctx, next.ID, 5, t0)
			wantErr(t, "Attempt on the new issuance", err, nil)
			if got.Attempts != 1 {
				t.Fatalf("the new issuance has Attempts %d after one attempt, want 1", got.Attempts)
			}
			// Expired comes before exhausted.
			_, err = r.Attempt(ctx, next.ID, 0, next.ExpiresAt)
			wantErr(t, "Attempt on an expired, exhausted issuance", err, storage.ErrExpired)
			return nil
		})
	})
	t.Run("LockForOTPAttempt", func(t *testing.T) {
		s := newStore(t)
		acct := id(t, "InternalAccount")
		c := storage.Credential{ID: id(t, "AuthMethod"), AccountID: acct, Type: storage.EmailOTP, Email: "ada@example.com",
			Nickname: "ada@example.com", CreatedAt: t0, UpdatedAt: t0}
		o := newIssuance(t)
		o.CredentialID, o.AccountID = c.ID, acct
		run(t, s, func(tx storage.Tx) error { return tx.Credentials().Create(ctx, &c) })
		key, window := "budget:"+c.ID, time.Minute
		at := func(limit int, now time.Time, key string, budget int) storage.OTPAttempt {
			return storage.OTPAttempt{Limit: limit, Now: now, Key: key, Window: window, Budget: budget}
		}
		// attempt is LockForOTPAttempt of c, which must return c.
		attempt := func(tx storage.Tx, what string, a storage.OTPAttempt) storage.OTPAttemptResult {
			t.Helper()
			r, err := tx.Credentials().LockForOTPAttempt(ctx, c.ID, a)
			wantErr(t, what, err, nil)
			diff(t, what+": the credential", r.Credential, c)
			return r
		}
		// nothing fails unless a does nothing: no issuance reserved, no wait.
		nothing := func(tx storage.Tx, what string, a storage.OTPAttempt) storage.OTPAttemptResult {
			t.Helper()
			r := attempt(tx, what, a)
			if r.Reserved != nil || r.Wait != 0 {
				t.Fatalf("%s: reserved %v, wait %v; want nothing", what, r.Reserved, r.Wait)
			}
			return r
		}
		run(t, s, func(tx storage.Tx) error {
			if r := nothing(tx, "LockForOTPAttempt without an issuance", at(5, t0, key, 1)); r.Issuance != nil {
				t.Fatalf("LockForOTPAttempt without an issuance read %+v", *r.Issuance)
			}
			return nil
		})
		run(t, s, func(tx storage.Tx) error { return tx.OTPIssuances().Put(ctx, &o) })
		attemptsNow := func(tx storage.Tx) int {
			got, err := tx.OTPIssuances().GetByCredential(ctx, o.CredentialID)
			wantErr(t, "GetByCredential", err, nil)
			return got.Attempts
		}
		// A caller that fails rolls back the hit and the attempt.
		err := s.Atomic(ctx, func(tx storage.Tx) error {
			if r := attempt(tx, "LockForOTPAttempt rolled back", at(5, t0, key, 1)); r.Reserved == nil || r.Reserved.Attempts != 1 {
				t.Fatalf("LockForOTPAttempt rolled back reserved %v, want attempt 1", r.Reserved)
			}
			return errRollback
		})
		wantErr(t, "rolled-back LockForOTPAttempt", err, errRollback)
		run(t, s, func(tx storage.Tx) error {
			for want := 1; want <= 2; want++ {
				r := attempt(tx, "LockForOTPAttempt within the budget", at(5, t0, key, 2))
				before, upd := o, o
				before.Attempts, upd.Attempts = want-1, want
				if r.Issuance == nil || r.Reserved == nil || r.Wait != 0 {
					t.Fatalf("LockForOTPAttempt %d within the budget: read %v, reserved %v, wait %v", want, r.Issuance, r.Reserved, r.Wait)
				}
				diff(t, "LockForOTPAttempt within the budget: the issuance read", *r.Issuance, before)
				diff(t, "LockForOTPAttempt within the budget: the issuance reserved", *r.Reserved, upd)
			}
			// Past the budget: nothing reserved, the window's end.
			r := attempt(tx, "LockForOTPAttempt past the budget", at(5, t0.Add(10*time.Second), key, 2))
			if r.Reserved != nil || r.Wait != 50*time.Second || attemptsNow(tx) != 2 {
				t.Fatalf("LockForOTPAttempt past the budget: reserved %v, wait %v, issuance attempts %d; want nothing, 50s and 2", r.Reserved, r.Wait, attemptsNow(tx))
			}
			// A budget below one refuses, and opens a window.
			r = attempt(tx, "LockForOTPAttempt with no budget", at(5, t0, "budget:none", 0))
			if r.Reserved != nil || r.Wait != window || attemptsNow(tx) != 2 {
				t.Fatalf("LockForOTPAttempt with no budget: reserved %v, wait %v, issuance attempts %d; want nothing, %v and 2", r.Reserved, r.Wait, attemptsNow(tx), window)
			}
			// The window over, the budget is whole again.
			r = attempt(tx, "LockForOTPAttempt in a new window", at(5, t0.Add(window), key, 2))
			if r.Reserved == nil || r.Reserved.Attempts != 3 {
				t.Fatalf("LockForOTPAttempt in a new window reserved %v, want attempt 3", r.Reserved)
			}
			// An issuance not live for an attempt hits nothing: the
			// budget of one is whole when it is.
			exhausted := "budget:exhausted"
			if r = nothing(tx, "LockForOTPAttempt at the limit of attempts", at(3, t0.Add(window), exhausted, 1)); r.Issuance == nil || r.Issuance.Attempts != 3 {
				t.Fatalf("LockForOTPAttempt at the limit of attempts read %v, want the issuance with 3 attempts", r.Issuance)
			}
			nothing(tx, "LockForOTPAttempt expired", at(5, o.ExpiresAt, exhausted, 1))
			if r = attempt(tx, "LockForOTPAttempt on an untouched budget", at(5, t0.Add(window), exhausted, 1)); r.Reserved == nil || r.Reserved.Attempts != 4 {
				t.Fatalf("LockForOTPAttempt on an untouched budget reserved %v, want attempt 4", r.Reserved)
			}
			if _, err := tx.OTPIssuances().Consume(ctx, o.ID, t0.Add(window)); err != nil {
				return err
			}
			if r = nothing(tx, "LockForOTPAttempt consumed", at(5, t0.Add(window), "budget:consumed", 1)); r.Issuance == nil || r.Issuance.ConsumedAt.IsZero() {
				t.Fatalf("LockForOTPAttempt consumed read %v, want the consumed issuance", r.Issuance)
			}
			wantErr(t, "Delete of the locked credential", tx.Credentials().Delete(ctx, c.ID), nil)
			_, err := tx.Credentials().LockForOTPAttempt(ctx, c.ID, at(5, t0, key, 2))
			wantErr(t, "LockForOTPAttempt after Delete", err, storage.ErrNotFound)
			_, err = tx.Credentials().LockForOTPAttempt(ctx, id(t, "AuthMethod"), at(5, t0, key, 2))
			wantErr(t, "LockForOTPAttempt unknown", err, storage.ErrNotFound)
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
		_, err = kept.Credentials().Lock(ctx, id(t, "AuthMethod"))
		wantErr(t, "Credentials.Lock through a finished Tx", err, storage.ErrTxDone)
		_, err = kept.Credentials().LockForOTPAttempt(ctx, id(t, "AuthMethod"), storage.OTPAttempt{Limit: 5, Now: t0, Key: "k", Window: time.Minute, Budget: 1})
		wantErr(t, "Credentials.LockForOTPAttempt through a finished Tx", err, storage.ErrTxDone)
		wantErr(t, "LockEmail through a finished Tx", kept.Credentials().LockEmail(ctx, "a@example.com"), storage.ErrTxDone)
		_, err = kept.OTPIssuances().Attempt(ctx, id(t, "OTP"), 5, t0)
		wantErr(t, "Attempt through a finished Tx", err, storage.ErrTxDone)
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

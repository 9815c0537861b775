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
	t.Run("LockWithOTP", func(t *testing.T) {
		s := newStore(t)
		acct := id(t, "InternalAccount")
		c := storage.Credential{ID: id(t, "AuthMethod"), AccountID: acct, Type: storage.EmailOTP, Email: "ada@example.com",
			Nickname: "ada@example.com", CreatedAt: t0, UpdatedAt: t0}
		o := newIssuance(t)
		o.CredentialID, o.AccountID = c.ID, acct
		run(t, s, func(tx storage.Tx) error { return tx.Credentials().Create(ctx, &c) })
		run(t, s, func(tx storage.Tx) error {
			got, iss, err := tx.Credentials().LockWithOTP(ctx, c.ID)
			wantErr(t, "LockWithOTP without an issuance", err, nil)
			diff(t, "LockWithOTP without an issuance", got, c)
			if iss != nil {
				t.Fatalf("LockWithOTP without an issuance returned %+v", *iss)
			}
			return nil
		})
		run(t, s, func(tx storage.Tx) error { return tx.OTPIssuances().Put(ctx, &o) })
		run(t, s, func(tx storage.Tx) error {
			r := tx.Credentials()
			got, iss, err := r.LockWithOTP(ctx, c.ID)
			wantErr(t, "LockWithOTP", err, nil)
			diff(t, "LockWithOTP", got, c)
			if iss == nil {
				t.Fatal("LockWithOTP returned no issuance")
			}
			diff(t, "LockWithOTP's issuance", *iss, o)
			if _, err := tx.OTPIssuances().Attempt(ctx, o.ID, 5, t0); err != nil {
				return err
			}
			_, iss, err = r.LockWithOTP(ctx, c.ID)
			wantErr(t, "LockWithOTP after Attempt", err, nil)
			if iss == nil || iss.Attempts != 1 {
				t.Fatalf("LockWithOTP after Attempt returned %+v, want the issuance with 1 attempt", iss)
			}
			wantErr(t, "Delete of the locked credential", r.Delete(ctx, c.ID), nil)
			_, _, err = r.LockWithOTP(ctx, c.ID)
			wantErr(t, "LockWithOTP after Delete", err, storage.ErrNotFound)
			_, _, err = r.LockWithOTP(ctx, id(t, "AuthMethod"))
			wantErr(t, "LockWithOTP unknown", err, storage.ErrNotFound)
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
	t.Run("AttemptWithin", func(t *testing.T) {
		s := newStore(t)
		o := newIssuance(t)
		run(t, s, func(tx storage.Tx) error { return tx.OTPIssuances().Put(ctx, &o) })
		key, window := "budget:"+o.CredentialID, time.Minute
		attemptsNow := func(tx storage.Tx) int {
			got, err := tx.OTPIssuances().GetByCredential(ctx, o.CredentialID)
			wantErr(t, "GetByCredential", err, nil)
			return got.Attempts
		}
		// A failed attempt rolled back returns its hit.
		err := s.Atomic(ctx, func(tx storage.Tx) error {
			_, _, err := tx.OTPIssuances().AttemptWithin(ctx, o.ID, 0, t0, key, window, 1)
			wantErr(t, "AttemptWithin past the limit of attempts", err, storage.ErrExhausted)
			_, _, err = tx.OTPIssuances().AttemptWithin(ctx, id(t, "OTP"), 5, t0, "budget:other", window, 1)
			wantErr(t, "AttemptWithin unknown", err, storage.ErrNotFound)
			return errRollback
		})
		wantErr(t, "rolled-back AttemptWithin", err, errRollback)
		run(t, s, func(tx storage.Tx) error {
			r := tx.OTPIssuances()
			for want := 1; want <= 2; want++ {
				got, wait, err := r.AttemptWithin(ctx, o.ID, 5, t0, key, window, 2)
				wantErr(t, "AttemptWithin within the budget", err, nil)
				upd := o
				upd.Attempts = want
				diff(t, "AttemptWithin within the budget", got, upd)
				if wait != 0 {
					t.Fatalf("AttemptWithin %d: wait %v, want 0", want, wait)
				}
			}
			// Past the budget: nothing reserved, the window's end.
			got, wait, err := r.AttemptWithin(ctx, o.ID, 5, t0.Add(10*time.Second), key, window, 2)
			n := got.Attempts
			wantErr(t, "AttemptWithin past the budget", err, nil)
			if n != 0 || wait != 50*time.Second || attemptsNow(tx) != 2 {
				t.Fatalf("AttemptWithin past the budget: attempts %d, wait %v, issuance attempts %d; want 0, 50s and 2", n, wait, attemptsNow(tx))
			}
			// A budget below one refuses, and opens a window.
			got, wait, err = r.AttemptWithin(ctx, o.ID, 5, t0, "budget:none", window, 0)
			n = got.Attempts
			wantErr(t, "AttemptWithin with no budget", err, nil)
			if n != 0 || wait != window || attemptsNow(tx) != 2 {
				t.Fatalf("AttemptWithin with no budget: attempts %d, wait %v, issuance attempts %d; want 0, %v and 2", n, wait, attemptsNow(tx), window)
			}
			// The window over, the budget is whole again; the attempt
			// errors are Attempt's.
			got, _, err = r.AttemptWithin(ctx, o.ID, 5, t0.Add(window), key, window, 2)
			n = got.Attempts
			wantErr(t, "AttemptWithin in a new window", err, nil)
			if n != 3 {
				t.Fatalf("AttemptWithin in a new window: attempts %d, want 3", n)
			}
			_, _, err = r.AttemptWithin(ctx, o.ID, 3, t0.Add(window), key, window, 2)
			wantErr(t, "AttemptWithin at the limit of attempts", err, storage.ErrExhausted)
			_, _, err = r.AttemptWithin(ctx, o.ID, 5, o.ExpiresAt, "budget:late", window, 2)
			wantErr(t, "AttemptWithin expired", err, storage.ErrExpired)
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
		_, _, err = kept.Credentials().LockWithOTP(ctx, id(t, "AuthMethod"))
		wantErr(t, "Credentials.LockWithOTP through a finished Tx", err, storage.ErrTxDone)
		wantErr(t, "LockEmail through a finished Tx", kept.Credentials().LockEmail(ctx, "a@example.com"), storage.ErrTxDone)
		_, err = kept.OTPIssuances().Attempt(ctx, id(t, "OTP"), 5, t0)
		wantErr(t, "Attempt through a finished Tx", err, storage.ErrTxDone)
		_, _, err = kept.OTPIssuances().AttemptWithin(ctx, id(t, "OTP"), 5, t0, "k", time.Minute, 1)
		wantErr(t, "AttemptWithin through a finished Tx", err, storage.ErrTxDone)
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

package storagetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/walletgate/walletgate/storage"
)

// world is one record of every kind, stored by seed and used to prove that a
// failed transaction changed none of them.
type world struct {
	ext     storage.ExternalAccount
	chal    storage.OwnershipChallenge
	wallet  storage.InternalAccount
	cred    storage.Credential
	otp     storage.OTPIssuance
	session storage.Session
	pending storage.PendingRequest
	event   storage.Event
}

func seed(t *testing.T, s storage.Store) *world {
	t.Helper()
	ctx := t.Context()
	w := &world{}
	w.ext = newExternal(t, id(t, "Customer"))
	w.chal = storage.OwnershipChallenge{ID: id(t, "Challenge"), AccountID: w.ext.ID, Method: "WALLET_SIGNATURE",
		Message: "m", IssuedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	w.wallet = storage.InternalAccount{ID: id(t, "InternalAccount"), CustomerID: w.ext.CustomerID, Email: "a@example.com", CreatedAt: t0, UpdatedAt: t0}
	w.cred = passkeyCred(t, w.wallet.ID, []byte(id(t, "Passkey")))
	w.otp = storage.OTPIssuance{ID: id(t, "OTP"), CredentialID: w.cred.ID, AccountID: w.wallet.ID, Code: "000000",
		IssuedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	w.session = storage.Session{ID: id(t, "Session"), AccountID: w.wallet.ID, CredentialID: w.cred.ID,
		PublicKey: []byte{3, 1}, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	w.pending = newPending(t, w.wallet.ID)
	w.event = storage.Event{ID: id(t, "Webhook"), Type: "EXTERNAL_ACCOUNT.STATUS_UPDATED", AccountID: w.ext.ID,
		Payload: []byte(`{}`), CreatedAt: t0}
	run(t, s, func(tx storage.Tx) error {
		return errors.Join(
			tx.ExternalAccounts().Create(ctx, &w.ext),
			tx.Challenges().Put(ctx, &w.chal),
			tx.InternalAccounts().Create(ctx, &w.wallet),
			tx.Credentials().Create(ctx, &w.cred),
			tx.OTPIssuances().Put(ctx, &w.otp),
			tx.Sessions().Create(ctx, &w.session),
			tx.PendingRequests().Create(ctx, &w.pending, roomy),
			tx.Outbox().Append(ctx, &w.event),
		)
	})
	return w
}

// mutateAll changes every record of w and adds new ones, failing the test on
// any error: it is the body of transactions that are then rolled back.
func mutateAll(t *testing.T, tx storage.Tx, w *world) {
	t.Helper()
	ctx := t.Context()
	ext := w.ext
	ext.Status = storage.StatusActive
	wallet := w.wallet
	wallet.Email = "b@example.com"
	cred := w.cred
	cred.Nickname = "changed"
	fresh := newExternal(t, w.ext.CustomerID)
	freshCred := emailCred(t, w.wallet.ID, "x@example.com")
	freshPending := newPending(t, w.wallet.ID)
	freshSession := w.session
	freshSession.ID = id(t, "Session")
	freshOTP := w.otp
	freshOTP.ID = id(t, "OTP")
	freshEvent := storage.Event{ID: id(t, "Webhook"), Type: "T", AccountID: w.ext.ID, CreatedAt: t0}
	rlErr := tx.RateLimits().Hit(ctx, "k", t0, time.Minute, 1)
	// The attempt's budget shares the key: its hit is the window's second.
	locked, otpErr := tx.Credentials().Lock(ctx, w.cred.ID,
		&storage.OTPAttempt{Limit: 100, Now: t0, Key: "k", Window: time.Minute, Budget: 2})
	if otpErr == nil && (locked.Reserved == nil || locked.Reserved.Attempts != 1) {
		t.Fatalf("the attempt inside the transaction reserved %v (wait %v), want attempt 1", locked.Reserved, locked.Wait)
	}
	consumeErr := tx.PendingRequests().Consume(ctx, w.pending.ID, t0)
	_, chalErr := tx.Challenges().Consume(ctx, w.ext.ID, w.chal.ID)
	_, revErr := tx.Sessions().RevokeByCredential(ctx, w.cred.ID, t0)
	err := errors.Join(
		tx.ExternalAccounts().Update(ctx, &ext),
		tx.ExternalAccounts().Create(ctx, &fresh),
		tx.InternalAccounts().Update(ctx, &wallet),
		tx.Credentials().Update(ctx, &cred),
		tx.Credentials().Create(ctx, &freshCred),
		tx.Credentials().Delete(ctx, w.cred.ID),
		tx.PendingRequests().Create(ctx, &freshPending, roomy),
		tx.Sessions().Create(ctx, &freshSession),
		tx.OTPIssuances().Put(ctx, &freshOTP),
		tx.Outbox().Append(ctx, &freshEvent),
		tx.Outbox().MarkDelivered(ctx, []string{w.event.ID}, t0),
		rlErr, otpErr, consumeErr, chalErr, revErr,
	)
	err = errors.Join(err, settle(ctx, tx))
	if err != nil {
		t.Fatalf("mutations inside the transaction failed: %v", err)
	}
}

// unchanged fails the test unless s holds exactly what seed stored.
func unchanged(t *testing.T, s storage.Store, w *world) {
	t.Helper()
	ctx := t.Context()
	err := s.Atomic(ctx, func(tx storage.Tx) error {
		ext, err := tx.ExternalAccounts().Get(ctx, w.ext.ID)
		wantErr(t, "Get external account", err, nil)
		diff(t, "external account", ext, w.ext)
		exts, _ := tx.ExternalAccounts().ListByCustomer(ctx, w.ext.CustomerID)
		diff(t, "external accounts of the customer", exts, []storage.ExternalAccount{w.ext})
		chal, err := tx.Challenges().Get(ctx, w.ext.ID)
		wantErr(t, "Get challenge", err, nil)
		diff(t, "challenge", chal, w.chal)
		wallet, _ := tx.InternalAccounts().Get(ctx, w.wallet.ID)
		diff(t, "internal account", wallet, w.wallet)
		creds, _ := tx.Credentials().ListByAccount(ctx, w.wallet.ID)
		diff(t, "credentials", creds, []storage.Credential{w.cred})
		found, err := tx.Credentials().FindByWebAuthnID(ctx, w.cred.Tenant, w.cred.WebAuthn.CredentialID)
		wantErr(t, "FindByWebAuthnID", err, nil)
		diff(t, "passkey by WebAuthn id", found, w.cred)
		otp, err := Issuance(ctx, tx, w.cred.ID)
		wantErr(t, "Issuance", err, nil)
		if otp == nil {
			t.Fatal("the OTP issuance is gone")
		}
		diff(t, "OTP issuance", *otp, w.otp)
		sessions, _ := tx.Sessions().ListActive(ctx, w.wallet.ID, t0)
		diff(t, "active sessions", sessions, []storage.Session{w.session})
		p, _ := tx.PendingRequests().Get(ctx, w.pending.ID)
		diff(t, "pending request", p, w.pending)
		return nil
	})
	wantErr(t, "Atomic", err, nil)
	diff(t, "events", Events(t, s, w.ext.ID), []storage.Event{w.event})
	// A probe hit at a limit of one, settled and then rolled back so that
	// it stays uncounted too: a rolled-back hit counted would refuse it.
	err = s.Atomic(ctx, func(tx storage.Tx) error {
		if err := tx.RateLimits().Hit(ctx, "k", t0, time.Minute, 1); err != nil {
			return err
		}
		if err := settle(ctx, tx); err != nil {
			return err
		}
		return errRollback
	})
	if limited := (*storage.RateLimitError)(nil); errors.As(err, &limited) {
		t.Fatalf("a rolled-back rate-limit hit was counted: %v", err)
	}
	wantErr(t, "the probe hit", err, errRollback)
}

func testAtomic(t *testing.T, newStore Factory) {
	ctx := t.Context()
	t.Run("RollbackOnError", func(t *testing.T) {
		s := newStore(t)
		w := seed(t, s)
		err := s.Atomic(ctx, func(tx storage.Tx) error {
			mutateAll(t, tx, w)
			return errRollback
		})
		if !errors.Is(err, errRollback) {
			t.Fatalf("Atomic returned %v, want the function's error", err)
		}
		unchanged(t, s, w)
	})
	t.Run("RollbackOnPanic", func(t *testing.T) {
		s := newStore(t)
		w := seed(t, s)
		func() {
			defer func() {
				if r := recover(); r != "boom" {
					t.Fatalf("recovered %v, want the function's panic", r)
				}
			}()
			_ = s.Atomic(ctx, func(tx storage.Tx) error {
				mutateAll(t, tx, w)
				panic("boom")
			})
		}()
		unchanged(t, s, w)
	})
	t.Run("CancelledContext", func(t *testing.T) {
		s := newStore(t)
		w := seed(t, s)
		c, cancel := context.WithCancel(ctx)
		err := s.Atomic(c, func(tx storage.Tx) error {
			mutateAll(t, tx, w)
			cancel()
			return nil
		})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Atomic with a context cancelled mid-way returned %v, want context.Canceled", err)
		}
		unchanged(t, s, w)
		ran := false
		err = s.Atomic(c, func(storage.Tx) error { ran = true; return nil })
		if !errors.Is(err, context.Canceled) || ran {
			t.Fatalf("Atomic with a cancelled context: err %v, ran %v", err, ran)
		}
	})
	t.Run("CommitIsVisible", func(t *testing.T) {
		s := newStore(t)
		w := seed(t, s)
		upd := w.ext
		upd.Status = storage.StatusActive
		run(t, s, func(tx storage.Tx) error { return tx.ExternalAccounts().Update(ctx, &upd) })
		run(t, s, func(tx storage.Tx) error {
			got, err := tx.ExternalAccounts().Get(ctx, w.ext.ID)
			wantErr(t, "Get", err, nil)
			diff(t, "committed update", got, upd)
			return nil
		})
	})
	t.Run("ReadYourWrites", func(t *testing.T) {
		s := newStore(t)
		p := newPending(t, id(t, "InternalAccount"))
		run(t, s, func(tx storage.Tx) error {
			wantErr(t, "Create", tx.PendingRequests().Create(ctx, &p, roomy), nil)
			got, err := storage.ConsumeNow(ctx, tx, p.ID, t0)
			wantErr(t, "ConsumeNow in the creating transaction", err, nil)
			if !got.ConsumedAt.Equal(t0) {
				t.Fatalf("ConsumeNow in the creating transaction read ConsumedAt %v, want %v", got.ConsumedAt, t0)
			}
			return nil
		})
	})
	t.Run("TxAfterReturn", func(t *testing.T) {
		s := newStore(t)
		var kept storage.Tx
		run(t, s, func(tx storage.Tx) error { kept = tx; return nil })
		_, err := kept.PendingRequests().Get(ctx, "Request:x")
		wantErr(t, "using a Tx after Atomic returned", err, storage.ErrTxDone)
		a := newExternal(t, "c")
		wantErr(t, "writing through a finished Tx", kept.ExternalAccounts().Create(ctx, &a), storage.ErrTxDone)
	})
}

func testConcurrency(t *testing.T, newStore Factory) {
	ctx := t.Context()
	const workers = 64
	race := func(t *testing.T, fn func() error) (wins int, losses []error) {
		var wg sync.WaitGroup
		var mu sync.Mutex
		start := make(chan struct{})
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				err := fn()
				mu.Lock()
				defer mu.Unlock()
				if err == nil {
					wins++
				} else {
					losses = append(losses, err)
				}
			}()
		}
		close(start)
		wg.Wait()
		return wins, losses
	}

	// losingConsumers fails the test unless exactly one consumer of id
	// won and every other failed with a *storage.ConsumeError for id
	// wrapping ErrConsumed.
	losingConsumers := func(t *testing.T, id string, wins int, losses []error) {
		t.Helper()
		if wins != 1 {
			t.Fatalf("%d consumers won, want exactly 1", wins)
		}
		for _, err := range losses {
			var ce *storage.ConsumeError
			if !errors.As(err, &ce) || ce.ID != id {
				t.Fatalf("losing consumer: %v, want a *storage.ConsumeError for %s", err, id)
			}
			wantErr(t, "losing consumer", err, storage.ErrConsumed)
		}
	}
	// Consume's failure may surface only from Atomic (at the commit).
	t.Run("ConsumePendingRequest", func(t *testing.T) {
		s := newStore(t)
		p := newPending(t, id(t, "InternalAccount"))
		run(t, s, func(tx storage.Tx) error { return tx.PendingRequests().Create(ctx, &p, roomy) })
		wins, losses := race(t, func() error {
			return s.Atomic(ctx, func(tx storage.Tx) error { return tx.PendingRequests().Consume(ctx, p.ID, t0) })
		})
		losingConsumers(t, p.ID, wins, losses)
	})
	// ConsumeNow's failure surfaces in the transaction, at the latest
	// from the read-back that a deferred consumption travels with.
	t.Run("ConsumeNowPendingRequest", func(t *testing.T) {
		s := newStore(t)
		p := newPending(t, id(t, "InternalAccount"))
		run(t, s, func(tx storage.Tx) error { return tx.PendingRequests().Create(ctx, &p, roomy) })
		var late atomic.Int32
		wins, losses := race(t, func() error {
			early := false // of the last run of fn: a store may rerun it
			err := s.Atomic(ctx, func(tx storage.Tx) error {
				got, err := storage.ConsumeNow(ctx, tx, p.ID, t0)
				early = err != nil
				if err != nil {
					return err
				}
				if !got.ConsumedAt.Equal(t0) {
					return fmt.Errorf("ConsumeNow read ConsumedAt %v, want %v", got.ConsumedAt, t0)
				}
				return nil
			})
			if err != nil && !early {
				late.Add(1)
			}
			return err
		})
		losingConsumers(t, p.ID, wins, losses)
		if n := late.Load(); n > 0 {
			t.Fatalf("%d of %d losing consumers learned it only from Atomic, not from ConsumeNow", n, len(losses))
		}
	})
	t.Run("ConsumeOTPIssuance", func(t *testing.T) {
		s := newStore(t)
		w := seed(t, s)
		wins, losses := race(t, func() error {
			return s.Atomic(ctx, func(tx storage.Tx) error { return tx.OTPIssuances().Consume(ctx, w.otp.ID, t0) })
		})
		losingConsumers(t, w.otp.ID, wins, losses)
	})
	t.Run("CompareAndSetAccount", func(t *testing.T) {
		s := newStore(t)
		w := seed(t, s)
		// Every worker read version 1; exactly one update may land.
		wins, losses := race(t, func() error {
			a := w.ext
			a.Status = storage.StatusActive
			return s.Atomic(ctx, func(tx storage.Tx) error { return tx.ExternalAccounts().Update(ctx, &a) })
		})
		if wins != 1 {
			t.Fatalf("%d updates won, want exactly 1", wins)
		}
		for _, err := range losses {
			wantErr(t, "losing update", err, storage.ErrConflict)
		}
	})
	t.Run("TransitionOnce", func(t *testing.T) {
		s := newStore(t)
		w := seed(t, s)
		errNotPending := errors.New("not pending")
		var transitions atomic.Int32
		wins, losses := race(t, func() error {
			return s.Atomic(ctx, func(tx storage.Tx) error {
				a, err := tx.ExternalAccounts().Get(ctx, w.ext.ID)
				if err != nil {
					return err
				}
				if a.Status != storage.StatusPendingOwnershipVerification {
					return errNotPending
				}
				a.Status = storage.StatusActive
				if err := tx.ExternalAccounts().Update(ctx, &a); err != nil {
					return err
				}
				transitions.Add(1)
				return nil
			})
		})
		if wins != 1 {
			t.Fatalf("%d transitions committed, want exactly 1 (%d ran)", wins, transitions.Load())
		}
		for _, err := range losses {
			if !errors.Is(err, errNotPending) && !errors.Is(err, storage.ErrConflict) {
				t.Fatalf("losing transition: %v", err)
			}
		}
	})
}

func testSweep(t *testing.T, newStore Factory) {
	ctx := t.Context()
	s := newStore(t)
	acct := id(t, "InternalAccount")
	var live, dead []storage.PendingRequest
	for i := range 10 {
		p := newPending(t, acct)
		p.ExpiresAt = t0.Add(time.Duration(i-5) * time.Minute) // 5 expired before t0, 5 not
		if p.ExpiresAt.Before(t0) {
			dead = append(dead, p)
		} else {
			live = append(live, p)
		}
		run(t, s, func(tx storage.Tx) error { return tx.PendingRequests().Create(ctx, &p, roomy) })
	}
	// A consumed request is swept on its expiry like any other.
	run(t, s, func(tx storage.Tx) error { return tx.PendingRequests().Consume(ctx, dead[0].ID, t0.Add(-time.Hour)) })
	w := seed(t, s) // challenge, OTP and session expire at t0+1h
	n, err := s.Sweep(ctx, t0, 3)
	wantErr(t, "Sweep", err, nil)
	if n != 3 {
		t.Fatalf("Sweep with limit 3 removed %d", n)
	}
	n, err = s.Sweep(ctx, t0, 100)
	wantErr(t, "Sweep", err, nil)
	if n != 2 {
		t.Fatalf("second Sweep removed %d, want the 2 remaining expired requests", n)
	}
	run(t, s, func(tx storage.Tx) error {
		for _, p := range dead {
			_, err := tx.PendingRequests().Get(ctx, p.ID)
			wantErr(t, "Get swept request", err, storage.ErrNotFound)
		}
		for _, p := range live {
			_, err := tx.PendingRequests().Get(ctx, p.ID)
			wantErr(t, "Get live request", err, nil)
		}
		return nil
	})
	unchanged(t, s, w)

	n, err = s.Sweep(ctx, t0.Add(2*time.Hour), 1000)
	wantErr(t, "Sweep later", err, nil)
	if n < 8 { // 5 requests, the challenge, the OTP issuance and the session
		t.Fatalf("Sweep after every expiry removed %d, want at least 8", n)
	}
	run(t, s, func(tx storage.Tx) error {
		_, err := tx.Challenges().Get(ctx, w.ext.ID)
		wantErr(t, "Get swept challenge", err, storage.ErrNotFound)
		o, err := Issuance(ctx, tx, w.cred.ID)
		wantErr(t, "Issuance after Sweep", err, nil)
		if o != nil {
			t.Fatalf("the expired OTP issuance %s was not swept", o.ID)
		}
		_, err = tx.PendingRequests().Get(ctx, live[0].ID)
		wantErr(t, "Get swept request", err, storage.ErrNotFound)
		// Accounts and credentials never expire.
		_, err = tx.ExternalAccounts().Get(ctx, w.ext.ID)
		wantErr(t, "Get account after Sweep", err, nil)
		_, err = tx.Credentials().Get(ctx, w.cred.ID)
		wantErr(t, "Get credential after Sweep", err, nil)
		return nil
	})
}

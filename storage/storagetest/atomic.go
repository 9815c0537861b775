package storagetest

import (
	"context"
	"errors"
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
	w.cred = passkeyCred(t, w.wallet.ID, []byte("seed-passkey"))
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
			tx.PendingRequests().Create(ctx, &w.pending),
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
	var wait time.Duration
	_, rlErr := tx.RateLimits().Allow(ctx, "k", t0, time.Minute, 1)
	wait, rlErr2 := tx.RateLimits().Allow(ctx, "k", t0, time.Minute, 1)
	if wait == 0 {
		t.Fatal("rate limit allowed a second hit inside the transaction")
	}
	_, otpErr := tx.OTPIssuances().Attempt(ctx, w.otp.ID, 100, t0)
	_, consumeErr := tx.PendingRequests().Consume(ctx, w.pending.ID, t0)
	_, chalErr := tx.Challenges().Consume(ctx, w.ext.ID, w.chal.ID)
	_, revErr := tx.Sessions().RevokeByCredential(ctx, w.cred.ID, t0)
	err := errors.Join(
		tx.ExternalAccounts().Update(ctx, &ext),
		tx.ExternalAccounts().Create(ctx, &fresh),
		tx.InternalAccounts().Update(ctx, &wallet),
		tx.Credentials().Update(ctx, &cred),
		tx.Credentials().Create(ctx, &freshCred),
		tx.Credentials().Delete(ctx, w.cred.ID),
		tx.PendingRequests().Create(ctx, &freshPending),
		tx.Sessions().Create(ctx, &freshSession),
		tx.OTPIssuances().Put(ctx, &freshOTP),
		tx.Outbox().Append(ctx, &freshEvent),
		tx.Outbox().MarkDelivered(ctx, []string{w.event.ID}, t0),
		rlErr, rlErr2, otpErr, consumeErr, chalErr, revErr,
	)
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
		found, err := tx.Credentials().FindByWebAuthnID(ctx, w.cred.WebAuthn.CredentialID)
		wantErr(t, "FindByWebAuthnID", err, nil)
		diff(t, "passkey by WebAuthn id", found, w.cred)
		otp, _ := tx.OTPIssuances().GetByCredential(ctx, w.cred.ID)
		diff(t, "OTP issuance", otp, w.otp)
		sessions, _ := tx.Sessions().ListActive(ctx, w.wallet.ID, t0)
		diff(t, "active sessions", sessions, []storage.Session{w.session})
		p, _ := tx.PendingRequests().Get(ctx, w.pending.ID)
		diff(t, "pending request", p, w.pending)
		evs, _ := tx.Outbox().ListByAccount(ctx, w.ext.ID)
		diff(t, "events", evs, []storage.Event{w.event})
		wait, err := tx.RateLimits().Allow(ctx, "k", t0, time.Minute, 1)
		wantErr(t, "Allow", err, nil)
		if wait != 0 {
			t.Fatal("a rolled-back rate-limit hit was counted")
		}
		return errRollback // leave the probe hit uncounted too
	})
	wantErr(t, "Atomic", err, errRollback)
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
			wantErr(t, "Create", tx.PendingRequests().Create(ctx, &p), nil)
			_, err := tx.PendingRequests().Consume(ctx, p.ID, t0)
			wantErr(t, "Consume in the creating transaction", err, nil)
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

	t.Run("ConsumePendingRequest", func(t *testing.T) {
		s := newStore(t)
		p := newPending(t, id(t, "InternalAccount"))
		run(t, s, func(tx storage.Tx) error { return tx.PendingRequests().Create(ctx, &p) })
		wins, losses := race(t, func() error {
			return s.Atomic(ctx, func(tx storage.Tx) error {
				_, err := tx.PendingRequests().Consume(ctx, p.ID, t0)
				return err
			})
		})
		if wins != 1 {
			t.Fatalf("%d consumers won, want exactly 1", wins)
		}
		for _, err := range losses {
			wantErr(t, "losing consumer", err, storage.ErrConsumed)
		}
	})
	t.Run("SpendPendingRequest", func(t *testing.T) {
		s := newStore(t)
		p := newPending(t, id(t, "InternalAccount"))
		run(t, s, func(tx storage.Tx) error { return tx.PendingRequests().Create(ctx, &p) })
		wins, losses := race(t, func() error {
			return s.Atomic(ctx, func(tx storage.Tx) error {
				if err := tx.PendingRequests().Spend(ctx, p.ID, t0); err != nil {
					return err
				}
				// A statement after it, which a deferred Spend travels with.
				_, err := tx.PendingRequests().Get(ctx, p.ID)
				return err
			})
		})
		if wins != 1 {
			t.Fatalf("%d spenders won, want exactly 1", wins)
		}
		for _, err := range losses {
			var spent *storage.SpendError
			if !errors.As(err, &spent) || spent.ID != p.ID {
				t.Fatalf("losing spender: %v, want a *storage.SpendError for %s", err, p.ID)
			}
			wantErr(t, "losing spender", err, storage.ErrConsumed)
		}
	})
	t.Run("ConsumeOTPIssuance", func(t *testing.T) {
		s := newStore(t)
		w := seed(t, s)
		wins, losses := race(t, func() error {
			return s.Atomic(ctx, func(tx storage.Tx) error {
				_, err := tx.OTPIssuances().Consume(ctx, w.otp.ID, t0)
				return err
			})
		})
		if wins != 1 {
			t.Fatalf("%d consumers won, want exactly 1", wins)
		}
		for _, err := range losses {
			wantErr(t, "losing consumer", err, storage.ErrConsumed)
		}
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
		run(t, s, func(tx storage.Tx) error { return tx.PendingRequests().Create(ctx, &p) })
	}
	// A consumed request is swept on its expiry like any other.
	run(t, s, func(tx storage.Tx) error {
		_, err := tx.PendingRequests().Consume(ctx, dead[0].ID, t0.Add(-time.Hour))
		return err
	})
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
		_, err = tx.OTPIssuances().GetByCredential(ctx, w.cred.ID)
		wantErr(t, "Get swept OTP issuance", err, storage.ErrNotFound)
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

package storagetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/walletgate/walletgate/storage"
)

// Replicas returns stores that share one new, empty state, as the replicas
// of a service share its database: what one commits, the others see. A store
// that serves one process returns itself alone.
type Replicas func(tb testing.TB) []storage.Store

// RunRaces runs the check-then-act race cases against the stores that
// newReplicas returns: workers goroutines per store, released at once, run
// transactions that read, decide and then write, with a pause between the
// decision and the write, so that a store that does not keep the rule fails
// reliably. The rules:
//
//   - concurrent revokes of every credential of an account, each locking the
//     account ([storage.InternalAccounts.Lock]) before counting, leave
//     exactly one credential;
//   - concurrent verification attempts at one credential's OTP issuance
//     ([storage.Credentials.Lock] with an [storage.OTPAttempt]) compare at
//     most the limit of codes, and a right code after the limit is refused;
//   - concurrent attempts at one credential, with a budget below the limit
//     of attempts and some rolled back after they reserved: exactly the
//     budget of reservations commit, and a refused hit reserves nothing;
//   - concurrent transactions that each take a credential with an attempt
//     of limit zero (reserving nothing), decide on the attempts of the
//     issuance it returned and write the issuance back with one more lose
//     no attempt: the issuance is read after the lock;
//   - concurrent adds of an EMAIL_OTP (or SMS_OTP) credential to one account
//     leave one;
//   - concurrent ties of one address to EMAIL_OTP credentials of different
//     accounts, each under [storage.Credentials.LockEmail], leave one;
//   - sessions created under [storage.Credentials.Lock] while the credential
//     is deleted are all revoked or refused;
//   - concurrent [storage.IdempotencyKeys.Begin] calls with one scope and
//     key: exactly one commits;
//   - concurrent hits on one rate-limit key ([storage.RateLimits.Hit]),
//     some rolled back after they were counted: exactly the limit of hits
//     commit, every refusal fails its transaction, and the window refuses
//     more until it ends;
//   - relays leasing one outbox ([storage.Outbox.Lease]) and marking what
//     they leased delivered hand out every event exactly once, the events
//     of an account one at a time and in Seq order;
//   - concurrent appends of events of one account, each holding its
//     transaction open after its event was written, while a relay leases
//     and delivers: the events are delivered in Seq order, so an event's
//     Seq was drawn in commit order (a later Seq never commits while an
//     earlier one is pending);
//   - operations that lock their signer ([storage.Sessions.LockSigner]),
//     check it and write an effect race a revoke of the session, or a
//     delete of its credential, that takes no other lock: no effect
//     commits after the revoke committed (the outbox's Seq gives the
//     commit order), also when the effect is a refresh (a new session of
//     the signer's credential);
//   - two revokes per account with three credentials, each signed by a
//     session of the other's credential and locking it first: exactly one
//     commits;
//   - concurrent [storage.PendingRequests.Create] calls within one
//     account's quota store no more than the limit;
//   - concurrent [storage.PendingRequests.Create] calls within one scope's
//     quota, some rolled back after their insert: every one that does not
//     roll back commits, none ever sees more than the limit of the
//     scope's requests, and the scope ends with exactly the limit;
//   - concurrent payouts of one customer, each holding the customer
//     ([storage.PayoutUsages.Hold]) and recording its usage only when it
//     fits a window, some rolled back: the window ends exactly full, and a
//     rolled-back payout used nothing;
//   - concurrent approvals of one payout, each locking it and moving it from
//     WAITING to APPROVED by compare-and-set, some rolled back: exactly one
//     commits, so the payout executes once.
//   - concurrent [storage.Records.Create] calls of one kind and key, some
//     rolled back: exactly one commits, and the record is the winner's;
//   - concurrent increments of one record, each locking it
//     ([storage.Records.Lock]) and writing it back with Update, some rolled
//     back: the count ends at the number of commits, no update lost;
//   - concurrent debits of one balance record, each locking it, refusing
//     when it is below the debit and otherwise writing it less the debit
//     and creating a record of the debit, some rolled back: the committed
//     debits never exceed the starting balance, the balance ends at the
//     start less them, and the records of the committed debits alone are
//     listed, in the order they were made.
//
// [Run] runs them with 64 goroutines on one store. A store meant for several
// replicas should run them with one store per replica (for example one
// connection pool each) sharing one database.
func RunRaces(t *testing.T, newReplicas Replicas, workers int) {
	t.Helper()
	cases := []struct {
		name string
		fn   func(*testing.T, []storage.Store, int)
	}{
		{"RevokeKeepsOne", raceRevokeKeepsOne},
		{"AttemptLimit", raceAttemptLimit},
		{"AttemptLimitRightCode", raceAttemptLimitRightCode},
		{"LockReadsIssuance", raceLockReadsIssuance},
		{"OTPAttemptBudget", raceOTPAttemptBudget},
		{"OneEmailOTP", func(t *testing.T, s []storage.Store, w int) { raceOneOTP(t, s, w, storage.EmailOTP) }},
		{"OneSMSOTP", func(t *testing.T, s []storage.Store, w int) { raceOneOTP(t, s, w, storage.SMSOTP) }},
		{"EmailTiedOnce", raceEmailTiedOnce},
		{"SessionOfDeletedCredential", raceSessionOfDeletedCredential},
		{"IdempotencyBeginOnce", raceIdempotencyBeginOnce},
		{"LeaseOnce", raceLeaseOnce},
		{"AppendCommitOrder", raceAppendCommitOrder},
		{"RateLimit", raceRateLimit},
		{"SignerSessionRevoked", func(t *testing.T, s []storage.Store, w int) { raceSignerRevoked(t, s, w, false, updateEffect) }},
		{"SignerCredentialRevoked", func(t *testing.T, s []storage.Store, w int) { raceSignerRevoked(t, s, w, true, updateEffect) }},
		{"RefreshSessionRevoked", func(t *testing.T, s []storage.Store, w int) { raceSignerRevoked(t, s, w, false, refreshEffect) }},
		{"CrossSignedRevokes", raceCrossSignedRevokes},
		{"PendingLimit", racePendingLimit},
		{"PendingBounded", racePendingBounded},
		{"PayoutWindow", racePayoutWindow},
		{"PayoutApproval", racePayoutApproval},
		{"RecordCreateOnce", raceRecordCreateOnce},
		{"RecordCounter", raceRecordCounter},
		{"RecordBalance", raceRecordBalance},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			stores := newReplicas(t)
			if len(stores) == 0 || workers < 1 {
				t.Fatal("RunRaces needs at least one store and one worker")
			}
			c.fn(t, stores, workers)
		})
	}
}

func testRaces(t *testing.T, newStore Factory) {
	RunRaces(t, func(tb testing.TB) []storage.Store { return []storage.Store{newStore(tb)} }, 64)
}

// raceTimeout bounds a race: running out of it means a deadlock or a lost
// wake-up.
const raceTimeout = time.Minute

// pause widens the window between a decision and the write it allows.
func pause() { time.Sleep(time.Millisecond) }

// race runs fn from workers goroutines on each store, all released at once,
// and returns the result of each, indexed by the worker's number (0 to
// len(stores)*workers-1).
func race(t *testing.T, stores []storage.Store, workers int, fn func(c context.Context, i int, s storage.Store) error) []error {
	t.Helper()
	ctx := t.Context()
	c, cancel := context.WithTimeout(ctx, raceTimeout)
	defer cancel()
	errs := make([]error, len(stores)*workers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range errs {
		s := stores[i%len(stores)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = fn(c, i, s)
		}()
	}
	close(start)
	wg.Wait()
	if c.Err() != nil {
		t.Fatalf("the race did not finish within %v: a deadlock or a lost wake-up", raceTimeout)
	}
	return errs
}

// tally counts the successes and fails the test on any error that none of
// allowed matches.
func tally(t *testing.T, what string, errs []error, allowed ...error) int {
	t.Helper()
	wins := 0
	for i, err := range errs {
		if err == nil {
			wins++
			continue
		}
		if !slices.ContainsFunc(allowed, func(a error) bool { return errors.Is(err, a) }) {
			t.Fatalf("%s: worker %d failed with %v, want one of %v", what, i, err, allowed)
		}
	}
	return wins
}

func raceRevokeKeepsOne(t *testing.T, stores []storage.Store, workers int) {
	ctx := t.Context()
	acct := storage.InternalAccount{ID: id(t, "InternalAccount"), CustomerID: id(t, "Customer"), Email: "ada@example.com",
		Phone: "+14155550123", CreatedAt: t0, UpdatedAt: t0}
	sms := storage.Credential{ID: id(t, "AuthMethod"), AccountID: acct.ID, Type: storage.SMSOTP, Nickname: acct.Phone,
		Phone: acct.Phone, CreatedAt: t0, UpdatedAt: t0}
	creds := []storage.Credential{emailCred(t, acct.ID, acct.Email), sms,
		passkeyCred(t, acct.ID, []byte("revoke-1")), passkeyCred(t, acct.ID, []byte("revoke-2")),
		oauthCred(t, acct.ID, "sub-1"), oauthCred(t, acct.ID, "sub-2")}
	creds = creds[:min(len(creds), len(stores)*workers)]
	run(t, stores[0], func(tx storage.Tx) error {
		err := tx.InternalAccounts().Create(ctx, &acct)
		for i := range creds {
			err = errors.Join(err, tx.Credentials().Create(ctx, &creds[i]))
		}
		return err
	})
	var holds lockHolds
	errs := race(t, stores, workers, func(c context.Context, i int, s storage.Store) error {
		target := creds[i%len(creds)].ID
		return s.Atomic(c, func(tx storage.Tx) error {
			if _, err := tx.InternalAccounts().Lock(c, acct.ID); err != nil {
				return err
			}
			// held is from the lock to fn's end, or, when a statement
			// fails, to just before it was sent: a failed statement
			// aborts the transaction, and a database may release its
			// locks then, before fn returns (PostgreSQL does), with
			// nothing more of it able to commit.
			h := holds.enter()
			all, err := tx.Credentials().ListByAccount(c, acct.ID)
			switch {
			case err != nil:
			case !slices.ContainsFunc(all, func(o storage.Credential) bool { return o.ID == target }):
				err = errGone
			case len(all) <= 1:
				err = errLast
			default:
				pause()
				sent := time.Now()
				if err = tx.Credentials().Delete(c, target); err != nil {
					holds.leave(h, sent)
					return err
				}
			}
			holds.leave(h, time.Now())
			return err
		})
	})
	wins := tally(t, "revoke", errs, errGone, errLast)
	run(t, stores[0], func(tx storage.Tx) error {
		left, err := tx.Credentials().ListByAccount(ctx, acct.ID)
		if err != nil {
			return err
		}
		if len(left) != 1 || wins != len(creds)-1 {
			t.Fatalf("%d revokes of %d credentials committed and %d credentials are left, want %d and 1",
				wins, len(creds), len(left), len(creds)-1)
		}
		return nil
	})
	if a, b, ok := holds.overlap(); ok {
		t.Fatalf("two transactions held the account lock at once: one from %v to %v, the other from %v",
			a.from.Format(time.StampMicro), a.to.Format(time.StampMicro), b.from.Format(time.StampMicro))
	}
}

// lockHolds records when transactions held one lock, to find two that
// held it at once.
type lockHolds struct {
	mu    sync.Mutex
	spans []lockSpan
}

// lockSpan is one hold: from the lock's grant to when it may have been
// released at the earliest.
type lockSpan struct{ from, to time.Time }

// enter records a hold that begins now and returns it.
func (l *lockHolds) enter() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.spans = append(l.spans, lockSpan{from: time.Now()})
	return len(l.spans) - 1
}

// leave records that hold h may have ended at to.
func (l *lockHolds) leave(h int, to time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.spans[h].to = to
}

// overlap returns two holds of which the second began while the first
// still held the lock.
func (l *lockHolds) overlap() (lockSpan, lockSpan, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, a := range l.spans {
		for _, b := range l.spans {
			if a.from.Before(b.from) && b.from.Before(a.to) {
				return a, b, true
			}
		}
	}
	return lockSpan{}, lockSpan{}, false
}

const attemptLimit = 5

// roomyAttempt is an attempt at credential cred's issuance, at t0, under
// the limit of attempts and a budget no race reaches.
func roomyAttempt(cred string) *storage.OTPAttempt {
	return &storage.OTPAttempt{Limit: attemptLimit, Now: t0, Key: "budget:" + cred, Window: time.Hour, Budget: 1 << 20}
}

// reserve takes credential cred with attempt a and returns nil when it
// reserved an attempt at issuance o, storage.ErrConsumed when o was
// consumed, storage.ErrExhausted when o had a.Limit attempts already, and
// an error naming what it found otherwise.
func reserve(c context.Context, tx storage.Tx, cred, o string, a *storage.OTPAttempt) error {
	r, err := tx.Credentials().Lock(c, cred, a)
	switch {
	case err != nil:
		return err
	case r.Issuance == nil || r.Issuance.ID != o:
		return fmt.Errorf("Lock with an attempt read issuance %v, want %s", r.Issuance, o)
	case r.Reserved != nil:
		if r.Reserved.ID != o || r.Reserved.Attempts != r.Issuance.Attempts+1 || r.Reserved.Attempts > a.Limit {
			return fmt.Errorf("Lock with an attempt reserved %+v after reading %d attempts, want the next of at most %d",
				*r.Reserved, r.Issuance.Attempts, a.Limit)
		}
		return nil
	case !r.Issuance.ConsumedAt.IsZero():
		return storage.ErrConsumed
	case r.Issuance.Attempts >= a.Limit:
		return storage.ErrExhausted
	}
	return fmt.Errorf("Lock with an attempt reserved nothing on a live issuance with %d attempts (wait %v)", r.Issuance.Attempts, r.Wait)
}

// raceAttemptLimit: workers each reserve an attempt at one issuance and
// compare a wrong code when they did. At most the limit of attempts commit
// and of codes are compared; a right code after them is refused before it
// is compared.
func raceAttemptLimit(t *testing.T, stores []storage.Store, workers int) {
	ctx := t.Context()
	cred, o := otpCredential(t, stores[0])
	a := roomyAttempt(cred.ID)
	var compared atomic.Int32
	errs := race(t, stores, workers, func(c context.Context, _ int, s storage.Store) error {
		return s.Atomic(c, func(tx storage.Tx) error {
			if err := reserve(c, tx, cred.ID, o.ID, a); err != nil {
				return err
			}
			compared.Add(1)
			pause() // comparing a wrong code; the attempt commits
			return nil
		})
	})
	wins := tally(t, "wrong guess", errs, storage.ErrExhausted)
	want := min(attemptLimit, len(errs))
	if wins != want || compared.Load() != int32(want) {
		t.Fatalf("%d attempts committed and %d codes were compared, want %d of each", wins, compared.Load(), want)
	}
	if len(errs) < attemptLimit {
		return
	}
	// The right code after the limit: refused before it is compared.
	err := stores[len(stores)-1].Atomic(ctx, func(tx storage.Tx) error {
		if err := reserve(ctx, tx, cred.ID, o.ID, a); err != nil {
			return err
		}
		return tx.OTPIssuances().Consume(ctx, o.ID, t0)
	})
	wantErr(t, "the right code after the limit", err, storage.ErrExhausted)
	run(t, stores[0], func(tx storage.Tx) error {
		got, err := Issuance(ctx, tx, cred.ID)
		if err != nil {
			return err
		}
		if got == nil || got.Attempts != attemptLimit || !got.ConsumedAt.IsZero() {
			t.Fatalf("issuance after the race: %+v; want %d attempts and unconsumed", got, attemptLimit)
		}
		return nil
	})
}

// raceAttemptLimitRightCode is raceAttemptLimit with worker 0 holding the
// right code, which it consumes once its attempt is reserved: it is
// accepted exactly when its attempt was within the limit.
func raceAttemptLimitRightCode(t *testing.T, stores []storage.Store, workers int) {
	ctx := t.Context()
	cred, o := otpCredential(t, stores[0])
	a := roomyAttempt(cred.ID)
	var compared atomic.Int32
	errs := race(t, stores, workers, func(c context.Context, i int, s storage.Store) error {
		return s.Atomic(c, func(tx storage.Tx) error {
			if err := reserve(c, tx, cred.ID, o.ID, a); err != nil {
				return err
			}
			compared.Add(1)
			pause()
			if i != 0 {
				return nil // a wrong code
			}
			return tx.OTPIssuances().Consume(c, o.ID, t0)
		})
	})
	tally(t, "guess", errs, storage.ErrExhausted, storage.ErrConsumed)
	if n := compared.Load(); n > attemptLimit {
		t.Fatalf("%d codes were compared, want at most %d", n, attemptLimit)
	}
	run(t, stores[0], func(tx storage.Tx) error {
		got, err := Issuance(ctx, tx, cred.ID)
		if err != nil {
			return err
		}
		if got == nil {
			t.Fatal("the issuance is gone after the race")
		}
		if got.Attempts > attemptLimit {
			t.Fatalf("Attempts %d, want at most %d", got.Attempts, attemptLimit)
		}
		switch {
		case errs[0] == nil && got.ConsumedAt.IsZero():
			t.Fatal("the right code was accepted but the issuance is not consumed")
		case errs[0] != nil && !errors.Is(errs[0], storage.ErrExhausted):
			t.Fatalf("the right code failed with %v, want ErrExhausted", errs[0])
		case errs[0] != nil && !got.ConsumedAt.IsZero():
			t.Fatal("the right code was refused but the issuance is consumed")
		}
		return nil
	})
}

// otpCredential stores an SMS_OTP credential and an issuance of it.
func otpCredential(t *testing.T, s storage.Store) (storage.Credential, storage.OTPIssuance) {
	acct := id(t, "InternalAccount")
	cred := storage.Credential{ID: id(t, "AuthMethod"), AccountID: acct, Type: storage.SMSOTP, Phone: "+14155550100",
		Nickname: "+14155550100", CreatedAt: t0, UpdatedAt: t0}
	o := newIssuance(t)
	o.CredentialID, o.AccountID = cred.ID, acct
	run(t, s, func(tx storage.Tx) error {
		if err := tx.Credentials().Create(t.Context(), &cred); err != nil {
			return err
		}
		return tx.OTPIssuances().Put(t.Context(), &o)
	})
	return cred, o
}

// raceOTPAttemptBudget: workers reserve attempts at one credential's
// issuance charged to one budget smaller than the limit of attempts; some
// roll back after they reserved, which returns both the hit and the
// attempt, and those the budget refuses commit what they did. Exactly the
// budget of reservations commit, and the issuance counts exactly those
// attempts.
func raceOTPAttemptBudget(t *testing.T, stores []storage.Store, workers int) {
	ctx := t.Context()
	const budget = 3
	cred, o := otpCredential(t, stores[0])
	a := storage.OTPAttempt{Limit: attemptLimit, Now: t0, Key: "budget:" + cred.ID, Window: time.Hour, Budget: budget}
	var reserved, refused atomic.Int32
	errs := race(t, stores, workers, func(c context.Context, i int, s storage.Store) error {
		return s.Atomic(c, func(tx storage.Tx) error {
			r, err := tx.Credentials().Lock(c, cred.ID, &a)
			switch {
			case err != nil:
				return err
			case r.Issuance == nil || r.Issuance.ID != o.ID:
				return fmt.Errorf("Lock with an attempt read issuance %v, want %s", r.Issuance, o.ID)
			case r.Wait > 0:
				if r.Reserved != nil {
					return fmt.Errorf("a refused hit reserved attempt %d", r.Reserved.Attempts)
				}
				refused.Add(1)
				return nil // commits nothing
			case r.Reserved == nil:
				return fmt.Errorf("Lock with an attempt at a live issuance within the budget reserved nothing (read %d attempts)", r.Issuance.Attempts)
			case r.Reserved.Attempts < 1 || r.Reserved.Attempts > budget:
				return fmt.Errorf("reserved attempt %d, want 1 to %d", r.Reserved.Attempts, budget)
			}
			pause()
			if i%3 == 0 {
				return errRollback
			}
			reserved.Add(1)
			return nil
		})
	})
	tally(t, "reservation", errs, errRollback)
	if got := reserved.Load(); got != min(budget, int32(len(errs))) {
		t.Fatalf("%d reservations committed, want %d", got, budget)
	}
	run(t, stores[0], func(tx storage.Tx) error {
		got, err := Issuance(ctx, tx, o.CredentialID)
		if err != nil {
			return err
		}
		if got == nil {
			t.Fatal("the issuance is gone after the race")
		}
		if got.Attempts != int(reserved.Load()) {
			t.Fatalf("the issuance counts %d attempts after %d committed reservations (%d refused)", got.Attempts, reserved.Load(), refused.Load())
		}
		return nil
	})
}

// raceLockReadsIssuance: workers take one credential with an attempt of
// limit zero, reserving nothing, and, while fewer than the limit of
// attempts were made, write its issuance back with one attempt more, a
// plain write after a pause. The decision holds only when the issuance is
// read under the lock: then exactly the limit of workers write and the
// issuance ends with the limit of attempts.
func raceLockReadsIssuance(t *testing.T, stores []storage.Store, workers int) {
	ctx := t.Context()
	cred, o := otpCredential(t, stores[0])
	a := storage.OTPAttempt{Now: t0, Key: "budget:" + cred.ID, Window: time.Hour, Budget: 1}
	errs := race(t, stores, workers, func(c context.Context, _ int, s storage.Store) error {
		return s.Atomic(c, func(tx storage.Tx) error {
			r, err := tx.Credentials().Lock(c, cred.ID, &a)
			switch {
			case err != nil:
				return err
			case r.Credential.ID != cred.ID || r.Issuance == nil || r.Issuance.ID != o.ID:
				return fmt.Errorf("Lock returned credential %s and issuance %v, want %s and %s", r.Credential.ID, r.Issuance, cred.ID, o.ID)
			case r.Reserved != nil || r.Wait != 0:
				return fmt.Errorf("Lock with an attempt of limit 0 reserved %v (wait %v)", r.Reserved, r.Wait)
			case r.Issuance.Attempts >= attemptLimit:
				return storage.ErrExhausted
			}
			pause()
			next := *r.Issuance
			next.Attempts++
			return tx.OTPIssuances().Put(c, &next)
		})
	})
	wins := tally(t, "attempt", errs, storage.ErrExhausted)
	want := min(attemptLimit, len(errs))
	run(t, stores[0], func(tx storage.Tx) error {
		got, err := Issuance(ctx, tx, cred.ID)
		if err != nil {
			return err
		}
		if got == nil {
			t.Fatal("the issuance is gone after the race")
		}
		if wins != want || got.Attempts != want {
			t.Fatalf("%d writes committed and the issuance has %d attempts, want %d writes and %d attempts", wins, got.Attempts, want, want)
		}
		return nil
	})
}

func raceOneOTP(t *testing.T, stores []storage.Store, workers int, typ storage.CredentialType) {
	ctx := t.Context()
	acct := id(t, "InternalAccount")
	pk := passkeyCred(t, acct, []byte("one-otp"))
	run(t, stores[0], func(tx storage.Tx) error { return tx.Credentials().Create(ctx, &pk) })
	creds := make([]storage.Credential, len(stores)*workers)
	for i := range creds {
		creds[i] = storage.Credential{ID: id(t, "AuthMethod"), AccountID: acct, Type: typ, CreatedAt: t0, UpdatedAt: t0}
		if typ == storage.EmailOTP {
			creds[i].Email = fmt.Sprintf("user%d@example.com", i)
			creds[i].Nickname = creds[i].Email
		} else {
			creds[i].Phone = fmt.Sprintf("+1415555%04d", i)
			creds[i].Nickname = creds[i].Phone
		}
	}
	errs := race(t, stores, workers, func(c context.Context, i int, s storage.Store) error {
		cred := creds[i]
		return s.Atomic(c, func(tx storage.Tx) error {
			all, err := tx.Credentials().ListByAccount(c, acct)
			if err != nil {
				return err
			}
			if slices.ContainsFunc(all, func(o storage.Credential) bool { return o.Type == typ }) {
				return errHas
			}
			pause()
			return tx.Credentials().Create(c, &cred)
		})
	})
	if wins := tally(t, "add "+string(typ), errs, errHas, storage.ErrDuplicate); wins != 1 {
		t.Fatalf("%d adds of %s committed, want 1", wins, typ)
	}
	run(t, stores[0], func(tx storage.Tx) error {
		all, err := tx.Credentials().ListByAccount(ctx, acct)
		if err != nil {
			return err
		}
		n := 0
		for _, c := range all {
			if c.Type == typ {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("the account has %d %s credentials, want 1", n, typ)
		}
		return nil
	})
}

// raceEmailTiedOnce ties one address to EMAIL_OTP credentials of many
// wallets at once, half of them in one tenant and half in another, each
// under LockEmail after checking the tenant's tied credentials: one tie
// commits per tenant, and neither tenant's waits on or sees the other's.
func raceEmailTiedOnce(t *testing.T, stores []storage.Store, workers int) {
	ctx := t.Context()
	const email = "contested@example.com"
	tenants := [2]string{"", "tenant-b"}
	creds := make([]storage.Credential, len(stores)*workers)
	for i := range creds {
		creds[i] = emailCred(t, id(t, "InternalAccount"), email)
		creds[i].Tenant = tenants[i%2]
	}
	errs := race(t, stores, workers, func(c context.Context, i int, s storage.Store) error {
		cred := creds[i]
		return s.Atomic(c, func(tx storage.Tx) error {
			if err := tx.Credentials().LockEmail(c, cred.Tenant, email); err != nil {
				return err
			}
			tied, err := tx.Credentials().ListEmailOTPByEmail(c, cred.Tenant, email)
			if err != nil {
				return err
			}
			if len(tied) > 0 {
				return errTied
			}
			pause()
			return tx.Credentials().Create(c, &cred)
		})
	})
	if wins := tally(t, "tie", errs, errTied); wins != len(tenants) {
		t.Fatalf("%d ties of one address committed in %d tenants, want one per tenant", wins, len(tenants))
	}
	run(t, stores[0], func(tx storage.Tx) error {
		for _, tenant := range tenants {
			tied, err := tx.Credentials().ListEmailOTPByEmail(ctx, tenant, email)
			if err != nil {
				return err
			}
			if len(tied) != 1 || tied[0].Tenant != tenant {
				t.Fatalf("tenant %q: %d credentials are tied to the address (%v), want 1 of the tenant", tenant, len(tied), tied)
			}
		}
		return nil
	})
}

func raceSessionOfDeletedCredential(t *testing.T, stores []storage.Store, workers int) {
	ctx := t.Context()
	acct := storage.InternalAccount{ID: id(t, "InternalAccount"), CustomerID: id(t, "Customer"), Email: "ada@example.com",
		CreatedAt: t0, UpdatedAt: t0}
	doomed := emailCred(t, acct.ID, acct.Email)
	kept := passkeyCred(t, acct.ID, []byte("kept"))
	run(t, stores[0], func(tx storage.Tx) error {
		return errors.Join(tx.InternalAccounts().Create(ctx, &acct), tx.Credentials().Create(ctx, &doomed),
			tx.Credentials().Create(ctx, &kept))
	})
	sessions := make([]storage.Session, len(stores)*workers)
	for i := range sessions {
		sessions[i] = storage.Session{ID: id(t, "Session"), AccountID: acct.ID, CredentialID: doomed.ID,
			PublicKey: []byte{3, byte(i)}, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	}
	errs := race(t, stores, workers, func(c context.Context, i int, s storage.Store) error {
		if i == 0 { // the revoke
			return s.Atomic(c, func(tx storage.Tx) error {
				if _, err := tx.InternalAccounts().Lock(c, acct.ID); err != nil {
					return err
				}
				if err := tx.Credentials().Delete(c, doomed.ID); err != nil {
					return err
				}
				_, err := tx.Sessions().RevokeByCredential(c, doomed.ID, t0)
				return err
			})
		}
		sess := sessions[i]
		return s.Atomic(c, func(tx storage.Tx) error {
			if _, err := tx.Credentials().Lock(c, doomed.ID, nil); err != nil {
				return err
			}
			pause()
			return tx.Sessions().Create(c, &sess)
		})
	})
	wantErr(t, "the revoke", errs[0], nil)
	tally(t, "session", errs[1:], storage.ErrNotFound)
	run(t, stores[0], func(tx storage.Tx) error {
		active, err := tx.Sessions().ListActive(ctx, acct.ID, t0)
		for _, s := range active {
			if s.CredentialID == doomed.ID {
				t.Fatalf("session %s of the deleted credential is active", s.ID)
			}
		}
		return err
	})
}

// raceLeaseOnce: workers lease the outbox, hold the lease across a pause,
// record what they got and mark it delivered, until every event is
// delivered. Each event is handed out once, and each account's events in
// Seq order.
func raceAppendCommitOrder(t *testing.T, stores []storage.Store, workers int) {
	ctx := t.Context()
	const account = "ExternalAccount:order"
	// Few appenders, each appending many times, so that a pool of a few
	// connections per store leaves the relay room to lease between
	// commits.
	const appendRounds = 16
	appenders := min(workers, 3)
	total := int64(len(stores) * appenders * appendRounds)
	now := t0.Add(time.Hour)
	var (
		delivered atomic.Int64
		order     []int64
		handed    = map[string]int{}
		relayErr  = make(chan error, 1)
	)
	go func() {
		c, cancel := context.WithTimeout(ctx, raceTimeout)
		defer cancel()
		relayErr <- func() error {
			for delivered.Load() < total {
				var got []storage.Event
				err := stores[0].Atomic(c, func(tx storage.Tx) error {
					var err error
					got, err = tx.Outbox().Lease(c, "relay", now, time.Hour, 4)
					return err
				})
				if err != nil {
					return err
				}
				if len(got) == 0 {
					time.Sleep(100 * time.Microsecond)
					continue
				}
				ids := make([]string, 0, len(got))
				for _, e := range got {
					handed[e.ID]++
					order = append(order, e.Seq)
					ids = append(ids, e.ID)
				}
				if err := stores[0].Atomic(c, func(tx storage.Tx) error { return tx.Outbox().MarkDelivered(c, ids, now) }); err != nil {
					return err
				}
				delivered.Add(int64(len(ids)))
			}
			return nil
		}()
	}()
	errs := race(t, stores, appenders, func(c context.Context, i int, s storage.Store) error {
		for round := range appendRounds {
			// Staggered, so that the relay leases between commits.
			time.Sleep(time.Duration((i+round)%4) * time.Millisecond)
			err := s.Atomic(c, func(tx storage.Tx) error {
				e := storage.Event{ID: id(t, "Webhook"), Type: "T", AccountID: account, CreatedAt: t0}
				if err := tx.Outbox().Append(c, &e); err != nil {
					return err
				}
				// A lock after the append, so that a store that defers
				// the append has written the event (and drawn its Seq)
				// before the pause, whose length varies so that, without
				// the rule, a later Seq would often commit first.
				if err := tx.Credentials().LockEmail(c, "", fmt.Sprintf("order-%d@example.com", i)); err != nil {
					return err
				}
				time.Sleep(time.Duration((i*7+round)%5) * time.Millisecond)
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	tally(t, "append", errs)
	if err := <-relayErr; err != nil {
		t.Fatalf("relay: %v", err)
	}
	for id, n := range handed {
		if n != 1 {
			t.Fatalf("event %s was handed out %d times, want once", id, n)
		}
	}
	if int64(len(handed)) != total || !slices.IsSorted(order) {
		t.Fatalf("%d of %d events delivered, in Seq order %v", len(handed), total, order)
	}
}

func raceLeaseOnce(t *testing.T, stores []storage.Store, workers int) {
	ctx := t.Context()
	const accounts, perAccount = 16, 4
	var all []storage.Event
	run(t, stores[0], func(tx storage.Tx) error {
		all = all[:0]
		for i := range accounts * perAccount {
			e := storage.Event{ID: id(t, "Webhook"), Type: "T", AccountID: fmt.Sprintf("ExternalAccount:%d", i%accounts), CreatedAt: t0}
			if err := tx.Outbox().Append(ctx, &e); err != nil {
				return err
			}
			all = append(all, e)
		}
		return nil
	})
	var (
		mu        sync.Mutex
		handed    = map[string]int{}
		order     = map[string][]int64{}
		delivered atomic.Int64
	)
	now := t0.Add(time.Hour)
	errs := race(t, stores, workers, func(c context.Context, i int, s storage.Store) error {
		owner := fmt.Sprintf("relay-%d", i)
		for delivered.Load() < int64(len(all)) {
			var got []storage.Event
			err := s.Atomic(c, func(tx storage.Tx) error {
				var err error
				got, err = tx.Outbox().Lease(c, owner, now, time.Hour, 3)
				pause()
				return err
			})
			if err != nil {
				return err
			}
			if len(got) == 0 {
				time.Sleep(time.Millisecond)
				continue
			}
			ids := make([]string, 0, len(got))
			mu.Lock()
			seen := map[string]bool{}
			for _, e := range got {
				if seen[e.AccountID] {
					mu.Unlock()
					return fmt.Errorf("one lease holds two events of %s", e.AccountID)
				}
				seen[e.AccountID] = true
				handed[e.ID]++
				order[e.AccountID] = append(order[e.AccountID], e.Seq)
				ids = append(ids, e.ID)
			}
			mu.Unlock()
			if err := s.Atomic(c, func(tx storage.Tx) error { return tx.Outbox().MarkDelivered(c, ids, now) }); err != nil {
				return err
			}
			delivered.Add(int64(len(ids)))
		}
		return nil
	})
	tally(t, "lease and deliver", errs)
	for _, e := range all {
		if handed[e.ID] != 1 {
			t.Fatalf("event %s was handed out %d times, want once", e.ID, handed[e.ID])
		}
	}
	for acct, seqs := range order {
		if !slices.IsSorted(seqs) {
			t.Fatalf("events of %s were handed out in Seq order %v", acct, seqs)
		}
	}
}

// racePendingBounded: concurrent Create calls within one scope's quota, each
// holding its transaction open after its insert was sent and a quarter
// rolling back then. Every other call commits; each transaction, after its
// insert, finds at most the limit of the requests made so far, and the
// scope ends with exactly the limit (the requests of the calls that rolled
// back were never stored).
func racePendingBounded(t *testing.T, stores []storage.Store, workers int) {
	ctx := t.Context()
	const limit = 5
	acct, scope := id(t, "InternalAccount"), id(t, "AuthMethod")
	n := len(stores) * workers
	made := make([]storage.PendingRequest, n)
	for i := range made {
		made[i] = newPending(t, acct)
		made[i].CreatedAt = t0.Add(time.Duration(i%7) * time.Millisecond)
		made[i].ExpiresAt = made[i].CreatedAt.Add(5 * time.Minute)
	}
	// held counts the requests of made that tx sees.
	held := func(c context.Context, tx storage.Tx) (int, error) {
		k := 0
		for i := range made {
			_, err := tx.PendingRequests().Get(c, made[i].ID)
			switch {
			case err == nil:
				k++
			case !errors.Is(err, storage.ErrNotFound):
				return 0, err
			}
		}
		return k, nil
	}
	var most atomic.Int32
	errs := race(t, stores, workers, func(c context.Context, i int, s storage.Store) error {
		p := made[i]
		return s.Atomic(c, func(tx storage.Tx) error {
			if err := tx.PendingRequests().Create(c, &p, storage.Quota{Limit: limit, Scope: scope}); err != nil {
				return err
			}
			// Reads after it send a deferred insert and count what this
			// transaction sees; the insert is then held uncommitted a while.
			k, err := held(c, tx)
			if err != nil {
				return err
			}
			for m := most.Load(); int32(k) > m && !most.CompareAndSwap(m, int32(k)); m = most.Load() {
			}
			pause()
			if i%4 == 3 {
				return errRollback
			}
			return nil
		})
	})
	wins := tally(t, "bounded create", errs, errRollback)
	for i, err := range errs {
		if rolledBack := i%4 == 3; rolledBack != (err != nil) {
			t.Fatalf("worker %d (rolls back: %v) ended with %v: a bounded create was refused", i, rolledBack, err)
		}
	}
	if m := most.Load(); m > limit {
		t.Fatalf("a transaction saw %d requests of a scope bounded to %d", m, limit)
	}
	var left int
	run(t, stores[0], func(tx storage.Tx) error {
		var err error
		left, err = held(ctx, tx)
		return err
	})
	if want := min(limit, wins); left != want {
		t.Fatalf("after %d committed creates the scope holds %d requests, want %d", wins, left, want)
	}
}

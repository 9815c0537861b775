package signedretry_test

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/memory"
	"github.com/walletgate/walletgate/storage/postgres"
	"github.com/walletgate/walletgate/storage/postgres/pgtest"
)

// The expiry of a retry is decided on a time read after its locks were
// granted, again on every run of its transaction, on the memory store and,
// when WALLETGATE_POSTGRES_DSN names a database, on PostgreSQL.

// eachStore runs fn on a new memory store and on a new PostgreSQL schema.
func eachStore(t *testing.T, fn func(t *testing.T, store storage.Store)) {
	t.Run("memory", func(t *testing.T) { fn(t, memory.New()) })
	t.Run("postgres", func(t *testing.T) {
		fn(t, pgtest.Store(t, pgtest.Pool(t, pgtest.DSN(t), 4, nil), postgres.Config{}))
	})
}

// hookStore is a store whose transactions call enter just before each lock a
// signed retry waits for, with its name: "consume" (the request's
// Consume), "LockSigner" or "LockSignersByKey".
type hookStore struct {
	storage.Store
	enter func(call string)
}

func (s hookStore) Atomic(ctx context.Context, fn func(storage.Tx) error) error {
	return s.Store.Atomic(ctx, func(tx storage.Tx) error { return fn(hookTx{Tx: tx, enter: s.enter}) })
}

type hookTx struct {
	storage.Tx
	enter func(string)
}

func (t hookTx) Sessions() storage.Sessions {
	return hookSessions{Sessions: t.Tx.Sessions(), enter: t.enter}
}

func (t hookTx) PendingRequests() storage.PendingRequests {
	return hookPending{PendingRequests: t.Tx.PendingRequests(), enter: t.enter}
}

type hookSessions struct {
	storage.Sessions
	enter func(string)
}

func (s hookSessions) LockSigner(ctx context.Context, accountID, id string) (storage.Session, error) {
	s.enter("LockSigner")
	return s.Sessions.LockSigner(ctx, accountID, id)
}

func (s hookSessions) LockSignersByKey(ctx context.Context, accountID string, publicKey []byte) ([]storage.Session, error) {
	s.enter("LockSignersByKey")
	return s.Sessions.LockSignersByKey(ctx, accountID, publicKey)
}

type hookPending struct {
	storage.PendingRequests
	enter func(string)
}

func (p hookPending) Consume(ctx context.Context, id string, now time.Time) error {
	p.enter("consume")
	return p.PendingRequests.Consume(ctx, id, now)
}

// rerunStore runs every transaction twice, as a store does that reruns one
// after a serialization failure or a lost lock conflict: the first run is
// rolled back, then between runs when that run consumed a request, then fn
// runs again and its result stands.
type rerunStore struct {
	storage.Store
	between func()
}

var errDiscarded = errors.New("first run discarded")

func (s rerunStore) Atomic(ctx context.Context, fn func(storage.Tx) error) error {
	consumed := false
	note := func(call string) { consumed = consumed || call == "consume" }
	err := s.Store.Atomic(ctx, func(tx storage.Tx) error {
		if err := fn(hookTx{Tx: tx, enter: note}); err != nil {
			return err
		}
		return errDiscarded
	})
	if !errors.Is(err, errDiscarded) {
		return err
	}
	if consumed {
		s.between()
	}
	return s.Store.Atomic(ctx, fn)
}

// expiryCase is a retry whose request or signing session expires after the
// retry read the time at its start and before it was decided.
type expiryCase struct {
	name   string
	signer func(f *fixture) signedretry.Signer
	key    func(f *fixture) *ecdsa.PrivateKey
	// ttl is the challenges' lifetime; the fixture's sessions live 15
	// minutes.
	ttl time.Duration
	// advance moves the clock past the request's or the session's expiry.
	advance time.Duration
	code    apierror.Code
	reason  string
	// sandbox retries with the sandbox literal instead of a stamp.
	sandbox bool
}

func keyA(f *fixture) *ecdsa.PrivateKey { return f.keyA }

func anySession(*fixture) signedretry.Signer { return signedretry.Signer{Rule: signedretry.AnySession} }

func sessionA(f *fixture) signedretry.Signer {
	return signedretry.Signer{Rule: signedretry.Session, Ref: f.sessA}
}

func boundStranger(f *fixture) signedretry.Signer {
	return signedretry.Signer{Rule: signedretry.BoundKey, Ref: compressedHex(f.stranger)}
}

var expiryCases = []expiryCase{
	{name: "any session, the request expires", signer: anySession, key: keyA,
		ttl: signedretry.DefaultTTL, advance: signedretry.DefaultTTL,
		code: apierror.Unauthorized, reason: "request id expired"},
	{name: "any session, the session expires", signer: anySession, key: keyA,
		ttl: time.Hour, advance: 15 * time.Minute, code: apierror.WalletSignatureInvalid},
	{name: "the session itself, the request expires", signer: sessionA, key: keyA,
		ttl: signedretry.DefaultTTL, advance: signedretry.DefaultTTL,
		code: apierror.Unauthorized, reason: "request id expired"},
	{name: "the session itself, the session expires", signer: sessionA, key: keyA,
		ttl: time.Hour, advance: 15 * time.Minute, code: apierror.WalletSignatureInvalid},
	{name: "bound key, the request expires", signer: boundStranger, key: func(f *fixture) *ecdsa.PrivateKey { return f.stranger },
		ttl: signedretry.DefaultTTL, advance: signedretry.DefaultTTL,
		code: apierror.Unauthorized, reason: "request id expired"},
}

// unconsumed fails t when the request id was consumed.
func unconsumed(t *testing.T, store storage.Store, id string) {
	t.Helper()
	ctx := t.Context()
	if err := store.Atomic(ctx, func(tx storage.Tx) error {
		p, err := tx.PendingRequests().Get(ctx, id)
		if err == nil && !p.ConsumedAt.IsZero() {
			return errors.New("consumed at " + p.ConsumedAt.String())
		}
		return err
	}); err != nil {
		t.Fatalf("the refused retry's request: %v", err)
	}
}

// TestExpiryAfterLockWait: a retry that waits for a lock its decision rests
// on (the signer's session, held by a revoke of it that then rolls back; for
// a bound key, the request, held by a competing consumption that rolls back)
// while the clock passes the request's or the session's expiry is refused as
// expired, and its effect never runs.
func TestExpiryAfterLockWait(t *testing.T) {
	for _, tc := range expiryCases {
		t.Run(tc.name, func(t *testing.T) {
			eachStore(t, func(t *testing.T, store storage.Store) {
				ctx := t.Context()
				f := newFixtureOn(t, store, false)
				var c *signedretry.Challenge
				// hold takes, in a transaction of its own, the lock
				// the retry will wait for, and rolls back on release.
				held, release, holderDone := make(chan struct{}), make(chan struct{}), make(chan error, 1)
				errHolder := errors.New("holder rolls back")
				hold := func() {
					holderDone <- store.Atomic(ctx, func(tx storage.Tx) error {
						var err error
						if tc.signer(f).Rule == signedretry.BoundKey {
							_, err = storage.ConsumeNow(ctx, tx, c.RequestID, f.clock.Now())
						} else {
							err = tx.Sessions().Revoke(ctx, f.sessA, f.clock.Now())
						}
						close(held)
						if err != nil {
							return err // the test fails on it
						}
						<-release
						return errHolder
					})
				}
				// When the retry, its start time read, is about to
				// ask for the lock, the holder takes it.
				at := "LockSignersByKey"
				switch tc.signer(f).Rule {
				case signedretry.Session:
					at = "LockSigner"
				case signedretry.BoundKey:
					at = "consume"
				}
				var once sync.Once
				waiting := make(chan struct{})
				mgr := newManager(t, signedretry.Config{Store: hookStore{Store: store, enter: func(call string) {
					if call != at {
						return
					}
					once.Do(func() {
						go hold()
						<-held
						close(waiting)
					})
				}}, Clock: f.clock.Now, TTL: tc.ttl})
				var err error
				if c, err = mgr.Issue(ctx, first(), signedretry.TestOperation{Type: opType, AccountID: f.account, Signer: tc.signer(f)}); err != nil {
					t.Fatal(err)
				}
				r := retry(c, stamp(t, tc.key(f), c.PayloadToSign))
				effects := 0
				done := make(chan error, 1)
				go func() {
					_, err := mgr.Complete(ctx, r, opType,
						func(context.Context, storage.Tx, *signedretry.Authorization) error {
							effects++
							return nil
						})
					done <- err
				}()
				select {
				case <-waiting:
				case err := <-done:
					t.Fatalf("the retry ended before it asked for the lock: %v", err)
				}
				// The clock passes the expiry while the lock is held;
				// then the holder lets go (after a moment, so that the
				// retry is waiting by then).
				f.clock.Add(tc.advance)
				time.Sleep(20 * time.Millisecond)
				close(release)
				if err := <-holderDone; !errors.Is(err, errHolder) {
					t.Fatalf("holder: %v", err)
				}
				apierrortest.Want(t, <-done, tc.code, tc.reason)
				if effects != 0 {
					t.Fatalf("the effect ran %d times for a retry decided after the expiry", effects)
				}
				unconsumed(t, store, c.RequestID)
			})
		})
	}
}

// TestExpiryOnRerun: a transaction the store runs again reads the time
// again. The first run, decided before the expiry, is rolled back; the clock
// passes the expiry; the rerun refuses the retry and its effect does not
// run again.
func TestExpiryOnRerun(t *testing.T) {
	cases := append(slices.Clone(expiryCases),
		expiryCase{name: "sandbox literal, any session, the session expires", signer: anySession, key: keyA, sandbox: true,
			ttl: time.Hour, advance: 15 * time.Minute, code: apierror.WalletSignatureInvalid})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			eachStore(t, func(t *testing.T, store storage.Store) {
				ctx := t.Context()
				f := newFixtureOn(t, store, false)
				mgr := newManager(t, signedretry.Config{Store: rerunStore{Store: store, between: func() { f.clock.Add(tc.advance) }},
					Clock: f.clock.Now, TTL: tc.ttl, Sandbox: tc.sandbox})
				c, err := mgr.Issue(ctx, first(), signedretry.TestOperation{Type: opType, AccountID: f.account, Signer: tc.signer(f)})
				if err != nil {
					t.Fatal(err)
				}
				// Issue's own rerun consumed nothing, so the clock has
				// not moved yet.
				r := retry(c, signedretry.SandboxSignature)
				if !tc.sandbox {
					r = retry(c, stamp(t, tc.key(f), c.PayloadToSign))
				}
				effects := 0
				_, err = mgr.Complete(ctx, r, opType,
					func(context.Context, storage.Tx, *signedretry.Authorization) error {
						effects++
						return nil
					})
				apierrortest.Want(t, err, tc.code, tc.reason)
				if effects != 1 {
					t.Fatalf("the effect ran %d times, want once (in the discarded first run only)", effects)
				}
				unconsumed(t, store, c.RequestID)
			})
		})
	}
}

// TestAuthorizationNow: the effect gets the time its retry was decided on,
// the one read after the locks in the run that commits, and Complete
// returns it.
func TestAuthorizationNow(t *testing.T) {
	eachStore(t, func(t *testing.T, store storage.Store) {
		ctx := t.Context()
		f := newFixtureOn(t, store, false)
		mgr := newManager(t, signedretry.Config{Store: rerunStore{Store: store, between: func() { f.clock.Add(time.Minute) }},
			Clock: f.clock.Now})
		for _, signer := range []signedretry.Signer{anySession(f), sessionA(f), boundStranger(f)} {
			c, err := mgr.Issue(ctx, first(), signedretry.TestOperation{Type: opType, AccountID: f.account, Signer: signer})
			if err != nil {
				t.Fatal(err)
			}
			key := f.keyA
			if signer.Rule == signedretry.BoundKey {
				key = f.stranger
			}
			var seen []time.Time
			a, err := mgr.CompleteLocking(ctx, retry(c, stamp(t, key, c.PayloadToSign)), opType,
				func(_ context.Context, _ storage.Tx, a *signedretry.Authorization) error {
					if !a.Now.IsZero() {
						t.Errorf("%s: the lock step sees Now %v, want zero (it runs before the decision)", signer.Rule, a.Now)
					}
					return nil
				},
				func(_ context.Context, _ storage.Tx, a *signedretry.Authorization) error {
					seen = append(seen, a.Now)
					return nil
				})
			if err != nil {
				t.Fatalf("%s: %v", signer.Rule, err)
			}
			now := f.clock.Now()
			if len(seen) != 2 || !seen[0].Equal(now.Add(-time.Minute)) || !seen[1].Equal(now) || !a.Now.Equal(now) ||
				a.Now.Location() != time.UTC {
				t.Fatalf("%s: the effect's runs saw Now %v and Complete returned %v; want %v, then %v (UTC) from the run that committed",
					signer.Rule, seen, a.Now, now.Add(-time.Minute), now)
			}
		}
	})
}

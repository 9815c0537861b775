package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/postgres"
	"github.com/walletgate/walletgate/storage/storagetest"
)

// faultWorld is the state an operation changes: it consumes p and o and
// creates session and event.
type faultWorld struct {
	p       storage.PendingRequest
	o       storage.OTPIssuance
	session storage.Session
	event   storage.Event
	now     time.Time
}

func newFaultWorld(t *testing.T, s *postgres.Store) *faultWorld {
	ctx := t.Context()
	now := time.Date(2026, 3, 14, 15, 9, 26, 535897000, time.UTC)
	acct := newID(t, "InternalAccount")
	w := &faultWorld{now: now,
		p: storage.PendingRequest{ID: newID(t, "Request"), Kind: "ADD_CREDENTIAL", AccountID: acct, Method: "POST",
			Path: "/auth/credentials", Payload: []byte(`{"type":"ADD_CREDENTIAL"}`), CreatedAt: now, ExpiresAt: now.Add(time.Minute)},
		o: storage.OTPIssuance{ID: newID(t, "OTP"), CredentialID: newID(t, "AuthMethod"), AccountID: acct, Code: "123456",
			IssuedAt: now, ExpiresAt: now.Add(time.Minute)},
	}
	w.session = storage.Session{ID: newID(t, "Session"), AccountID: acct, CredentialID: w.o.CredentialID,
		PublicKey: []byte{2, 1}, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	w.event = storage.Event{ID: newID(t, "Webhook"), Type: "AUTH_METHOD.ADDED", AccountID: acct, Payload: []byte(`{}`), CreatedAt: now}
	cred := storage.Credential{ID: w.o.CredentialID, AccountID: acct, Type: storage.SMSOTP, Phone: "+14155550100",
		Nickname: "+14155550100", CreatedAt: now, UpdatedAt: now}
	mustAtomic(t, s, func(tx storage.Tx) error {
		return errors.Join(tx.Credentials().Create(ctx, &cred), tx.PendingRequests().Create(ctx, &w.p, storage.Quota{Limit: 1000}),
			tx.OTPIssuances().Put(ctx, &w.o))
	})
	return w
}

// operation does every write of w, then calls hold (still inside the
// transaction) and returns its error.
func (w *faultWorld) operation(c context.Context, s *postgres.Store, hold func(tx storage.Tx) error) error {
	return s.Atomic(c, func(tx storage.Tx) error {
		session, event := w.session, w.event
		perr := tx.PendingRequests().Consume(c, w.p.ID, w.now)
		oerr := tx.OTPIssuances().Consume(c, w.o.ID, w.now)
		if err := errors.Join(perr, oerr, tx.Sessions().Create(c, &session), tx.Outbox().Append(c, &event)); err != nil {
			return err
		}
		return hold(tx)
	})
}

// untouched fails unless none of the operation's writes persisted.
func (w *faultWorld) untouched(t *testing.T, s *postgres.Store) {
	t.Helper()
	ctx := t.Context()
	mustAtomic(t, s, func(tx storage.Tx) error {
		p, err := tx.PendingRequests().Get(ctx, w.p.ID)
		if err != nil || !p.ConsumedAt.IsZero() {
			t.Fatalf("pending request after the failed transaction: %+v, %v; want it unconsumed", p, err)
		}
		o, err := storagetest.Issuance(ctx, tx, w.o.CredentialID)
		if err != nil || o == nil || !o.ConsumedAt.IsZero() {
			t.Fatalf("OTP issuance after the failed transaction: %+v, %v; want it unconsumed", o, err)
		}
		if _, err := tx.Sessions().Get(ctx, w.session.ID); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("session of the failed transaction: %v, want ErrNotFound", err)
		}
		return nil
	})
	if evs := storagetest.Events(t, s, w.event.AccountID); len(evs) != 0 {
		t.Fatalf("events of the failed transaction: %v; want none", evs)
	}
}

// done fails unless every write of the operation persisted.
func (w *faultWorld) done(t *testing.T, s *postgres.Store) {
	t.Helper()
	ctx := t.Context()
	mustAtomic(t, s, func(tx storage.Tx) error {
		p, _ := tx.PendingRequests().Get(ctx, w.p.ID)
		o, _ := storagetest.Issuance(ctx, tx, w.o.CredentialID)
		_, serr := tx.Sessions().Get(ctx, w.session.ID)
		evs := storagetest.Events(t, s, w.event.AccountID)
		if p.ConsumedAt.IsZero() || o == nil || o.ConsumedAt.IsZero() || serr != nil || len(evs) != 1 {
			t.Fatalf("after the retried operation: request consumed %v, OTP %+v, session %v, %d events",
				!p.ConsumedAt.IsZero(), o, serr, len(evs))
		}
		return nil
	})
}

// waitActive polls until backend pid runs a statement that starts with
// prefix, so that the fault hits it in flight.
func waitActive(t *testing.T, pool *pgxpool.Pool, pid uint32, prefix string) {
	t.Helper()
	ctx := t.Context()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		var active bool
		err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE pid = $1 AND state = 'active' AND starts_with(query, $2))`, int32(pid), prefix).Scan(&active)
		if err != nil {
			t.Fatal(err)
		}
		if active {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("backend %d never ran %q", pid, prefix)
}

// TestFaultLeavesNoPartialState kills a transaction after all its writes
// (its context cancelled between statements or during one, its connection
// terminated by the server) and checks that nothing of it persisted and that
// the same operation then succeeds.
func TestFaultLeavesNoPartialState(t *testing.T) {
	ctx := t.Context()
	pool := newPool(t, 4)
	s := newStore(t, pool)
	admin := newPool(t, 2) // another pool: a connection that is not the victim's

	cases := []struct {
		name string
		// hold runs inside the transaction after its writes; fault kills it.
		hold  func(c context.Context, tx storage.Tx, pid chan<- uint32) error
		fault func(t *testing.T, cancel context.CancelFunc, pid uint32)
		check func(t *testing.T, err error)
	}{
		{
			name: "ContextCancelledBetweenStatements",
			hold: func(c context.Context, tx storage.Tx, pid chan<- uint32) error {
				pid <- postgres.BackendPID(tx)
				<-c.Done()
				return nil // the context decides: Atomic must not commit
			},
			fault: func(t *testing.T, cancel context.CancelFunc, _ uint32) { cancel() },
			check: wantCanceled,
		},
		{
			name: "ContextCancelledDuringStatement",
			hold: func(c context.Context, tx storage.Tx, pid chan<- uint32) error {
				pid <- postgres.BackendPID(tx)
				return postgres.ExecIn(c, tx, "SELECT pg_sleep(0.5)")
			},
			fault: func(t *testing.T, cancel context.CancelFunc, pid uint32) {
				waitActive(t, admin, pid, "SELECT pg_sleep")
				cancel()
			},
			check: wantCanceled,
		},
		{
			name: "BackendTerminated",
			hold: func(c context.Context, tx storage.Tx, pid chan<- uint32) error {
				pid <- postgres.BackendPID(tx)
				return postgres.ExecIn(c, tx, "SELECT pg_sleep(30)")
			},
			fault: func(t *testing.T, _ context.CancelFunc, pid uint32) {
				waitActive(t, admin, pid, "SELECT pg_sleep")
				var ok bool
				if err := admin.QueryRow(ctx, "SELECT pg_terminate_backend($1)", int32(pid)).Scan(&ok); err != nil || !ok {
					t.Fatalf("pg_terminate_backend(%d): %v, %v", pid, ok, err)
				}
			},
			check: func(t *testing.T, err error) {
				if err == nil {
					t.Fatal("Atomic on a terminated connection returned nil")
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			began := time.Now()
			w := newFaultWorld(t, s)
			c, cancel := context.WithCancel(ctx)
			defer cancel()
			pid := make(chan uint32, 1)
			result := make(chan error, 1)
			go func() {
				result <- w.operation(c, s, func(tx storage.Tx) error { return tc.hold(c, tx, pid) })
			}()
			tc.fault(t, cancel, <-pid)
			err := <-result
			tc.check(t, err)
			w.untouched(t, s)
			if err := w.operation(ctx, s, func(storage.Tx) error { return nil }); err != nil {
				t.Fatalf("retrying the operation: %v", err)
			}
			w.done(t, s)
			if d := time.Since(began); d > 10*time.Second {
				t.Fatalf("fault and recovery took %v", d)
			}
		})
	}
}

func wantCanceled(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Atomic with its context cancelled returned %v, want context.Canceled", err)
	}
}

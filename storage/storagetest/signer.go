package storagetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/walletgate/walletgate/storage"
)

// Signed operations: the signer's locks ([storage.Sessions.LockSigner]), the
// single use of pending requests ([storage.PendingRequests.Consume]) and
// the quotas they are created within ([storage.PendingRequests.Create]): the
// cap on an account's live requests and the bound of a scope of them.

var (
	errSignerGone = errors.New("storagetest: the signer is revoked")
	errNotFirst   = errors.New("storagetest: the revoke was not the first")
)

// signedAccount is an account with three credentials and a session of each.
type signedAccount struct {
	acct     storage.InternalAccount
	creds    [3]storage.Credential
	sessions [3]storage.Session
}

func newSignedAccount(t *testing.T, s storage.Store) *signedAccount {
	t.Helper()
	ctx := t.Context()
	a := &signedAccount{acct: storage.InternalAccount{ID: id(t, "InternalAccount"), CustomerID: id(t, "Customer"),
		Email: "ada@example.com", CreatedAt: t0, UpdatedAt: t0}}
	a.creds = [3]storage.Credential{emailCred(t, a.acct.ID, a.acct.Email), passkeyCred(t, a.acct.ID, []byte("signer-"+a.acct.ID)),
		oauthCred(t, a.acct.ID, "signer")}
	for i := range a.sessions {
		// Refreshed sessions: authenticated before they were created. A
		// lock and the reads it answers keep the time.
		a.sessions[i] = storage.Session{ID: id(t, "Session"), AccountID: a.acct.ID, CredentialID: a.creds[i].ID,
			PublicKey: []byte{2, byte(i)}, CreatedAt: t0, AuthenticatedAt: t0.Add(-time.Duration(i+1) * time.Hour),
			ExpiresAt: t0.Add(time.Hour)}
	}
	run(t, s, func(tx storage.Tx) error {
		err := tx.InternalAccounts().Create(ctx, &a.acct)
		for i := range a.creds {
			err = errors.Join(err, tx.Credentials().Create(ctx, &a.creds[i]), tx.Sessions().Create(ctx, &a.sessions[i]))
		}
		return err
	})
	return a
}

// lockSigner is how a signed operation checks its signer: locked, then
// checked on what the lock read.
// Odd workers lock it by its key ([storage.Sessions.LockSignersByKey]).
func lockSigner(c context.Context, tx storage.Tx, acct string, session storage.Session, worker int) error {
	if worker%2 == 1 {
		all, err := tx.Sessions().LockSignersByKey(c, acct, session.PublicKey)
		if err != nil {
			return err
		}
		for _, s := range all {
			if s.ID == session.ID && s.Active(t0) {
				return nil
			}
		}
		return errSignerGone
	}
	s, err := tx.Sessions().LockSigner(c, acct, session.ID)
	if errors.Is(err, storage.ErrNotFound) || err == nil && !s.Active(t0) {
		return errSignerGone
	}
	return err
}

func testSigner(t *testing.T, newStore Factory) {
	ctx := t.Context()
	t.Run("LockSigner", func(t *testing.T) {
		s := newStore(t)
		a := newSignedAccount(t, s)
		run(t, s, func(tx storage.Tx) error {
			r := tx.Sessions()
			got, err := r.LockSigner(ctx, a.acct.ID, a.sessions[0].ID)
			wantErr(t, "LockSigner", err, nil)
			diff(t, "LockSigner", got, a.sessions[0])
			_, err = r.LockSigner(ctx, a.acct.ID, a.sessions[0].ID)
			wantErr(t, "LockSigner again in the same transaction", err, nil)
			// The holder itself may still revoke and delete.
			wantErr(t, "Revoke of the locked session", r.Revoke(ctx, a.sessions[0].ID, t0), nil)
			got, err = r.LockSigner(ctx, a.acct.ID, a.sessions[0].ID)
			wantErr(t, "LockSigner after Revoke", err, nil)
			if got.RevokedAt.IsZero() {
				t.Fatal("LockSigner after Revoke returned an unrevoked session")
			}
			_, err = r.LockSigner(ctx, id(t, "InternalAccount"), a.sessions[1].ID)
			wantErr(t, "LockSigner of another account", err, storage.ErrNotFound)
			_, err = r.LockSigner(ctx, a.acct.ID, id(t, "Session"))
			wantErr(t, "LockSigner unknown", err, storage.ErrNotFound)
			wantErr(t, "Delete of the locked credential", tx.Credentials().Delete(ctx, a.creds[1].ID), nil)
			_, err = r.LockSigner(ctx, a.acct.ID, a.sessions[1].ID)
			wantErr(t, "LockSigner of a session whose credential is gone", err, storage.ErrNotFound)
			return nil
		})
		// Without the account: the session must still be of accountID.
		orphan := storage.Session{ID: id(t, "Session"), AccountID: id(t, "InternalAccount"), CredentialID: a.creds[2].ID,
			PublicKey: []byte{2, 9}, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
		run(t, s, func(tx storage.Tx) error { return tx.Sessions().Create(ctx, &orphan) })
		run(t, s, func(tx storage.Tx) error {
			got, err := tx.Sessions().LockSigner(ctx, orphan.AccountID, orphan.ID)
			wantErr(t, "LockSigner of an account that does not exist", err, nil)
			diff(t, "LockSigner of an account that does not exist", got, orphan)
			return nil
		})
	})
	t.Run("LockSignersByKey", func(t *testing.T) {
		s := newStore(t)
		a := newSignedAccount(t, s)
		// A second session of the first key, on another credential.
		twin := storage.Session{ID: id(t, "Session"), AccountID: a.acct.ID, CredentialID: a.creds[2].ID,
			PublicKey: a.sessions[0].PublicKey, CreatedAt: t0, ExpiresAt: t0.Add(time.Minute)}
		run(t, s, func(tx storage.Tx) error { return tx.Sessions().Create(ctx, &twin) })
		run(t, s, func(tx storage.Tx) error {
			r := tx.Sessions()
			got, err := r.LockSignersByKey(ctx, a.acct.ID, a.sessions[0].PublicKey)
			wantErr(t, "LockSignersByKey", err, nil)
			diff(t, "LockSignersByKey", got, []storage.Session{a.sessions[0], twin})
			got, err = r.LockSignersByKey(ctx, a.acct.ID, []byte{2, 42})
			wantErr(t, "LockSignersByKey of an unknown key", err, nil)
			if len(got) != 0 {
				t.Fatalf("LockSignersByKey of an unknown key: %v", got)
			}
			got, err = r.LockSignersByKey(ctx, id(t, "InternalAccount"), a.sessions[1].PublicKey)
			wantErr(t, "LockSignersByKey of another account", err, nil)
			if len(got) != 0 {
				t.Fatalf("LockSignersByKey of another account: %v", got)
			}
			// The holder may still revoke and delete; what it locks next
			// reads that.
			wantErr(t, "Revoke", r.Revoke(ctx, a.sessions[0].ID, t0), nil)
			wantErr(t, "Delete of a credential", tx.Credentials().Delete(ctx, twin.CredentialID), nil)
			got, err = r.LockSignersByKey(ctx, a.acct.ID, a.sessions[0].PublicKey)
			wantErr(t, "LockSignersByKey after Revoke and Delete", err, nil)
			if len(got) != 1 || got[0].ID != a.sessions[0].ID || got[0].RevokedAt.IsZero() {
				t.Fatalf("LockSignersByKey after Revoke and Delete: %v, want the revoked session alone", got)
			}
			return nil
		})
	})
	// A read of a row the transaction locked, after it wrote that row, sees
	// the write (a store may answer reads of locked rows without asking
	// the database again, never with what the lock read).
	t.Run("ReadAfterLockAndWrite", func(t *testing.T) {
		s := newStore(t)
		a := newSignedAccount(t, s)
		run(t, s, func(tx storage.Tx) error {
			if _, err := tx.Sessions().LockSigner(ctx, a.acct.ID, a.sessions[0].ID); err != nil {
				return err
			}
			got, err := tx.Sessions().Get(ctx, a.sessions[0].ID)
			wantErr(t, "Get of the locked session", err, nil)
			diff(t, "Get of the locked session", got, a.sessions[0])
			acct, err := tx.InternalAccounts().Get(ctx, a.acct.ID)
			wantErr(t, "Get of the signer's account", err, nil)
			diff(t, "Get of the signer's account", acct, a.acct)
			cred, err := tx.Credentials().Get(ctx, a.creds[0].ID)
			wantErr(t, "Get of the signer's credential", err, nil)
			diff(t, "Get of the signer's credential", cred, a.creds[0])
			cred.Nickname = "changed by the caller, not stored"
			again, err := tx.Credentials().Get(ctx, a.creds[0].ID)
			wantErr(t, "Get of the signer's credential again", err, nil)
			diff(t, "Get after the caller changed its copy", again, a.creds[0])

			wantErr(t, "Revoke of the locked session", tx.Sessions().Revoke(ctx, a.sessions[0].ID, t0), nil)
			got, err = tx.Sessions().Get(ctx, a.sessions[0].ID)
			wantErr(t, "Get after Revoke", err, nil)
			if got.RevokedAt.IsZero() {
				t.Fatal("Get after Revoke in the same transaction returned an unrevoked session")
			}
			upd := acct
			upd.Email = "ada@lovelace.example"
			wantErr(t, "Update of the locked account", tx.InternalAccounts().Update(ctx, &upd), nil)
			acct, err = tx.InternalAccounts().Get(ctx, a.acct.ID)
			wantErr(t, "Get after Update", err, nil)
			diff(t, "Get after Update", acct, upd)
			wantErr(t, "Delete of the locked credential", tx.Credentials().Delete(ctx, a.creds[0].ID), nil)
			_, err = tx.Credentials().Get(ctx, a.creds[0].ID)
			wantErr(t, "Get after Delete", err, storage.ErrNotFound)

			l, err := tx.Credentials().Lock(ctx, a.creds[1].ID, nil)
			wantErr(t, "Lock of a credential", err, nil)
			c := l.Credential
			c.Nickname = "renamed"
			wantErr(t, "Update of the locked credential", tx.Credentials().Update(ctx, &c), nil)
			got2, err := tx.Credentials().Get(ctx, a.creds[1].ID)
			wantErr(t, "Get after Update", err, nil)
			diff(t, "Get of the credential after Update", got2, c)
			return nil
		})
	})
	t.Run("Consume", func(t *testing.T) {
		s := newStore(t)
		acct := id(t, "InternalAccount")
		p := newPending(t, acct)
		run(t, s, func(tx storage.Tx) error { return tx.PendingRequests().Create(ctx, &p, roomy) })
		run(t, s, func(tx storage.Tx) error { return tx.PendingRequests().Consume(ctx, p.ID, t0) })
		run(t, s, func(tx storage.Tx) error {
			got, err := tx.PendingRequests().Get(ctx, p.ID)
			wantErr(t, "Get of a consumed request", err, nil)
			if !got.ConsumedAt.Equal(t0) {
				t.Fatalf("a consumed request has ConsumedAt %v, want %v", got.ConsumedAt, t0)
			}
			return nil
		})
		// A second Consume fails, from the call or from Atomic, and rolls
		// back what its transaction wrote.
		other := newPending(t, acct)
		err := s.Atomic(ctx, func(tx storage.Tx) error {
			if err := tx.PendingRequests().Create(ctx, &other, roomy); err != nil {
				return err
			}
			return tx.PendingRequests().Consume(ctx, p.ID, t0)
		})
		wantConsumeError(t, "Consume of a consumed request", err, p.ID, storage.ErrConsumed)
		run(t, s, func(tx storage.Tx) error {
			_, err := tx.PendingRequests().Get(ctx, other.ID)
			wantErr(t, "Get of a request created with a failed Consume", err, storage.ErrNotFound)
			return nil
		})
		for _, bad := range []string{id(t, "Request"), "not-an-id"} {
			err := consumeIn(ctx, s, func(tx storage.Tx) error { return tx.PendingRequests().Consume(ctx, bad, t0) })
			wantConsumeError(t, "Consume of an unknown request", err, bad, storage.ErrNotFound)
		}
		late := newPending(t, acct)
		run(t, s, func(tx storage.Tx) error { return tx.PendingRequests().Create(ctx, &late, roomy) })
		err = consumeIn(ctx, s, func(tx storage.Tx) error { return tx.PendingRequests().Consume(ctx, late.ID, late.ExpiresAt) })
		wantConsumeError(t, "Consume of an expired request", err, late.ID, storage.ErrExpired)
		// ConsumeNow reports the failure itself, before the transaction
		// goes on to decide anything.
		err = s.Atomic(ctx, func(tx storage.Tx) error {
			if _, err := storage.ConsumeNow(ctx, tx, p.ID, t0); err != nil {
				return err
			}
			t.Fatal("ConsumeNow of a consumed request returned no error")
			return nil
		})
		wantConsumeError(t, "ConsumeNow of a consumed request", err, p.ID, storage.ErrConsumed)
	})
	t.Run("CreateWithinAccountQuota", func(t *testing.T) {
		s := newStore(t)
		acct := id(t, "InternalAccount")
		const limit = 3
		quota := storage.Quota{Limit: limit}
		var made []storage.PendingRequest
		for i := range limit {
			p := newPending(t, acct)
			p.ExpiresAt = t0.Add(time.Duration(5-i) * time.Minute)
			run(t, s, func(tx storage.Tx) error { return tx.PendingRequests().Create(ctx, &p, quota) })
			made = append(made, p)
		}
		run(t, s, func(tx storage.Tx) error {
			got, err := tx.PendingRequests().Get(ctx, made[0].ID)
			wantErr(t, "Get of a limited request", err, nil)
			diff(t, "Get of a limited request", got, made[0])
			return nil
		})
		dup := made[0]
		_, err := createWithin(ctx, s, &dup, storage.Quota{Limit: limit + 1})
		wantErr(t, "Create of an existing id", err, storage.ErrDuplicate)
		over := newPending(t, acct)
		retryAt, err := createWithin(ctx, s, &over, quota)
		wantErr(t, "Create over the limit", err, storage.ErrExhausted)
		if !retryAt.Equal(made[limit-1].ExpiresAt) {
			t.Fatalf("Create over the limit: retryAt %v, want the earliest expiry %v", retryAt, made[limit-1].ExpiresAt)
		}
		run(t, s, func(tx storage.Tx) error {
			if _, err := tx.PendingRequests().Get(ctx, over.ID); !errors.Is(err, storage.ErrNotFound) {
				t.Fatalf("a refused request was stored: %v", err)
			}
			return nil
		})
		other := newPending(t, id(t, "InternalAccount"))
		_, err = createWithin(ctx, s, &other, quota)
		wantErr(t, "Create for another account", err, nil)
		// A consumed request stops counting, and so does an expired one.
		run(t, s, func(tx storage.Tx) error { return tx.PendingRequests().Consume(ctx, made[0].ID, t0) })
		p := newPending(t, acct)
		run(t, s, func(tx storage.Tx) error { return tx.PendingRequests().Create(ctx, &p, quota) })
		later := newPending(t, acct)
		later.CreatedAt, later.ExpiresAt = made[limit-1].ExpiresAt, made[limit-1].ExpiresAt.Add(5*time.Minute)
		run(t, s, func(tx storage.Tx) error { return tx.PendingRequests().Create(ctx, &later, quota) })
		again := newPending(t, acct)
		again.CreatedAt, again.ExpiresAt = later.CreatedAt, later.ExpiresAt
		_, err = createWithin(ctx, s, &again, quota)
		wantErr(t, "Create at the limit again", err, storage.ErrExhausted)
		// There is no unbounded Create.
		free := newPending(t, id(t, "InternalAccount"))
		if _, err := createWithin(ctx, s, &free, storage.Quota{}); err == nil {
			t.Fatal("Create with a limit of 0 succeeded")
		}
	})
	t.Run("CreateWithinScopeQuota", func(t *testing.T) {
		s := newStore(t)
		acct := id(t, "InternalAccount")
		scope := id(t, "AuthMethod")
		const limit = 3
		bounded := func(p *storage.PendingRequest, scope string, limit int) error {
			return s.Atomic(ctx, func(tx storage.Tx) error {
				return tx.PendingRequests().Create(ctx, p, storage.Quota{Limit: limit, Scope: scope})
			})
		}
		// exists tells which of ps the store still holds.
		exists := func(ps ...storage.PendingRequest) []bool {
			out := make([]bool, len(ps))
			run(t, s, func(tx storage.Tx) error {
				for i, p := range ps {
					_, err := tx.PendingRequests().Get(ctx, p.ID)
					if err != nil && !errors.Is(err, storage.ErrNotFound) {
						return err
					}
					out[i] = err == nil
				}
				return nil
			})
			return out
		}
		var made []storage.PendingRequest
		for i := range limit + 1 {
			p := newPending(t, acct)
			p.CreatedAt = t0.Add(time.Duration(i) * time.Second)
			p.ExpiresAt = p.CreatedAt.Add(5 * time.Minute)
			wantErr(t, "Create in a scope", bounded(&p, scope, limit), nil)
			made = append(made, p)
		}
		if got, want := exists(made...), []bool{false, true, true, true}; !slices.Equal(got, want) {
			t.Fatalf("after %d requests in a scope of %d: held %v, want the oldest superseded %v", limit+1, limit, got, want)
		}
		run(t, s, func(tx storage.Tx) error {
			got, err := tx.PendingRequests().Get(ctx, made[1].ID)
			wantErr(t, "Get of a bounded request", err, nil)
			diff(t, "Get of a bounded request", got, made[1])
			return nil
		})
		err := consumeIn(ctx, s, func(tx storage.Tx) error {
			return tx.PendingRequests().Consume(ctx, made[0].ID, made[1].CreatedAt)
		})
		wantConsumeError(t, "Consume of a superseded request", err, made[0].ID, storage.ErrNotFound)
		// The scope's requests do not count against the account, and the
		// account's do not count in the scope nor are superseded by it.
		limited := newPending(t, acct)
		_, err = createWithin(ctx, s, &limited, storage.Quota{Limit: 1})
		wantErr(t, "Create within the account's quota beside a full scope", err, nil)
		// A consumed request is deleted and stops counting: the next one
		// supersedes nothing live.
		run(t, s, func(tx storage.Tx) error { return tx.PendingRequests().Consume(ctx, made[1].ID, made[3].CreatedAt) })
		next := newPending(t, acct)
		next.CreatedAt, next.ExpiresAt = made[3].CreatedAt, made[3].ExpiresAt
		wantErr(t, "Create in a scope after a consumption", bounded(&next, scope, limit), nil)
		if got, want := exists(made[1], made[2], made[3], next, limited), []bool{false, true, true, true, true}; !slices.Equal(got, want) {
			t.Fatalf("after a consumption: held %v, want %v", got, want)
		}
		// Of requests created at one instant, the lower id is the older.
		tie := newPending(t, acct)
		tie.CreatedAt, tie.ExpiresAt = next.CreatedAt, next.ExpiresAt
		wantErr(t, "Create in a scope at one instant", bounded(&tie, scope, limit), nil)
		if got, want := exists(made[2], made[3], next, tie), []bool{false, true, true, true}; !slices.Equal(got, want) {
			t.Fatalf("requests of one instant: held %v, want %v", got, want)
		}
		same := []storage.PendingRequest{made[3], next, tie}
		slices.SortFunc(same, func(a, b storage.PendingRequest) int { return strings.Compare(a.ID, b.ID) })
		tie2 := newPending(t, acct)
		tie2.CreatedAt, tie2.ExpiresAt = next.CreatedAt, next.ExpiresAt
		wantErr(t, "Create in a scope at one instant", bounded(&tie2, scope, limit), nil)
		if got, want := exists(same[0], same[1], same[2], tie2), []bool{false, true, true, true}; !slices.Equal(got, want) {
			t.Fatalf("requests of one instant: held %v, want the lowest id superseded %v", got, want)
		}
		// A duplicate id stores and deletes nothing.
		dup := tie2
		dup.CreatedAt = tie2.ExpiresAt
		err = bounded(&dup, scope, 1)
		wantErr(t, "Create in a scope of an existing id", err, storage.ErrDuplicate)
		if got := exists(same[1], same[2], tie2); !slices.Equal(got, []bool{true, true, true}) {
			t.Fatalf("a refused duplicate changed the scope: held %v, want all", got)
		}
		// Another scope is its own.
		other := newPending(t, acct)
		wantErr(t, "Create in a scope in another scope", bounded(&other, id(t, "AuthMethod"), 1), nil)
		if got := exists(same[1], same[2], tie2, other); !slices.Equal(got, []bool{true, true, true, true}) {
			t.Fatalf("a request of another scope changed this one: held %v", got)
		}
		// Once they expired, a new request deletes them all, and a limit
		// of one keeps only the new one.
		late := newPending(t, acct)
		late.CreatedAt, late.ExpiresAt = tie2.ExpiresAt, tie2.ExpiresAt.Add(5*time.Minute)
		wantErr(t, "Create in a scope after expiry", bounded(&late, scope, 1), nil)
		if got, want := exists(same[1], same[2], tie2, late, limited, other), []bool{false, false, false, true, true, true}; !slices.Equal(got, want) {
			t.Fatalf("after expiry: held %v, want %v", got, want)
		}
		bad := newPending(t, acct)
		if err := bounded(&bad, scope, 0); err == nil {
			t.Fatal("Create in a scope with a limit of 0 succeeded")
		}
	})
}

// createWithin runs Create within quota in a transaction of its own and
// returns what it reported, at once or (deferred) from Atomic: the limit as
// a *storage.LimitError, whose RetryAt it returns.
func createWithin(ctx context.Context, s storage.Store, p *storage.PendingRequest, quota storage.Quota) (time.Time, error) {
	err := s.Atomic(ctx, func(tx storage.Tx) error { return tx.PendingRequests().Create(ctx, p, quota) })
	var limited *storage.LimitError
	if errors.As(err, &limited) {
		return limited.RetryAt, err
	}
	if errors.Is(err, storage.ErrExhausted) {
		return time.Time{}, fmt.Errorf("the limit was reported without a *storage.LimitError: %w", err)
	}
	return time.Time{}, err
}

// raceSignerRevoked: operations signed by one session lock it, check it,
// pause and write their effect with an event, while one worker revokes the
// session (or deletes its credential) without any other lock and writes an
// event too. Events of one account get Seq in commit order, so no effect's
// event may come after the revoke's.
func raceSignerRevoked(t *testing.T, stores []storage.Store, workers int, credential bool,
	effect func(c context.Context, tx storage.Tx, a *signedAccount, i int) error) {
	// A revoke lands in an operation's window between its check and its
	// commit about every other time when the signer is not locked; a few
	// rounds make a store that does not keep the rule fail reliably.
	for range signerRounds {
		signerRevokedRound(t, stores, workers, credential, effect)
	}
}

const signerRounds = 5

func signerRevokedRound(t *testing.T, stores []storage.Store, workers int, credential bool,
	effect func(c context.Context, tx storage.Tx, a *signedAccount, i int) error) {
	a := newSignedAccount(t, stores[0])
	signer := a.sessions[0]
	var revoked atomic.Bool
	errs := race(t, stores, workers, func(c context.Context, i int, s storage.Store) error {
		if i == 0 {
			time.Sleep(5 * time.Millisecond) // lets operations start first
			defer revoked.Store(true)
			return s.Atomic(c, func(tx storage.Tx) error {
				if credential {
					if err := tx.Credentials().Delete(c, signer.CredentialID); err != nil {
						return err
					}
					if _, err := tx.Sessions().RevokeByCredential(c, signer.CredentialID, t0); err != nil {
						return err
					}
				} else if err := tx.Sessions().Revoke(c, signer.ID, t0); err != nil {
					return err
				}
				return tx.Outbox().Append(c, &storage.Event{ID: id(t, "Webhook"), Type: "REVOKED", AccountID: a.acct.ID, CreatedAt: t0})
			})
		}
		// Operations until one is refused after the revoke.
		for n := 0; ; n++ {
			err := s.Atomic(c, func(tx storage.Tx) error {
				if err := lockSigner(c, tx, a.acct.ID, signer, i); err != nil {
					return err
				}
				pause()
				if err := effect(c, tx, a, i); err != nil {
					return err
				}
				return tx.Outbox().Append(c, &storage.Event{ID: id(t, "Webhook"), Type: "EFFECT", AccountID: a.acct.ID, CreatedAt: t0})
			})
			if err != nil || revoked.Load() || n > 200 {
				return err
			}
		}
	})
	wantErr(t, "the revoke", errs[0], nil)
	tally(t, "signed operation", errs[1:], errSignerGone)
	events := Events(t, stores[0], a.acct.ID)
	at := slices.IndexFunc(events, func(e storage.Event) bool { return e.Type == "REVOKED" })
	if at < 0 {
		t.Fatal("the revoke wrote no event")
	}
	if late := len(events) - at - 1; late > 0 {
		t.Fatalf("%d effects committed after the revoke of their signer had committed", late)
	}
}

// refreshEffect creates a session of the signer's credential, as a refresh
// does: under the credential's lock.
func refreshEffect(c context.Context, tx storage.Tx, a *signedAccount, i int) error {
	if _, err := tx.Credentials().Lock(c, a.creds[0].ID, nil); errors.Is(err, storage.ErrNotFound) {
		return errSignerGone
	} else if err != nil {
		return err
	}
	s := storage.Session{ID: fmt.Sprintf("Session:refresh-%d-%d", i, time.Now().UnixNano()), AccountID: a.acct.ID,
		CredentialID: a.creds[0].ID, PublicKey: []byte{3, byte(i)}, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	return tx.Sessions().Create(c, &s)
}

// updateEffect changes the account, as most signed operations do.
func updateEffect(c context.Context, tx storage.Tx, a *signedAccount, _ int) error {
	acct, err := tx.InternalAccounts().Lock(c, a.acct.ID)
	if err != nil {
		return err
	}
	acct.UpdatedAt = acct.UpdatedAt.Add(time.Microsecond)
	return tx.InternalAccounts().Update(c, &acct)
}

// raceCrossSignedRevokes: on accounts with three credentials, two revokes
// race per account, the revoke of credential 0 signed by the session of
// credential 1 and the other way round, each locking its signer first. In
// any serial order the second finds its signer revoked: exactly one wins.
func raceCrossSignedRevokes(t *testing.T, stores []storage.Store, workers int) {
	ctx := t.Context()
	n := len(stores) * workers / 2
	if n == 0 {
		t.Skip("needs two workers")
	}
	accounts := make([]*signedAccount, n)
	for i := range accounts {
		accounts[i] = newSignedAccount(t, stores[0])
	}
	errs := race(t, stores, workers, func(c context.Context, i int, s storage.Store) error {
		if i >= 2*n {
			return nil
		}
		a, me := accounts[i/2], i%2
		target, signer := a.creds[me], a.sessions[1-me]
		return s.Atomic(c, func(tx storage.Tx) error {
			if err := lockSigner(c, tx, a.acct.ID, signer, i); err != nil {
				return err
			}
			all, err := tx.Credentials().ListByAccount(c, a.acct.ID)
			if err != nil {
				return err
			}
			if len(all) <= 1 {
				return errLast
			}
			pause()
			if err := tx.Credentials().Delete(c, target.ID); err != nil {
				return err
			}
			_, err = tx.Sessions().RevokeByCredential(c, target.ID, t0)
			return err
		})
	})
	tally(t, "cross-signed revoke", errs, errSignerGone, errLast)
	for i, a := range accounts {
		if wins := btoi(errs[2*i] == nil) + btoi(errs[2*i+1] == nil); wins != 1 {
			t.Fatalf("account %d: %d of two cross-signed revokes committed (%v, %v), want exactly 1", i, wins, errs[2*i], errs[2*i+1])
		}
		run(t, stores[0], func(tx storage.Tx) error {
			left, err := tx.Credentials().ListByAccount(ctx, a.acct.ID)
			if err == nil && len(left) != 2 {
				t.Fatalf("account %d keeps %d credentials, want 2", i, len(left))
			}
			return err
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// racePendingLimit: concurrent Create calls within one account's quota
// store no more than the limit.
func racePendingLimit(t *testing.T, stores []storage.Store, workers int) {
	const limit = 5
	acct := id(t, "InternalAccount")
	errs := race(t, stores, workers, func(c context.Context, _ int, s storage.Store) error {
		p := newPending(t, acct)
		err := s.Atomic(c, func(tx storage.Tx) error {
			if err := tx.PendingRequests().Create(c, &p, storage.Quota{Limit: limit}); err != nil {
				return err
			}
			// A statement after it sends a deferred insert; the insert
			// is then held uncommitted a while.
			if _, err := tx.PendingRequests().Get(c, p.ID); err != nil {
				return err
			}
			pause()
			return nil
		})
		var limited *storage.LimitError
		if errors.As(err, &limited) && !limited.RetryAt.Equal(p.ExpiresAt) {
			return fmt.Errorf("retryAt %v, want %v", limited.RetryAt, p.ExpiresAt)
		}
		return err
	})
	wins := tally(t, "limited create", errs, storage.ErrExhausted)
	if want := min(limit, len(errs)); wins != want {
		t.Fatalf("%d requests were stored under a limit of %d, want %d", wins, limit, want)
	}
}

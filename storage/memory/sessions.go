package memory

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"time"

	"github.com/walletgate/walletgate/storage"
)

// Sessions.

func cloneSession(s *storage.Session) *storage.Session {
	c := *s
	c.PublicKey = slices.Clone(s.PublicKey)
	return &c
}

type sessionRepo struct{ *tx }

func (r sessionRepo) Create(ctx context.Context, s *storage.Session) error {
	if err := r.lockX(ctx, lkSession, s.ID); err != nil {
		return err
	}
	if _, ok := r.s.sessions.get(s.ID); ok {
		return storage.ErrDuplicate
	}
	if err := r.lockX(ctx, lkSessByAccount, s.AccountID); err != nil {
		return err
	}
	if err := r.lockX(ctx, lkSessByCred, s.CredentialID); err != nil {
		return err
	}
	tput(r.tx, &r.s.sessions, s.ID, cloneSession(s))
	appendIndex(r.tx, &r.s.sessByAcct, s.AccountID, s.ID)
	appendIndex(r.tx, &r.s.sessByCred, s.CredentialID, s.ID)
	r.watch(kindSession, s.ID, s.ExpiresAt)
	return nil
}

func (r sessionRepo) Get(ctx context.Context, id string) (storage.Session, error) {
	if err := r.lockS(ctx, lkSession, id); err != nil {
		return storage.Session{}, err
	}
	s, ok := r.s.sessions.get(id)
	if !ok {
		return storage.Session{}, storage.ErrNotFound
	}
	return *cloneSession(s), nil
}

func (r sessionRepo) ListActive(ctx context.Context, accountID string, now time.Time) ([]storage.Session, error) {
	if err := r.lockS(ctx, lkSessByAccount, accountID); err != nil {
		return nil, err
	}
	ids, _ := r.s.sessByAcct.get(accountID)
	var out []storage.Session
	for _, id := range ids {
		s, err := r.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		if s.Active(now) {
			out = append(out, s)
		}
	}
	return out, nil
}

func (r sessionRepo) Revoke(ctx context.Context, id string, at time.Time) error {
	if err := r.lockX(ctx, lkSession, id); err != nil {
		return err
	}
	s, ok := r.s.sessions.get(id)
	if !ok {
		return storage.ErrNotFound
	}
	if !s.RevokedAt.IsZero() {
		return storage.ErrConflict
	}
	set(r.tx, &s.RevokedAt, at)
	return nil
}

func (r sessionRepo) RevokeByCredential(ctx context.Context, credentialID string, at time.Time) (int, error) {
	if err := r.lockS(ctx, lkSessByCred, credentialID); err != nil {
		return 0, err
	}
	ids, _ := r.s.sessByCred.get(credentialID)
	n := 0
	for _, id := range ids {
		if err := r.lockX(ctx, lkSession, id); err != nil {
			return n, err
		}
		if s, _ := r.s.sessions.get(id); s.RevokedAt.IsZero() {
			set(r.tx, &s.RevokedAt, at)
			n++
		}
	}
	return n, nil
}

// LockSigner takes the account exclusively, then the session's credential
// and the session shared: Revoke, RevokeByCredential and Credentials.Delete
// take them exclusively. The session's CredentialID never changes, so it is
// read before the session is locked, to keep the lock order.
func (r sessionRepo) LockSigner(ctx context.Context, accountID, id string) (storage.Session, error) {
	if _, err := (walletRepo{r.tx}).get(ctx, accountID, exclusive); err != nil && !errors.Is(err, storage.ErrNotFound) {
		return storage.Session{}, err
	}
	peek, ok := r.s.sessions.get(id)
	if !ok {
		return storage.Session{}, storage.ErrNotFound
	}
	if _, err := (credRepo{r.tx}).get(ctx, peek.CredentialID, shared); err != nil {
		return storage.Session{}, err
	}
	s, err := r.Get(ctx, id)
	if err != nil {
		return storage.Session{}, err
	}
	if s.AccountID != accountID {
		return storage.Session{}, storage.ErrNotFound
	}
	return s, nil
}

func (r sessionRepo) LockSignersByKey(ctx context.Context, accountID string, publicKey []byte) ([]storage.Session, error) {
	if err := r.lockS(ctx, lkSessByAccount, accountID); err != nil {
		return nil, err
	}
	ids, _ := r.s.sessByAcct.get(accountID)
	var out []storage.Session
	for _, id := range ids {
		peek, ok := r.s.sessions.get(id)
		if !ok || !bytes.Equal(peek.PublicKey, publicKey) {
			continue
		}
		s, err := r.LockSigner(ctx, accountID, id)
		if errors.Is(err, storage.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

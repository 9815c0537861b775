package postgres

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/walletgate/walletgate/storage"
)

const sessionColumns = `id, account_id, credential_id, public_key, created_at, authenticated_at, expires_at, revoked_at`

const (
	// sessionInsertSQL raises a unique violation for an id that exists (no
	// ON CONFLICT): Create is a deferred write (see deferWrite).
	sessionInsertSQL = `INSERT INTO {s}.sessions (` + sessionColumns + `)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`
	sessionGetSQL    = `SELECT ` + sessionColumns + ` FROM {s}.sessions WHERE id = $1`
	sessionActiveSQL = `SELECT ` + sessionColumns + ` FROM {s}.sessions
	WHERE account_id = $1 AND revoked_at IS NULL AND expires_at > $2 ORDER BY seq`
	sessionRevokeSQL    = `UPDATE {s}.sessions SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL`
	sessionExistsSQL    = `SELECT 1 FROM {s}.sessions WHERE id = $1`
	sessionRevokeAllSQL = `UPDATE {s}.sessions SET revoked_at = $2 WHERE credential_id = $1 AND revoked_at IS NULL`
	// The signer locks, sent in one batch so they cost one round trip and
	// are taken in the lock order: the account FOR UPDATE (as
	// InternalAccounts.Lock), then the session's credential and the session
	// FOR SHARE. A shared lock is what a check needs (the rows must not
	// change until commit, and may be read by others meanwhile); it
	// conflicts with the UPDATE of Revoke and RevokeByCredential and with
	// the DELETE of Credentials.Delete, so they wait, and a lock that waited
	// for one of them reads the row as it committed (or finds it gone).
	signerAccountSQL    = `SELECT ` + walletColumns + ` FROM {s}.internal_accounts WHERE id = $1 FOR UPDATE`
	signerCredentialSQL = `SELECT ` + credColumns + ` FROM {s}.credentials WHERE id = (SELECT credential_id FROM {s}.sessions WHERE id = $1) FOR SHARE`
	signerSessionSQL    = `SELECT ` + sessionColumns + ` FROM {s}.sessions WHERE id = $1 FOR SHARE`
	// The signer locks of LockSignersByKey, in the same order and one
	// round trip: the account, the credentials of the account's sessions
	// of the key (in id order), those sessions.
	signerKeyCredentialsSQL = `SELECT ` + credColumns + ` FROM {s}.credentials
	WHERE id IN (SELECT credential_id FROM {s}.sessions WHERE account_id = $1 AND public_key = $2) ORDER BY id FOR SHARE`
	signerKeySessionsSQL = `SELECT ` + sessionColumns + ` FROM {s}.sessions
	WHERE account_id = $1 AND public_key = $2 ORDER BY seq FOR SHARE`
)

type sessionRepo struct{ t *tx }

func scanSession(row pgx.Row, s *storage.Session) error {
	return row.Scan(&s.ID, &s.AccountID, &s.CredentialID, &s.PublicKey, utc(&s.CreatedAt), utc(&s.AuthenticatedAt),
		utc(&s.ExpiresAt), utc(&s.RevokedAt))
}

func (r sessionRepo) Create(ctx context.Context, s *storage.Session) error {
	err := r.t.valid("session", key("ID", s.ID), key("AccountID", s.AccountID), key("CredentialID", s.CredentialID))
	if err != nil {
		return err
	}
	// A deferred write (see deferWrite): it travels with the next
	// statement or the COMMIT, and an id that exists aborts the
	// transaction with an error wrapping storage.ErrDuplicate.
	b := &batch{}
	b.Queue(r.t.s.q.sessionInsert, s.ID, s.AccountID, s.CredentialID, s.PublicKey,
		s.CreatedAt, nullTime(s.AuthenticatedAt), s.ExpiresAt, nullTime(s.RevokedAt))
	return wrap("create session", r.t.deferWrite(ctx, b))
}

func (r sessionRepo) Get(ctx context.Context, id string) (storage.Session, error) {
	var s storage.Session
	if !storableKey(id) {
		return s, notFoundOrDone(r.t)
	}
	if s, ok := r.t.heldSession(id); ok {
		return s, nil
	}
	found, err := r.t.queryRow(ctx, r.t.s.q.sessionGet, []any{id}, func(row pgx.Row) error { return scanSession(row, &s) })
	switch {
	case err != nil:
		return storage.Session{}, wrap("get session", err)
	case !found:
		return storage.Session{}, storage.ErrNotFound
	}
	return s, nil
}

func (r sessionRepo) ListActive(ctx context.Context, accountID string, now time.Time) ([]storage.Session, error) {
	if !storableKey(accountID) {
		return nil, r.t.check()
	}
	var out []storage.Session
	err := r.t.query(ctx, r.t.s.q.sessionActive, []any{accountID, now}, func(rows pgx.Rows) error {
		var s storage.Session
		if err := scanSession(rows, &s); err != nil {
			return err
		}
		out = append(out, s)
		return nil
	})
	if err != nil {
		return nil, wrap("list active sessions", err)
	}
	return out, nil
}

func (r sessionRepo) Revoke(ctx context.Context, id string, at time.Time) error {
	if !storableKey(id) {
		return notFoundOrDone(r.t)
	}
	tag, err := r.t.exec(ctx, r.t.s.q.sessionRevoke, id, nullTime(at))
	switch {
	case err != nil:
		return wrap("revoke session", err)
	case tag.RowsAffected() == 1:
		return nil
	}
	found, err := r.t.queryRow(ctx, r.t.s.q.sessionExists, []any{id}, func(row pgx.Row) error { return row.Scan(new(int)) })
	switch {
	case err != nil:
		return wrap("revoke session", err)
	case !found:
		return storage.ErrNotFound
	}
	return fmt.Errorf("postgres: revoke session %s: %w (already revoked)", id, storage.ErrConflict)
}

func (r sessionRepo) RevokeByCredential(ctx context.Context, credentialID string, at time.Time) (int, error) {
	if !storableKey(credentialID) {
		return 0, r.t.check()
	}
	tag, err := r.t.exec(ctx, r.t.s.q.sessionRevokeAll, credentialID, nullTime(at))
	if err != nil {
		return 0, wrap("revoke sessions of credential", err)
	}
	return int(tag.RowsAffected()), nil
}

func (r sessionRepo) LockSigner(ctx context.Context, accountID, id string) (storage.Session, error) {
	if !storableKey(accountID) || !storableKey(id) {
		return storage.Session{}, notFoundOrDone(r.t)
	}
	var s storage.Session
	var a storage.InternalAccount
	var c storage.Credential
	var account, credential, session bool
	b := &batch{}
	b.Queue(r.t.s.q.signerAccount, accountID).Query(func(rows pgx.Rows) error {
		if account = rows.Next(); account {
			return scanWallet(rows, &a)
		}
		return nil
	})
	b.Queue(r.t.s.q.signerCredential, id).Query(func(rows pgx.Rows) error {
		if credential = rows.Next(); credential {
			return scanCred(rows, &c)
		}
		return nil
	})
	b.Queue(r.t.s.q.signerSession, id).Query(func(rows pgx.Rows) error {
		if session = rows.Next(); session {
			return scanSession(rows, &s)
		}
		return nil
	})
	if err := r.t.send(ctx, b); err != nil {
		return storage.Session{}, wrap("lock signer", err)
	}
	// The rows are held to the end of the transaction: later reads of
	// them need no round trip (see hold).
	if account {
		r.t.hold(heldWallets, a.ID, a)
	}
	if credential {
		r.t.hold(heldCredentials, c.ID, cloneCredential(c))
	}
	if !credential || !session || s.AccountID != accountID {
		return storage.Session{}, storage.ErrNotFound
	}
	r.t.hold(heldSessions, s.ID, cloneSession(s))
	return s, nil
}

func (r sessionRepo) LockSignersByKey(ctx context.Context, accountID string, publicKey []byte) ([]storage.Session, error) {
	if !storableKey(accountID) {
		return nil, r.t.check()
	}
	var a storage.InternalAccount
	var account bool
	creds := map[string]storage.Credential{}
	var sessions []storage.Session
	b := &batch{}
	b.Queue(r.t.s.q.signerAccount, accountID).Query(func(rows pgx.Rows) error {
		if account = rows.Next(); account {
			return scanWallet(rows, &a)
		}
		return nil
	})
	b.Queue(r.t.s.q.signerKeyCredentials, accountID, publicKey).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var c storage.Credential
			if err := scanCred(rows, &c); err != nil {
				return err
			}
			creds[c.ID] = c
		}
		return nil
	})
	b.Queue(r.t.s.q.signerKeySessions, accountID, publicKey).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var s storage.Session
			if err := scanSession(rows, &s); err != nil {
				return err
			}
			sessions = append(sessions, s)
		}
		return nil
	})
	if err := r.t.send(ctx, b); err != nil {
		return nil, wrap("lock signers by key", err)
	}
	// The rows are held to the end of the transaction (see hold).
	if account {
		r.t.hold(heldWallets, a.ID, a)
	}
	for _, c := range creds {
		r.t.hold(heldCredentials, c.ID, cloneCredential(c))
	}
	out := sessions[:0]
	for _, s := range sessions {
		if _, ok := creds[s.CredentialID]; !ok {
			continue
		}
		r.t.hold(heldSessions, s.ID, cloneSession(s))
		out = append(out, s)
	}
	return out, nil
}

// cloneSession is a copy of s that shares no memory with it, every field
// kept: what a lock holds is read back whole.
func cloneSession(s storage.Session) storage.Session {
	s.PublicKey = slices.Clone(s.PublicKey)
	return s
}

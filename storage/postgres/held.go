package postgres

import (
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/walletgate/walletgate/storage"
)

// Rows the transaction holds a lock on are read once. A row this
// transaction locked (FOR UPDATE, or FOR SHARE as the signer locks take
// them) cannot be changed or deleted by another transaction until this one
// ends, so a later read of it in this transaction returns what the lock
// returned unless this transaction wrote the table since. The lock methods
// (InternalAccounts.Lock, Credentials.Lock, Sessions.LockSigner) keep the
// rows they return, and InternalAccounts.Get, Credentials.Get and
// Sessions.Get answer from them without a round trip. Any statement of the
// transaction that is not a plain read and names one of these tables
// forgets that table's rows first (deferred writes included), so a write
// is always followed by a real read. Inside a host transaction nothing is
// kept: the host's own statements may write any table.

// Tables whose locked rows are kept, as they appear after the schema in
// statements.
const (
	heldWallets     = "internal_accounts"
	heldCredentials = "credentials"
	heldSessions    = "sessions"
)

type heldKey struct{ table, id string }

// hold keeps row, locked by this transaction, for later reads. Called
// with t.mu not held, after the statement that locked it returned.
func (t *tx) hold(table, id string, row any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.host != nil || t.done || t.broken != nil {
		return
	}
	if t.held == nil {
		t.held = make(map[heldKey]any)
	}
	t.held[heldKey{table, id}] = row
}

// heldRow returns the row of table kept by hold, if any.
func (t *tx) heldRow(table, id string) (any, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.host != nil || t.done || t.broken != nil {
		return nil, false
	}
	row, ok := t.held[heldKey{table, id}]
	return row, ok
}

// forget drops the kept rows of every table a statement of qs names, unless
// qs are plain reads. Called with t.mu held, before qs are sent.
func (t *tx) forget(qs []*pgx.QueuedQuery, read bool) {
	if read || len(t.held) == 0 {
		return
	}
	for _, q := range qs {
		if q.SQL == t.s.q.walletOfCred {
			continue // a plain read (see readAhead)
		}
		for _, table := range [...]string{heldWallets, heldCredentials, heldSessions} {
			if strings.Contains(q.SQL, "."+table) {
				for k := range t.held {
					if k.table == table {
						delete(t.held, k)
					}
				}
			}
		}
	}
}

// heldWallet, heldCredential and heldSession return copies of kept rows,
// so a caller that changes what it got does not change what is kept.
func (t *tx) heldWallet(id string) (storage.InternalAccount, bool) {
	row, ok := t.heldRow(heldWallets, id)
	if !ok {
		return storage.InternalAccount{}, false
	}
	return row.(storage.InternalAccount), true
}

func (t *tx) heldCredential(id string) (storage.Credential, bool) {
	row, ok := t.heldRow(heldCredentials, id)
	if !ok {
		return storage.Credential{}, false
	}
	return cloneCredential(row.(storage.Credential)), true
}

func (t *tx) heldSession(id string) (storage.Session, bool) {
	row, ok := t.heldRow(heldSessions, id)
	if !ok {
		return storage.Session{}, false
	}
	s := row.(storage.Session)
	s.PublicKey = slices.Clone(s.PublicKey)
	return s, true
}

func cloneCredential(c storage.Credential) storage.Credential {
	if c.OAuth != nil {
		o := *c.OAuth
		c.OAuth = &o
	}
	if c.WebAuthn != nil {
		w := *c.WebAuthn
		w.CredentialID = slices.Clone(w.CredentialID)
		w.PublicKey = slices.Clone(w.PublicKey)
		w.AAGUID = slices.Clone(w.AAGUID)
		w.Transports = slices.Clone(w.Transports)
		c.WebAuthn = &w
	}
	return c
}

// Credentials.Lock reads the credential's account in its own round trip,
// with a statement that runs right after the lock was granted and takes no
// lock, and keeps it with readAhead. InternalAccounts.Get answers from it
// until the transaction sends its next statement or defers a write of
// internal_accounts: such a read returns what its own statement would have
// returned had it been sent with the lock, where nothing of the
// transaction ran in between, so at READ COMMITTED it reads the same. A
// rule that decides on the account still locks it (InternalAccounts.Lock).
// Nothing is read ahead inside a host transaction, nor when the
// transaction holds an account already (see mayReadAhead).

// aheadRows are the rows Credentials.Lock read after its lock: the
// credential's account.
type aheadRows struct {
	wallet *storage.InternalAccount
}

// mayReadAhead reports whether a lock should read rows ahead: not inside a
// host transaction, and not when the transaction holds an account, which
// is the one a signed operation locked first and whose credentials it then
// locks, so that a Get of it answers from the held row.
func (t *tx) mayReadAhead() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.host != nil {
		return false
	}
	for k := range t.held {
		if k.table == heldWallets {
			return false
		}
	}
	return true
}

// readAhead keeps rows read by the statements just sent. Called with t.mu
// not held, after those statements returned.
func (t *tx) readAhead(rows aheadRows) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.host != nil || t.done || t.broken != nil {
		return
	}
	t.ahead = &rows
}

// aheadWallet returns the account kept by readAhead when its id is id.
func (t *tx) aheadWallet(id string) (storage.InternalAccount, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.host != nil || t.done || t.broken != nil || t.ahead == nil || t.ahead.wallet == nil || t.ahead.wallet.ID != id {
		return storage.InternalAccount{}, false
	}
	return *t.ahead.wallet, true
}

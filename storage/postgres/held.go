package postgres

import (
	"github.com/walletgate/walletgate/storage"
)

// Rows the transaction holds a lock on are read once. A row this
// transaction locked (FOR UPDATE, or FOR SHARE as the signer locks take
// them) cannot be changed or deleted by another transaction until this one
// ends, so a later read of it in this transaction returns what the lock
// returned unless this transaction wrote the table since. The lock methods
// (InternalAccounts.Lock, Credentials.Lock, Sessions.LockSigner) keep the
// rows they return, and InternalAccounts.Get, Credentials.Get and
// Sessions.Get answer from them without a round trip. Invalidation is by
// declared tables: every statement is declared with its kind and the
// tables it touches (see queries), and any statement of the transaction
// that is not a plain read forgets the kept rows of every table it
// declares before it is sent or deferred (see pipeline), so a write is
// always followed by a real read. Inside a host transaction nothing is
// kept: the host's own statements may write any table.

// Tables whose locked rows are kept.
const (
	heldWallets     = tableInternalAccounts
	heldCredentials = tableCredentials
	heldSessions    = tableSessions
)

// keeps reports whether the transaction keeps rows: not inside a host
// transaction, nor once it is done or broken. Called with t.mu held.
func (t *tx) keeps() bool { return t.host == nil && !t.done && t.broken == nil }

// hold keeps row, locked by this transaction, for later reads. Called
// with t.mu not held, after the statement that locked it returned.
func (t *tx) hold(table table, id string, row any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.keeps() {
		t.pipe.hold(table, id, row)
	}
}

// heldWallet, heldCredential and heldSession return copies of kept rows,
// so a caller that changes what it got does not change what is kept.
func (t *tx) heldWallet(id string) (storage.InternalAccount, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.keeps() {
		return storage.InternalAccount{}, false
	}
	return t.pipe.wallet(id)
}

func (t *tx) heldCredential(id string) (storage.Credential, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.keeps() {
		return storage.Credential{}, false
	}
	return t.pipe.credential(id)
}

func (t *tx) heldSession(id string) (storage.Session, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.keeps() {
		return storage.Session{}, false
	}
	return t.pipe.session(id)
}

// Credentials.Lock reads the credential's account in its own round trip,
// with a statement that runs right after the lock was granted and takes no
// lock, and keeps it with readAhead. InternalAccounts.Get answers from it
// until the transaction sends its next statement or defers a write that
// declares internal_accounts: such a read returns what its own statement
// would have returned had it been sent with the lock, where nothing of the
// transaction ran in between, so at READ COMMITTED it reads the same. A
// rule that decides on the account still locks it (InternalAccounts.Lock).
// Nothing is read ahead inside a host transaction, nor when the
// transaction holds an account already (see mayReadAhead).

// mayReadAhead reports whether a lock should read rows ahead: not inside a
// host transaction, and not when the transaction holds an account, which
// is the one a signed operation locked first and whose credentials it then
// locks, so that a Get of it answers from the held row.
func (t *tx) mayReadAhead() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.host == nil && !t.pipe.holds(heldWallets)
}

// readAhead keeps rows read by the statements just sent. Called with t.mu
// not held, after those statements returned.
func (t *tx) readAhead(rows aheadRows) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.keeps() {
		t.pipe.readAhead(rows)
	}
}

// aheadWallet returns the account kept by readAhead when its id is id.
func (t *tx) aheadWallet(id string) (storage.InternalAccount, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.keeps() {
		return storage.InternalAccount{}, false
	}
	return t.pipe.aheadWallet(id)
}

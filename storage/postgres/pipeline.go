package postgres

import (
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/walletgate/walletgate/storage"
)

// batch is a pgx.Batch that keeps, from the declarations of the
// statements it queues (kinds and tables), what the pipeline decides on:
// whether the batch only reads, and which tables it writes or locks. It
// keeps the two as it goes, not a list, so queuing costs no allocation of
// its own.
type batch struct {
	pg pgx.Batch
	// changed are the tables of the statements that are not plain reads;
	// notRead reports that there is one.
	changed tableSet
	notRead bool
}

// Queue queues st with args, as pgx.Batch.Queue does, and records its
// declaration.
func (b *batch) Queue(st stmt, args ...any) *pgx.QueuedQuery {
	if st.kind != kindRead {
		b.notRead = true
		b.changed |= st.tables
	}
	return b.pg.Queue(st.sql, args...)
}

// Len returns the number of statements queued.
func (b *batch) Len() int { return len(b.pg.QueuedQueries) }

// reads reports whether b holds statements and every one is a plain read
// (kindRead). An empty batch is not: sending one begins the transaction.
func (b *batch) reads() bool { return b.Len() > 0 && !b.notRead }

// changes returns the tables of b's statements that are not plain reads:
// those whose kept rows the statements invalidate.
func (b *batch) changes() tableSet { return b.changed }

// append queues the statements of o, with their result callbacks, after
// those of b.
func (b *batch) append(o *batch) {
	b.pg.QueuedQueries = append(b.pg.QueuedQueries, o.pg.QueuedQueries...)
	b.changed |= o.changed
	b.notRead = b.notRead || o.notRead
}

// pipeline is what a transaction keeps between its statements: the writes
// it deferred and has not sent, the rows it holds a lock on, and the rows
// read ahead with its last statement. It decides what to drop from the
// declarations of the statements about to be sent or deferred (their
// kinds and tables), never from their SQL text:
//
//   - a statement that is not a plain read forgets the held and read-ahead
//     rows of every table it declares, before it is sent or deferred;
//   - the read-ahead rows are dropped when any statement is sent;
//   - deferred writes go out in the order they were made, ahead of the
//     next statement sent or with the COMMIT.
//
// The getters return copies, so a caller that changes what it got does not
// change what is kept. The zero pipeline is empty and ready. Its methods
// are not safe for concurrent use: the transaction calls them with its
// mutex held.
type pipeline struct {
	later batch
	held  map[heldKey]any
	ahead aheadRows
}

// heldKey names a held row: its table and id.
type heldKey struct {
	table table
	id    string
}

// aheadRows are the rows Credentials.Lock read after its lock: the
// credential's account.
type aheadRows struct {
	wallet *storage.InternalAccount
}

// forget drops the held and read-ahead rows of the tables in ts.
func (p *pipeline) forget(ts tableSet) {
	if ts == 0 {
		return
	}
	for k := range p.held {
		if ts.has(k.table) {
			delete(p.held, k)
		}
	}
	if ts.has(tableInternalAccounts) {
		p.ahead.wallet = nil
	}
}

// deferWrites invalidates what the statements of b change and queues them
// after the writes deferred before, to go out ahead of the next statement
// sent or with the COMMIT.
func (p *pipeline) deferWrites(b *batch) {
	p.forget(b.changes())
	p.later.append(b)
}

// deferred reports whether writes are queued.
func (p *pipeline) deferred() bool { return p.later.Len() > 0 }

// next prepares b to be sent: it invalidates what b's statements change,
// drops the read-ahead rows, and returns the batch to send, the deferred
// writes (taken from the queue, in the order they were made) followed by
// b's statements, and whether it holds only plain reads.
func (p *pipeline) next(b *batch) (*batch, bool) {
	p.forget(b.changes())
	p.ahead = aheadRows{}
	if !p.deferred() {
		return b, b.reads()
	}
	out := p.later
	p.later = batch{}
	out.append(b)
	return &out, out.reads()
}

// hold keeps row, of table and locked by the transaction, for later reads.
func (p *pipeline) hold(t table, id string, row any) {
	if p.held == nil {
		p.held = make(map[heldKey]any)
	}
	p.held[heldKey{t, id}] = row
}

// holds reports whether a row of t is held.
func (p *pipeline) holds(t table) bool {
	for k := range p.held {
		if k.table == t {
			return true
		}
	}
	return false
}

// wallet, credential and session return copies of held rows.
func (p *pipeline) wallet(id string) (storage.InternalAccount, bool) {
	row, ok := p.held[heldKey{tableInternalAccounts, id}]
	if !ok {
		return storage.InternalAccount{}, false
	}
	return row.(storage.InternalAccount), true
}

func (p *pipeline) credential(id string) (storage.Credential, bool) {
	row, ok := p.held[heldKey{tableCredentials, id}]
	if !ok {
		return storage.Credential{}, false
	}
	return cloneCredential(row.(storage.Credential)), true
}

func (p *pipeline) session(id string) (storage.Session, bool) {
	row, ok := p.held[heldKey{tableSessions, id}]
	if !ok {
		return storage.Session{}, false
	}
	return cloneSession(row.(storage.Session)), true
}

// readAhead keeps a copy of rows, read by the statements just sent, until
// the next statement is sent or a deferred write declares their table.
func (p *pipeline) readAhead(rows aheadRows) {
	if rows.wallet != nil {
		w := *rows.wallet
		rows.wallet = &w
	}
	p.ahead = rows
}

// aheadWallet returns a copy of the account read ahead when its id is id.
func (p *pipeline) aheadWallet(id string) (storage.InternalAccount, bool) {
	if p.ahead.wallet == nil || p.ahead.wallet.ID != id {
		return storage.InternalAccount{}, false
	}
	return *p.ahead.wallet, true
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

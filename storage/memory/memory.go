// Package memory is the in-memory [storage.Store]: the embedded default of
// walletgate, for a single process.
//
// Every Atomic is a transaction of the store's own: the memory store has no
// host transaction (binding a host's database transaction to the context,
// with its Store.WithTx, is a feature of storage/postgres), and it ignores
// such a context.
//
// # Concurrency
//
// There is no store-wide lock: transactions that touch different records run
// in parallel. Each transaction locks the keys it touches as it goes, shared
// to read and exclusive to write, and holds every lock until it commits or
// rolls back (strict two-phase locking), so transactions are serializable.
// The keys name records and also index entries: "the credentials of account
// A", "the EMAIL_OTP credentials of address E", "the passkey with WebAuthn
// id W", "the live OTP issuance of credential C". A uniqueness check or a
// list read holds its index key, so a concurrent insert waits until the
// reader ends; that is how the uniqueness rules of Credentials.Create and
// Update, IdempotencyKeys.Begin and the Lock methods hold. Single-use
// consumption, an OTP attempt and compare-and-set on Version are a read
// and a write under one exclusive record lock.
//
// Deadlocks are avoided by wait-die (see locks.go): a transaction waits only
// for younger ones; when it would have to wait for an older one it is
// rolled back, waits (holding nothing) until the contended key is free, and
// fn is run again, as [storage.Store.Atomic] allows, keeping its first
// timestamp so it eventually is the oldest and no longer loses. A run that
// lost a conflict is discarded whatever fn then returns (or panics with).
// After maxRuns runs Atomic gives up with an error wrapping
// [storage.ErrConflict].
//
// Records live in tables split into 64 shards; a shard's mutex guards only
// one map access. The outbox is guarded by a single lock key: transactions
// that write it (Append, Lease, MarkDelivered, ...) run one at a time, which
// keeps Seq increasing in commit order.
//
// A transaction records an undo entry for every write and replays them in
// reverse, still holding its locks, on error, panic or cancellation, so a
// rolled-back transaction leaves no trace and nobody saw its writes. Records
// are copied on the way in and out: a caller never holds memory the store
// owns.
//
// Expired records are found through min-heaps on their expiry (one per
// shard), so [Store.Sweep] touches only what has expired. A record guarded
// by one lock key that nobody holds or waits for is deleted in place under
// the mutex of its lock shard, which keeps anyone from taking the key
// meanwhile; the others are deleted in small transactions of Sweep's own.
// Nothing is persisted: a restart forgets everything. Services with several
// replicas need the PostgreSQL store.
package memory

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/walletgate/walletgate/storage"
)

// maxRuns bounds how often Atomic runs fn for one call. A transaction keeps
// its timestamp across runs and so stops losing conflicts once every older
// transaction ended; the bound only guards against a bug.
const maxRuns = 10000

// Store is an in-memory store. The zero value is not usable; call [New].
type Store struct {
	clock atomic.Uint64 // wait-die timestamps (see tx.age)
	locks lockTable

	ext           table[*storage.ExternalAccount]
	extByCustomer table[[]string]
	challenges    table[*storage.OwnershipChallenge] // by account id
	wallets       table[*storage.InternalAccount]
	walletsByCust table[[]string]
	creds         table[*storage.Credential]
	credsByAcct   table[[]string]
	credsByEmail  table[[]string] // EMAIL_OTP credentials by tenant and address (scoped)
	webauthn      table[string]   // tenant and raw WebAuthn credential id (scoped) -> credential id
	otp           table[*storage.OTPIssuance]
	otpByCred     table[string]
	sessions      table[*storage.Session]
	sessByAcct    table[[]string]
	sessByCred    table[[]string]
	pending       table[*storage.PendingRequest]
	pendByAcct    table[[]string] // requests by account, pruned by createLimited
	pendByScope   table[[]string] // requests by bounded scope, pruned by createBounded
	limits        table[*window]
	idem          table[*storage.IdempotencyRecord] // by idemKey(scope, key)
	usage         table[*storage.PayoutUsage]
	usageByCust   table[[]string]
	approvals     table[*storage.PayoutApproval]
	records       table[*storage.Record] // by recordKey(kind, key)
	recordGroups  table[[]string]        // record keys by recordKey(kind, group), in creation order
	expiry        [nShards]expiryShard

	// The outbox, guarded by the lkOutbox lock.
	events       []*storage.Event // in Seq order
	eventsByID   map[string]*storage.Event
	eventsByAcct map[string][]*storage.Event
	seq          int64
}

// New returns an empty store. Unlike the other constructors it takes no
// Config and cannot fail: the store reads no clock (callers pass the time to
// every method where expiry matters) and has no setting to choose.
func New() *Store {
	return &Store{
		eventsByID:   map[string]*storage.Event{},
		eventsByAcct: map[string][]*storage.Event{},
	}
}

var _ storage.Store = (*Store)(nil)

// Atomic runs fn in a transaction. See [storage.Store] and the package
// documentation: fn may be run more than once. A context already cancelled
// before fn runs, or cancelled while it runs, makes Atomic roll back and
// return the context's error.
func (s *Store) Atomic(ctx context.Context, fn func(storage.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var ts uint64 // wait-die timestamp, kept across runs once taken
	for run := 1; ; run++ {
		t := &tx{s: s, ctx: ctx}
		t.ts.Store(ts)
		err := t.run(ctx, fn)
		if !t.doomed {
			return err
		}
		ts = t.ts.Load()
		if run == maxRuns {
			return fmt.Errorf("memory: transaction lost %d lock conflicts: %w", run, storage.ErrConflict)
		}
		if err := t.awaitLost(ctx); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// run runs fn once as t and ends t: it commits, or rolls back and releases
// the locks. When t died in a lock conflict, the result is errRerun, also
// when fn returned something else or panicked.
func (t *tx) run(ctx context.Context, fn func(storage.Tx) error) (err error) {
	t.b = txBufPool.Get().(*txBufs)
	committed := false
	defer func() {
		if !committed {
			t.rollback()
		}
		t.release()
		t.done = true
		if t.b.reset() {
			txBufPool.Put(t.b)
		}
		t.b = nil
		if t.doomed && !committed {
			// fn may have panicked over the error of the lost conflict;
			// the run is discarded and fn runs again. A panic of a run
			// that did not die propagates (recover is not called).
			if r := recover(); r != nil {
				err = errRerun
			}
		}
	}()
	err = fn(t)
	switch {
	case t.doomed:
		return errRerun
	case err != nil:
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	committed = true
	return nil
}

// tx is one run of a transaction: its timestamp, the locks it holds and the
// undo log of its writes.
type tx struct {
	s    *Store
	ts   atomic.Uint64   // wait-die priority, lower is older; 0 until needed (see age)
	ctx  context.Context // of the Atomic call
	b    *txBufs         // the locks t holds and its undo log; nil once t is done
	done bool
	// doomed: t lost a lock conflict at lostOn and must be rerun.
	doomed   bool
	lostOn   lockKey
	lostMode lockMode
}

// txBufs are the lock and undo lists of a run, reused by later runs
// through txBufPool so that a transaction does not allocate them, and kept
// out of tx to keep that small. Only the lists are reused: a tx handed to
// fn is never reused, so a leaked tx still reports ErrTxDone. The pool pays
// for itself: without it a create-and-consume transaction pair makes 19
// allocations instead of 13 and costs about 10% more CPU (bench_test.go and
// the storagetest benchmarks).
type txBufs struct {
	held []lockKey // the keys t holds
	undo []func()  // how to undo t's writes, in order
}

var txBufPool = sync.Pool{New: func() any { return new(txBufs) }}

// reset empties b and clears its arrays so that they keep neither keys nor
// records alive (past their lengths they are clear already). It returns
// false for huge lists (of a large transaction), which are not kept.
func (b *txBufs) reset() bool {
	const maxKept = 256
	if cap(b.held) > maxKept || cap(b.undo) > maxKept {
		return false
	}
	clear(b.held)
	clear(b.undo)
	b.held, b.undo = b.held[:0], b.undo[:0]
	return true
}

// rollback replays the undo log. Called once, when t ends.
func (t *tx) rollback() {
	for i := len(t.b.undo) - 1; i >= 0; i-- {
		t.b.undo[i]()
	}
}

func (t *tx) check() error {
	switch {
	case t.done:
		return storage.ErrTxDone
	case t.doomed:
		return errRerun
	}
	return nil
}

// put sets m[k] = v and records how to restore the previous entry. For the
// outbox's plain maps.
func put[K comparable, V any](t *tx, m map[K]V, k K, v V) {
	old, had := m[k]
	m[k] = v
	t.b.undo = append(t.b.undo, func() {
		if had {
			m[k] = old
		} else {
			delete(m, k)
		}
	})
}

// del deletes m[k] and records how to restore it.
func del[K comparable, V any](t *tx, m map[K]V, k K) {
	old, had := m[k]
	if !had {
		return
	}
	delete(m, k)
	t.b.undo = append(t.b.undo, func() { m[k] = old })
}

// set assigns *p = v and records how to restore it. p points into a record
// that t holds exclusively.
func set[V any](t *tx, p *V, v V) {
	old := *p
	*p = v
	t.b.undo = append(t.b.undo, func() { *p = old })
}

// The repositories, one file each. Every method first takes the locks of the
// keys it reads (shared) or writes (exclusive), then works on the tables:
// see locks.go.

func (t *tx) ExternalAccounts() storage.ExternalAccounts { return extRepo{t} }
func (t *tx) Challenges() storage.OwnershipChallenges    { return challengeRepo{t} }
func (t *tx) InternalAccounts() storage.InternalAccounts { return walletRepo{t} }
func (t *tx) Credentials() storage.Credentials           { return credRepo{t} }
func (t *tx) OTPIssuances() storage.OTPIssuances         { return otpRepo{t} }
func (t *tx) Sessions() storage.Sessions                 { return sessionRepo{t} }
func (t *tx) PendingRequests() storage.PendingRequests   { return pendingRepo{t} }
func (t *tx) Outbox() storage.Outbox                     { return outboxRepo{t} }
func (t *tx) RateLimits() storage.RateLimits             { return limitRepo{t} }
func (t *tx) Idempotency() storage.IdempotencyKeys       { return idemRepo{t} }
func (t *tx) PayoutUsage() storage.PayoutUsages          { return usageRepo{t} }
func (t *tx) PayoutApprovals() storage.PayoutApprovals   { return approvalRepo{t} }
func (t *tx) Records() storage.Records                   { return recordRepo{t} }

// watch schedules a check of a record at its expiry. A rolled-back write
// leaves its entry behind; the entry is stale and ignored by Sweep.
func (t *tx) watch(kind recordKind, key string, at time.Time) {
	t.s.push(expiryEntry{at: at, key: key, kind: kind})
}

// sweepBatch is how many expired records Sweep deletes per transaction.
const sweepBatch = 64

// Sweep deletes what expired before cutoff: pending requests, OTP issuances,
// ownership challenges, sessions, rate-limit windows, idempotency records,
// payout usages and approvals, and events delivered before cutoff; a host's
// records never expire and are never swept. See [storage.Store]. Sweep never
// deletes what a running transaction uses: a record of one lock key that
// nobody holds or waits for is checked and deleted in place (see
// expireIdle); the others are deleted in transactions of at most sweepBatch
// records, under their locks.
func (s *Store) Sweep(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	n := 0
	var batch []expiryEntry // reused: each batch is done before the next pop
	for i := range s.expiry {
		for n < limit {
			batch = s.popExpired(i, cutoff, min(limit-n, sweepBatch), batch)
			if len(batch) == 0 {
				break
			}
			busy := batch[:0] // the entries left to a transaction
			for _, e := range batch {
				idle, gone := s.expireIdle(e, cutoff)
				if !idle {
					busy = append(busy, e)
				} else if gone {
					n++
				}
			}
			if len(busy) == 0 {
				continue
			}
			gone := 0
			err := s.Atomic(ctx, func(stx storage.Tx) error {
				gone = 0
				for _, e := range busy {
					ok, err := stx.(*tx).expire(ctx, e, cutoff)
					if err != nil {
						return err
					}
					if ok {
						gone++
					}
				}
				return nil
			})
			if err != nil {
				for _, e := range busy {
					s.push(e) // still to check
				}
				return n, err
			}
			n += gone
		}
	}
	if n < limit {
		swept := 0
		err := s.Atomic(ctx, func(stx storage.Tx) error {
			var err error
			swept, err = stx.(*tx).sweepEvents(ctx, cutoff, limit-n)
			return err
		})
		if err != nil {
			return n, err
		}
		n += swept
	}
	return n, nil
}

// expireIdle is Sweep's way without a transaction, for records guarded by
// one lock key: pending requests, ownership challenges, rate-limit windows
// and idempotency records. When nobody holds or waits for e's key, it
// deletes the record if the record itself expired before cutoff, all while
// holding the mutex of the key's lock shard. Nobody can take the key
// meanwhile, and whoever held it last has committed or rolled back (undo
// runs before locks are released, under the same mutex), so this is an
// exclusive lock held for one check and one delete. idle is false when the
// key is in use, or e is of another kind: then Sweep expires e in a
// transaction. gone tells whether a record was deleted.
func (s *Store) expireIdle(e expiryEntry, cutoff time.Time) (idle, gone bool) {
	var kind lockKind
	switch e.kind {
	case kindPending:
		kind = lkPending
	case kindChallenge:
		kind = lkChallenge
	case kindLimit:
		kind = lkLimit
	case kindIdempotency:
		kind = lkIdem
	default:
		return false, false
	}
	k := keyOf(kind, e.key)
	sh := &s.locks.shards[k.shard]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.m[kind][e.key] != nil {
		return false, false
	}
	var at time.Time
	var ok bool
	switch e.kind {
	case kindPending:
		var p *storage.PendingRequest
		if p, ok = s.pending.get(e.key); ok {
			at = p.ExpiresAt
		}
	case kindChallenge:
		var c *storage.OwnershipChallenge
		if c, ok = s.challenges.get(e.key); ok {
			at = c.ExpiresAt
		}
	case kindLimit:
		var w *window
		if w, ok = s.limits.get(e.key); ok {
			at = w.end
		}
	case kindIdempotency:
		var r *storage.IdempotencyRecord
		if r, ok = s.idem.get(e.key); ok {
			at = r.ExpiresAt
		}
	}
	if !ok || !at.Before(cutoff) {
		return true, false
	}
	switch e.kind {
	case kindPending:
		s.pending.remove(e.key)
	case kindChallenge:
		s.challenges.remove(e.key)
	case kindLimit:
		s.limits.remove(e.key)
	case kindIdempotency:
		s.idem.remove(e.key)
	}
	return true, true
}

// expire deletes the record e points at when the record itself expired
// before cutoff. Entries are not removed when records are consumed,
// superseded or extended, so an entry may be stale: the record's own expiry
// decides.
func (t *tx) expire(ctx context.Context, e expiryEntry, cutoff time.Time) (bool, error) {
	s := t.s
	switch e.kind {
	case kindPending:
		if err := t.lockX(ctx, lkPending, e.key); err != nil {
			return false, err
		}
		p, ok := s.pending.get(e.key)
		if !ok || !p.ExpiresAt.Before(cutoff) {
			return false, nil
		}
		tdel(t, &s.pending, e.key)
	case kindOTP:
		if err := t.lockX(ctx, lkOTP, e.key); err != nil {
			return false, err
		}
		o, ok := s.otp.get(e.key)
		if !ok || !o.ExpiresAt.Before(cutoff) {
			return false, nil
		}
		if err := t.lockX(ctx, lkOTPByCred, o.CredentialID); err != nil {
			return false, err
		}
		tdel(t, &s.otp, e.key)
		if live, _ := s.otpByCred.get(o.CredentialID); live == e.key {
			tdel(t, &s.otpByCred, o.CredentialID)
		}
	case kindChallenge:
		if err := t.lockX(ctx, lkChallenge, e.key); err != nil {
			return false, err
		}
		c, ok := s.challenges.get(e.key)
		if !ok || !c.ExpiresAt.Before(cutoff) {
			return false, nil
		}
		tdel(t, &s.challenges, e.key)
	case kindSession:
		if err := t.lockX(ctx, lkSession, e.key); err != nil {
			return false, err
		}
		ss, ok := s.sessions.get(e.key)
		if !ok || !ss.ExpiresAt.Before(cutoff) {
			return false, nil
		}
		if err := t.lockX(ctx, lkSessByAccount, ss.AccountID); err != nil {
			return false, err
		}
		if err := t.lockX(ctx, lkSessByCred, ss.CredentialID); err != nil {
			return false, err
		}
		tdel(t, &s.sessions, e.key)
		removeIndex(t, &s.sessByAcct, ss.AccountID, e.key)
		removeIndex(t, &s.sessByCred, ss.CredentialID, e.key)
	case kindLimit:
		if err := t.lockX(ctx, lkLimit, e.key); err != nil {
			return false, err
		}
		w, ok := s.limits.get(e.key)
		if !ok || !w.end.Before(cutoff) {
			return false, nil
		}
		tdel(t, &s.limits, e.key)
	case kindIdempotency:
		if err := t.lockX(ctx, lkIdem, e.key); err != nil {
			return false, err
		}
		r, ok := s.idem.get(e.key)
		if !ok || !r.ExpiresAt.Before(cutoff) {
			return false, nil
		}
		tdel(t, &s.idem, e.key)
	case kindUsage:
		if err := t.lockX(ctx, lkUsage, e.key); err != nil {
			return false, err
		}
		u, ok := s.usage.get(e.key)
		if !ok || !u.ExpiresAt.Before(cutoff) {
			return false, nil
		}
		if err := t.lockX(ctx, lkUsageByCustomer, u.CustomerID); err != nil {
			return false, err
		}
		tdel(t, &s.usage, e.key)
		removeIndex(t, &s.usageByCust, u.CustomerID, e.key)
	case kindApproval:
		if err := t.lockX(ctx, lkApproval, e.key); err != nil {
			return false, err
		}
		a, ok := s.approvals.get(e.key)
		if !ok || !a.ExpiresAt.Before(cutoff) {
			return false, nil
		}
		tdel(t, &s.approvals, e.key)
	}
	return true, nil
}

// sweepEvents deletes at most limit events delivered before cutoff, from the
// head of the outbox, and returns how many it deleted.
func (t *tx) sweepEvents(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	if err := t.lockX(ctx, lkOutbox, ""); err != nil {
		return 0, err
	}
	s := t.s
	n := 0
	for n < limit && len(s.events) > 0 {
		ev := s.events[0]
		if ev.DeliveredAt.IsZero() || !ev.DeliveredAt.Before(cutoff) {
			break
		}
		set(t, &s.events, s.events[1:])
		del(t, s.eventsByID, ev.ID)
		acct := s.eventsByAcct[ev.AccountID]
		if i := slices.Index(acct, ev); i >= 0 {
			acct = slices.Delete(slices.Clone(acct), i, i+1)
		}
		if len(acct) == 0 {
			del(t, s.eventsByAcct, ev.AccountID)
		} else {
			put(t, s.eventsByAcct, ev.AccountID, acct)
		}
		n++
	}
	// The swept events stay referenced by the array behind s.events (a
	// rollback restores the old slice) until an Append outgrows it.
	return n, nil
}

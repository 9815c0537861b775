package memory

import (
	"context"
	"errors"
	"hash/maphash"
	"slices"
	"sync"
)

// Record locks.
//
// A transaction locks every key it touches, shared to read and exclusive to
// write, and holds the locks until it commits or rolls back (strict
// two-phase locking). Keys name records ("pending request R") and index
// entries ("credentials of account A", "EMAIL_OTP credentials of address E",
// "the outbox"), so a uniqueness check or a list read is protected against a
// concurrent insert as well as against a change of what it read.
//
// Deadlocks are avoided by wait-die: every Atomic call has a timestamp,
// taken from a counter when it first meets a conflict (see age). A transaction that asks for a key held in a
// conflicting mode waits when it is older than every conflicting holder and
// than every older conflicting waiter; otherwise it dies: the request fails
// with errRerun, Atomic rolls the transaction back, releases its locks,
// waits (holding nothing) until the key it lost on is free for it, and runs
// fn again with the SAME timestamp. Waits therefore only ever go from older
// to younger transactions, so there is no cycle; and a transaction that
// keeps losing grows relatively older with every newer one, until it is the
// oldest and waits instead of dying.
//
// The lock table is split into nShards shards by key; a shard's mutex is
// held only while an entry is looked at, never while a transaction waits.
// Shards are not padded to cache lines: padding measured no gain.

// nShards is the number of shards of the lock table and of every record
// table; a power of two.
const nShards = 64

var hashSeed = maphash.MakeSeed()

// shardOf returns the shard of a key, the same for locks and records.
func shardOf(key string) int {
	return int(maphash.String(hashSeed, key) & (nShards - 1))
}

// errRerun is returned by a repository method whose transaction died in a
// lock conflict. Every later call of that transaction returns it too, and
// Atomic discards the run (whatever fn returns) and runs fn again.
var errRerun = errors.New("memory: transaction lost a lock conflict and is rerun")

type lockMode uint8

const (
	shared lockMode = iota + 1
	exclusive
)

// lockKind separates the key spaces of the lock table.
type lockKind uint8

const (
	lkExt              lockKind = iota + 1 // external account by id
	lkExtByCustomer                        // the external accounts of a customer
	lkChallenge                            // ownership challenge by account id
	lkWallet                               // internal account by id
	lkWalletByCustomer                     // the internal accounts of a customer
	lkCred                                 // credential by id
	lkCredByAccount                        // the credentials of an account
	lkWebAuthn                             // passkey by raw WebAuthn credential id
	lkEmail                                // EMAIL_OTP credentials of an address (and LockEmail)
	lkOTP                                  // OTP issuance by id
	lkOTPByCred                            // the live OTP issuance of a credential
	lkSession                              // session by id
	lkSessByAccount                        // the sessions of an account
	lkSessByCred                           // the sessions of a credential
	lkPending                              // pending request by id
	lkPendByAcct                           // the pending requests of an account
	lkPendByScope                          // the pending requests of a bounded scope
	lkLimit                                // rate-limit window by key
	lkIdem                                 // idempotency record by scope and key
	lkOutbox                               // the whole outbox (one key)
	lkUsage                                // payout usage by id
	lkUsageByCustomer                      // the payout usages of a customer (and Hold)
	lkApproval                             // payout approval by id
	lkRecord                               // a host's record by kind and key
	lkRecordGroup                          // the host's records of a kind in a group
	lkCount
)

// lockKey names a lock: its kind, its key and the shard of the key.
type lockKey struct {
	kind  lockKind
	shard uint8
	key   string
}

func keyOf(kind lockKind, key string) lockKey {
	return lockKey{kind: kind, shard: uint8(shardOf(key)), key: key}
}

// lockEntry is the state of one locked key. It exists only while the key is
// held or waited for.
type lockEntry struct {
	writer  *tx   // exclusive holder
	readers []*tx // shared holders
	waiters []waiter
	// wake is closed (and cleared) when a holder or waiter leaves; nil until
	// someone needs to wait for that.
	wake chan struct{}
}

type waiter struct {
	t    *tx
	mode lockMode
}

type lockShard struct {
	mu sync.Mutex
	m  [lkCount]map[string]*lockEntry // by kind, then key
	// free keeps released entries for reuse: 3 allocations fewer per
	// create-and-consume pair, about 5% less CPU in the benchmarks.
	free []*lockEntry
}

type lockTable struct {
	shards [nShards]lockShard
}

type decision uint8

const (
	held decision = iota + 1 // t holds the key in mode (or stronger) already
	grant
	wait
	die
)

// decide applies wait-die to t's request for e in mode.
func (e *lockEntry) decide(t *tx, mode lockMode) decision {
	if e.writer == t || mode == shared && slices.Contains(e.readers, t) {
		return held
	}
	conflict := e.writer != nil
	if mode == exclusive {
		for _, r := range e.readers {
			conflict = conflict || r != t
		}
	}
	if !conflict && len(e.waiters) == 0 {
		return grant // the fast path: no timestamps needed
	}
	// Timestamps are given out on first need, holders before t: see age.
	if e.writer != nil {
		e.writer.age()
	}
	for _, r := range e.readers {
		r.age()
	}
	ts := t.age()
	// An older transaction waiting in a conflicting mode goes first: t must
	// neither overtake it (it would starve) nor wait behind it (a wait from
	// younger to older could close a cycle).
	for _, w := range e.waiters {
		if w.t != t && w.t.age() < ts && (mode == exclusive || w.mode == exclusive) {
			return die
		}
	}
	if !conflict {
		return grant
	}
	// t waits only for younger holders.
	if e.writer != nil && e.writer.age() < ts {
		return die
	}
	if mode == exclusive {
		for _, r := range e.readers {
			if r != t && r.age() < ts {
				return die
			}
		}
	}
	return wait
}

// age returns t's wait-die timestamp (lower is older), taking the next one
// from the store's counter the first time a conflict involves t. Most
// transactions never meet a conflict and so never touch the shared counter.
// A timestamp never changes once taken, and a rerun keeps it, so every wait
// goes from a lower timestamp to a higher one and no cycle can form.
func (t *tx) age() uint64 {
	if ts := t.ts.Load(); ts != 0 {
		return ts
	}
	t.ts.CompareAndSwap(0, t.s.clock.Add(1))
	return t.ts.Load()
}

// changed wakes everyone waiting for e to change.
func (e *lockEntry) changed() {
	if e.wake != nil {
		close(e.wake)
		e.wake = nil
	}
}

func (e *lockEntry) idle() bool {
	return e.writer == nil && len(e.readers) == 0 && len(e.waiters) == 0
}

func (e *lockEntry) removeWaiter(t *tx) {
	e.waiters = slices.DeleteFunc(e.waiters, func(w waiter) bool { return w.t == t })
	e.changed()
}

func (sh *lockShard) entry(k lockKey) *lockEntry {
	e := sh.m[k.kind][k.key]
	if e == nil {
		if n := len(sh.free); n > 0 {
			e = sh.free[n-1]
			sh.free = sh.free[:n-1]
		} else {
			e = &lockEntry{}
		}
		if sh.m[k.kind] == nil {
			sh.m[k.kind] = map[string]*lockEntry{}
		}
		sh.m[k.kind][k.key] = e
	}
	return e
}

// drop deletes e from the table when nobody holds or waits for it.
func (sh *lockShard) drop(k lockKey, e *lockEntry) {
	if !e.idle() {
		return
	}
	e.changed()
	delete(sh.m[k.kind], k.key)
	if len(sh.free) < 16 {
		e.readers = e.readers[:0]
		e.waiters = e.waiters[:0]
		sh.free = append(sh.free, e)
	}
}

// lock acquires kind/key in mode for t, waiting or dying as wait-die says.
// It returns nil, errRerun (t died), ErrTxDone or a context's error.
func (t *tx) lock(ctx context.Context, kind lockKind, key string, mode lockMode) error {
	if err := t.check(); err != nil {
		return err
	}
	k := keyOf(kind, key)
	sh := &t.s.locks.shards[k.shard]
	sh.mu.Lock()
	e := sh.entry(k)
	waiting := false
	for {
		d := e.decide(t, mode)
		if d != wait && waiting {
			e.removeWaiter(t)
		}
		switch d {
		case held:
			sh.mu.Unlock()
			return nil
		case grant:
			upgrade := mode == exclusive && slices.Contains(e.readers, t)
			if mode == exclusive {
				if upgrade {
					e.readers = slices.DeleteFunc(e.readers, func(r *tx) bool { return r == t })
				}
				e.writer = t
			} else {
				e.readers = append(e.readers, t)
			}
			sh.mu.Unlock()
			if !upgrade {
				t.b.held = append(t.b.held, k)
			}
			return nil
		case die:
			sh.drop(k, e)
			sh.mu.Unlock()
			t.doomed, t.lostOn, t.lostMode = true, k, mode
			return errRerun
		}
		// wait
		if !waiting {
			e.waiters = append(e.waiters, waiter{t, mode})
			waiting = true
		}
		if e.wake == nil {
			e.wake = make(chan struct{})
		}
		wake := e.wake
		sh.mu.Unlock()
		err := t.sleep(ctx, wake)
		sh.mu.Lock()
		if err != nil {
			e.removeWaiter(t)
			sh.drop(k, e)
			sh.mu.Unlock()
			return err
		}
	}
}

// sleep waits until wake is closed or a context ends.
func (t *tx) sleep(ctx context.Context, wake <-chan struct{}) error {
	select {
	case <-wake:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-t.ctx.Done():
		return t.ctx.Err()
	}
}

// release drops every lock t holds. Called once, when t ends.
func (t *tx) release() {
	for _, k := range t.b.held {
		sh := &t.s.locks.shards[k.shard]
		sh.mu.Lock()
		e := sh.m[k.kind][k.key]
		if e.writer == t {
			e.writer = nil
		} else {
			e.readers = slices.DeleteFunc(e.readers, func(r *tx) bool { return r == t })
		}
		e.changed()
		sh.drop(k, e)
		sh.mu.Unlock()
	}
}

// awaitLost waits, holding no lock, until no transaction older than t
// holds or waits for the key t died on. Then the rerun would not die on it
// again: it gets the key or waits for younger holders, ahead of younger
// newcomers.
func (t *tx) awaitLost(ctx context.Context) error {
	k := t.lostOn
	sh := &t.s.locks.shards[k.shard]
	for {
		sh.mu.Lock()
		e := sh.m[k.kind][k.key]
		if e == nil || e.decide(t, t.lostMode) != die {
			sh.mu.Unlock()
			return nil
		}
		if e.wake == nil {
			e.wake = make(chan struct{})
		}
		wake := e.wake
		sh.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Shorthands of the repositories.

func (t *tx) lockS(ctx context.Context, kind lockKind, key string) error {
	return t.lock(ctx, kind, key, shared)
}

func (t *tx) lockX(ctx context.Context, kind lockKind, key string) error {
	return t.lock(ctx, kind, key, exclusive)
}

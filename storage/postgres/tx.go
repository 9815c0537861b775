package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/walletgate/walletgate/storage"
)

// beginOptions gives the isolation of the store's transactions
// ([Config.Isolation]), READ COMMITTED unless set. At READ COMMITTED each
// invariant of the contract is kept by a single statement whose WHERE
// clause is re-evaluated on the latest row version after a lock wait
// (single-use consumption, compare-and-set on version, attempt limits), by
// a unique index, or by a lock the caller takes before reading what it
// decides on (the Lock methods: every later statement of the transaction
// reads a fresh snapshot, taken after the lock was granted), so a stronger
// level adds nothing to correctness; under SERIALIZABLE every lost race
// instead aborts with a serialization failure and is rerun, multiplying
// work exactly when replicas contend. SERIALIZABLE is offered for hosts
// whose own transactions run at it (see [Store.WithTx]): there a check
// that waited for a lock reads the transaction's snapshot, older than
// what the lock's holder committed, and the serializable checks abort
// one of the two instead.
func (s *Store) beginOptions() pgx.TxOptions { return pgx.TxOptions{IsoLevel: s.cfg.Isolation} }

// migrateOptions gives the isolation of a migration's transaction.
func migrateOptions() pgx.TxOptions { return pgx.TxOptions{IsoLevel: pgx.ReadCommitted} }

// inBlock reports whether plain reads must run inside the transaction
// block: at SERIALIZABLE a read outside it would escape the serializable
// checks (see send).
func (s *Store) inBlock() bool { return s.cfg.Isolation == pgx.Serializable }

// finishTimeout bounds the rollback that runs after the caller's context was
// cancelled.
const finishTimeout = 5 * time.Second

// tx is one attempt of an Atomic call: a pooled connection on which the
// transaction begins lazily, pipelined with its first statement that writes
// or locks (see send). mu serializes statements (a connection runs one at a
// time) and guards done.
type tx struct {
	s    *Store
	mu   sync.Mutex
	conn *pgxpool.Conn // nil inside a host transaction
	pg   pgx.Tx        // nil until the first statement that writes or locks ran
	// host is the host's transaction when the Atomic runs inside one
	// (Store.WithTx), binding its binding, and sp reports that the
	// Atomic's savepoint in it has begun.
	host    pgx.Tx
	binding *hostBinding
	sp      bool
	// broken is set when the transaction could not begin, or a read before
	// it failed; later statements and the commit report it.
	broken error
	done   bool
	// pipe holds the deferred writes not sent yet (see deferWrite), the
	// rows the transaction locked (see hold) and the rows read with the
	// last statement sent (see readAhead). It keeps nothing inside a host
	// transaction.
	pipe pipeline
}

var _ storage.Tx = (*tx)(nil)

func (t *tx) ExternalAccounts() storage.ExternalAccounts { return extRepo{t} }
func (t *tx) Challenges() storage.OwnershipChallenges    { return challengeRepo{t} }
func (t *tx) InternalAccounts() storage.InternalAccounts { return walletRepo{t} }
func (t *tx) Credentials() storage.Credentials           { return credRepo{t} }
func (t *tx) OTPIssuances() storage.OTPIssuances         { return otpRepo{t} }
func (t *tx) Sessions() storage.Sessions                 { return sessionRepo{t} }
func (t *tx) PendingRequests() storage.PendingRequests   { return pendingRepo{t} }
func (t *tx) Outbox() storage.Outbox                     { return outboxRepo{t} }
func (t *tx) RateLimits() storage.RateLimits             { return limitRepo{t} }
func (t *tx) PayoutUsage() storage.PayoutUsages          { return usageRepo{t} }
func (t *tx) PayoutApprovals() storage.PayoutApprovals   { return approvalRepo{t} }
func (t *tx) Records() storage.Records                   { return recordRepo{t} }
func (t *tx) Idempotency() storage.IdempotencyKeys       { return idemRepo{t} }

// Atomic runs fn in one PostgreSQL transaction at READ COMMITTED (see
// beginOptions for why). It keeps the [storage.Store] contract:
//
//   - fn returning nil commits; an error or a panic rolls back (a panic is
//     re-raised after the rollback, which runs even when ctx is done);
//   - a transaction that fails with a serialization failure (40001) or a
//     deadlock (40P01), or whose connection failed before anything was sent,
//     is rerun up to the configured number of retries with jittered
//     exponential backoff, so fn may run more than once;
//   - a context cancelled before or while fn runs rolls back, and the error
//     satisfies errors.Is(err, context.Canceled) (or DeadlineExceeded);
//   - a Tx kept past the return answers [storage.ErrTxDone].
//
// As with any database, a connection lost (or a context cancelled) while the
// COMMIT is in flight leaves the outcome unknown to the caller: Atomic
// returns an error although the transaction may have committed. Single-use
// records make the usual recovery, retrying the operation, safe: a retry of a
// committed consumption answers storage.ErrConsumed.
//
// A transaction whose fn issued no statement costs no round trip. The BEGIN
// travels in one round trip with the first statement that writes or locks;
// plain reads before it run outside the transaction block, which changes
// nothing they see (see send), so a transaction that only reads costs
// its reads and no COMMIT.
//
// Given a context of [Store.WithTx], Atomic runs fn inside the host's
// transaction instead, in a savepoint, once, and commits nothing (see
// WithTx).
//
// Each call is one "storage.transaction" span and one measurement of the
// transaction metrics (see Telemetry in the package documentation).
func (s *Store) Atomic(ctx context.Context, fn func(storage.Tx) error) error {
	return s.observed(ctx, fn)
}

// atomic is Atomic without its telemetry; it sets *retries to the number
// of reruns so far.
func (s *Store) atomic(ctx context.Context, fn func(storage.Tx) error, retries *int) error {
	if b := bindingOf(ctx); b != nil {
		return s.atomicHost(ctx, b, fn)
	}
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		*retries = attempt
		err := s.attempt(ctx, fn)
		if err == nil {
			return nil
		}
		if cerr := ctx.Err(); cerr != nil {
			if errors.Is(err, cerr) {
				return err
			}
			return fmt.Errorf("%w (transaction rolled back: %w)", cerr, err)
		}
		if attempt >= s.cfg.MaxRetries || !retryable(err) {
			return rerunError(err)
		}
		if err := sleep(ctx, backoff(s.cfg.backoff, attempt)); err != nil {
			return err
		}
	}
}

// attempt runs fn once in a fresh transaction.
func (s *Store) attempt(ctx context.Context, fn func(storage.Tx) error) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("postgres: acquiring a connection: %w", err)
	}
	t := &tx{s: s, conn: conn}
	defer t.finish(ctx)
	if err := fn(t); err != nil {
		return t.resolve(ctx, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("postgres: transaction rolled back: %w", err)
	}
	return t.resolve(ctx, t.commit(ctx))
}

// resolve turns the failure of a deferred account quota of
// PendingRequests.Create or of a Hit (a limitMiss or hitMiss, wherever it
// surfaced) into what the call reports:
// it rolls the aborted transaction back and reads the account's requests,
// or the rate-limit window, outside it. Other errors pass unchanged.
func (t *tx) resolve(ctx context.Context, err error) error {
	var miss *limitMiss
	var hit *hitMiss
	if !errors.As(err, &miss) && !errors.As(err, &hit) || ctx.Err() != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.pg != nil {
		if rerr := t.pg.Rollback(ctx); rerr != nil {
			return err
		}
		t.pg = nil
	}
	if t.conn.Conn().PgConn().TxStatus() != 'I' {
		return err
	}
	if hit != nil {
		return t.s.resolveHit(ctx, t.conn, hit)
	}
	return t.s.resolveLimit(ctx, t.conn, miss)
}

// inHost reports whether the transaction runs inside a host's.
func (t *tx) inHost() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.host != nil
}

// commit commits what the transaction wrote.
func (t *tx) commit(ctx context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.broken != nil {
		return fmt.Errorf("postgres: commit: %w", t.broken)
	}
	if t.host != nil {
		if !t.sp {
			return nil // nothing written: nothing to release
		}
		if _, err := t.host.Exec(ctx, hostReleaseSQL); err != nil {
			return fmt.Errorf("postgres: releasing the savepoint in the host transaction: %w", err)
		}
		t.sp = false
		return nil
	}
	if t.pipe.deferred() {
		return t.commitLater(ctx)
	}
	if t.pg == nil {
		return nil // nothing ran in a transaction block: nothing to commit
	}
	pg := t.pg
	t.pg = nil
	if err := pg.Commit(ctx); err != nil {
		if errors.Is(err, pgx.ErrTxCommitRollback) {
			return errors.New("postgres: commit: the transaction was rolled back because a statement in it failed")
		}
		return fmt.Errorf("postgres: commit: %w", err)
	}
	return nil
}

// finish marks the Tx done, rolls back whatever did not commit and returns
// the connection to the pool (which discards it when it is broken or still
// inside a transaction).
func (t *tx) finish(ctx context.Context) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.done = true
	if t.host != nil {
		if t.sp {
			// Roll back to the savepoint (also when a statement in it
			// failed) and drop it, in one round trip; the host's
			// transaction is usable again. A failure here means the
			// connection failed: the host's next statement reports it.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
			_, _ = t.host.Exec(rctx, hostUndoSQL) // no arguments: the simple protocol, which an aborted transaction accepts
			cancel()
			t.sp = false
		}
		return
	}
	if t.pg != nil {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
		_ = t.pg.Rollback(rctx) // a failed rollback closes the connection; the server then aborts the transaction
		cancel()
		t.pg = nil
	}
	t.conn.Release()
}

// send runs the statements of b in one round trip, beginning the
// transaction first when it has not begun yet, unless b holds only plain
// reads (see below). Result callbacks set on the queued statements run
// before send returns; they must not return errors for expected outcomes
// such as no rows (a failed batch invalidates the connection's cached
// statements).
//
// Whether b holds only plain reads (statements declared kindRead: SELECTs
// that neither write nor lock, so no FOR UPDATE and no advisory lock) is
// known from the declarations it recorded. Such a batch does not begin the
// transaction: until a statement that writes or locks has begun it, reads
// run on their own, outside any transaction block, and a transaction that
// only reads costs no BEGIN and no COMMIT, one round trip fewer. They read
// what they would have read inside it: at READ COMMITTED every statement
// reads its own snapshot, taken when it starts; a read that comes before
// the transaction's first write has none of its writes to see; and a plain
// read holds no row lock the transaction would keep. A failed read dooms
// the transaction as it would inside one: later statements and the commit
// report it.
//
// Before b is sent, the pipeline forgets the kept rows of every table a
// statement of b that is not a plain read declares, drops the rows read
// ahead, and puts the deferred writes in front of b (see pipeline).
func (t *tx) send(ctx context.Context, b *batch) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.done:
		return storage.ErrTxDone
	case t.broken != nil:
		return t.broken
	case t.host != nil:
		return t.runHost(ctx, b)
	}
	b, read := t.pipe.next(b)
	switch {
	case t.pg != nil:
		return t.conn.SendBatch(ctx, &b.pg).Close()
	case read && !t.s.inBlock():
		err := t.conn.SendBatch(ctx, &b.pg).Close()
		if err != nil {
			t.broken = fmt.Errorf("postgres: a read of the transaction failed: %w", err)
		}
		return err
	}
	first := &pgx.Batch{}
	first.BeginTx(t.s.beginOptions())
	first.QueuedQueries = append(first.QueuedQueries, b.pg.QueuedQueries...)
	br := t.conn.SendBatch(ctx, first)
	err := br.Close()
	if t.conn.Conn().PgConn().TxStatus() == 'I' {
		// BEGIN never took effect: nothing ran in a transaction.
		if err == nil {
			err = errors.New("postgres: BEGIN did not start a transaction")
		}
		t.broken = fmt.Errorf("postgres: beginning the transaction: %w", err)
		return t.broken
	}
	t.pg = br.Tx()
	return err
}

// deferWrite queues the statements of b, writes whose callbacks only take
// what the statements return (never deciding on it), to be sent ahead of
// the transaction's next statement or with its COMMIT, saving their round
// trip; the kept rows of the tables they declare are forgotten at once.
// Their statements must raise an error rather than do nothing when they
// cannot write: a deferred failure aborts the transaction, is reported by
// the statement or commit that carried it, and everything rolls back.
// Inside a host transaction it sends them at once (the host's COMMIT is
// not the store's).
func (t *tx) deferWrite(ctx context.Context, b *batch) error {
	t.mu.Lock()
	switch {
	case t.done:
		t.mu.Unlock()
		return storage.ErrTxDone
	case t.broken != nil:
		t.mu.Unlock()
		return t.broken
	case t.host != nil:
		t.mu.Unlock()
		return t.send(ctx, b)
	}
	defer t.mu.Unlock()
	t.pipe.deferWrites(b)
	return nil
}

// commitLater sends the deferred writes and the COMMIT in one round trip
// (with the BEGIN when the transaction has not begun). Called with t.mu
// held.
func (t *tx) commitLater(ctx context.Context) error {
	b := &pgx.Batch{}
	began := t.pg == nil
	if began {
		b.BeginTx(t.s.beginOptions())
	}
	later, _ := t.pipe.next(&batch{})
	b.QueuedQueries = append(b.QueuedQueries, later.pg.QueuedQueries...)
	b.Queue("COMMIT")
	br := t.conn.SendBatch(ctx, b)
	err := br.Close()
	if t.conn.Conn().PgConn().TxStatus() == 'I' {
		// Committed, or never begun: nothing is left to roll back.
		t.pg = nil
		if err != nil {
			return wrap("commit", err)
		}
		return nil
	}
	// A deferred write failed and the transaction is aborted: finish
	// rolls it back.
	if began {
		t.pg = br.Tx()
	}
	if err == nil {
		err = errors.New("postgres: COMMIT did not end the transaction")
	}
	return wrap("commit", err)
}

// queryRow runs st, expected to return at most one row; scan is called
// only when there is one. It reports whether there was.
func (t *tx) queryRow(ctx context.Context, st stmt, args []any, scan func(pgx.Row) error) (bool, error) {
	found := false
	b := &batch{}
	b.Queue(st, args...).Query(func(rows pgx.Rows) error {
		if !rows.Next() {
			return nil
		}
		found = true
		return scan(rows)
	})
	return found, t.send(ctx, b)
}

// query runs st and calls each for every row.
func (t *tx) query(ctx context.Context, st stmt, args []any, each func(pgx.Rows) error) error {
	b := &batch{}
	b.Queue(st, args...).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			if err := each(rows); err != nil {
				return err
			}
		}
		return nil
	})
	return t.send(ctx, b)
}

// exec runs st and returns its command tag.
func (t *tx) exec(ctx context.Context, st stmt, args ...any) (pgconn.CommandTag, error) {
	var tag pgconn.CommandTag
	b := &batch{}
	b.Queue(st, args...).Exec(func(ct pgconn.CommandTag) error { tag = ct; return nil })
	return tag, t.send(ctx, b)
}

// check reports ErrTxDone for a finished Tx without a round trip, for methods
// that answer without asking the database.
func (t *tx) check() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done {
		return storage.ErrTxDone
	}
	return nil
}

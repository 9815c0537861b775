package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/walletgate/walletgate/storage"
)

// ErrRerun reports that PostgreSQL aborted a statement to resolve a conflict
// with another transaction: a serialization failure (40001) or a deadlock
// (40P01). The transaction must be rolled back and run again from its
// BEGIN. [Store.Atomic] reruns its own transactions ([Config.MaxRetries]
// times) and returns an error wrapping ErrRerun once they are spent; inside
// a host's transaction ([Store.WithTx]) it never reruns and returns it at
// once, since only the host can roll back and rerun what it began. The
// driver's *pgconn.PgError stays in the chain. A host's own statements
// report the same conflicts as a bare *pgconn.PgError: [Rerunnable]
// recognizes both.
var ErrRerun = errors.New("postgres: the transaction lost a conflict with another (serialization failure or deadlock): roll it back and run it again")

// Rerunnable reports whether err says that PostgreSQL aborted the
// transaction to resolve a conflict with another, so that the host may roll
// it back and run it again from its BEGIN: err wraps [ErrRerun] (what
// walletgate's operations return), or a *pgconn.PgError with SQLSTATE 40001
// (serialization_failure) or 40P01 (deadlock_detected) is anywhere in its
// chain (what the host's own statements return, and the COMMIT of a
// SERIALIZABLE transaction that the serializable checks refuse). One check
// thus covers walletgate's errors and the host's:
//
//	for run := 0; ; run++ {
//		err := payout(ctx) // begin, WithTx, walletgate's operations and the host's statements, commit
//		if !postgres.Rerunnable(err) || run == maxReruns {
//			return err
//		}
//	}
//
// It reports false for nil and for every other error: another SQLSTATE, a
// cancelled context, and a lost connection or any other failure of the
// driver, since a transaction whose COMMIT was in flight when the
// connection was lost may have committed, and running it again could
// apply it twice.
func Rerunnable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrRerun) {
		return true
	}
	switch pgCode(err) {
	case codeSerializationFailure, codeDeadlockDetected:
		return true
	}
	return false
}

// ErrIsolation reports a host transaction ([Store.WithTx]) that does not run
// at the store's isolation level ([Config.Isolation], READ COMMITTED unless
// set), the level at which the store's rules hold (see WithTx). Nothing
// walletgate sent in it stays: the host rolls back and begins again at the
// store's level.
var ErrIsolation = errors.New("postgres: the host transaction must run at the store's isolation level")

// The statements of the savepoint [Store.Atomic] runs in inside a host
// transaction, and of its isolation check. Savepoint names stack, so an
// Atomic nested in another rolls back to its own. The undo has no
// arguments and runs in the simple protocol, which an aborted transaction
// accepts (it cannot prepare a statement).
const (
	hostSavepointSQL = `SAVEPOINT walletgate_atomic`
	hostReleaseSQL   = `RELEASE SAVEPOINT walletgate_atomic`
	hostUndoSQL      = `ROLLBACK TO SAVEPOINT walletgate_atomic; RELEASE SAVEPOINT walletgate_atomic`
	hostIsolationSQL = `SELECT current_setting('transaction_isolation')`
)

// hostKey is the context key of a host transaction.
type hostKey struct{}

// hostBinding is a host transaction bound to a store by [Store.WithTx].
type hostBinding struct {
	store *Store
	tx    pgx.Tx
	// isolation is checked once, with the first savepoint.
	isolationOK atomic.Bool
}

// WithTx returns a context under which every [Store.Atomic] of s runs inside
// tx, a transaction the host began (on any pool of the database that holds
// the store's schema) and commits or rolls back itself. Every walletgate
// operation on s (the payout gate, a signed retry, a registration, a status
// change, a wallet creation, an email change) then writes in the host's
// transaction, and commits when, and only when, the host commits:
//
//	tx, err := pool.Begin(ctx)
//	if err != nil { ... }
//	defer tx.Rollback(ctx) // a no-op after Commit
//	hctx := store.WithTx(ctx, tx)
//	if _, err := svc.CreateWallet(hctx, w); err != nil { return err } // or any other operation
//	return tx.Commit(ctx)
//
// Inside the host's transaction, Atomic
//
//   - sends every statement, reads included, through tx, so it sees what the
//     host (and earlier walletgate calls of the transaction) wrote;
//   - runs fn in a savepoint, begun with its first statement that writes or
//     locks (or by [HostTx]): fn returning nil releases the savepoint and
//     commits nothing; an error or a panic rolls back to it, undoing what fn
//     and the host's statements made through [HostTx] wrote since, and tx
//     stays usable, with the locks and writes it had before;
//   - runs fn once: it never reruns. A serialization failure or a deadlock
//     is returned at once wrapping [ErrRerun], after rolling back to the
//     savepoint; the host rolls its transaction back and, if it wants, runs
//     it again from the BEGIN (walletgate's rules hold for any rerun: a
//     consumed request or code stays consumed only when the host committed).
//     [Rerunnable] reports such an error, and the same conflicts raised by
//     the host's own statements and COMMIT.
//     So fn, and an effect, may count on one run per call.
//
// tx must run at the store's isolation level ([Config.Isolation]): READ
// COMMITTED unless the store was configured SERIALIZABLE. Any other level
// is refused with an error wrapping [ErrIsolation], at the binding's first
// statement, read or write, which carries the check in its round trip.
// The rules the store keeps across transactions (one EMAIL_OTP credential
// per address, a revoke that sees every session of its credential, a cap
// on live challenges) hold only when every transaction of the schema runs
// at one level: at READ COMMITTED a check that waited for a lock reads
// what the lock's holder committed, which a snapshot taken earlier
// (REPEATABLE READ, SERIALIZABLE) would hide; and PostgreSQL's
// serializable checks, which make up for that snapshot at SERIALIZABLE,
// see only serializable transactions. A SERIALIZABLE store reruns its
// own transactions on 40001; a host's it returns as ErrRerun.
//
// Some operations refuse a host transaction whatever its level: those that
// record what they refuse, or whose success already acted outside the
// store (walletauth's Challenge and Verify, ownership's Verify and
// CompleteLiveness). Their Atomic fails, sending nothing, with an error
// wrapping [storage.ErrStandalone] (see [storage.Standalone]); call them
// with a context that carries no host transaction.
//
// tx serves one statement at a time, as any pgx.Tx: the host calls
// walletgate operations in its transaction one after another, not from
// several goroutines. The context binds tx to s alone: an Atomic of another
// Store given this context (or one derived from it) fails without sending
// anything, since its writes would otherwise silently commit apart from the
// host's. [Store.Sweep] ignores the binding.
//
// The locks walletgate takes (an account held by the payout gate, a signer
// held by a signed retry) are held until the host's transaction ends, not
// until the call returns: keep the transaction short. One that runs several
// operations holds the locks of all of them, possibly out of the store's
// lock order; PostgreSQL then resolves a cycle with another transaction as
// a deadlock, returned as ErrRerun.
//
// Atomic fails without sending anything when tx is aborted (a statement of
// it failed and was not rolled back to a savepoint) or has ended. A
// statement that fails outright before the savepoint begins (a plain read
// cut by a timeout) and a context cancelled while a statement is in flight
// (pgx then closes the connection) fail the host's transaction as any
// statement of its own would: the host rolls back.
func (s *Store) WithTx(ctx context.Context, tx pgx.Tx) context.Context {
	return context.WithValue(ctx, hostKey{}, &hostBinding{store: s, tx: tx})
}

// bindingOf returns the host transaction ctx carries, or nil.
func bindingOf(ctx context.Context) *hostBinding {
	b, _ := ctx.Value(hostKey{}).(*hostBinding)
	return b
}

// HostTx returns the host's transaction behind t, a [storage.Tx] of an
// Atomic running inside a host transaction ([Store.WithTx]), so that an
// effect (of a signed retry) or a function the host gives to Atomic (around
// ownership's CheckPayoutIn and the other ...In forms) writes the host's own
// rows in the same transaction as walletgate's. It begins Atomic's savepoint first when no
// statement has, so whatever is written through the returned pgx.Tx rolls
// back with walletgate's writes when fn fails and commits when the host
// commits.
//
// The returned pgx.Tx refuses Commit and Rollback: the host ends its
// transaction after the walletgate call returns. Use it only while fn runs,
// and not concurrently with walletgate's statements.
//
// It fails for a Tx that does not run inside a host transaction (the pool
// transactions of Atomic without [Store.WithTx], and every Tx of another
// store: storage/memory has no host transaction), and with
// [storage.ErrTxDone] after Atomic returned.
func HostTx(ctx context.Context, t storage.Tx) (pgx.Tx, error) {
	pt, ok := t.(*tx)
	if !ok || pt.host == nil {
		return nil, errors.New("postgres: HostTx: the transaction does not run inside a host transaction (bind one with Store.WithTx)")
	}
	pt.mu.Lock()
	defer pt.mu.Unlock()
	switch {
	case pt.done:
		return nil, storage.ErrTxDone
	case pt.broken != nil:
		return nil, pt.broken
	}
	if !pt.sp {
		if err := pt.runHost(ctx, &batch{}); err != nil { // an empty batch begins the savepoint
			return nil, err
		}
	}
	return hostTx{pt.host}, nil
}

// hostTx is the host's transaction as an effect sees it: it may not end it.
type hostTx struct{ pgx.Tx }

var errHostEnds = errors.New("postgres: the host transaction is committed or rolled back by the host, after the walletgate call returns")

// Commit refuses: the host commits after the walletgate call returns.
func (hostTx) Commit(context.Context) error { return errHostEnds }

// Rollback refuses: returning an error from the function rolls back its
// writes; the host rolls back after the walletgate call returns.
func (hostTx) Rollback(context.Context) error { return errHostEnds }

// atomicHost is Atomic inside the host transaction of b.
func (s *Store) atomicHost(ctx context.Context, b *hostBinding, fn func(storage.Tx) error) error {
	if b.store != s {
		return fmt.Errorf("postgres: the context carries a host transaction bound to another store (schema %q), not this one (schema %q): bind it with this store's WithTx",
			b.store.cfg.Schema, s.cfg.Schema)
	}
	if b.tx == nil || b.tx.Conn() == nil {
		return errors.New("postgres: the context carries a nil host transaction")
	}
	if op, ok := storage.StandaloneOperation(ctx); ok {
		return fmt.Errorf("postgres: %s records what it refuses (attempts, budgets, lockouts, consumed challenges) or has acted outside the store, so it commits on its own; call it without the host transaction (Store.WithTx): %w",
			op, storage.ErrStandalone)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	switch b.tx.Conn().PgConn().TxStatus() {
	case 'E':
		return errors.New("postgres: the host transaction is aborted (a statement of it failed): roll it back")
	case 'I':
		return errors.New("postgres: the host transaction has ended")
	}
	t := &tx{s: s, host: b.tx, binding: b}
	err := func() error {
		defer t.finish(ctx)
		if err := fn(t); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("postgres: savepoint rolled back: %w", err)
		}
		return t.commit(ctx)
	}()
	return rerunError(err)
}

// rerunError wraps err with ErrRerun when PostgreSQL aborted a statement
// to resolve a conflict and err does not say so yet.
func rerunError(err error) error {
	if errors.Is(err, ErrRerun) || !Rerunnable(err) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrRerun, err)
}

// runHost is send inside a host transaction. Plain reads before the first
// statement that writes or locks run in the host's transaction without a
// savepoint (they have nothing to undo); that statement travels with the
// SAVEPOINT in one round trip. The first statement of the binding, read or
// write, carries the check of the host's isolation level. Whether b holds
// only plain reads is known from its declarations (see batch). t.mu is
// held.
func (t *tx) runHost(ctx context.Context, b *batch) error {
	read := b.reads()
	var level string
	checkLevel := !t.binding.isolationOK.Load()
	first := &pgx.Batch{}
	if checkLevel {
		first.Queue(hostIsolationSQL).QueryRow(func(r pgx.Row) error { return r.Scan(&level) })
	}
	if t.sp || read {
		first.QueuedQueries = append(first.QueuedQueries, b.pg.QueuedQueries...)
		err := rerunError(t.host.SendBatch(ctx, first).Close())
		if lerr := t.checkLevel(checkLevel, level); lerr != nil {
			return lerr
		}
		if err != nil && !t.sp {
			t.broken = fmt.Errorf("postgres: a read in the host transaction failed: %w", err)
		}
		return err
	}
	first.Queue(hostSavepointSQL).Exec(func(pgconn.CommandTag) error { t.sp = true; return nil })
	first.QueuedQueries = append(first.QueuedQueries, b.pg.QueuedQueries...)
	err := rerunError(t.host.SendBatch(ctx, first).Close())
	if !t.sp {
		if err == nil {
			err = errors.New("postgres: SAVEPOINT did not run")
		}
		t.broken = fmt.Errorf("postgres: beginning a savepoint in the host transaction: %w", err)
		return t.broken
	}
	if lerr := t.checkLevel(checkLevel, level); lerr != nil {
		return lerr
	}
	return err
}

// checkLevel refuses a host transaction whose isolation level is not the
// store's ([Config.Isolation]; see [Store.WithTx]); level is what the
// check read, empty when the statement carrying it did not run. t.mu is
// held.
func (t *tx) checkLevel(checked bool, level string) error {
	if !checked || level == "" {
		return nil
	}
	if want := string(t.s.cfg.Isolation); level != want {
		t.broken = fmt.Errorf("%w: it runs at %s and the store at %s; walletgate's rules hold when every transaction of the store's schema runs at the store's level",
			ErrIsolation, strings.ToUpper(level), strings.ToUpper(want))
		return t.broken
	}
	t.binding.isolationOK.Store(true)
	return nil
}

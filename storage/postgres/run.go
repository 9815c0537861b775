package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// TxBeginner begins a transaction with options: a *pgxpool.Pool or a
// *pgx.Conn, on the database that holds the store's schema.
type TxBeginner interface {
	BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error)
}

// InTx runs fn in a host transaction begun on the store's pool and commits
// it: [Store.InTxOn] on that pool.
func (s *Store) InTx(ctx context.Context, fn func(ctx context.Context, tx pgx.Tx) error) error {
	return s.InTxOn(ctx, s.pool, fn)
}

// InTxOn runs fn in a host transaction begun on db, at the store's
// isolation level ([Config.Isolation]), and commits it. fn gets the
// transaction and a context that binds it to the store ([Store.WithTx]):
// every walletgate operation fn runs with that context writes in the
// transaction, as do the host's own statements on tx, and all of it
// commits together or not at all.
//
// When fn returns nil the transaction is committed and InTxOn returns the
// COMMIT's error. When fn returns an error or panics, the transaction is
// rolled back and fn's error (or panic) is returned unchanged. A run that
// lost a conflict with another transaction ([Rerunnable]: walletgate's
// [ErrRerun], or a serialization failure or deadlock of the host's own
// statements or of the COMMIT) is rolled back and fn runs again, whole,
// in a new transaction: at most [Config.MaxRetries] times more, after the
// store's backoff, after which the last run's error is returned (it is
// Rerunnable). No other error is rerun: a lost connection during COMMIT
// may have committed, and a rerun would apply fn twice.
//
// So fn may run more than once, and only its last run commits: it must
// have no effect outside the transaction (no payment sent, no message, no
// change of memory that outlives the run), and do those after InTxOn
// returns nil.
//
// ctx must carry no host transaction: a transaction begun inside another
// would commit apart from it. InTxOn then fails without beginning one;
// fn runs the operations with the context it was handed instead. A ctx
// cancelled between runs ends the reruns with its error.
func (s *Store) InTxOn(ctx context.Context, db TxBeginner, fn func(ctx context.Context, tx pgx.Tx) error) error {
	if db == nil || fn == nil {
		return errors.New("postgres: InTxOn needs a TxBeginner and a function")
	}
	if bindingOf(ctx) != nil {
		return errors.New("postgres: InTx: the context carries a host transaction already: run the operations with it, not in a transaction of their own")
	}
	for run := 0; ; run++ {
		err := s.runOnce(ctx, db, fn)
		if !Rerunnable(err) || run >= s.cfg.MaxRetries {
			return err
		}
		if serr := sleep(ctx, backoff(s.cfg.backoff, run)); serr != nil {
			return fmt.Errorf("%w (the transaction was rolled back after losing a conflict: %w)", serr, err)
		}
	}
}

// runOnce begins a transaction on db, runs fn in it bound to the store,
// and commits it when fn returns nil; otherwise, or when fn panics, it
// rolls it back.
func (s *Store) runOnce(ctx context.Context, db TxBeginner, fn func(context.Context, pgx.Tx) error) error {
	tx, err := db.BeginTx(ctx, pgx.TxOptions{IsoLevel: s.cfg.Isolation})
	if err != nil {
		return fmt.Errorf("postgres: beginning the host transaction: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }() // a no-op after Commit
	if err := fn(s.WithTx(ctx, tx), tx); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/walletgate/walletgate/storage"
)

// casMiss decides why a compare-and-set UPDATE matched no row: the record
// does not exist (ErrNotFound) or its version moved on (ErrConflict). The
// UPDATE already waited for any transaction holding the row, so this read
// sees the state that defeated it.
func (t *tx) casMiss(ctx context.Context, exists stmt, id, what string) error {
	found, err := t.queryRow(ctx, exists, []any{id}, func(row pgx.Row) error { return row.Scan(new(int)) })
	switch {
	case err != nil:
		return wrap("update "+what, err)
	case !found:
		return storage.ErrNotFound
	}
	return fmt.Errorf("postgres: update %s %s: %w (stored version differs)", what, id, storage.ErrConflict)
}

// notFoundOrDone answers a lookup by a key no record can have: ErrNotFound,
// or ErrTxDone on a finished Tx.
func notFoundOrDone(t *tx) error {
	if err := t.check(); err != nil {
		return err
	}
	return storage.ErrNotFound
}

// consumeMiss decides why a single-use UPDATE matched no row, in the order
// the contract gives: unknown, already consumed, expired. The UPDATE already
// waited for any transaction holding the row, so this read sees the state
// that defeated it.
func (t *tx) consumeMiss(ctx context.Context, state stmt, id string, now time.Time, what string) error {
	var consumed, expires pgtype.Timestamptz
	found, err := t.queryRow(ctx, state, []any{id}, func(row pgx.Row) error { return row.Scan(&consumed, &expires) })
	switch {
	case err != nil:
		return wrap("consume "+what, err)
	case !found:
		return storage.ErrNotFound
	case consumed.Valid:
		return storage.ErrConsumed
	case !now.Before(expires.Time):
		return storage.ErrExpired
	}
	// Unconsumed and live now: the row was replaced between the two
	// statements (a supersede reusing the id). Report the lost race.
	return fmt.Errorf("postgres: consume %s %s: %w (changed concurrently)", what, id, storage.ErrConflict)
}

// consume sends st, a single-use consumption of record id at now, as a
// deferred write (see deferWrite): it travels with the transaction's next
// statement or its COMMIT. Its statement raises when it consumes nothing,
// naming why in its guard (consumeCauseSQL), which the batch reports as a
// *storage.ConsumeError for id wrapping that cause.
func (t *tx) consume(ctx context.Context, st stmt, id string, now time.Time) error {
	if !storableKey(id) {
		if err := t.check(); err != nil {
			return err
		}
		return &storage.ConsumeError{ID: id, Err: storage.ErrNotFound}
	}
	b := &batch{}
	b.Queue(st, id, now).Fn = func(br pgx.BatchResults) error {
		_, err := br.Exec()
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == codeGuardFailed {
			return &storage.ConsumeError{ID: id, Err: consumeCause(pe.Message)}
		}
		return err
	}
	return t.deferWrite(ctx, b)
}

// The guards a consumption's statement fails with, one per cause, as
// guard_failed names them in its message.
const (
	guardConsumeConsumed = "consume: consumed"
	guardConsumeExpired  = "consume: expired"
)

// consumeCauseHead, a table, then consumeCauseTail are the guard a
// consumption of a row of that table ($1 the id, $2 now) names when it
// consumed nothing, read from the statement's snapshot: expired, or else
// consumed. A row that was live in the snapshot was consumed by another
// transaction while this one waited for its lock; a row not there was
// superseded or swept, which is reported as consumed too, never as
// ErrNotFound: the failure surfaces at a later call of the transaction,
// whose caller may take ErrNotFound for an answer of its own.
const (
	consumeCauseHead = `COALESCE((SELECT CASE WHEN r.consumed_at IS NULL AND r.expires_at <= $2 THEN '` + guardConsumeExpired +
		`' ELSE '` + guardConsumeConsumed + `' END FROM `
	consumeCauseTail = ` r WHERE r.id = $1), '` + guardConsumeConsumed + `')`
)

// consumeCause maps the message of a consumption's failed guard to the
// storage error it names; guard_failed's message ends "the guard of
// <guard> failed".
func consumeCause(message string) error {
	if strings.HasSuffix(message, " "+guardConsumeExpired+" failed") {
		return storage.ErrExpired
	}
	return storage.ErrConsumed
}

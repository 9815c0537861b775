package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
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

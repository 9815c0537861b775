package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/walletgate/walletgate/storage/postgres"
	"github.com/walletgate/walletgate/storage/postgres/pgtest"
)

// TestRerunnable: Rerunnable reports walletgate's ErrRerun and a driver
// error with SQLSTATE 40001 or 40P01 anywhere in the chain, and nothing
// else.
func TestRerunnable(t *testing.T) {
	pg := func(code string) error { return &pgconn.PgError{Severity: "ERROR", Code: code, Message: "injected"} }
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"plain error", errors.New("boom"), false},
		{"ErrRerun", postgres.ErrRerun, true},
		{"ErrRerun wrapped", fmt.Errorf("payout: %w", postgres.ErrRerun), true},
		{"ErrRerun with its PgError", fmt.Errorf("%w: %w", postgres.ErrRerun, pg("40001")), true},
		{"PgError 40001", pg("40001"), true},
		{"PgError 40001 wrapped", fmt.Errorf("host update: %w", pg("40001")), true},
		{"PgError 40P01 wrapped", fmt.Errorf("host update: %w", pg("40P01")), true},
		{"PgError 40001 wrapped twice", fmt.Errorf("commit: %w", fmt.Errorf("tx: %w", pg("40001"))), true},
		{"PgError 40001 in a join", errors.Join(errors.New("rollback failed"), pg("40001")), true},
		{"PgError 23505", fmt.Errorf("host insert: %w", pg("23505")), false},
		{"PgError 40003", pg("40003"), false}, // statement_completion_unknown: not a conflict
		{"PgError 57014", pg("57014"), false}, // query_canceled
		{"PgError code as text only", errors.New("ERROR: injected (SQLSTATE 40001)"), false},
		{"context.Canceled", context.Canceled, false},
		{"context.DeadlineExceeded wrapped", fmt.Errorf("commit: %w", context.DeadlineExceeded), false},
		{"lost connection", fmt.Errorf("commit: %w", io.ErrUnexpectedEOF), false},
		{"commit rolled back", pgx.ErrTxCommitRollback, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := postgres.Rerunnable(c.err); got != c.want {
				t.Fatalf("Rerunnable(%v) = %v, want %v", c.err, got, c.want)
			}
		})
	}
}

// TestRerunnableHostStatements: the host's own statements, outside any
// walletgate call, lose conflicts with a bare driver error, which
// Rerunnable reports: an UPDATE at SERIALIZABLE of a row another
// transaction updated and committed after its snapshot (40001), and the
// COMMIT the serializable checks refuse (40001, a write skew).
func TestRerunnableHostStatements(t *testing.T) {
	ctx := t.Context()
	pool := newPool(t, 4)
	s := newStore(t, pool)
	table := pgtest.Ledger(t, pool, s.Schema())
	serializable := pgx.TxOptions{IsoLevel: pgx.Serializable}

	t.Run("update", func(t *testing.T) {
		row := newID(t, "Ledger")
		if _, err := pool.Exec(ctx, "INSERT INTO "+table+" (id) VALUES ($1)", row); err != nil {
			t.Fatal(err)
		}
		update := "UPDATE " + table + " SET id = id WHERE id = $1"
		first := pgtest.Begin(t, pool, serializable)
		second := pgtest.Begin(t, pool, serializable)
		// The second's snapshot is taken before the first commits.
		if _, err := second.Exec(ctx, "SELECT id FROM "+table+" WHERE id = $1", row); err != nil {
			t.Fatal(err)
		}
		if _, err := first.Exec(ctx, update, row); err != nil {
			t.Fatal(err)
		}
		pgtest.End(t, first, true)
		_, err := second.Exec(ctx, update, row)
		if sqlState(err) != "40001" {
			t.Fatalf("the second update failed with %v, want SQLSTATE 40001", err)
		}
		if !postgres.Rerunnable(err) {
			t.Fatalf("Rerunnable(%v) = false for the host's update that lost a serialization check", err)
		}
		if wrapped := fmt.Errorf("host payout: %w", err); !postgres.Rerunnable(wrapped) {
			t.Fatalf("Rerunnable(%v) = false once wrapped", wrapped)
		}
	})

	t.Run("commit", func(t *testing.T) {
		// Each reads the other's range and inserts into its own: a write
		// skew, refused at the second commit.
		a, b := newID(t, "Ledger"), newID(t, "Ledger")
		count := "SELECT count(*) FROM " + table + " WHERE id IN ($1, $2)"
		first := pgtest.Begin(t, pool, serializable)
		second := pgtest.Begin(t, pool, serializable)
		var n int
		for _, tx := range []pgx.Tx{first, second} {
			if err := tx.QueryRow(ctx, count, a, b).Scan(&n); err != nil {
				t.Fatal(err)
			}
		}
		pgtest.HostWrite(t, first, table, a)
		pgtest.HostWrite(t, second, table, b)
		pgtest.End(t, first, true)
		err := second.Commit(ctx)
		if sqlState(err) != "40001" {
			t.Fatalf("the second commit failed with %v, want SQLSTATE 40001", err)
		}
		if !postgres.Rerunnable(err) {
			t.Fatalf("Rerunnable(%v) = false for the host's COMMIT the serializable checks refused", err)
		}
	})
}

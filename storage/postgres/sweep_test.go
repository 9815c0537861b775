package postgres_test

import (
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/walletgate/walletgate/storage/postgres"
)

// explain returns the plan of sql with args on a connection of s's pool,
// after running the setup statements on that connection.
func explain(t *testing.T, conn *pgx.Conn, sql string, args ...any) string {
	t.Helper()
	ctx := t.Context()
	rows, err := conn.Query(ctx, "EXPLAIN "+sql, args...)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

// TestSweepUsesExpiryIndexes: every sweep statement can walk its table's
// expiry index, and on a table of mostly live rows the planner does so by
// itself, reading no live row.
func TestSweepUsesExpiryIndexes(t *testing.T) {
	ctx := t.Context()
	pool := newPool(t, 2)
	s := newStore(t, pool)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()

	rows := make([][]any, 5000)
	for i := range rows {
		exp := now.Add(time.Duration(i+1) * time.Minute) // live
		if i%500 == 0 {
			exp = now.Add(-time.Minute) // expired
		}
		rows[i] = []any{newID(t, "Request"), "K", "a", "POST", "/", "R", "", now, exp}
	}
	n, err := conn.CopyFrom(ctx, pgx.Identifier{s.Schema(), "pending_requests"},
		[]string{"id", "kind", "account_id", "method", "path", "signer_rule", "signer_ref", "created_at", "expires_at"},
		pgx.CopyFromRows(rows))
	if err != nil || n != int64(len(rows)) {
		t.Fatalf("CopyFrom: %d, %v", n, err)
	}
	if _, err := conn.Exec(ctx, "ANALYZE "+pgx.Identifier{s.Schema(), "pending_requests"}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	sweeps := postgres.SweepSQL(s)
	plan := explain(t, conn.Conn(), sweeps[0], now, int64(100))
	t.Logf("pending-request sweep plan:\n%s", plan)
	if !strings.Contains(plan, "pending_requests_expires_idx") {
		t.Fatalf("the pending-request sweep does not use the expiry index:\n%s", plan)
	}

	indexes := []string{"pending_requests_expires_idx", "otp_issuances_expires_idx", "ownership_challenges_expires_idx",
		"sessions_expires_idx", "rate_limit_windows_end_idx", "outbox_events_delivered_idx",
		"idempotency_keys_expires_idx", "payout_usages_expires_idx", "payout_approvals_expires_idx"}
	if _, err := conn.Exec(ctx, "SET enable_seqscan = off"); err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = conn.Exec(ctx, "RESET enable_seqscan") }()
	for i, sql := range sweeps {
		if plan := explain(t, conn.Conn(), sql, now, int64(100)); !strings.Contains(plan, indexes[i]) {
			t.Errorf("sweep %d cannot use %s:\n%s", i, indexes[i], plan)
		}
	}

	got, err := s.Sweep(ctx, now, 1000)
	if err != nil || got != 10 {
		t.Fatalf("Sweep removed %d, %v; want the 10 expired requests", got, err)
	}
}

package postgres_test

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestGuardFailedIsNamed: the guard of a deferred write fails with the
// schema's own condition, SQLSTATE WG001 naming the guard, never with an
// error another statement could raise by accident.
func TestGuardFailedIsNamed(t *testing.T) {
	pool := newPool(t, 1)
	s := newStore(t, pool)
	_, err := pool.Exec(t.Context(), "SELECT "+pgx.Identifier{s.Schema(), "guard_failed"}.Sanitize()+"('probe')")
	if sqlState(err) != "WG001" || !strings.Contains(err.Error(), "the guard of probe failed") {
		t.Fatalf("guard_failed: %v (SQLSTATE %q), want WG001 naming the guard", err, sqlState(err))
	}
}

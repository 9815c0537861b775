package pgtest

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// AwaitLockWait returns once a statement of the store's schema is waiting
// for a lock held by another transaction, as pg_stat_activity reports it,
// so a test that needs one transaction queued behind another waits for
// that event rather than for a span of time. It fails tb when none waits
// within 30 seconds.
func AwaitLockWait(tb testing.TB, pool *pgxpool.Pool, schema string) {
	tb.Helper()
	quoted := pgx.Identifier{schema}.Sanitize()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var waiting bool
		err := pool.QueryRow(tb.Context(), `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND position($1 in query) > 0)`, quoted).Scan(&waiting)
		if err != nil {
			tb.Fatalf("pgtest: reading lock waits: %v", err)
		}
		if waiting {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("pgtest: no statement of schema %s waited for a lock within 30s", schema)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

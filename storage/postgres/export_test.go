package postgres

import (
	"context"
	"time"

	"github.com/walletgate/walletgate/storage"
)

// WithBackoff returns cfg with the base delay between retries set to d.
func WithBackoff(cfg Config, d time.Duration) Config {
	cfg.backoff = d
	return cfg
}

// ExecIn runs sql inside the transaction behind tx, declared as a write of
// every table.
func ExecIn(ctx context.Context, t storage.Tx, sql string, args ...any) error {
	_, err := t.(*tx).exec(ctx, stmt{sql: sql, kind: kindWrite, tables: allTables}, args...)
	return err
}

// BackendPID returns the server process id of the connection behind tx.
func BackendPID(t storage.Tx) uint32 { return t.(*tx).conn.Conn().PgConn().PID() }

// SweepSQL returns the sweep statements of s, one per table.
func SweepSQL(s *Store) []string {
	out := make([]string, len(s.q.sweep))
	for i, st := range s.q.sweep {
		out[i] = st.sql
	}
	return out
}

// LeaseSQL returns the statement of s that Outbox.Lease of limit events
// runs.
func LeaseSQL(s *Store, limit int) string { return s.leaseSQL(limit).sql }

// AtomicBare is Atomic without its telemetry.
func AtomicBare(s *Store, ctx context.Context, fn func(storage.Tx) error) error {
	var retries int
	return s.atomic(ctx, fn, &retries)
}

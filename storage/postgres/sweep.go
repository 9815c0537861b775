package postgres

import (
	"context"
	"fmt"
	"time"
)

// sweepSQL deletes up to $2 rows of one table whose expiry column is before
// $1, oldest first. The inner SELECT walks the expiry index from its low end
// and stops at the cutoff, so live rows are never read; SKIP LOCKED leaves
// rows that a transaction (or another replica's sweep) holds to a later run.
const sweepSQL = `DELETE FROM {s}.%[1]s WHERE ctid = ANY (ARRAY(
	SELECT ctid FROM {s}.%[1]s WHERE %[2]s < $1 ORDER BY %[2]s LIMIT $2 FOR UPDATE SKIP LOCKED))`

// sweepTarget is a table Sweep clears and the column that says when a row
// expired.
type sweepTarget struct {
	table  table
	column string
}

// sweepTables is the number of tables Sweep clears.
const sweepTables = 9

// sweepTargets lists them. Delivered events are swept once delivered before
// the cutoff, as the memory store does.
func sweepTargets() [sweepTables]sweepTarget {
	return [sweepTables]sweepTarget{
		{tablePendingRequests, "expires_at"},
		{tableOTPIssuances, "expires_at"},
		{tableOwnershipChallenges, "expires_at"},
		{tableSessions, "expires_at"},
		{tableRateLimitWindows, "window_end"},
		{tableOutboxEvents, "delivered_at"},
		{tableIdempotencyKeys, "expires_at"},
		{tablePayoutUsages, "expires_at"},
		{tablePayoutApprovals, "expires_at"},
	}
}

// Sweep deletes at most limit records that expired before cutoff: pending
// requests, OTP issuances, ownership challenges, sessions, rate-limit
// windows, idempotency records (consumed, completed or not), payout usages
// and payout approvals, and events
// delivered before cutoff; a host's records are never swept. It runs one
// short DELETE per table, each its own transaction, and returns how many rows
// it deleted; a result equal to limit means more may remain. Several replicas
// may sweep at once: each skips the rows another holds.
func (s *Store) Sweep(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	n := 0
	for i, st := range s.q.sweep {
		if n >= limit {
			break
		}
		if err := ctx.Err(); err != nil {
			return n, err
		}
		tag, err := s.pool.Exec(ctx, st.sql, cutoff, int64(limit-n))
		if err != nil {
			return n, fmt.Errorf("postgres: sweeping %s: %w", sweepTargets()[i].table, err)
		}
		n += int(tag.RowsAffected())
	}
	return n, nil
}

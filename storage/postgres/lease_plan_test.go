package postgres_test

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/walletgate/walletgate/storage/postgres"
)

// explainLease runs the store's lease statement under EXPLAIN (ANALYZE,
// BUFFERS) in a transaction that it rolls back, and returns the plan and
// the buffers the statement touched.
func explainLease(t *testing.T, pool *pgxpool.Pool, s *postgres.Store, now time.Time, limit int) (string, int) {
	t.Helper()
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	rows, err := tx.Query(ctx, "EXPLAIN (ANALYZE, BUFFERS) "+postgres.LeaseSQL(s, limit),
		now, "plan", now.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for rows.Next() {
		var l string
		if err := rows.Scan(&l); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, l)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	plan := strings.Join(lines, "\n")
	m := regexp.MustCompile(`Buffers: shared hit=(\d+)(?: read=(\d+))?`).FindStringSubmatch(plan)
	if m == nil {
		t.Fatalf("no buffer count in the plan:\n%s", plan)
	}
	hit, _ := strconv.Atoi(m[1])
	read, _ := strconv.Atoi(m[2])
	return plan, hit + read
}

// TestLeasePlan checks the plan of a lease of 16 events on backlogs of 100k
// pending events over 4 and over 1,000 accounts, with statistics stale
// (taken before most of the backlog arrived) and fresh: it reads index
// ranges, never scans the table, and touches a number of buffers that does
// not grow with the backlog (the previous statement touched about 1.1M on
// such a backlog). With -v it logs the plans.
func TestLeasePlan(t *testing.T) {
	pool := newPool(t, 2)
	created := time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)
	for _, c := range []leaseCase{{100_000, 4}, {100_000, 1_000}} {
		t.Run(c.String(), func(t *testing.T) {
			s := backlogStore(t, pool, c, created)
			for _, stats := range []string{"stale", "fresh"} {
				if stats == "fresh" {
					analyze(t, pool, s)
				}
				plan, buffers := explainLease(t, pool, s, created, 16)
				t.Logf("statistics %s, %d buffers:\n%s", stats, buffers, plan)
				if strings.Contains(plan, "Seq Scan") {
					t.Errorf("statistics %s: the lease scans the table:\n%s", stats, plan)
				}
				if !strings.Contains(plan, "outbox_events_pending") {
					t.Errorf("statistics %s: the lease uses no pending index:\n%s", stats, plan)
				}
				if buffers > 2_000 {
					t.Errorf("statistics %s: the lease touched %d buffers, want at most 2000:\n%s", stats, buffers, plan)
				}
			}
		})
	}
}

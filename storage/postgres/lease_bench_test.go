package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/postgres"
)

// scanLeaseSQL is the lease statement of the release before the loose
// index scan: a walk of the pending events in seq order, each checked to be
// its account's first. The lease benchmark runs it beside the store's, on
// the same backlog, so the gain is measured in one run.
const scanLeaseSQL = `WITH due AS (
	SELECT e.seq FROM {s}.outbox_events e
	WHERE e.delivered_at IS NULL AND e.parked_at IS NULL
	AND (e.next_attempt_at IS NULL OR e.next_attempt_at <= $1)
	AND (e.leased_until IS NULL OR e.leased_until <= $1)
	AND e.seq = (SELECT p.seq FROM {s}.outbox_events p
		WHERE p.account_id = e.account_id AND p.delivered_at IS NULL AND p.parked_at IS NULL
		ORDER BY p.seq LIMIT 1)
	ORDER BY e.seq LIMIT $4
	FOR UPDATE SKIP LOCKED)
	UPDATE {s}.outbox_events o SET lease_owner = $2, leased_until = $3
	FROM due WHERE o.seq = due.seq RETURNING o.id`

// seedBacklog adds n pending events spread round-robin over accounts, in
// one INSERT ... SELECT, and turns autovacuum off for the table so that
// the statistics stay as the test leaves them.
func seedBacklog(tb testing.TB, pool *pgxpool.Pool, s *postgres.Store, from, n, accounts int, created time.Time) {
	tb.Helper()
	table := pgx.Identifier{s.Schema(), "outbox_events"}.Sanitize()
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `ALTER TABLE `+table+` SET (autovacuum_enabled = off)`); err != nil {
		tb.Fatal(err)
	}
	_, err := pool.Exec(ctx, `INSERT INTO `+table+` (id, type, account_id, payload, created_at)
		SELECT 'Webhook:seed-' || g, 'TEST.EVENT', 'ExternalAccount:' || (g % $2), '{"n":1}'::bytea, $3
		FROM generate_series($1::int, $1::int + $4::int - 1) g ORDER BY g`, from, accounts, created, n)
	if err != nil {
		tb.Fatal(err)
	}
}

func analyze(tb testing.TB, pool *pgxpool.Pool, s *postgres.Store) {
	tb.Helper()
	if _, err := pool.Exec(context.Background(), `ANALYZE `+pgx.Identifier{s.Schema(), "outbox_events"}.Sanitize()); err != nil {
		tb.Fatal(err)
	}
}

// leaseCase is one backlog of the lease benchmark and plan test.
type leaseCase struct{ events, accounts int }

func (c leaseCase) String() string { return fmt.Sprintf("events=%d/accounts=%d", c.events, c.accounts) }

var leaseCases = []leaseCase{
	{1_000, 4}, {10_000, 4}, {100_000, 4},
	{1_000, 1_000}, {10_000, 1_000}, {100_000, 1_000},
}

// backlogStore returns a store on a fresh schema holding the backlog of c
// (see seedStale).
func backlogStore(tb testing.TB, pool *pgxpool.Pool, c leaseCase, created time.Time) *postgres.Store {
	tb.Helper()
	s := newStore(tb, pool)
	seedStale(tb, pool, s, c, created)
	return s
}

// seedStale adds the backlog of c to the schema of s, leaving the table's
// statistics stale: taken (ANALYZE) after the first 1% of the events,
// before the rest arrived in one big insert.
func seedStale(tb testing.TB, pool *pgxpool.Pool, s *postgres.Store, c leaseCase, created time.Time) {
	tb.Helper()
	first := max(c.events/100, 1)
	seedBacklog(tb, pool, s, 0, first, c.accounts, created)
	analyze(tb, pool, s)
	seedBacklog(tb, pool, s, first, c.events-first, c.accounts, created)
}

// BenchmarkLease leases 16 events from backlogs of 1k, 10k and 100k
// pending events over 4 and over 1,000 accounts, with the table's
// statistics stale and then fresh. Each lease ends a microsecond after it
// starts and the next one runs a millisecond later, so every iteration
// finds the same heads due again and claims them (4 per lease with 4
// accounts). Beside the store's Lease: the previous statement
// (ScanStatement) on the same backlog, and the raw primitive, an UPDATE of
// one event by seq (OneRow).
func BenchmarkLease(b *testing.B) {
	ctx := context.Background()
	pool := newPool(b, 4)
	created := time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)
	for _, c := range leaseCases {
		s := backlogStore(b, pool, c, created)
		now := created
		scan := strings.ReplaceAll(scanLeaseSQL, "{s}", pgx.Identifier{s.Schema()}.Sanitize())
		one := `UPDATE ` + pgx.Identifier{s.Schema(), "outbox_events"}.Sanitize() +
			` SET lease_owner = $2, leased_until = $3 WHERE seq = $1 AND delivered_at IS NULL RETURNING id`
		for _, stats := range []string{"stale", "fresh"} {
			if stats == "fresh" {
				analyze(b, pool, s)
			}
			b.Run(fmt.Sprintf("%v/stats=%s/Store", c, stats), func(b *testing.B) {
				for b.Loop() {
					now = now.Add(time.Millisecond)
					var got []storage.Event
					err := s.Atomic(ctx, func(tx storage.Tx) error {
						var err error
						got, err = tx.Outbox().Lease(ctx, "bench", now, time.Microsecond, 16)
						return err
					})
					if err != nil {
						b.Fatal(err)
					}
					if want := min(16, c.accounts); len(got) != want {
						b.Fatalf("leased %d events, want %d", len(got), want)
					}
				}
			})
			b.Run(fmt.Sprintf("%v/stats=%s/ScanStatement", c, stats), func(b *testing.B) {
				for b.Loop() {
					now = now.Add(time.Millisecond)
					rows, err := pool.Query(ctx, scan, now, "bench", now.Add(time.Microsecond), 16)
					if err != nil {
						b.Fatal(err)
					}
					n := 0
					for rows.Next() {
						n++
					}
					if rows.Close(); rows.Err() != nil || n != min(16, c.accounts) {
						b.Fatalf("leased %d events: %v", n, rows.Err())
					}
				}
			})
			b.Run(fmt.Sprintf("%v/stats=%s/OneRow", c, stats), func(b *testing.B) {
				for b.Loop() {
					now = now.Add(time.Millisecond)
					if err := pool.QueryRow(ctx, one, 1, "bench", now.Add(time.Microsecond)).Scan(new(string)); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

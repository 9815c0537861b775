package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/postgres"
	"github.com/walletgate/walletgate/storage/storagetest"
)

// BenchmarkContract is the storage suite's benchmark on PostgreSQL.
func BenchmarkContract(b *testing.B) {
	pool := newPool(b, 8)
	storagetest.Benchmark(b, func(tb testing.TB) storage.Store { return newStore(tb, pool) })
}

// BenchmarkConsume consumes pending requests through the store (one Atomic
// call, one Consume) and with the bare single-use statement in autocommit,
// on the same table, pool and worker counts: the ratio of the two ns/op is
// the store's overhead. RawTxUpdate runs the bare statement in an explicit
// transaction, which is what a store must do. Each op consumes a distinct,
// precreated request. Interleaved alternates the store and the raw
// statement in short rounds and reports their throughput ratio directly,
// which holds up better than separate runs on a busy machine.
func BenchmarkConsume(b *testing.B) {
	ctx := context.Background()
	pool := newPool(b, 32)
	s := newStore(b, pool)
	table := pgx.Identifier{s.Schema(), "pending_requests"}.Sanitize()
	raw := `UPDATE ` + table + ` SET consumed_at = $2 WHERE id = $1 AND consumed_at IS NULL AND expires_at > $2
		RETURNING id, kind, account_id, method, path, body_digest, payload, signer_rule, signer_ref, data,
		created_at, expires_at, consumed_at`
	now := time.Date(2026, 3, 14, 15, 9, 26, 535897000, time.UTC)

	viaStore := func(id string) error {
		return s.Atomic(ctx, func(tx storage.Tx) error {
			_, err := storage.ConsumeNow(ctx, tx, id, now)
			return err
		})
	}
	viaRaw := func(id string) error {
		var p storage.PendingRequest
		return pool.QueryRow(ctx, raw, id, now).Scan(&p.ID, &p.Kind, &p.AccountID, &p.Method, &p.Path, &p.BodyDigest,
			&p.Payload, &p.SignerRule, &p.SignerRef, &p.Data, &p.CreatedAt, &p.ExpiresAt, &p.ConsumedAt)
	}
	// viaRawTx is the same statement in a hand-written transaction, its
	// BEGIN pipelined with it: the floor for any store whose operations are
	// transactions.
	viaRawTx := func(id string) error {
		conn, err := pool.Acquire(ctx)
		if err != nil {
			return err
		}
		defer conn.Release()
		batch := &pgx.Batch{}
		batch.BeginTx(pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
		var p storage.PendingRequest
		batch.Queue(raw, id, now).QueryRow(func(r pgx.Row) error {
			return r.Scan(&p.ID, &p.Kind, &p.AccountID, &p.Method, &p.Path, &p.BodyDigest,
				&p.Payload, &p.SignerRule, &p.SignerRef, &p.Data, &p.CreatedAt, &p.ExpiresAt, &p.ConsumedAt)
		})
		br := conn.SendBatch(ctx, batch)
		tx := br.Tx()
		if err := br.Close(); err != nil {
			_ = tx.Rollback(ctx)
			return err
		}
		return tx.Commit(ctx)
	}
	for _, workers := range []int{1, 8, 32} {
		b.Run(fmt.Sprintf("Interleaved/workers=%d", workers), func(b *testing.B) {
			storeIDs, rawIDs := seedPending(b, pool, s, b.N, now), seedPending(b, pool, s, b.N, now)
			b.ResetTimer()
			interleave(b, workers, storeIDs, rawIDs, viaStore, viaRaw)
		})
		for _, v := range []struct {
			name    string
			consume func(string) error
		}{{"Store", viaStore}, {"RawUpdate", viaRaw}, {"RawTxUpdate", viaRawTx}} {
			b.Run(fmt.Sprintf("%s/workers=%d", v.name, workers), func(b *testing.B) {
				ids := seedPending(b, pool, s, b.N, now)
				b.ReportAllocs()
				b.ResetTimer()
				runWorkers(b, workers, ids, v.consume)
			})
		}
	}
}

// seedPending copies n unconsumed pending requests into the store's table.
func seedPending(b testing.TB, pool *pgxpool.Pool, s *postgres.Store, n int, now time.Time) []string {
	ctx := context.Background()
	b.Helper()
	ids := make([]string, n)
	rows := make([][]any, n)
	payload, digest := make([]byte, 256), make([]byte, 32)
	for i := range rows {
		ids[i] = newID(b, "Request")
		rows[i] = []any{ids[i], "REVOKE_SESSION", "InternalAccount:bench", "DELETE", "/auth/sessions/x", digest, payload,
			"ANY_SESSION", "", []byte(`{}`), now, now.Add(time.Hour)}
	}
	_, err := pool.CopyFrom(ctx, pgx.Identifier{s.Schema(), "pending_requests"},
		[]string{"id", "kind", "account_id", "method", "path", "body_digest", "payload", "signer_rule", "signer_ref",
			"data", "created_at", "expires_at"}, pgx.CopyFromRows(rows))
	if err != nil {
		b.Fatal(err)
	}
	return ids
}

// interleave consumes storeIDs through viaStore and rawIDs through viaRaw in
// alternating rounds of a few hundred operations, so both see the same load
// on a shared machine, and reports each one's time per operation and the
// store's throughput as a fraction of the raw statement's.
func interleave(b *testing.B, workers int, storeIDs, rawIDs []string, viaStore, viaRaw func(string) error) {
	round := 40 * workers
	var storeTime, rawTime time.Duration
	for lo := 0; lo < len(storeIDs); lo += round {
		hi := min(lo+round, len(storeIDs))
		began := time.Now()
		runWorkers(b, workers, storeIDs[lo:hi], viaStore)
		storeTime += time.Since(began)
		began = time.Now()
		runWorkers(b, workers, rawIDs[lo:hi], viaRaw)
		rawTime += time.Since(began)
	}
	n := float64(len(storeIDs))
	b.ReportMetric(float64(storeTime.Nanoseconds())/n, "store-ns/op")
	b.ReportMetric(float64(rawTime.Nanoseconds())/n, "raw-ns/op")
	b.ReportMetric(rawTime.Seconds()/storeTime.Seconds(), "store/raw-throughput")
}

// runWorkers consumes every id once, spread over workers goroutines.
func runWorkers(b *testing.B, workers int, ids []string, consume func(string) error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(len(ids)) {
					return
				}
				if err := consume(ids[i]); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

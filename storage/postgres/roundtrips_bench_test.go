package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/walletgate/walletgate/storage"
)

// flightConn counts round trips on one connection: a write that follows a
// read (or opens the connection) starts a new flight to the server, so the
// number of flights is the number of times the client waited for the
// server.
type flightConn struct {
	net.Conn
	n *flights
}

type flights struct {
	mu       sync.Mutex
	count    int
	lastRead map[*flightConn]bool
}

func (c *flightConn) Write(p []byte) (int, error) {
	c.n.mu.Lock()
	if c.n.lastRead[c] {
		c.n.count++
		c.n.lastRead[c] = false
	}
	c.n.mu.Unlock()
	return c.Conn.Write(p)
}

func (c *flightConn) Read(p []byte) (int, error) {
	c.n.mu.Lock()
	c.n.lastRead[c] = true
	c.n.mu.Unlock()
	return c.Conn.Read(p)
}

func (f *flights) take() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.count
	f.count = 0
	return n
}

// countingPool is a pool of one connection whose round trips f counts.
func countingPool(tb testing.TB) (*pgxpool.Pool, *flights) {
	tb.Helper()
	ctx := tb.Context()
	cfg, err := pgxpool.ParseConfig(dsn(tb))
	if err != nil {
		tb.Fatal(err)
	}
	cfg.MaxConns = 1
	f := &flights{lastRead: map[*flightConn]bool{}}
	var d net.Dialer
	cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &flightConn{Conn: c, n: f}, nil
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(pool.Close)
	return pool, f
}

// TestRoundTrips counts the round trips of store operations on a warm
// connection (statements already prepared), next to the bare statement in
// autocommit and in a hand-written pipelined transaction.
func TestRoundTrips(t *testing.T) {
	ctx := t.Context()
	pool, f := countingPool(t)
	s := newStore(t, pool)
	now := time.Date(2026, 3, 14, 15, 9, 26, 535897000, time.UTC)
	table := pgx.Identifier{s.Schema(), "pending_requests"}.Sanitize()
	raw := `UPDATE ` + table + ` SET consumed_at = $2 WHERE id = $1 AND consumed_at IS NULL AND expires_at > $2 RETURNING id`
	cases := []struct {
		name string
		want int
		run  func(id string) error
	}{
		{"RawUpdate", 1, func(id string) error { return pool.QueryRow(ctx, raw, id, now).Scan(new(string)) }},
		{"RawTxUpdate", 2, func(id string) error {
			conn, err := pool.Acquire(ctx)
			if err != nil {
				return err
			}
			defer conn.Release()
			b := &pgx.Batch{}
			b.BeginTx(pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
			b.Queue(raw, id, now).QueryRow(func(r pgx.Row) error { return r.Scan(new(string)) })
			br := conn.SendBatch(ctx, b)
			tx := br.Tx()
			if err := br.Close(); err != nil {
				_ = tx.Rollback(ctx)
				return err
			}
			return tx.Commit(ctx)
		}},
		{"StoreConsume", 1, func(id string) error { // BEGIN+the deferred UPDATE+COMMIT in one flight
			return s.Atomic(ctx, func(tx storage.Tx) error { return tx.PendingRequests().Consume(ctx, id, now) })
		}},
		{"StoreConsumeNow", 2, func(id string) error { // BEGIN+UPDATE+the read-back, COMMIT
			return s.Atomic(ctx, func(tx storage.Tx) error {
				_, err := storage.ConsumeNow(ctx, tx, id, now)
				return err
			})
		}},
		// A hit, then a miss, which aborts: ROLLBACK. The failed batch drops
		// the connection's prepared statements, which the next operation
		// prepares again: two round trips more, as every aborting miss costs.
		{"StoreConsumeTwice", 5, func(id string) error {
			err := s.Atomic(ctx, func(tx storage.Tx) error {
				if _, err := storage.ConsumeNow(ctx, tx, id, now); err != nil {
					return err
				}
				_, err := storage.ConsumeNow(ctx, tx, id, now)
				return err
			})
			if !errors.Is(err, storage.ErrConsumed) {
				return errors.New("second consume: " + errString(err))
			}
			return nil
		}},
		{"StoreConsumeAppend", 1, func(id string) error { // BEGIN+UPDATE+the append+COMMIT, all deferred
			return s.Atomic(ctx, func(tx storage.Tx) error {
				if err := tx.PendingRequests().Consume(ctx, id, now); err != nil {
					return err
				}
				ev := storage.Event{ID: newID(t, "Webhook"), Type: "X", AccountID: "InternalAccount:rt", Payload: []byte(`{}`), CreatedAt: now}
				return tx.Outbox().Append(ctx, &ev)
			})
		}},
		{"StoreRollback", 2, func(id string) error { // fn fails after a statement: BEGIN+UPDATE+the read-back, ROLLBACK
			err := s.Atomic(ctx, func(tx storage.Tx) error {
				if _, err := storage.ConsumeNow(ctx, tx, id, now); err != nil {
					return err
				}
				return errRT
			})
			if errors.Is(err, errRT) {
				return nil
			}
			return err
		}},
		{"StoreReadOnly", 1, func(id string) error { // a plain read needs no transaction block
			return s.Atomic(ctx, func(tx storage.Tx) error {
				_, err := tx.PendingRequests().Get(ctx, id)
				return err
			})
		}},
		{"StoreReadThenConsume", 2, func(id string) error { // the read, BEGIN+the deferred UPDATE+COMMIT
			return s.Atomic(ctx, func(tx storage.Tx) error {
				if _, err := tx.PendingRequests().Get(ctx, id); err != nil {
					return err
				}
				return tx.PendingRequests().Consume(ctx, id, now)
			})
		}},
		{"StoreConsumeLockSigner", 2, func(id string) error { // BEGIN+the deferred UPDATE+the three signer locks in one flight, COMMIT
			return s.Atomic(ctx, func(tx storage.Tx) error {
				if err := tx.PendingRequests().Consume(ctx, id, now); err != nil {
					return err
				}
				_, err := tx.Sessions().LockSigner(ctx, "InternalAccount:rt", "Session:rt")
				if !errors.Is(err, storage.ErrNotFound) {
					return errors.New("LockSigner: " + errString(err))
				}
				return nil
			})
		}},
		{"StoreCreateWithinQuota", 1, func(string) error { // BEGIN+advisory lock+guarded INSERT (deferred)+COMMIT
			return s.Atomic(ctx, func(tx storage.Tx) error {
				p := storage.PendingRequest{ID: newID(t, "Request"), Kind: "X", AccountID: "InternalAccount:rt",
					Payload: []byte(`{}`), CreatedAt: now, ExpiresAt: now.Add(time.Minute)}
				return tx.PendingRequests().Create(ctx, &p, storage.Quota{Limit: 1000})
			})
		}},
		{"StoreEmpty", 0, func(string) error { return s.Atomic(ctx, func(storage.Tx) error { return nil }) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ids := seedPending(t, pool, s, 6, now)
			for _, id := range ids[:3] { // warm: prepare the statements on the connection
				if err := c.run(id); err != nil {
					t.Fatal(err)
				}
			}
			f.take()
			for _, id := range ids[3:] {
				if err := c.run(id); err != nil {
					t.Fatal(err)
				}
			}
			got := f.take()
			t.Logf("%s: %.2f round trips per operation", c.name, float64(got)/3)
			if got != 3*c.want {
				t.Errorf("%s: %d round trips for 3 operations, want %d", c.name, got, 3*c.want)
			}
		})
	}
}

var errRT = errors.New("fn failed")

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// BenchmarkRead reads pending requests through the store (one Atomic call,
// one Get) and with the bare SELECT in autocommit, interleaved as in
// BenchmarkConsume: a transaction that only reads needs no transaction
// block, so the store should cost the raw statement's one round trip.
func BenchmarkRead(b *testing.B) {
	ctx := context.Background()
	pool := newPool(b, 32)
	s := newStore(b, pool)
	table := pgx.Identifier{s.Schema(), "pending_requests"}.Sanitize()
	raw := `SELECT id, kind, account_id, method, path, body_digest, payload, signer_rule, signer_ref, data,
		created_at, expires_at, consumed_at FROM ` + table + ` WHERE id = $1`
	now := time.Date(2026, 3, 14, 15, 9, 26, 535897000, time.UTC)
	viaStore := func(id string) error {
		return s.Atomic(ctx, func(tx storage.Tx) error {
			_, err := tx.PendingRequests().Get(ctx, id)
			return err
		})
	}
	viaRaw := func(id string) error {
		var p storage.PendingRequest
		var consumed *time.Time // NULL: not consumed
		return pool.QueryRow(ctx, raw, id).Scan(&p.ID, &p.Kind, &p.AccountID, &p.Method, &p.Path, &p.BodyDigest,
			&p.Payload, &p.SignerRule, &p.SignerRef, &p.Data, &p.CreatedAt, &p.ExpiresAt, &consumed)
	}
	for _, workers := range []int{1, 8} {
		b.Run(fmt.Sprintf("Interleaved/workers=%d", workers), func(b *testing.B) {
			storeIDs, rawIDs := seedPending(b, pool, s, b.N, now), seedPending(b, pool, s, b.N, now)
			b.ResetTimer()
			interleave(b, workers, storeIDs, rawIDs, viaStore, viaRaw)
		})
	}
}

package memory_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"math"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/memory"
)

// These benchmarks measure the store itself, not crypto: ids come from a
// counter, not from crypto/rand. Run them at several -cpu values to see how
// the store scales:
//
//	go test -run '^$' -bench Parallel -cpu=1,2 -count=5 ./storage/memory/

var (
	benchT0  = time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)
	benchSeq atomic.Int64
)

// benchID returns a fresh id with the given prefix, cheaply.
func benchID(prefix string) string {
	return prefix + ":bench-" + strconv.FormatInt(benchSeq.Add(1), 10)
}

// idGen makes fresh ids for one goroutine without touching shared memory.
type idGen struct {
	prefix string
	n      int64
}

func newIDGen() *idGen {
	return &idGen{prefix: ":bench-" + strconv.FormatInt(benchSeq.Add(1), 10) + "-"}
}

func (g *idGen) next(kind string) string {
	g.n++
	return kind + g.prefix + strconv.FormatInt(g.n, 10)
}

// createConsume creates a pending request and consumes it, in two
// transactions, as a signed retry does.
func createConsume(ctx context.Context, s storage.Store, ids *idGen, acct string, payload, digest []byte) error {
	return createConsumeAt(ctx, s, ids, acct, payload, digest, benchT0, benchT0.Add(5*time.Minute))
}

// createConsumeAt is createConsume with the request consumed at now and
// expiring at expires.
func createConsumeAt(ctx context.Context, s storage.Store, ids *idGen, acct string, payload, digest []byte,
	now, expires time.Time) error {
	p := storage.PendingRequest{ID: ids.next("Request"), Kind: "REVOKE_SESSION", AccountID: acct, Method: "DELETE",
		Path: "/auth/sessions/x", BodyDigest: digest, Payload: payload, CreatedAt: now, ExpiresAt: expires}
	if err := s.Atomic(ctx, func(tx storage.Tx) error { return tx.PendingRequests().Create(ctx, &p, storage.Quota{Limit: 1000}) }); err != nil {
		return err
	}
	return s.Atomic(ctx, func(tx storage.Tx) error {
		return tx.PendingRequests().Consume(ctx, p.ID, now)
	})
}

// BenchmarkConsume is createConsume on one goroutine: what the store's
// locking costs a single caller.
func BenchmarkConsume(b *testing.B) {
	ctx := context.Background()
	s := memory.New()
	ids := newIDGen()
	acct := ids.next("InternalAccount")
	payload, digest := make([]byte, 256), make([]byte, 32)
	b.ReportAllocs()
	for b.Loop() {
		if err := createConsume(ctx, s, ids, acct, payload, digest); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParallelConsume: every goroutine creates and consumes its own
// pending requests, so no two transactions touch one record.
func BenchmarkParallelConsume(b *testing.B) {
	ctx := context.Background()
	s := memory.New()
	payload, digest := make([]byte, 256), make([]byte, 32)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		ids := newIDGen()
		acct := ids.next("InternalAccount")
		for pb.Next() {
			if err := createConsume(ctx, s, ids, acct, payload, digest); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkParallelVerify: every goroutine creates a pending request and then
// consumes it in a transaction that reads it, checks a MAC over its payload
// (as a signed retry checks its signature) and consumes it. Work inside a
// transaction is where a store-wide lock hurts most: it serializes the
// check, not only the store's own bookkeeping.
func BenchmarkParallelVerify(b *testing.B) {
	ctx := context.Background()
	s := memory.New()
	payload, digest := make([]byte, 256), make([]byte, 32)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		ids := newIDGen()
		acct := ids.next("InternalAccount")
		mac := hmac.New(sha256.New, []byte("bench key"))
		var sum []byte
		for pb.Next() {
			p := storage.PendingRequest{ID: ids.next("Request"), Kind: "REVOKE_SESSION", AccountID: acct, Method: "DELETE",
				Path: "/auth/sessions/x", BodyDigest: digest, Payload: payload, CreatedAt: benchT0,
				ExpiresAt: benchT0.Add(5 * time.Minute)}
			if err := s.Atomic(ctx, func(tx storage.Tx) error { return tx.PendingRequests().Create(ctx, &p, storage.Quota{Limit: 1000}) }); err != nil {
				b.Error(err)
				return
			}
			err := s.Atomic(ctx, func(tx storage.Tx) error {
				got, err := tx.PendingRequests().Get(ctx, p.ID)
				if err != nil {
					return err
				}
				mac.Reset()
				mac.Write(got.Payload)
				sum = mac.Sum(sum[:0])
				return tx.PendingRequests().Consume(ctx, p.ID, benchT0)
			})
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkParallelConsumeSwept is BenchmarkParallelConsume with the live
// set kept small, as Sweep keeps it in a running service, so that the
// garbage collector's work on an ever growing heap does not hide the store's
// own cost. Every goroutine reads one shared clock, as a service does: a
// request is created and consumed at now, the time since the benchmark
// started (monotonic, read without writing shared memory), and expires a
// microsecond later. Every 1024 requests the first goroutine sweeps what
// expired before the oldest request still in flight, which is all consumed.
//
// An earlier version gave every goroutine a clock of its own (request i at
// t0+i microseconds) and swept up to the slowest goroutine's count. The
// sweeping goroutine is the slowest (it does the sweeping), so the other
// goroutines' records above its count were never swept: at -cpu=2 the live
// set grew to tens of thousands of records, and the benchmark measured the
// garbage collector's work on them rather than the store.
//
// With a live heap this small the collector runs every few milliseconds
// (the 4 MB minimum goal), so the cost of collection cycles, which grows
// with GOMAXPROCS, weighs more here than in a service with a larger heap:
// compare with GOGC=400 to see the store apart from it.
func BenchmarkParallelConsumeSwept(b *testing.B) {
	ctx := context.Background()
	s := memory.New()
	payload, digest := make([]byte, 256), make([]byte, 32)
	var progress [64]struct {
		n atomic.Int64
		_ [56]byte
	}
	var workers atomic.Int32
	start := time.Now()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		w := int(workers.Add(1)) - 1
		if w >= len(progress) {
			b.Error("too many goroutines")
			return
		}
		ids := newIDGen()
		acct := ids.next("InternalAccount")
		for i := 1; pb.Next(); i++ {
			elapsed := time.Since(start)
			progress[w].n.Store(int64(elapsed))
			now := benchT0.Add(elapsed)
			if err := createConsumeAt(ctx, s, ids, acct, payload, digest, now, now.Add(time.Microsecond)); err != nil {
				b.Error(err)
				return
			}
			if w == 0 && i%1024 == 0 {
				low := elapsed
				for j := range int(workers.Load()) {
					low = min(low, time.Duration(progress[j].n.Load()))
				}
				if _, err := s.Sweep(ctx, benchT0.Add(low), 1<<30); err != nil {
					b.Error(err)
					return
				}
			}
		}
		progress[w].n.Store(math.MaxInt64) // done: no longer holds the sweep back
	})
}

// BenchmarkParallelMixed: every goroutine signs in to its own account: one
// transaction reads the credential and creates a session of it. A goroutine
// moves to a new account and credential every 64 sessions, so the per-account
// session index stays short, as Sweep keeps it in a running service.
func BenchmarkParallelMixed(b *testing.B) {
	ctx := context.Background()
	s := memory.New()
	pub := make([]byte, 33)
	newCred := func(ids *idGen) (storage.Credential, error) {
		a := storage.InternalAccount{ID: ids.next("InternalAccount"), CustomerID: ids.next("Customer"), Email: "a@example.com",
			CreatedAt: benchT0, UpdatedAt: benchT0}
		c := storage.Credential{ID: ids.next("AuthMethod"), AccountID: a.ID, Type: storage.Passkey, Nickname: "key",
			WebAuthn:  &storage.WebAuthnCredential{CredentialID: []byte(ids.next("webauthn")), PublicKey: pub},
			CreatedAt: benchT0, UpdatedAt: benchT0}
		err := s.Atomic(ctx, func(tx storage.Tx) error {
			if err := tx.InternalAccounts().Create(ctx, &a); err != nil {
				return err
			}
			return tx.Credentials().Create(ctx, &c)
		})
		return c, err
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		ids := newIDGen()
		var cred storage.Credential
		for i := 0; pb.Next(); i++ {
			if i%64 == 0 {
				var err error
				if cred, err = newCred(ids); err != nil {
					b.Error(err)
					return
				}
			}
			err := s.Atomic(ctx, func(tx storage.Tx) error {
				c, err := tx.Credentials().Get(ctx, cred.ID)
				if err != nil {
					return err
				}
				sess := storage.Session{ID: ids.next("Session"), AccountID: c.AccountID, CredentialID: c.ID,
					PublicKey: pub, CreatedAt: benchT0, ExpiresAt: benchT0.Add(time.Hour)}
				return tx.Sessions().Create(ctx, &sess)
			})
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
}

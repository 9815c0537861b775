package sandbox_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/walletgate/walletgate/sandbox"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/signedretry/stamper"
	"github.com/walletgate/walletgate/storage/postgres"
	"github.com/walletgate/walletgate/storage/postgres/pgtest"
	"github.com/walletgate/walletgate/walletauth"
	"github.com/walletgate/walletgate/walletauth/authclient"
	"github.com/walletgate/walletgate/walletauth/secret"
)

// The Parallel benchmarks measure throughput under b.RunParallel, so that
// -cpu=1,2 shows how it grows with cores: a full EMAIL_OTP login and a
// signed wallet operation (PATCH privacy), both through the HTTP handler
// with the client's HPKE seal and P-256 stamps in the loop. Each runs on the
// memory store (one simulator) and on PostgreSQL as four replicas: four
// simulators, each on its own pool, sharing one schema and the at-rest keys;
// requests take the replicas in turn (one rotation shared by all goroutines),
// so the legs of one login or signed retry are mostly served by different
// replicas. Every iteration works on its own
// customer, credential and wallet, created (and, for the wallet operation,
// logged in) before the timer starts. Each reports ops/s.
//
// RunParallel runs 4 goroutines per GOMAXPROCS (both stores), so the
// PostgreSQL variants have requests in flight while others wait for the
// database. The PostgreSQL variants also report the round trips to the
// database per operation (pg-roundtrips/op), counted on the connections: a
// write that follows a read is one more round trip.
const parallelism = 4

// replicaSet is the simulators a benchmark spreads its requests over.
type replicaSet struct {
	sims []*sandbox.Simulator
	hs   []http.Handler
	next atomic.Uint64
	run  string // distinguishes this set's email addresses
	// flights counts the round trips to PostgreSQL (nil on memory).
	flights *atomic.Int64
}

// pick returns the simulator and handler the next request goes to.
func (r *replicaSet) pick() (*sandbox.Simulator, http.Handler) {
	i := int(r.next.Add(1) % uint64(len(r.sims)))
	return r.sims[i], r.hs[i]
}

func newReplicaSet(b *testing.B, sims ...*sandbox.Simulator) *replicaSet {
	var id [6]byte
	_, _ = rand.Read(id[:])
	r := &replicaSet{sims: sims, run: hex.EncodeToString(id[:])}
	for _, s := range sims {
		r.hs = append(r.hs, s.Handler())
		b.Cleanup(s.Close)
	}
	return r
}

func memoryReplicas(b *testing.B) *replicaSet {
	sim, err := sandbox.New(sandbox.Config{})
	if err != nil {
		b.Fatal(err)
	}
	return newReplicaSet(b, sim)
}

// postgresReplicas returns four simulators on four pools sharing a fresh
// schema of the database WALLETGATE_POSTGRES_DSN names, or skips.
func postgresReplicas(b *testing.B) *replicaSet {
	dsn := pgtest.DSN(b)
	ctx := b.Context()
	var id [8]byte
	_, _ = rand.Read(id[:])
	schema := "wgbench_" + hex.EncodeToString(id[:])
	k, err := secret.GenerateKey(nil, "bench")
	if err != nil {
		b.Fatal(err)
	}
	keys, err := secret.NewKeyring(k)
	if err != nil {
		b.Fatal(err)
	}
	mac := make([]byte, 32)
	_, _ = rand.Read(mac)
	var sims []*sandbox.Simulator
	flights := new(atomic.Int64)
	for i := range 4 {
		cfg, err := pgxpool.ParseConfig(dsn)
		if err != nil {
			b.Fatal(err)
		}
		cfg.MaxConns = 8
		var d net.Dialer
		cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &flightConn{Conn: c, flights: flights}, nil
		}
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(pool.Close)
		if i == 0 {
			// Registered after the pool's Close, so it runs before it.
			b.Cleanup(func() {
				if _, err := pool.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
					b.Errorf("dropping schema %s: %v", schema, err)
				}
			})
			if _, err := postgres.Migrate(ctx, pool, postgres.Config{Schema: schema}); err != nil {
				b.Fatal(err)
			}
		}
		store, err := postgres.New(pool, postgres.Config{Schema: schema})
		if err != nil {
			b.Fatal(err)
		}
		sim, err := sandbox.New(sandbox.Config{Store: store, Sealer: keys, CodeMACKey: mac})
		if err != nil {
			b.Fatal(err)
		}
		sims = append(sims, sim)
	}
	r := newReplicaSet(b, sims...)
	r.flights = flights
	return r
}

// flightConn counts round trips: a write that follows a read starts a new
// flight to the server (the client waited for the server in between).
type flightConn struct {
	net.Conn
	flights *atomic.Int64
	read    atomic.Bool
}

func (c *flightConn) Write(p []byte) (int, error) {
	if c.read.Swap(false) {
		c.flights.Add(1)
	}
	return c.Conn.Write(p)
}

func (c *flightConn) Read(p []byte) (int, error) {
	c.read.Store(true)
	return c.Conn.Read(p)
}

// call sends one request to h in process and decodes a JSON answer into out
// (when not nil); it returns the status, or an error for a body that does
// not decode.
func call(h http.Handler, method, path string, body any, out any, headers ...string) (int, error) {
	var raw []byte
	if body != nil {
		raw, _ = json.Marshal(body)
	}
	req := httptest.NewRequest(method, sandbox.DefaultBasePath+path, bytes.NewReader(raw))
	req.SetBasicAuth(sandbox.DefaultClientID, sandbox.DefaultClientSecret)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if out != nil {
		if err := json.Unmarshal(rec.Body.Bytes(), out); err != nil {
			return rec.Code, fmt.Errorf("%s %s: %d %s", method, path, rec.Code, rec.Body)
		}
	}
	return rec.Code, nil
}

// expect calls h and fails unless the answer has status want.
func expect(h http.Handler, want int, method, path string, body any, out any, headers ...string) error {
	var msg json.RawMessage
	code, err := call(h, method, path, body, &msg, headers...)
	if err != nil {
		return err
	}
	if code != want {
		return fmt.Errorf("%s %s answered %d, want %d: %s", method, path, code, want, msg)
	}
	if out != nil {
		return json.Unmarshal(msg, out)
	}
	return nil
}

// benchAccount is one customer's wallet and credential, and, once logged
// in, the session key.
type benchAccount struct {
	wallet, cred string
	key          *authclient.ClientKey
}

// accounts creates n customers (spread over the replicas, in parallel) and,
// when login is set, logs each one's wallet in over HTTP.
func (r *replicaSet) accounts(b *testing.B, n int, login bool) []benchAccount {
	ctx := b.Context()
	out := make([]benchAccount, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	var once sync.Once
	var failed error
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				err := func() error {
					sim, _ := r.pick()
					c, err := sim.CreateCustomer(ctx, sandbox.CustomerCreate{CustomerType: "INDIVIDUAL", FullName: "Para Llel",
						Email: fmt.Sprintf("p%d-%s@example.com", i, r.run)})
					if err != nil {
						return err
					}
					accts, err := sim.ListInternalAccounts(ctx, c.ID, sandbox.ListOptions{})
					if err != nil || len(accts.Data) != 1 {
						return fmt.Errorf("wallets of %s: %v %v", c.ID, accts, err)
					}
					creds, err := sim.Auth().ListCredentials(ctx, accts.Data[0].ID)
					if err != nil || len(creds) != 1 {
						return fmt.Errorf("credentials of %s: %v %v", accts.Data[0].ID, creds, err)
					}
					out[i] = benchAccount{wallet: accts.Data[0].ID, cred: creds[0].ID}
					if login {
						out[i].key, err = r.login(out[i].cred)
					}
					return err
				}()
				if err != nil {
					once.Do(func() { failed = err })
					return
				}
			}
		}()
	}
	wg.Wait()
	if failed != nil {
		b.Fatal(failed)
	}
	return out
}

// login runs a full EMAIL_OTP login of credential cred through the handlers,
// each leg on the next replica, and returns the session key: challenge, leg
// 1 with the sealed code (202), leg 2 stamped by the new key (200).
func (r *replicaSet) login(cred string) (*authclient.ClientKey, error) {
	sim, h := r.pick()
	var m walletauth.AuthMethod
	if err := expect(h, 200, "POST", "/auth/credentials/"+cred+"/challenge", struct{}{}, &m); err != nil {
		return nil, err
	}
	key, err := authclient.NewClientKey()
	if err != nil {
		return nil, err
	}
	bundle, err := key.SealOTP(m.OTPEncryptionTargetBundle, sim.Auth().SigningPublicKey(), walletauth.SandboxOTPCode, nil)
	if err != nil {
		return nil, err
	}
	body := map[string]string{"type": "EMAIL_OTP", "encryptedOtpBundle": bundle}
	var sess walletauth.AuthSession
	if err := r.signed(key, "POST", "/auth/credentials/"+cred+"/verify", body, &sess); err != nil {
		return nil, err
	}
	return key, nil
}

// signed sends a request that needs a signed retry: leg 1 must answer 202,
// the retry stamped by key (on the next replica) 200.
func (r *replicaSet) signed(key *authclient.ClientKey, method, path string, body, out any) error {
	_, h := r.pick()
	var ch signedretry.Challenge
	if err := expect(h, 202, method, path, body, &ch); err != nil {
		return err
	}
	sig, err := key.Stamp(ch.PayloadToSign)
	if err != nil {
		return err
	}
	_, h = r.pick()
	return expect(h, 200, method, path, body, out, stamper.HeaderSignature, sig, stamper.HeaderRequestID, ch.RequestID)
}

// runParallel runs op once per iteration, each on its own account, and
// reports the throughput.
func runParallel(b *testing.B, r *replicaSet, accts []benchAccount, op func(a benchAccount) error) {
	var next atomic.Int64
	b.SetParallelism(parallelism)
	var flights0 int64
	if r.flights != nil {
		flights0 = r.flights.Load()
	}
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := op(accts[next.Add(1)-1]); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
	if r.flights != nil {
		b.ReportMetric(float64(r.flights.Load()-flights0)/float64(b.N), "pg-roundtrips/op")
	}
}

var backends = []struct {
	name     string
	replicas func(b *testing.B) *replicaSet
}{{"Memory", memoryReplicas}, {"Postgres4Replicas", postgresReplicas}}

// BenchmarkParallelOTPLogin: challenge, leg 1 (202), stamped leg 2 (200),
// each iteration on its own credential.
func BenchmarkParallelOTPLogin(b *testing.B) {
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			r := be.replicas(b)
			accts := r.accounts(b, b.N, false)
			runParallel(b, r, accts, func(a benchAccount) error {
				_, err := r.login(a.cred)
				return err
			})
		})
	}
}

// BenchmarkParallelWalletPrivacy: PATCH /internal-accounts/{id} (202), then
// the retry stamped by the wallet's session key (200), each iteration on its
// own logged-in wallet.
func BenchmarkParallelWalletPrivacy(b *testing.B) {
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			r := be.replicas(b)
			accts := r.accounts(b, b.N, true)
			body := map[string]any{"privateEnabled": true}
			runParallel(b, r, accts, func(a benchAccount) error {
				var w sandbox.InternalAccount
				if err := r.signed(a.key, "PATCH", "/internal-accounts/"+a.wallet, body, &w); err != nil {
					return err
				}
				if !w.PrivateEnabled {
					return fmt.Errorf("wallet %s after the signed PATCH: %+v", a.wallet, w)
				}
				return nil
			})
		})
	}
}

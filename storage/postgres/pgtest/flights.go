package pgtest

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Flights counts round trips to PostgreSQL on the connections of a pool
// made by [FlightPool]: a write on a connection after a read from it is one
// more flight (the client waited for the server in between). It also
// counts the statements sent, BEGIN and COMMIT aside, which cost the server
// its per-statement work, and keeps a log of them with their flight.
type Flights struct {
	mu    sync.Mutex
	n     int
	stmts int
	reads map[net.Conn]bool
	log   []string
}

// FlightPool opens a pool on dsn with at most conns connections whose round
// trips and statements f counts; it is closed when tb ends.
func FlightPool(tb testing.TB, dsn string, conns int32) (pool *pgxpool.Pool, f *Flights) {
	tb.Helper()
	f = &Flights{reads: map[net.Conn]bool{}}
	pool = Pool(tb, dsn, conns, func(cfg *pgxpool.Config) {
		cfg.ConnConfig.Tracer = flightTracer{f}
		var d net.Dialer
		cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &countedConn{Conn: c, f: f}, nil
		}
	})
	return pool, f
}

// Take returns the flights and statements counted since the last Take,
// and the log of those statements, each with its flight.
func (f *Flights) Take() (flights, stmts int, log []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	flights, stmts, log = f.n, f.stmts, f.log
	f.n, f.stmts, f.log = 0, 0, nil
	return flights, stmts, log
}

func (f *Flights) note(sql string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if w := strings.ToUpper(strings.Fields(sql + " .")[0]); w != "BEGIN" && w != "COMMIT" {
		f.stmts++
	}
	if len(sql) > 110 {
		sql = sql[:110]
	}
	f.log = append(f.log, fmt.Sprintf("%2d %s", f.n, strings.Join(strings.Fields(sql), " ")))
}

// flightTracer records each statement with the flight it travelled in.
type flightTracer struct{ f *Flights }

func (tr flightTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	tr.f.note(d.SQL)
	return ctx
}
func (flightTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (flightTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}
func (tr flightTracer) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	tr.f.note(d.SQL)
}
func (flightTracer) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

type countedConn struct {
	net.Conn
	f *Flights
}

func (c *countedConn) Write(p []byte) (int, error) {
	c.f.mu.Lock()
	if c.f.reads[c.Conn] {
		c.f.n++
		c.f.reads[c.Conn] = false
	}
	c.f.mu.Unlock()
	return c.Conn.Write(p)
}

func (c *countedConn) Read(p []byte) (int, error) {
	c.f.mu.Lock()
	c.f.reads[c.Conn] = true
	c.f.mu.Unlock()
	return c.Conn.Read(p)
}

package postgres

import (
	"errors"
	"hash/fnv"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/walletgate/walletgate/storage"
)

// Store is the PostgreSQL store. It is safe for concurrent use, and any
// number of Stores (in one process or in several replicas) may share one
// schema. Create it with [New]; the schema must have been migrated with
// [Migrate].
type Store struct {
	pool *pgxpool.Pool
	cfg  Config // normalized
	q    queries
	// leases holds the lease statement rendered for each limit asked
	// (int to stmt).
	leases sync.Map
	tel    telemetry
}

var _ storage.Store = (*Store)(nil)

// New returns a store on pool using the tables of cfg.Schema. It does no
// I/O; run [Migrate] with the same schema (once per deployment or at every
// start) before using the store. It fails only for a nil pool, a setting
// out of range, or a MeterProvider that refuses the store's instruments.
func New(pool *pgxpool.Pool, cfg Config) (*Store, error) {
	if pool == nil {
		return nil, errors.New("postgres: pool is nil")
	}
	cfg, err := cfg.normalize()
	if err != nil {
		return nil, err
	}
	tel, err := newTelemetry(cfg)
	if err != nil {
		return nil, err
	}
	return &Store{
		pool: pool,
		cfg:  cfg,
		q:    renderQueries(pgx.Identifier{cfg.Schema}.Sanitize()),
		tel:  tel,
	}, nil
}

// Schema returns the schema the store's tables live in.
func (s *Store) Schema() string { return s.cfg.Schema }

// lockKey derives the advisory lock key of purpose in schema, so that stores
// of different schemas in one database never wait on each other.
func lockKey(purpose, schema string) int64 {
	h := fnv.New64a()
	h.Write([]byte("walletgate/" + purpose + "\x00" + schema))
	return int64(h.Sum64())
}

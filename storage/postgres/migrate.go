package postgres

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// migrationFiles holds the schema migrations, named NNNN_description.sql
// and numbered from 0001 without gaps. A released file is never edited:
// Migrate refuses to run when an applied migration's checksum differs.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// migration is one versioned schema change.
type migration struct {
	version int
	name    string
	sql     string
	sum     [32]byte
}

// loadMigrations reads and orders the embedded migrations.
func loadMigrations(fsys fs.FS) ([]migration, error) {
	names, err := fs.Glob(fsys, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, p := range names {
		base := path.Base(p)
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v < 1 || len(num) != 4 {
			return nil, fmt.Errorf("postgres: migration file %s is not named NNNN_description.sql", base)
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: strings.TrimSuffix(base, ".sql"), sql: string(b), sum: sha256.Sum256(b)})
	}
	slices.SortFunc(ms, func(a, b migration) int { return a.version - b.version })
	for i, m := range ms {
		if m.version != i+1 {
			return nil, fmt.Errorf("postgres: migration %s: want version %d (versions start at 1 without gaps)", m.name, i+1)
		}
	}
	return ms, nil
}

// Migrate creates the schema cfg.Schema ([DefaultSchema] when empty) when
// it does not exist and applies the embedded
// migrations it lacks, returning how many it applied.
//
// It is idempotent and safe to run from several replicas at once: it holds a
// transaction-level advisory lock derived from the schema name, so concurrent
// calls queue, and the first applies what is missing while the others find
// nothing left to do. All missing migrations apply in one transaction, with
// search_path set locally to the schema: a failure leaves the schema as it
// was. Applied migrations are recorded in the schema's schema_migrations
// table with their SHA-256; Migrate fails, changing nothing, when a recorded
// checksum differs from the embedded file. Versions recorded by a newer
// release are left alone, so an older replica still starts during a rolling
// upgrade.
func Migrate(ctx context.Context, pool *pgxpool.Pool, cfg Config) (int, error) {
	if pool == nil {
		return 0, errors.New("postgres: pool is nil")
	}
	cfg, err := cfg.normalize()
	if err != nil {
		return 0, err
	}
	ms, err := loadMigrations(migrationFiles)
	if err != nil {
		return 0, err
	}
	applied := 0
	err = pgx.BeginTxFunc(ctx, pool, beginOptions(), func(tx pgx.Tx) error {
		var err error
		applied, err = migrate(ctx, tx, cfg.Schema, ms)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("postgres: migrating schema %q: %w", cfg.Schema, err)
	}
	return applied, nil
}

func migrate(ctx context.Context, tx pgx.Tx, schema string, ms []migration) (int, error) {
	quoted := pgx.Identifier{schema}.Sanitize()
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", lockKey("migrate", schema)); err != nil {
		return 0, fmt.Errorf("taking the migration lock: %w", err)
	}
	var exists bool
	if err := tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = $1)", schema).Scan(&exists); err != nil {
		return 0, err
	}
	if !exists {
		if _, err := tx.Exec(ctx, "CREATE SCHEMA "+quoted); err != nil {
			return 0, fmt.Errorf("creating the schema: %w", err)
		}
	}
	if _, err := tx.Exec(ctx, "SET LOCAL search_path TO "+quoted); err != nil {
		return 0, err
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    integer     PRIMARY KEY,
		name       text        NOT NULL,
		sha256     bytea       NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return 0, fmt.Errorf("creating schema_migrations: %w", err)
	}
	done := map[int][]byte{}
	rows, err := tx.Query(ctx, "SELECT version, sha256 FROM schema_migrations")
	if err != nil {
		return 0, err
	}
	for rows.Next() {
		var v int
		var sum []byte
		if err := rows.Scan(&v, &sum); err != nil {
			rows.Close()
			return 0, err
		}
		done[v] = sum
	}
	if err := rows.Err(); err != nil {
		return 0, err
	}
	for _, m := range ms {
		if sum, ok := done[m.version]; ok && !bytes.Equal(sum, m.sum[:]) {
			return 0, fmt.Errorf("migration %s was applied with another content (checksum differs); released migrations must not change", m.name)
		}
	}
	applied := 0
	for _, m := range ms {
		if _, ok := done[m.version]; ok {
			continue
		}
		if _, err := tx.Exec(ctx, m.sql); err != nil {
			return 0, fmt.Errorf("applying %s: %w", m.name, err)
		}
		if _, err := tx.Exec(ctx, "INSERT INTO schema_migrations (version, name, sha256) VALUES ($1, $2, $3)",
			m.version, m.name, m.sum[:]); err != nil {
			return 0, fmt.Errorf("recording %s: %w", m.name, err)
		}
		applied++
	}
	return applied, nil
}

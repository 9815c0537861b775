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

// schemaMigrationsDDL creates the table recording the applied migrations,
// in the schema search_path names.
const schemaMigrationsDDL = `CREATE TABLE IF NOT EXISTS schema_migrations (
    version    integer     PRIMARY KEY,
    name       text        NOT NULL,
    sha256     bytea       NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now())`

// settingsVersion is the migration that creates the store_settings table,
// whose 'isolation' row records the schema's isolation level.
const settingsVersion = 10

// isolationSetting is the name of the store_settings row recording the
// isolation level of the schema's stores, as pgx spells the level
// ('read committed', 'serializable').
const isolationSetting = "isolation"

// recordIsolationSQL records $1 as the schema's level unless one is
// recorded, in the schema search_path names.
const recordIsolationSQL = "INSERT INTO store_settings (name, value) VALUES ('" + isolationSetting + "', $1) ON CONFLICT (name) DO NOTHING"

// sqlLiteral quotes s as an SQL string literal.
func sqlLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

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
//
// The schema records the isolation level of its stores: in the same
// transaction, Migrate records cfg.Isolation (READ COMMITTED when empty)
// when the schema records none, and fails, changing nothing, with an error
// wrapping [ErrSchemaIsolation] naming both levels when it records
// another. Every store of one schema runs at one level, so the first store
// to migrate a schema sets it and a store configured otherwise is refused.
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
	err = pgx.BeginTxFunc(ctx, pool, migrateOptions(), func(tx pgx.Tx) error {
		var err error
		applied, err = migrate(ctx, tx, cfg.Schema, ms)
		if err != nil {
			return err
		}
		return recordIsolation(ctx, tx, cfg)
	})
	if errors.Is(err, ErrSchemaIsolation) {
		return 0, err
	}
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
	if _, err := tx.Exec(ctx, schemaMigrationsDDL); err != nil {
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

// recordIsolation records cfg.Isolation as the schema's level unless one
// is recorded, then reads the recorded level back: another level is an
// error wrapping ErrSchemaIsolation. search_path names the schema, which
// has every migration of this release.
func recordIsolation(ctx context.Context, tx pgx.Tx, cfg Config) error {
	if _, err := tx.Exec(ctx, recordIsolationSQL, string(cfg.Isolation)); err != nil {
		return fmt.Errorf("recording the isolation level: %w", err)
	}
	var recorded string
	if err := tx.QueryRow(ctx, "SELECT value FROM store_settings WHERE name = $1", isolationSetting).Scan(&recorded); err != nil {
		return fmt.Errorf("reading the recorded isolation level: %w", err)
	}
	return isolationMismatch(cfg, recorded)
}

// isolationMismatch returns nil when recorded is cfg's level, or the error
// wrapping ErrSchemaIsolation naming both levels.
func isolationMismatch(cfg Config, recorded string) error {
	if recorded == string(cfg.Isolation) {
		return nil
	}
	return fmt.Errorf("%w: schema %q records %s and this store is configured %s (Config.Isolation); every store of a schema must run at the level it records",
		ErrSchemaIsolation, cfg.Schema, strings.ToUpper(recorded), strings.ToUpper(string(cfg.Isolation)))
}

// Migration is one versioned change of the schema, as a host's own
// migration tool (goose, golang-migrate, Atlas, Flyway) applies it instead
// of [Migrate].
type Migration struct {
	// Version numbers the migrations from 1 without gaps; they apply in
	// Version order.
	Version int
	// Name is the migration's file name without .sql, e.g. "0001_init".
	Name string
	// SQL is the whole script for one schema: it creates the schema when
	// missing, sets search_path locally to it, makes the change, and
	// records Version with the file's SHA-256 in the schema's
	// schema_migrations table exactly as [Migrate] does, so [CheckSchema]
	// and a later [Migrate] see it as applied. The script of the migration
	// that creates the store_settings table (version 10) also records the
	// Config.Isolation it was rendered for as the schema's isolation level,
	// as Migrate does: the host renders it with the Config of its stores.
	// SHA-256 is still the migration file's. It must run in one
	// transaction (SET LOCAL does not outlive it; outside a transaction the
	// script fails before the change, naming this rule). Its
	// statements end with a semicolon at the end of a line, so tools that
	// split a script at such semicolons run it statement by statement.
	SQL string
}

// Migrations returns the migrations of this release for cfg.Schema
// ([DefaultSchema] when empty), in Version order: what [Migrate] applies,
// rendered for a host's migration tool. Apply each once, in order, in one
// transaction each; the scripts are additive (see the package
// documentation on upgrading a running fleet). The scripts record
// cfg.Isolation (READ COMMITTED when empty) as the schema's isolation
// level when they create the table that holds it, so render them with the
// Config the stores use; [CheckSchema] refuses a store configured at
// another level. An error is a setting of cfg that is out of range.
func Migrations(cfg Config) ([]Migration, error) {
	cfg, err := cfg.normalize()
	if err != nil {
		return nil, err
	}
	ms, err := loadMigrations(migrationFiles)
	if err != nil {
		return nil, err
	}
	ident := pgx.Identifier{cfg.Schema}.Sanitize()
	literal := sqlLiteral(cfg.Schema)
	out := make([]Migration, len(ms))
	for i, m := range ms {
		var b strings.Builder
		fmt.Fprintf(&b, "-- walletgate migration %s for schema %s: run it in one transaction.\n", m.name, ident)
		fmt.Fprintf(&b, "CREATE SCHEMA IF NOT EXISTS %s;\n", ident)
		fmt.Fprintf(&b, "SET LOCAL search_path TO %s;\n", ident)
		// Outside a transaction SET LOCAL has no effect: stop before the
		// change lands in another schema.
		fmt.Fprintf(&b, "SELECT CAST('walletgate: run this migration in one transaction (SET LOCAL search_path did not take effect; current schema: ' || coalesce(current_schema(), 'none') || ')' AS integer) WHERE current_schema() IS DISTINCT FROM %s;\n", literal)
		b.WriteString(schemaMigrationsDDL + ";\n\n")
		b.WriteString(strings.TrimSpace(m.sql))
		b.WriteString("\n\n")
		if m.version == settingsVersion {
			fmt.Fprintf(&b, "%s;\n", strings.Replace(recordIsolationSQL, "$1", sqlLiteral(string(cfg.Isolation)), 1))
		}
		fmt.Fprintf(&b, "INSERT INTO schema_migrations (version, name, sha256) VALUES (%d, '%s', '\\x%x'::bytea);\n", m.version, strings.ReplaceAll(m.name, "'", "''"), m.sum)
		out[i] = Migration{Version: m.version, Name: m.name, SQL: b.String()}
	}
	return out, nil
}

// ErrSchemaBehind, ErrSchemaAhead and ErrSchemaIsolation are the errors of
// [CheckSchema], for errors.Is.
var (
	// ErrSchemaBehind: the schema lacks migrations this release needs; run
	// [Migrate] (or the host's tool with [Migrations]) before serving.
	ErrSchemaBehind = errors.New("postgres: the schema is behind this release")
	// ErrSchemaAhead: the schema has migrations of a newer release. Under
	// the additive rule the previous release keeps working on it, so a
	// replica of the previous release may log this and serve during a
	// rolling upgrade.
	ErrSchemaAhead = errors.New("postgres: the schema is ahead of this release")
	// ErrSchemaIsolation: the schema records an isolation level other than
	// the store's [Config.Isolation], or records none. Every store of one
	// schema must run at one level (serializable checks see only
	// serializable transactions), so neither [Migrate] nor CheckSchema
	// accepts a store configured otherwise; the error names both levels.
	// To change a schema's level, stop every store of it, update the
	// 'isolation' row of its store_settings table ('read committed' or
	// 'serializable') and start them all configured at the new level.
	ErrSchemaIsolation = errors.New("postgres: the schema records another isolation level")
)

// CheckSchema compares the migrations recorded in cfg.Schema's
// schema_migrations table with this release's, and returns nil when they
// match: every migration of this release is applied with the same content
// and none is newer. It changes nothing, so hosts whose own tool applies
// [Migrations] call it at start-up, after opening the pool and before
// serving; [New] does not call it and does no I/O. A schema that lacks a
// migration (or does not exist) is an error wrapping [ErrSchemaBehind], one
// with versions above this release's an error wrapping [ErrSchemaAhead];
// both name the versions. An applied migration whose checksum differs is
// an error naming it, as for Migrate. A schema that has this release's
// migrations but records an isolation level other than cfg.Isolation
// (READ COMMITTED when empty), or none, is an error wrapping
// [ErrSchemaIsolation] naming the levels; it is checked before the
// versions of a newer release, so ErrSchemaAhead means the level is the
// store's.
func CheckSchema(ctx context.Context, pool *pgxpool.Pool, cfg Config) error {
	if pool == nil {
		return errors.New("postgres: pool is nil")
	}
	cfg, err := cfg.normalize()
	if err != nil {
		return err
	}
	ms, err := loadMigrations(migrationFiles)
	if err != nil {
		return err
	}
	want := len(ms)
	var table *string
	if err := pool.QueryRow(ctx, "SELECT to_regclass($1)::text", pgx.Identifier{cfg.Schema, "schema_migrations"}.Sanitize()).Scan(&table); err != nil {
		return fmt.Errorf("postgres: checking schema %q: %w", cfg.Schema, err)
	}
	if table == nil {
		return fmt.Errorf("%w: schema %q has no migrations applied, this release needs versions 1 to %d", ErrSchemaBehind, cfg.Schema, want)
	}
	rows, err := pool.Query(ctx, "SELECT version, sha256 FROM "+pgx.Identifier{cfg.Schema, "schema_migrations"}.Sanitize()+" ORDER BY version")
	if err != nil {
		return fmt.Errorf("postgres: checking schema %q: %w", cfg.Schema, err)
	}
	done := map[int][]byte{}
	var ahead []int
	for rows.Next() {
		var v int
		var sum []byte
		if err := rows.Scan(&v, &sum); err != nil {
			rows.Close()
			return fmt.Errorf("postgres: checking schema %q: %w", cfg.Schema, err)
		}
		done[v] = sum
		if v > want {
			ahead = append(ahead, v)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("postgres: checking schema %q: %w", cfg.Schema, err)
	}
	var missing []int
	for _, m := range ms {
		sum, ok := done[m.version]
		if !ok {
			missing = append(missing, m.version)
			continue
		}
		if !bytes.Equal(sum, m.sum[:]) {
			return fmt.Errorf("postgres: schema %q: migration %s was applied with another content (checksum differs); released migrations must not change", cfg.Schema, m.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: schema %q lacks migration versions %v, this release needs 1 to %d", ErrSchemaBehind, cfg.Schema, missing, want)
	}
	var recorded string
	err = pool.QueryRow(ctx, "SELECT value FROM "+pgx.Identifier{cfg.Schema, "store_settings"}.Sanitize()+" WHERE name = $1", isolationSetting).Scan(&recorded)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return fmt.Errorf("%w: schema %q records no isolation level (its store_settings table has no %q row) and this store is configured %s (Config.Isolation); Migrate with the store's Config records it",
			ErrSchemaIsolation, cfg.Schema, isolationSetting, strings.ToUpper(string(cfg.Isolation)))
	case err != nil:
		return fmt.Errorf("postgres: checking schema %q: %w", cfg.Schema, err)
	}
	if err := isolationMismatch(cfg, recorded); err != nil {
		return err
	}
	if len(ahead) > 0 {
		return fmt.Errorf("%w: schema %q has migration versions %v, this release knows 1 to %d", ErrSchemaAhead, cfg.Schema, ahead, want)
	}
	return nil
}

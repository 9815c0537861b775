package postgres_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/walletgate/walletgate/storage/postgres"
)

// migrationCount is the number of migration files, which Migrate and
// Migrations must all apply.
var migrationCount = func() int {
	names, err := filepath.Glob("migrations/*.sql")
	if err != nil || len(names) == 0 {
		panic(fmt.Sprintf("listing the migration files: %d files, %v", len(names), err))
	}
	return len(names)
}()

// TestMigrateConcurrently runs Migrate from four pools at once on a schema
// that does not exist: the migrations apply exactly once, every call
// succeeds, and later calls apply nothing.
func TestMigrateConcurrently(t *testing.T) {
	ctx := t.Context()
	var pools [4]*pgxpool.Pool
	for i := range pools {
		pools[i] = newPool(t, 2)
	}
	schema := freshSchema(t, pools[0])
	var wg sync.WaitGroup
	applied := make([]int, len(pools))
	errs := make([]error, len(pools))
	for i, p := range pools {
		wg.Add(1)
		go func() {
			defer wg.Done()
			applied[i], errs[i] = postgres.Migrate(ctx, p, postgres.Config{Schema: schema})
		}()
	}
	wg.Wait()
	total := 0
	for i := range pools {
		if errs[i] != nil {
			t.Fatalf("Migrate from pool %d: %v", i, errs[i])
		}
		total += applied[i]
	}
	if total != migrationCount {
		t.Fatalf("concurrent Migrate calls applied %d migrations in total (%v), want %d", total, applied, migrationCount)
	}
	for i, p := range pools {
		n, err := postgres.Migrate(ctx, p, postgres.Config{Schema: schema})
		if err != nil || n != 0 {
			t.Fatalf("Migrate again from pool %d: applied %d, %v; want 0, nil", i, n, err)
		}
	}
	var versions []int32
	rows, err := pools[0].Query(ctx, "SELECT version FROM "+pgx.Identifier{schema, "schema_migrations"}.Sanitize()+" ORDER BY version")
	if err != nil {
		t.Fatal(err)
	}
	versions, err = pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil || len(versions) != migrationCount || versions[0] != 1 {
		t.Fatalf("schema_migrations holds %v (%v), want [1]", versions, err)
	}
}

// TestMigrateRefusesEditedMigration: a recorded checksum that differs from
// the embedded file stops Migrate before it changes anything.
func TestMigrateRefusesEditedMigration(t *testing.T) {
	ctx := t.Context()
	pool := newPool(t, 2)
	s := newStore(t, pool)
	table := pgx.Identifier{s.Schema(), "schema_migrations"}.Sanitize()
	if _, err := pool.Exec(ctx, "UPDATE "+table+" SET sha256 = '\\x00' WHERE version = 1"); err != nil {
		t.Fatal(err)
	}
	n, err := postgres.Migrate(ctx, pool, postgres.Config{Schema: s.Schema()})
	if err == nil || n != 0 || !strings.Contains(err.Error(), "checksum differs") {
		t.Fatalf("Migrate over an edited migration: applied %d, %v; want a checksum error", n, err)
	}
}

// TestOptionsRejected: New and Migrate refuse what they cannot use.
func TestConfigRejected(t *testing.T) {
	ctx := t.Context()
	if _, err := postgres.New(nil, postgres.Config{}); err == nil {
		t.Fatal("New(nil) succeeded")
	}
	if _, err := postgres.Migrate(ctx, nil, postgres.Config{}); err == nil {
		t.Fatal("Migrate(nil) succeeded")
	}
	pool := newPool(t, 1)
	for _, tc := range []struct {
		name string
		cfg  postgres.Config
	}{
		{"long schema", postgres.Config{Schema: strings.Repeat("s", 64)}},
		{"NUL in schema", postgres.Config{Schema: "a\x00b"}},
		{"invalid UTF-8 schema", postgres.Config{Schema: "a\xffb"}},
	} {
		if _, err := postgres.New(pool, tc.cfg); err == nil {
			t.Errorf("New with %s succeeded", tc.name)
		}
		if _, err := postgres.Migrate(ctx, pool, tc.cfg); err == nil {
			t.Errorf("Migrate with %s succeeded", tc.name)
		}
	}
	s, err := postgres.New(pool, postgres.Config{Schema: `Odd "Schema"; DROP`})
	if err != nil || s.Schema() != `Odd "Schema"; DROP` {
		t.Fatalf("New with a schema name that needs quoting: %v", err)
	}
	if s, err := postgres.New(pool, postgres.Config{}); err != nil || s.Schema() != postgres.DefaultSchema {
		t.Fatalf("New with the zero Config: schema %q, %v; want %q", s.Schema(), err, postgres.DefaultSchema)
	}
}

// statements splits a script the way migration tools do: a statement ends
// with a semicolon at the end of a line; comment lines are dropped.
func statements(script string) []string {
	var out []string
	var cur strings.Builder
	for line := range strings.SplitSeq(script, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "--") {
			continue
		}
		cur.WriteString(line + "\n")
		if strings.HasSuffix(strings.TrimSpace(line), ";") {
			out = append(out, cur.String())
			cur.Reset()
		}
	}
	if strings.TrimSpace(cur.String()) != "" {
		out = append(out, cur.String())
	}
	return out
}

// applyByHand applies migrations as a host's tool would: each in its own
// transaction, statement by statement.
func applyByHand(t *testing.T, pool *pgxpool.Pool, ms []postgres.Migration) {
	t.Helper()
	ctx := t.Context()
	for _, m := range ms {
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			for _, st := range statements(m.SQL) {
				if _, err := tx.Exec(ctx, st); err != nil {
					return fmt.Errorf("%s: %q: %w", m.Name, st, err)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// catalog describes a schema's tables, columns, indexes, constraints,
// comments, recorded migrations and store settings, with the schema's name
// left out.
func catalog(t *testing.T, pool *pgxpool.Pool, schema string) []string {
	t.Helper()
	queries := []string{
		`SELECT format('column %s.%s %s null=%s default=%s identity=%s', table_name, column_name, data_type, is_nullable, coalesce(column_default, ''), is_identity)
		   FROM information_schema.columns WHERE table_schema = $1`,
		`SELECT format('index %s %s', indexname, replace(indexdef, quote_ident($1) || '.', ''))
		   FROM pg_indexes WHERE schemaname = $1`,
		`SELECT format('constraint %s %s %s', c.conrelid::regclass::text, c.conname, pg_get_constraintdef(c.oid))
		   FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace WHERE n.nspname = $1`,
		`SELECT format('comment %s.%s %s', c.relname, a.attname, col_description(c.oid, a.attnum))
		   FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_attribute a ON a.attrelid = c.oid
		  WHERE n.nspname = $1 AND a.attnum > 0 AND col_description(c.oid, a.attnum) IS NOT NULL`,
		`SELECT format('sequence %s', sequence_name) FROM information_schema.sequences WHERE sequence_schema = $1`,
		`SELECT format('migration %s %s %s', version, name, encode(sha256, 'hex')) FROM ` + pgx.Identifier{schema, "schema_migrations"}.Sanitize(),
		`SELECT format('setting %s %s', name, value) FROM ` + pgx.Identifier{schema, "store_settings"}.Sanitize(),
	}
	var out []string
	for _, q := range queries {
		rows, err := pool.Query(t.Context(), q, schema)
		if !strings.Contains(q, "$1") {
			rows, err = pool.Query(t.Context(), q)
		}
		if err != nil {
			t.Fatal(err)
		}
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range got {
			out = append(out, strings.ReplaceAll(s, schema, "<schema>"))
		}
	}
	slices.Sort(out)
	return out
}

// TestMigrationsByHandMatchMigrate applies the exported migrations
// statement by statement, one transaction each, as goose or golang-migrate
// would: the schema equals the one Migrate builds (columns, indexes,
// constraints, comments, recorded versions and settings), CheckSchema
// accepts it, and a later Migrate finds nothing to do.
func TestMigrationsByHandMatchMigrate(t *testing.T) {
	ctx := t.Context()
	pool := newPool(t, 2)
	viaMigrate := freshSchema(t, pool)
	if _, err := postgres.Migrate(ctx, pool, postgres.Config{Schema: viaMigrate}); err != nil {
		t.Fatal(err)
	}
	byHand := freshSchema(t, pool)
	ms, err := postgres.Migrations(postgres.Config{Schema: byHand})
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != migrationCount {
		t.Fatalf("Migrations returned %d, want %d", len(ms), migrationCount)
	}
	for i, m := range ms {
		if m.Version != i+1 || !strings.HasPrefix(m.Name, fmt.Sprintf("%04d_", i+1)) {
			t.Fatalf("migration %d is version %d named %q", i, m.Version, m.Name)
		}
	}
	applyByHand(t, pool, ms)
	want, got := catalog(t, pool, viaMigrate), catalog(t, pool, byHand)
	if len(want) < 50 {
		t.Fatalf("catalog of the migrated schema has %d entries; the comparison would prove nothing", len(want))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("schema applied by hand differs from Migrate's (-Migrate +by hand):\n%s", diff)
	}
	if err := postgres.CheckSchema(ctx, pool, postgres.Config{Schema: byHand}); err != nil {
		t.Fatalf("CheckSchema after applying by hand: %v", err)
	}
	if n, err := postgres.Migrate(ctx, pool, postgres.Config{Schema: byHand}); err != nil || n != 0 {
		t.Fatalf("Migrate after applying by hand: applied %d, %v; want 0, nil", n, err)
	}
}

// TestMigrationOutsideTransactionStops runs an exported migration with
// autocommit: SET LOCAL does not take, and the script stops before the
// change lands in another schema, naming the rule.
func TestMigrationOutsideTransactionStops(t *testing.T) {
	ctx := t.Context()
	pool := newPool(t, 1)
	schema := freshSchema(t, pool)
	ms, err := postgres.Migrations(postgres.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	var stopped error
	for _, st := range statements(ms[0].SQL) {
		if _, err := pool.Exec(ctx, st); err != nil {
			stopped = err
			break
		}
	}
	if stopped == nil || !strings.Contains(stopped.Error(), "one transaction") {
		t.Fatalf("migration outside a transaction: %v, want it stopped naming the rule", stopped)
	}
	var leaked *string
	if err := pool.QueryRow(ctx, "SELECT to_regclass('public.external_accounts')::text").Scan(&leaked); err != nil {
		t.Fatal(err)
	}
	if leaked != nil {
		t.Fatal("the migration created its tables outside its schema")
	}
}

// TestCheckSchema reports a schema that does not exist or lacks migrations
// as behind, one with a newer release's migration as ahead, an edited
// migration by name, and a migrated schema as current.
func TestCheckSchema(t *testing.T) {
	ctx := t.Context()
	pool := newPool(t, 2)
	schema := freshSchema(t, pool)
	cfg := postgres.Config{Schema: schema}
	err := postgres.CheckSchema(ctx, pool, cfg)
	if !errors.Is(err, postgres.ErrSchemaBehind) || !strings.Contains(err.Error(), "no migrations applied") {
		t.Fatalf("missing schema: %v, want ErrSchemaBehind", err)
	}
	ms, err := postgres.Migrations(cfg)
	if err != nil {
		t.Fatal(err)
	}
	applyByHand(t, pool, ms[:3])
	var lacking []int
	for v := 4; v <= migrationCount; v++ {
		lacking = append(lacking, v)
	}
	err = postgres.CheckSchema(ctx, pool, cfg)
	if !errors.Is(err, postgres.ErrSchemaBehind) || !strings.Contains(err.Error(), fmt.Sprint(lacking)) {
		t.Fatalf("schema at version 3: %v, want ErrSchemaBehind naming versions %v", err, lacking)
	}
	if _, err := postgres.Migrate(ctx, pool, cfg); err != nil {
		t.Fatal(err)
	}
	if err := postgres.CheckSchema(ctx, pool, cfg); err != nil {
		t.Fatalf("migrated schema: %v, want nil", err)
	}
	table := pgx.Identifier{schema, "schema_migrations"}.Sanitize()
	if _, err := pool.Exec(ctx, "INSERT INTO "+table+" (version, name, sha256) VALUES ($1, 'from_a_newer_release', '\\x00')", migrationCount+1); err != nil {
		t.Fatal(err)
	}
	err = postgres.CheckSchema(ctx, pool, cfg)
	if !errors.Is(err, postgres.ErrSchemaAhead) || errors.Is(err, postgres.ErrSchemaBehind) || !strings.Contains(err.Error(), fmt.Sprintf("[%d]", migrationCount+1)) {
		t.Fatalf("schema with a newer migration: %v, want ErrSchemaAhead naming it", err)
	}
	if _, err := pool.Exec(ctx, "UPDATE "+table+" SET sha256 = '\\x00' WHERE version = 2"); err != nil {
		t.Fatal(err)
	}
	err = postgres.CheckSchema(ctx, pool, cfg)
	if err == nil || errors.Is(err, postgres.ErrSchemaAhead) || !strings.Contains(err.Error(), "0002_otp_secrets_at_rest") {
		t.Fatalf("edited migration: %v, want an error naming 0002_otp_secrets_at_rest", err)
	}
}

package postgres_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/walletgate/walletgate/storage/postgres"
)

// migrationCount is the number of embedded migrations.
const migrationCount = 5

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

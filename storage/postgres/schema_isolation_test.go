package postgres_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/walletgate/walletgate/storage/postgres"
)

// settingsVersion is the migration that creates store_settings and records
// the schema's isolation level.
const settingsVersion = 10

// recordedIsolation returns the schema's recorded isolation level, or nil
// when store_settings has no 'isolation' row.
func recordedIsolation(t *testing.T, pool *pgxpool.Pool, schema string) *string {
	t.Helper()
	var v *string
	err := pool.QueryRow(t.Context(), "SELECT value FROM "+pgx.Identifier{schema, "store_settings"}.Sanitize()+" WHERE name = 'isolation'").Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// wantIsolationError fails t unless err wraps ErrSchemaIsolation (and no
// version error) and names both levels.
func wantIsolationError(t *testing.T, what string, err error, recorded, configured string) {
	t.Helper()
	if !errors.Is(err, postgres.ErrSchemaIsolation) || errors.Is(err, postgres.ErrSchemaAhead) || errors.Is(err, postgres.ErrSchemaBehind) {
		t.Fatalf("%s: %v, want ErrSchemaIsolation", what, err)
	}
	if msg := err.Error(); !strings.Contains(msg, "records "+recorded) || !strings.Contains(msg, "configured "+configured) {
		t.Fatalf("%s: %q, want it to name the recorded %s and the configured %s", what, msg, recorded, configured)
	}
}

// TestSchemaIsolationRecorded: Migrate records the level of the store that
// migrates a schema, READ COMMITTED by default; CheckSchema accepts stores
// of that level, however they spell it, and refuses stores of the other
// level naming both, before it reports a newer release's versions; Migrate
// of the other level fails and changes nothing. New, which does no I/O,
// still opens a store of either level.
func TestSchemaIsolationRecorded(t *testing.T) {
	ctx := t.Context()
	pool := newPool(t, 2)
	for _, c := range []struct {
		name                string
		level, other        pgx.TxIsoLevel
		recorded            string
		recordedUp, otherUp string
		equivalent          []pgx.TxIsoLevel
	}{
		{"default", "", pgx.Serializable, "read committed", "READ COMMITTED", "SERIALIZABLE", []pgx.TxIsoLevel{"", pgx.ReadCommitted}},
		{"serializable", pgx.Serializable, pgx.ReadCommitted, "serializable", "SERIALIZABLE", "READ COMMITTED", []pgx.TxIsoLevel{pgx.Serializable}},
	} {
		t.Run(c.name, func(t *testing.T) {
			schema := freshSchema(t, pool)
			if n, err := postgres.Migrate(ctx, pool, postgres.Config{Schema: schema, Isolation: c.level}); err != nil || n != migrationCount {
				t.Fatalf("Migrate: applied %d, %v; want %d, nil", n, err, migrationCount)
			}
			if got := recordedIsolation(t, pool, schema); got == nil || *got != c.recorded {
				t.Fatalf("recorded level %v, want %q", got, c.recorded)
			}
			for _, l := range c.equivalent {
				if err := postgres.CheckSchema(ctx, pool, postgres.Config{Schema: schema, Isolation: l}); err != nil {
					t.Fatalf("CheckSchema with Isolation %q: %v, want nil", l, err)
				}
				if n, err := postgres.Migrate(ctx, pool, postgres.Config{Schema: schema, Isolation: l}); err != nil || n != 0 {
					t.Fatalf("Migrate again with Isolation %q: applied %d, %v; want 0, nil", l, n, err)
				}
			}
			other := postgres.Config{Schema: schema, Isolation: c.other}
			wantIsolationError(t, "CheckSchema of the other level", postgres.CheckSchema(ctx, pool, other), c.recordedUp, c.otherUp)

			before := catalog(t, pool, schema)
			n, err := postgres.Migrate(ctx, pool, other)
			wantIsolationError(t, "Migrate of the other level", err, c.recordedUp, c.otherUp)
			if n != 0 {
				t.Fatalf("Migrate of the other level applied %d", n)
			}
			if diff := cmp.Diff(before, catalog(t, pool, schema)); diff != "" {
				t.Fatalf("Migrate of the other level changed the schema (-before +after):\n%s", diff)
			}
			if _, err := postgres.New(pool, other); err != nil {
				t.Fatalf("New of the other level (no I/O): %v", err)
			}

			// A newer release's version does not hide the mismatch.
			table := pgx.Identifier{schema, "schema_migrations"}.Sanitize()
			if _, err := pool.Exec(ctx, "INSERT INTO "+table+" (version, name, sha256) VALUES ($1, 'from_a_newer_release', '\\x00')", migrationCount+1); err != nil {
				t.Fatal(err)
			}
			wantIsolationError(t, "CheckSchema of the other level on a newer schema", postgres.CheckSchema(ctx, pool, other), c.recordedUp, c.otherUp)
			if err := postgres.CheckSchema(ctx, pool, postgres.Config{Schema: schema, Isolation: c.level}); !errors.Is(err, postgres.ErrSchemaAhead) {
				t.Fatalf("CheckSchema of the recorded level on a newer schema: %v, want ErrSchemaAhead", err)
			}
		})
	}
}

// TestMigrateOtherIsolationIsOneTransaction: on a schema migrated by hand
// up to the version that records READ COMMITTED, Migrate at SERIALIZABLE
// fails and applies none of the later migrations, since they and the check
// are one transaction; Migrate at READ COMMITTED then applies them.
func TestMigrateOtherIsolationIsOneTransaction(t *testing.T) {
	ctx := t.Context()
	pool := newPool(t, 2)
	schema := freshSchema(t, pool)
	ms, err := postgres.Migrations(postgres.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	applyByHand(t, pool, ms[:settingsVersion])
	if migrationCount == settingsVersion {
		t.Log("no migration after the settings version: this proves only that Migrate refuses")
	}
	n, err := postgres.Migrate(ctx, pool, postgres.Config{Schema: schema, Isolation: pgx.Serializable})
	wantIsolationError(t, "Migrate at SERIALIZABLE", err, "READ COMMITTED", "SERIALIZABLE")
	if n != 0 {
		t.Fatalf("Migrate at SERIALIZABLE applied %d", n)
	}
	var versions int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{schema, "schema_migrations"}.Sanitize()).Scan(&versions); err != nil {
		t.Fatal(err)
	}
	if versions != settingsVersion {
		t.Fatalf("after the refused Migrate the schema records %d versions, want %d", versions, settingsVersion)
	}
	if got := recordedIsolation(t, pool, schema); got == nil || *got != "read committed" {
		t.Fatalf("recorded level %v after the refused Migrate, want read committed", got)
	}
	if n, err := postgres.Migrate(ctx, pool, postgres.Config{Schema: schema}); err != nil || n != migrationCount-settingsVersion {
		t.Fatalf("Migrate at READ COMMITTED: applied %d, %v; want %d, nil", n, err, migrationCount-settingsVersion)
	}
}

// TestMigrationsRecordIsolation: only the rendered script of the version
// that creates store_settings records the level, the one it was rendered
// for, in a statement of its own line; applied by hand (one transaction
// each, statement by statement, on a schema whose name needs quoting) it
// records that level with the file's own checksum, CheckSchema agrees,
// and refuses the other level.
func TestMigrationsRecordIsolation(t *testing.T) {
	ctx := t.Context()
	pool := newPool(t, 2)
	file, err := os.ReadFile(fmt.Sprintf("migrations/%04d_store_settings.sql", settingsVersion))
	if err != nil {
		t.Fatal(err)
	}
	fileSum := sha256.Sum256(file)
	for _, c := range []struct {
		level           pgx.TxIsoLevel
		recorded, other string
		otherLevel      pgx.TxIsoLevel
	}{
		{pgx.ReadCommitted, "read committed", "SERIALIZABLE", pgx.Serializable},
		{pgx.Serializable, "serializable", "READ COMMITTED", pgx.ReadCommitted},
	} {
		t.Run(string(c.level), func(t *testing.T) {
			schema := freshSchema(t, pool) + ` it's "odd"`
			t.Cleanup(func() {
				_, _ = pool.Exec(context.WithoutCancel(ctx), "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
			})
			cfg := postgres.Config{Schema: schema, Isolation: c.level}
			ms, err := postgres.Migrations(cfg)
			if err != nil {
				t.Fatal(err)
			}
			record := fmt.Sprintf("INSERT INTO store_settings (name, value) VALUES ('isolation', '%s') ON CONFLICT (name) DO NOTHING;\n", c.recorded)
			for _, m := range ms {
				if got, want := strings.Contains(m.SQL, "store_settings (name, value)"), m.Version == settingsVersion; got != want {
					t.Fatalf("script %s records a setting: %v, want %v", m.Name, got, want)
				}
			}
			if !strings.Contains(ms[settingsVersion-1].SQL, "\n"+record) {
				t.Fatalf("script %s does not record %s on a line of its own:\n%s", ms[settingsVersion-1].Name, c.recorded, ms[settingsVersion-1].SQL)
			}
			applyByHand(t, pool, ms)
			if got := recordedIsolation(t, pool, schema); got == nil || *got != c.recorded {
				t.Fatalf("recorded level %v, want %q", got, c.recorded)
			}
			var sum []byte
			if err := pool.QueryRow(ctx, "SELECT sha256 FROM "+pgx.Identifier{schema, "schema_migrations"}.Sanitize()+" WHERE version = $1", settingsVersion).Scan(&sum); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(sum, fileSum[:]) {
				t.Fatalf("recorded checksum %x, want the file's %x", sum, fileSum)
			}
			if err := postgres.CheckSchema(ctx, pool, cfg); err != nil {
				t.Fatalf("CheckSchema at the rendered level: %v", err)
			}
			wantIsolationError(t, "CheckSchema at the other level", postgres.CheckSchema(ctx, pool, postgres.Config{Schema: schema, Isolation: c.otherLevel}), strings.ToUpper(c.recorded), c.other)
			if n, err := postgres.Migrate(ctx, pool, cfg); err != nil || n != 0 {
				t.Fatalf("Migrate after applying by hand: applied %d, %v; want 0, nil", n, err)
			}
		})
	}
}

// TestCheckSchemaNoRecordedIsolation: a schema whose store_settings has no
// 'isolation' row is an error saying so (wrapping ErrSchemaIsolation), and
// CheckSchema does not record one; Migrate does.
func TestCheckSchemaNoRecordedIsolation(t *testing.T) {
	ctx := t.Context()
	pool := newPool(t, 2)
	schema := freshSchema(t, pool)
	cfg := postgres.Config{Schema: schema, Isolation: pgx.Serializable}
	if _, err := postgres.Migrate(ctx, pool, cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "DELETE FROM "+pgx.Identifier{schema, "store_settings"}.Sanitize()+" WHERE name = 'isolation'"); err != nil {
		t.Fatal(err)
	}
	err := postgres.CheckSchema(ctx, pool, cfg)
	if !errors.Is(err, postgres.ErrSchemaIsolation) || !strings.Contains(err.Error(), "records no isolation level") || !strings.Contains(err.Error(), "SERIALIZABLE") {
		t.Fatalf("CheckSchema without a recorded level: %v, want ErrSchemaIsolation saying none is recorded", err)
	}
	if got := recordedIsolation(t, pool, schema); got != nil {
		t.Fatalf("CheckSchema recorded %q", *got)
	}
	if n, err := postgres.Migrate(ctx, pool, cfg); err != nil || n != 0 {
		t.Fatalf("Migrate: applied %d, %v; want 0, nil", n, err)
	}
	if got := recordedIsolation(t, pool, schema); got == nil || *got != "serializable" {
		t.Fatalf("recorded level %v after Migrate, want serializable", got)
	}
	if err := postgres.CheckSchema(ctx, pool, cfg); err != nil {
		t.Fatalf("CheckSchema after Migrate recorded the level: %v", err)
	}
}

package postgres_test

import (
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/storagetest"
)

// TestContractWithoutPreparedStatements runs the suite on pools that never
// prepare named statements, as hosts behind a transaction-pooling PgBouncer
// configure them: the store must not depend on the driver's default mode.
func TestContractWithoutPreparedStatements(t *testing.T) {
	ctx := t.Context()
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeExec} {
		t.Run(mode.String(), func(t *testing.T) {
			cfg, err := pgxpool.ParseConfig(dsn(t))
			if err != nil {
				t.Fatal(err)
			}
			cfg.MaxConns = 8
			cfg.ConnConfig.DefaultQueryExecMode = mode
			pool, err := pgxpool.NewWithConfig(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(pool.Close)
			storagetest.Run(t, func(tb testing.TB) storage.Store { return newStore(tb, pool) })
		})
	}
}

package postgres

import (
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/walletgate/walletgate/apierror/operation"
)

// DefaultSchema is the schema the store uses when [Config.Schema] is empty.
// A dedicated schema keeps the table names (sessions, credentials, ...)
// clear of the host's own tables.
const DefaultSchema = "walletgate"

// DefaultMaxRetries is how many times [Store.Atomic] retries a transaction
// that failed with a serialization failure or a deadlock when
// [Config.MaxRetries] is 0.
const DefaultMaxRetries = 5

// defaultBackoff is the base delay between retries.
const defaultBackoff = 2 * time.Millisecond

// Config configures [New] and [Migrate]. The zero value is the default
// configuration: the tables of [DefaultSchema], [DefaultMaxRetries] retries.
type Config struct {
	// Schema names the schema of the tables. It is quoted as an identifier,
	// so it is used exactly as given (case included); it must be 1 to 63
	// bytes of UTF-8 without NUL. Empty means [DefaultSchema].
	Schema string
	// MaxRetries is how many times [Store.Atomic] reruns a transaction that
	// failed with a serialization failure (40001) or a deadlock (40P01).
	// 0 means [DefaultMaxRetries]; a negative value disables retries.
	// At SERIALIZABLE every lost race on a row is such a failure, so a
	// store with contended rows (many sessions of one wallet, many
	// payouts to one account) wants more (see Isolation).
	MaxRetries int
	// Isolation is the level of the store's own transactions and the one
	// level a host transaction bound with [Store.WithTx] must run at:
	// pgx.ReadCommitted (the default, when empty) or pgx.Serializable;
	// any other level is refused by [New]. The contract's rules hold at
	// both, by different means: at READ COMMITTED by locks and guarded
	// statements, each statement reading what committed before it, after
	// the locks it waited for; at SERIALIZABLE by PostgreSQL's
	// serializable snapshot isolation on top of the same statements, which
	// aborts one of two transactions whose reads and writes could not have
	// run one after the other (40001, rerun as MaxRetries allows).
	// Serializable checks only see serializable transactions, so every
	// store of one schema (every replica, and every host transaction
	// bound to them) must run at the same level: choose Serializable when
	// the host's own transactions do (a ledger run at SERIALIZABLE), and
	// set it on every replica before any of them serves. The schema
	// records its level: [Migrate] (or the script of [Migrations] that
	// creates the schema's store_settings table) records the level of the
	// first store to migrate it, and Migrate and [CheckSchema] refuse a
	// store configured at another level with an error wrapping
	// [ErrSchemaIsolation]; [New] does no I/O and checks nothing, so a
	// host that opens stores without Migrate calls CheckSchema with the
	// same Config before serving. At SERIALIZABLE
	// a transaction's reads all run inside its transaction block, so one
	// that only reads costs a BEGIN and a COMMIT more, and contended rows
	// cost reruns.
	Isolation pgx.TxIsoLevel
	// Telemetry receives the store's records, spans and metrics (see the
	// package documentation); the zero value reports nothing. Each
	// transaction whose serialization retries ran out is logged at Warn,
	// each transaction that failed unexpectedly at Error (the error, never
	// the statement arguments). Nothing secret is reported.
	Telemetry operation.Telemetry

	backoff time.Duration // base delay between retries; 0 means defaultBackoff
}

// normalize returns c with its defaults filled in, or an error naming the
// setting that is out of range.
func (c Config) normalize() (Config, error) {
	if c.Schema == "" {
		c.Schema = DefaultSchema
	}
	if err := validSchema(c.Schema); err != nil {
		return Config{}, err
	}
	switch {
	case c.MaxRetries == 0:
		c.MaxRetries = DefaultMaxRetries
	case c.MaxRetries < 0:
		c.MaxRetries = 0
	}
	switch c.Isolation {
	case "":
		c.Isolation = pgx.ReadCommitted
	case pgx.ReadCommitted, pgx.Serializable:
	default:
		return Config{}, fmt.Errorf("postgres: Config.Isolation %q is not supported: walletgate's rules are proven at READ COMMITTED and SERIALIZABLE only", string(c.Isolation))
	}
	if c.backoff <= 0 {
		c.backoff = defaultBackoff
	}
	return c, nil
}

func validSchema(name string) error {
	switch {
	case name == "":
		return errors.New("postgres: schema name is empty")
	case len(name) > 63:
		return fmt.Errorf("postgres: schema name is %d bytes, PostgreSQL allows 63", len(name))
	case !storableText(name):
		return errors.New("postgres: schema name is not UTF-8 text without NUL")
	}
	return nil
}

package postgres

import (
	"errors"
	"fmt"
	"time"
)

// DefaultSchema is the schema the store uses unless [WithSchema] names
// another. A dedicated schema keeps the table names (sessions, credentials,
// ...) clear of the host's own tables.
const DefaultSchema = "walletgate"

// DefaultMaxRetries is how many times [Store.Atomic] retries a transaction
// that failed with a serialization failure or a deadlock, unless
// [WithMaxRetries] says otherwise.
const DefaultMaxRetries = 5

// Option configures [New] and [Migrate].
type Option func(*config)

type config struct {
	schema     string
	maxRetries int
	backoff    time.Duration
}

func newConfig(opts []Option) (config, error) {
	c := config{schema: DefaultSchema, maxRetries: DefaultMaxRetries, backoff: 2 * time.Millisecond}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if err := validSchema(c.schema); err != nil {
		return config{}, err
	}
	if c.maxRetries < 0 {
		return config{}, fmt.Errorf("postgres: max retries %d is negative", c.maxRetries)
	}
	return c, nil
}

// WithSchema makes the store (or the migration) use the tables of schema
// name. The name is quoted as an identifier, so it is used exactly as given
// (case included); it must be 1 to 63 bytes of UTF-8 without NUL.
func WithSchema(name string) Option { return func(c *config) { c.schema = name } }

// WithMaxRetries sets how many times [Store.Atomic] reruns a transaction that
// failed with a serialization failure (40001) or a deadlock (40P01); 0
// disables retries.
func WithMaxRetries(n int) Option { return func(c *config) { c.maxRetries = n } }

// withBackoff sets the base delay between retries (tests shorten it).
func withBackoff(d time.Duration) Option { return func(c *config) { c.backoff = d } }

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

package postgres

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/walletgate/walletgate/storage"
)

// ErrUnstorable reports a value the schema cannot hold: a string with a NUL
// byte or invalid UTF-8, an indexed string longer than [MaxKeyBytes], or a
// WebAuthn credential id longer than [MaxWebAuthnIDBytes]. Writes return it
// (wrapped, naming the field) before sending anything, so the transaction
// stays usable.
var ErrUnstorable = errors.New("postgres: value cannot be stored")

// MaxKeyBytes bounds the strings that are index keys: record ids, customer,
// account and credential ids, email addresses, rate-limit keys. It keeps every
// btree entry well inside PostgreSQL's limit of about 2700 bytes.
const MaxKeyBytes = 1024

// MaxWebAuthnIDBytes is the largest WebAuthn credential id (WebAuthn Level 2,
// section 5.1: at most 1023 bytes).
const MaxWebAuthnIDBytes = 1023

// PostgreSQL error codes the store acts on.
const (
	codeUniqueViolation      = "23505"
	codeSerializationFailure = "40001"
	codeDeadlockDetected     = "40P01"
	// codeGuardFailed is what the statements of deferred guarded writes
	// raise when their guard fails: the function guard_failed of migration
	// 7 (see pendingSpendSQL).
	codeGuardFailed = "WG001"
)

// storableText reports whether PostgreSQL text can hold s.
func storableText(s string) bool {
	return utf8.ValidString(s) && strings.IndexByte(s, 0) < 0
}

// storableKey reports whether s can be stored in an indexed text column.
func storableKey(s string) bool { return len(s) <= MaxKeyBytes && storableText(s) }

// field is a named string value checked before a write.
type field struct {
	name  string
	value string
	key   bool // indexed: length-bounded too
}

// text is a string stored in a column without an index.
func text(name, v string) field { return field{name: name, value: v} }

// key is a string stored in an indexed column.
func key(name, v string) field { return field{name: name, value: v, key: true} }

// checkFields returns an error wrapping ErrUnstorable for the first field
// PostgreSQL cannot store.
func checkFields(record string, fs ...field) error {
	for _, f := range fs {
		switch {
		case !storableText(f.value):
			return fmt.Errorf("%w: %s %s contains a NUL byte or invalid UTF-8", ErrUnstorable, record, f.name)
		case f.key && len(f.value) > MaxKeyBytes:
			return fmt.Errorf("%w: %s %s is %d bytes, at most %d are indexed", ErrUnstorable, record, f.name, len(f.value), MaxKeyBytes)
		}
	}
	return nil
}

// valid reports ErrTxDone on a finished Tx, then whether every field can be
// stored.
func (t *tx) valid(record string, fs ...field) error {
	if err := t.check(); err != nil {
		return err
	}
	return checkFields(record, fs...)
}

// pgCode returns the SQLSTATE of err, or "".
func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// wrap names the failed operation and maps a unique violation to
// storage.ErrDuplicate, keeping the driver error in the chain.
func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, storage.ErrTxDone) {
		return err
	}
	if pgCode(err) == codeUniqueViolation {
		return fmt.Errorf("postgres: %s: %w (%w)", op, storage.ErrDuplicate, err)
	}
	return fmt.Errorf("postgres: %s: %w", op, err)
}

// retryable reports whether a failed transaction may be rerun: PostgreSQL
// resolved a conflict by aborting it, or the driver failed before anything
// reached the server.
func retryable(err error) bool {
	switch pgCode(err) {
	case codeSerializationFailure, codeDeadlockDetected:
		return true
	}
	return pgconn.SafeToRetry(err)
}

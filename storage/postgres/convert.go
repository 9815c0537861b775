package postgres

import (
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// nullTime maps Go's zero time to NULL.
func nullTime(t time.Time) pgtype.Timestamptz {
	return pgtype.Timestamptz{Time: t, Valid: !t.IsZero()}
}

// fromNull maps NULL back to the zero time and anything else to UTC.
func fromNull(t pgtype.Timestamptz) time.Time {
	if !t.Valid {
		return time.Time{}
	}
	return t.Time.UTC()
}

// timeCol is a timestamptz scan target that stores UTC, and the zero time
// for NULL.
type timeCol struct{ t *time.Time }

// ScanTimestamptz implements pgtype.TimestamptzScanner.
func (c timeCol) ScanTimestamptz(v pgtype.Timestamptz) error {
	*c.t = fromNull(v)
	return nil
}

// utc returns the scan target of *t.
func utc(t *time.Time) timeCol { return timeCol{t} }

package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/walletgate/walletgate/storage"
)

const otpColumns = `id, credential_id, account_id, code, target_key, issued_at, expires_at, attempts, consumed_at`

const (
	// otpPutSQL supersedes the credential's issuance in one statement: the
	// credential's row is replaced in place, id included, so a consumer of
	// the superseded id matches nothing afterwards.
	otpPutSQL = `INSERT INTO {s}.otp_issuances (` + otpColumns + `)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
	ON CONFLICT (credential_id) DO UPDATE SET id = EXCLUDED.id, account_id = EXCLUDED.account_id,
	code = EXCLUDED.code, target_key = EXCLUDED.target_key, issued_at = EXCLUDED.issued_at,
	expires_at = EXCLUDED.expires_at, attempts = EXCLUDED.attempts, consumed_at = EXCLUDED.consumed_at`
	otpGetSQL = `SELECT ` + otpColumns + ` FROM {s}.otp_issuances WHERE credential_id = $1`
	// otpSpendSQL is Consume's single-use compare-and-set, a deferred
	// write: of concurrent consumers one updates the row, the others wait
	// for its lock, re-check the WHERE clause on the committed row and
	// match nothing, and then its guard fails (guard_failed, SQLSTATE
	// WG001).
	otpSpendSQL = `WITH spent AS (UPDATE {s}.otp_issuances SET consumed_at = $2
	WHERE id = $1 AND consumed_at IS NULL AND expires_at > $2 RETURNING 1)
	SELECT CASE WHEN count(*) > 0 THEN 1 ELSE {s}.guard_failed(` + consumeCauseHead + `{s}.otp_issuances` + consumeCauseTail + `) END FROM spent`
	// otpLockAttemptSQL is the attempt of Credentials.Lock,
	// sent right after the credential's locking read ($1 the credential,
	// $2 now, $3 the limit of attempts, $4 the budget's key, $5 its
	// window's end, $6 the budget). It reads the credential's issuance
	// (cur); only when that is live for an attempt does it count the hit
	// (limitHitSQL's upsert), and only when the hit counted does it
	// reserve the attempt (a guarded UPDATE, which re-checks
	// its WHERE clause on the row as committed if another transaction
	// changed it). It returns one row: whether the hit counted, the
	// issuance as read and the issuance as reserved (NULLs for what is
	// not there).
	otpLockAttemptSQL = `WITH cur AS (
	SELECT ` + otpColumns + ` FROM {s}.otp_issuances WHERE credential_id = $1
), hit AS (
	INSERT INTO {s}.rate_limit_windows AS w (key, window_end, hits)
	SELECT $4::text, $5::timestamptz, 1 FROM cur
	WHERE cur.consumed_at IS NULL AND cur.expires_at > $2 AND cur.attempts < $3
	ON CONFLICT (key) DO UPDATE SET
		window_end = CASE WHEN w.window_end <= $2 THEN EXCLUDED.window_end ELSE w.window_end END,
		hits = CASE WHEN w.window_end <= $2 THEN 1 ELSE w.hits + 1 END
	WHERE w.window_end <= $2 OR w.hits < $6
	RETURNING 1
), att AS (
	UPDATE {s}.otp_issuances o SET attempts = o.attempts + 1
	FROM cur WHERE o.id = cur.id AND o.consumed_at IS NULL AND o.expires_at > $2 AND o.attempts < $3
	AND EXISTS (SELECT 1 FROM hit)
	RETURNING o.id, o.credential_id, o.account_id, o.code, o.target_key, o.issued_at, o.expires_at, o.attempts, o.consumed_at
)
SELECT EXISTS (SELECT 1 FROM hit), cur.*, att.* FROM (SELECT 1) AS one LEFT JOIN cur ON true LEFT JOIN att ON true`
)

type otpRepo struct{ t *tx }

func scanOTP(row pgx.Row, o *storage.OTPIssuance) error {
	return row.Scan(&o.ID, &o.CredentialID, &o.AccountID, &o.Code, &o.TargetKey, utc(&o.IssuedAt), utc(&o.ExpiresAt),
		&o.Attempts, utc(&o.ConsumedAt))
}

// Put stores o as the credential's live issuance. When o.ID is already the
// id of another credential's issuance the statement fails with an error
// wrapping storage.ErrDuplicate, and the transaction is aborted.
func (r otpRepo) Put(ctx context.Context, o *storage.OTPIssuance) error {
	err := r.t.valid("OTP issuance", key("ID", o.ID), key("CredentialID", o.CredentialID), key("AccountID", o.AccountID),
		text("Code", o.Code))
	if err != nil {
		return err
	}
	if o.Attempts < 0 || int64(o.Attempts) > 1<<31-1 {
		return fmt.Errorf("%w: OTP issuance Attempts %d is out of range", ErrUnstorable, o.Attempts)
	}
	// A deferred write (see deferWrite): an id that is another
	// credential's raises, as the upsert does when sent at once.
	b := &batch{}
	b.Queue(r.t.s.q.otpPut, o.ID, o.CredentialID, o.AccountID, o.Code, o.TargetKey, o.IssuedAt,
		o.ExpiresAt, int32(o.Attempts), nullTime(o.ConsumedAt))
	return wrap("put OTP issuance", r.t.deferWrite(ctx, b))
}

// otpRow is the scan target of an issuance's columns that may all be
// NULL: the side of a LEFT JOIN that matched no row.
type otpRow struct {
	o                    storage.OTPIssuance
	id, cred, acct, code pgtype.Text
	attempts             pgtype.Int4
}

func (n *otpRow) dest() []any {
	return []any{&n.id, &n.cred, &n.acct, &n.code, &n.o.TargetKey, utc(&n.o.IssuedAt), utc(&n.o.ExpiresAt),
		&n.attempts, utc(&n.o.ConsumedAt)}
}

// issuance is the issuance scanned, or nil when the columns were NULL.
func (n *otpRow) issuance() *storage.OTPIssuance {
	if !n.id.Valid {
		return nil
	}
	o := n.o
	o.ID, o.CredentialID, o.AccountID, o.Code, o.Attempts = n.id.String, n.cred.String, n.acct.String, n.code.String, int(n.attempts.Int32)
	return &o
}

// Consume is the deferred consumption (see consume).
func (r otpRepo) Consume(ctx context.Context, id string, now time.Time) error {
	return r.t.consume(ctx, r.t.s.q.otpSpend, id, now)
}

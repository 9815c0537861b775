package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/walletgate/walletgate/storage"
)

const (
	usageColumns = `id, customer_id, source_id, destination_id, amount, created_at, expires_at`
	// usageInsertSQL raises a unique violation for an id that exists (no
	// ON CONFLICT): Record is a deferred write (see deferWrite).
	usageInsertSQL = `INSERT INTO {s}.payout_usages (` + usageColumns + `) VALUES ($1, $2, $3, $4, $5, $6, $7)`
	usageSinceSQL  = `SELECT ` + usageColumns + ` FROM {s}.payout_usages
	WHERE customer_id = $1 AND created_at >= $2 ORDER BY created_at, seq`
)

type usageRepo struct{ t *tx }

// Hold sends, in one round trip, a transaction-level advisory lock derived
// from the schema and the customer, then the read of the customer's usages:
// concurrent holds of one customer, on any replica, run one at a time, and
// the read, a READ COMMITTED statement run after the lock was granted, sees
// what the last holder committed. Under SERIALIZABLE the reads and inserts
// of two holders also conflict, so one of them reruns.
func (r usageRepo) Hold(ctx context.Context, customerID string, since time.Time) ([]storage.PayoutUsage, error) {
	if err := r.t.valid("payout usage", key("CustomerID", customerID)); err != nil {
		return nil, err
	}
	var out []storage.PayoutUsage
	b := &batch{}
	b.Queue(r.t.s.q.advisoryLock, lockKey("payouts/"+customerID, r.t.s.cfg.Schema)).Exec(func(pgconn.CommandTag) error { return nil })
	b.Queue(r.t.s.q.usageSince, customerID, since).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var u storage.PayoutUsage
			if err := rows.Scan(&u.ID, &u.CustomerID, &u.SourceID, &u.DestinationID, &u.Amount, utc(&u.CreatedAt), utc(&u.ExpiresAt)); err != nil {
				return err
			}
			out = append(out, u)
		}
		return nil
	})
	return out, wrap("hold payouts", r.t.send(ctx, b))
}

func (r usageRepo) Record(ctx context.Context, u *storage.PayoutUsage) error {
	err := r.t.valid("payout usage", key("ID", u.ID), key("CustomerID", u.CustomerID), key("SourceID", u.SourceID),
		key("DestinationID", u.DestinationID))
	if err != nil {
		return err
	}
	b := &batch{}
	b.Queue(r.t.s.q.usageInsert, u.ID, u.CustomerID, u.SourceID, u.DestinationID, u.Amount, u.CreatedAt, u.ExpiresAt)
	return wrap("record payout usage", r.t.deferWrite(ctx, b))
}

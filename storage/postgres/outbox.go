package postgres

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/walletgate/walletgate/storage"
)

const eventColumns = `id, type, account_id, payload, created_at, seq, delivered_at,
	attempts, next_attempt_at, lease_owner, leased_until, last_error, parked_at`

const (
	// outboxInsertSQL takes the advisory lock of the event's account ($7)
	// and then inserts the event, in one statement: the row of lock is
	// produced, so the lock granted, before the insert's projection draws
	// the identity seq. It raises a unique violation for an id that exists
	// (no ON CONFLICT): an append is a deferred write (see deferWrite).
	outboxInsertSQL = `WITH lock AS MATERIALIZED (SELECT pg_advisory_xact_lock($7))
	INSERT INTO {s}.outbox_events (id, type, account_id, payload, created_at, delivered_at)
	SELECT $1::text, $2::text, $3::text, $4::bytea, $5::timestamptz, $6::timestamptz FROM lock RETURNING seq`
	// outboxLeaseSQL claims due events: at most {limit}, the due heads of lowest
	// seq. An event is due only as the head of its account (its first
	// pending event, neither delivered nor parked), so the cost is in
	// finding heads, and the statement bounds it by the number of accounts
	// with pending events or by {front}, never by the number of pending events:
	//
	//   - heads walks the accounts with pending events by a loose index
	//     scan of the pending (account_id, seq) index: each step of the
	//     recursive CTE is one descent to the first pending event of the
	//     next account. few is its first {limit}+1 steps; when there are no
	//     more, few holds every head, and the candidates are those.
	//   - With more accounts, front reads the first {front} pending events in seq
	//     order (a range of the pending seq index). An event of front whose
	//     account has no earlier event in front is a head, since every
	//     pending event before it is in front; when front holds at least
	//     {limit} due heads, they are the due heads of lowest seq.
	//   - Otherwise (heads deep in the backlog, leased or backing off) the
	//     walk goes on over every account.
	//
	// One-time filters keep each part from running when an earlier one
	// sufficed. The two bounds are written into the statement as numbers
	// (see leaseSQL), never sent as parameters: PostgreSQL plans a prepared
	// statement generically after a few runs, and a generic plan, blind to
	// how small the limits are, sorts the pending events instead of
	// reading their first entries. The candidates are then locked in seq order, one probe of
	// the seq index each. SKIP LOCKED passes over rows another transaction
	// is leasing, and a row it locks is rechecked against the WHERE clause
	// at its newest version, so a head delivered, parked or leased
	// meanwhile is not claimed (nor is the event behind it, which was no
	// head in this statement's snapshot).
	outboxLeaseSQL = `WITH RECURSIVE heads AS (
	(SELECT p.account_id, p.seq FROM {s}.outbox_events p
		WHERE p.delivered_at IS NULL AND p.parked_at IS NULL
		ORDER BY p.account_id, p.seq LIMIT 1)
	UNION ALL
	SELECT n.account_id, n.seq FROM heads h CROSS JOIN LATERAL (
		SELECT p.account_id, p.seq FROM {s}.outbox_events p
		WHERE p.account_id > h.account_id AND p.delivered_at IS NULL AND p.parked_at IS NULL
		ORDER BY p.account_id, p.seq LIMIT 1) n
	), few AS (
	SELECT seq FROM heads LIMIT {limit} + 1
	), front AS (
	SELECT f.seq, f.account_id, f.next_attempt_at, f.leased_until FROM {s}.outbox_events f
		WHERE f.delivered_at IS NULL AND f.parked_at IS NULL
		ORDER BY f.seq LIMIT {front}
	), front_due AS (
	SELECT h.seq FROM (SELECT DISTINCT ON (account_id) seq, next_attempt_at, leased_until FROM front
		ORDER BY account_id, seq) h
		WHERE (h.next_attempt_at IS NULL OR h.next_attempt_at <= $1)
		AND (h.leased_until IS NULL OR h.leased_until <= $1)
	), candidates AS (
	SELECT seq FROM few WHERE (SELECT count(*) FROM few) <= {limit}
	UNION ALL
	SELECT seq FROM front_due WHERE (SELECT count(*) FROM few) > {limit}
	UNION ALL
	SELECT seq FROM heads WHERE (SELECT count(*) FROM few) > {limit} AND (SELECT count(*) FROM front_due) < {limit}
	), due AS (
	SELECT e.seq FROM {s}.outbox_events e
	WHERE e.seq = ANY (ARRAY(SELECT seq FROM candidates))
	AND e.delivered_at IS NULL AND e.parked_at IS NULL
	AND (e.next_attempt_at IS NULL OR e.next_attempt_at <= $1)
	AND (e.leased_until IS NULL OR e.leased_until <= $1)
	ORDER BY e.seq LIMIT {limit}
	FOR UPDATE SKIP LOCKED)
	UPDATE {s}.outbox_events o SET lease_owner = $2, leased_until = $3
	FROM due WHERE o.seq = due.seq
	RETURNING ` + outboxReturning
	outboxMarkSQL = `UPDATE {s}.outbox_events SET delivered_at = $2, lease_owner = NULL, leased_until = NULL
	WHERE id = ANY($1) AND delivered_at IS NULL`
	// outboxFailSQL records a failed attempt under the caller's lease; $5
	// parks the event when not NULL.
	outboxFailSQL = `UPDATE {s}.outbox_events SET attempts = attempts + 1, last_error = $3,
	next_attempt_at = COALESCE($4, next_attempt_at), parked_at = $5, lease_owner = NULL, leased_until = NULL
	WHERE id = $1 AND lease_owner = $2 AND delivered_at IS NULL AND parked_at IS NULL`
	outboxFailStateSQL = `SELECT delivered_at IS NULL AND parked_at IS NULL FROM {s}.outbox_events WHERE id = $1`
	outboxParkedSQL    = `SELECT ` + eventColumns + ` FROM {s}.outbox_events
	WHERE parked_at IS NOT NULL AND seq > $1 ORDER BY seq LIMIT $2`
	outboxRedriveSQL = `UPDATE {s}.outbox_events SET parked_at = NULL, attempts = 0, next_attempt_at = $2
	WHERE id = $1 AND parked_at IS NOT NULL`
	outboxListSQL = `SELECT ` + eventColumns + ` FROM {s}.outbox_events WHERE account_id = $1 ORDER BY seq`
)

const outboxReturning = `o.id, o.type, o.account_id, o.payload, o.created_at, o.seq, o.delivered_at,
	o.attempts, o.next_attempt_at, o.lease_owner, o.leased_until, o.last_error, o.parked_at`

// leaseFront is how many pending events, per event asked for, a Lease
// reads in seq order looking for due heads before it walks the accounts
// instead (see outboxLeaseSQL).
const leaseFront = 8

type outboxRepo struct{ t *tx }

// leaseSQL returns the lease statement for limit events, rendered once per
// limit (a relay always asks for its configured batch).
func (s *Store) leaseSQL(limit int) stmt {
	if q, ok := s.leases.Load(limit); ok {
		return q.(stmt)
	}
	q := s.q.outboxLease
	q.sql = strings.NewReplacer("{limit}", strconv.Itoa(limit), "{front}", strconv.Itoa(leaseFront*limit)).Replace(q.sql)
	s.leases.Store(limit, q)
	return q
}

func scanEvent(row pgx.Row, e *storage.Event) error {
	var payload []byte
	var owner, lastErr *string
	err := row.Scan(&e.ID, &e.Type, &e.AccountID, &payload, utc(&e.CreatedAt), &e.Seq, utc(&e.DeliveredAt),
		&e.Attempts, utc(&e.NextAttemptAt), &owner, utc(&e.LeasedUntil), &lastErr, utc(&e.ParkedAt))
	e.Payload = json.RawMessage(payload)
	e.LeaseOwner, e.LastError = deref(owner), deref(lastErr)
	return err
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// Append adds e. Seq comes from an identity column, drawn while the
// transaction holds an advisory lock of the event's account (in this
// schema) that it keeps until it commits or rolls back: a transaction that
// appends an event of the same account after it waits, so the Seq of an
// account's events increases in commit order, as the contract requires,
// also across replicas. Appends for different accounts do not wait for each
// other. Seq values of rolled-back appends are skipped.
//
// The lock and the insert are one statement and a deferred write: it
// travels with the transaction's next statement or its COMMIT, so an
// append costs no round trip of its own. e.Seq is set once it ran (at the latest when Atomic
// returns), and an id that exists aborts the transaction with an error
// wrapping [storage.ErrDuplicate], reported by that statement or by the
// commit.
func (r outboxRepo) Append(ctx context.Context, e *storage.Event) error {
	err := r.t.valid("event", key("ID", e.ID), text("Type", e.Type), key("AccountID", e.AccountID))
	if err != nil {
		return err
	}
	b := &batch{}
	b.Queue(r.t.s.q.outboxInsert, e.ID, e.Type, e.AccountID, []byte(e.Payload), e.CreatedAt, nullTime(e.DeliveredAt),
		lockKey("outbox/"+e.AccountID, r.t.s.cfg.Schema)).QueryRow(func(row pgx.Row) error { return row.Scan(&e.Seq) })
	e.Attempts, e.NextAttemptAt, e.LeaseOwner, e.LeasedUntil, e.LastError, e.ParkedAt = 0, time.Time{}, "", time.Time{}, "", time.Time{}
	return wrap("append event", r.t.deferWrite(ctx, b))
}

func (r outboxRepo) list(ctx context.Context, op string, st stmt, args ...any) ([]storage.Event, error) {
	var out []storage.Event
	err := r.t.query(ctx, st, args, func(rows pgx.Rows) error {
		var e storage.Event
		if err := scanEvent(rows, &e); err != nil {
			return err
		}
		out = append(out, e)
		return nil
	})
	if err != nil {
		return nil, wrap(op, err)
	}
	return out, nil
}

func (r outboxRepo) Lease(ctx context.Context, owner string, now time.Time, lease time.Duration, limit int) ([]storage.Event, error) {
	if err := r.t.valid("lease", key("owner", owner)); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, nil
	}
	out, err := r.list(ctx, "lease events", r.t.s.leaseSQL(limit), now, owner, now.Add(lease))
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b storage.Event) int { return cmp.Compare(a.Seq, b.Seq) })
	return out, nil
}

func (r outboxRepo) Retry(ctx context.Context, id, owner string, next time.Time, reason string) error {
	return r.fail(ctx, id, owner, reason, nullTime(next), nullTime(time.Time{}))
}

func (r outboxRepo) Park(ctx context.Context, id, owner string, at time.Time, reason string) error {
	if at.IsZero() {
		return fmt.Errorf("postgres: park event %s: a zero time", id)
	}
	return r.fail(ctx, id, owner, reason, nullTime(time.Time{}), nullTime(at))
}

// fail records a failed delivery under owner's lease; when no row matched,
// one read tells an unknown, delivered or parked event (ErrNotFound) from a
// lease held by another owner (ErrConflict).
func (r outboxRepo) fail(ctx context.Context, id, owner, reason string, next, parked any) error {
	if !storableKey(id) {
		if err := r.t.check(); err != nil {
			return err
		}
		return storage.ErrNotFound
	}
	if err := r.t.valid("event", text("reason", reason)); err != nil {
		return err
	}
	if storableKey(owner) { // no lease has another owner
		tag, err := r.t.exec(ctx, r.t.s.q.outboxFail, id, owner, reason, next, parked)
		if err != nil {
			return wrap("record failed delivery", err)
		}
		if tag.RowsAffected() == 1 {
			return nil
		}
	}
	var pending bool
	found, err := r.t.queryRow(ctx, r.t.s.q.outboxFailState, []any{id}, func(row pgx.Row) error { return row.Scan(&pending) })
	if err != nil {
		return wrap("record failed delivery", err)
	}
	if !found || !pending {
		return storage.ErrNotFound
	}
	return storage.ErrConflict
}

func (r outboxRepo) Parked(ctx context.Context, after int64, limit int) ([]storage.Event, error) {
	if limit <= 0 {
		return nil, r.t.check()
	}
	return r.list(ctx, "list parked events", r.t.s.q.outboxParked, after, int64(limit))
}

func (r outboxRepo) Redrive(ctx context.Context, id string, now time.Time) error {
	if !storableKey(id) {
		if err := r.t.check(); err != nil {
			return err
		}
		return storage.ErrNotFound
	}
	tag, err := r.t.exec(ctx, r.t.s.q.outboxRedrive, id, nullTime(now))
	if err != nil {
		return wrap("re-drive event", err)
	}
	if tag.RowsAffected() == 0 {
		return storage.ErrNotFound
	}
	return nil
}

func (r outboxRepo) MarkDelivered(ctx context.Context, ids []string, at time.Time) error {
	keep := make([]string, 0, len(ids))
	for _, id := range ids {
		if storableKey(id) { // other ids cannot exist
			keep = append(keep, id)
		}
	}
	if len(keep) == 0 {
		return r.t.check()
	}
	_, err := r.t.exec(ctx, r.t.s.q.outboxMark, keep, nullTime(at))
	return wrap("mark events delivered", err)
}

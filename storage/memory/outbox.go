package memory

import (
	"context"
	"slices"
	"time"

	"github.com/walletgate/walletgate/storage"
)

// Outbox. Every method holds the one outbox lock: exclusive to write,
// shared to read.

func cloneEvent(e *storage.Event) *storage.Event {
	c := *e
	c.Payload = slices.Clone(e.Payload)
	return &c
}

type outboxRepo struct{ *tx }

func (r outboxRepo) Append(ctx context.Context, e *storage.Event) error {
	if err := r.lockX(ctx, lkOutbox, ""); err != nil {
		return err
	}
	if _, ok := r.s.eventsByID[e.ID]; ok {
		return storage.ErrDuplicate
	}
	// Seq is never reused, also after a rollback: a gap is harmless and
	// keeps Seq increasing in commit order.
	r.s.seq++
	e.Seq = r.s.seq
	e.Attempts, e.NextAttemptAt, e.LeaseOwner, e.LeasedUntil, e.LastError, e.ParkedAt = 0, time.Time{}, "", time.Time{}, "", time.Time{}
	cp := cloneEvent(e)
	set(r.tx, &r.s.events, append(r.s.events, cp))
	put(r.tx, r.s.eventsByID, e.ID, cp)
	put(r.tx, r.s.eventsByAcct, e.AccountID, append(slices.Clip(r.s.eventsByAcct[e.AccountID]), cp))
	return nil
}

func (r outboxRepo) Lease(ctx context.Context, owner string, now time.Time, lease time.Duration, limit int) ([]storage.Event, error) {
	if err := r.lockX(ctx, lkOutbox, ""); err != nil {
		return nil, err
	}
	var out []storage.Event
	held := map[string]bool{} // accounts with an earlier pending event
	for _, e := range r.s.events {
		if len(out) >= limit {
			break
		}
		if !e.DeliveredAt.IsZero() || !e.ParkedAt.IsZero() || held[e.AccountID] {
			continue
		}
		held[e.AccountID] = true
		if e.NextAttemptAt.After(now) || e.LeasedUntil.After(now) {
			continue
		}
		set(r.tx, &e.LeaseOwner, owner)
		set(r.tx, &e.LeasedUntil, now.Add(lease))
		out = append(out, *cloneEvent(e))
	}
	return out, nil
}

func (r outboxRepo) MarkDelivered(ctx context.Context, ids []string, at time.Time) error {
	if err := r.lockX(ctx, lkOutbox, ""); err != nil {
		return err
	}
	for _, id := range ids {
		if e, ok := r.s.eventsByID[id]; ok && e.DeliveredAt.IsZero() {
			set(r.tx, &e.DeliveredAt, at)
			set(r.tx, &e.LeaseOwner, "")
			set(r.tx, &e.LeasedUntil, time.Time{})
		}
	}
	return nil
}

// failed records a failed delivery of id under owner's lease.
func (r outboxRepo) failed(ctx context.Context, id, owner, reason string) (*storage.Event, error) {
	if err := r.lockX(ctx, lkOutbox, ""); err != nil {
		return nil, err
	}
	e, ok := r.s.eventsByID[id]
	if !ok || !e.DeliveredAt.IsZero() || !e.ParkedAt.IsZero() {
		return nil, storage.ErrNotFound
	}
	if e.LeaseOwner != owner {
		return nil, storage.ErrConflict
	}
	set(r.tx, &e.Attempts, e.Attempts+1)
	set(r.tx, &e.LastError, reason)
	set(r.tx, &e.LeaseOwner, "")
	set(r.tx, &e.LeasedUntil, time.Time{})
	return e, nil
}

func (r outboxRepo) Retry(ctx context.Context, id, owner string, next time.Time, reason string) error {
	e, err := r.failed(ctx, id, owner, reason)
	if err == nil {
		set(r.tx, &e.NextAttemptAt, next)
	}
	return err
}

func (r outboxRepo) Park(ctx context.Context, id, owner string, at time.Time, reason string) error {
	e, err := r.failed(ctx, id, owner, reason)
	if err == nil {
		set(r.tx, &e.ParkedAt, at)
	}
	return err
}

func (r outboxRepo) Parked(ctx context.Context, after int64, limit int) ([]storage.Event, error) {
	if err := r.lockS(ctx, lkOutbox, ""); err != nil {
		return nil, err
	}
	var out []storage.Event
	for _, e := range r.s.events {
		if len(out) >= limit {
			break
		}
		if e.Seq > after && !e.ParkedAt.IsZero() {
			out = append(out, *cloneEvent(e))
		}
	}
	return out, nil
}

func (r outboxRepo) Redrive(ctx context.Context, id string, now time.Time) error {
	if err := r.lockX(ctx, lkOutbox, ""); err != nil {
		return err
	}
	e, ok := r.s.eventsByID[id]
	if !ok || e.ParkedAt.IsZero() {
		return storage.ErrNotFound
	}
	set(r.tx, &e.ParkedAt, time.Time{})
	set(r.tx, &e.Attempts, 0)
	set(r.tx, &e.NextAttemptAt, now)
	return nil
}

// list returns the account's events in Seq order.
func (r outboxRepo) list(ctx context.Context, accountID string) ([]storage.Event, error) {
	if err := r.lockS(ctx, lkOutbox, ""); err != nil {
		return nil, err
	}
	evs := r.s.eventsByAcct[accountID]
	out := make([]storage.Event, 0, len(evs))
	for _, e := range evs {
		out = append(out, *cloneEvent(e))
	}
	return out, nil
}

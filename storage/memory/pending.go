package memory

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/walletgate/walletgate/storage"
)

// Pending requests.

func clonePending(p *storage.PendingRequest) *storage.PendingRequest {
	c := copyPending(p)
	return &c
}

// copyPending copies p and its byte slices, which share one new array (a
// request is created and consumed on every signed retry: one allocation
// instead of three). Each copy is capped at its length, so an append to one
// never writes into another.
func copyPending(p *storage.PendingRequest) storage.PendingRequest {
	c := *p
	var buf []byte
	if n := len(p.BodyDigest) + len(p.Payload) + len(p.Data); n > 0 {
		buf = make([]byte, n)
	}
	c.BodyDigest, buf = carve(p.BodyDigest, buf)
	c.Payload, buf = carve(p.Payload, buf)
	c.Data, _ = carve(p.Data, buf)
	return c
}

// carve copies src into the head of buf, which has room for it, and returns
// the copy and the rest of buf. Like slices.Clone it keeps nil nil and an
// empty slice empty but not nil.
func carve(src, buf []byte) (cp, rest []byte) {
	if len(src) == 0 {
		return src[:0:0], buf
	}
	n := copy(buf, src)
	return buf[:n:n], buf[n:]
}

type pendingRepo struct{ *tx }

// Create stores p within its account's quota (createLimited) or its
// scope's (createBounded).
func (r pendingRepo) Create(ctx context.Context, p *storage.PendingRequest, quota storage.Quota) error {
	if quota.Limit <= 0 {
		return errors.New("memory: a pending request's quota needs a positive limit")
	}
	if quota.Scope != "" {
		return r.createBounded(ctx, p, quota.Scope, quota.Limit)
	}
	return r.createLimited(ctx, p, quota.Limit)
}

func (r pendingRepo) insert(p *storage.PendingRequest) {
	tput(r.tx, &r.s.pending, p.ID, clonePending(p))
	appendIndex(r.tx, &r.s.pendByAcct, p.AccountID, p.ID)
	r.watch(kindPending, p.ID, p.ExpiresAt)
}

// createLimited holds the account's list of requests exclusively, reads
// each listed request under its shared lock (a consumption in flight is
// waited for) and drops from the list those that no longer count: swept,
// consumed or expired at p.CreatedAt. The list is the requests created
// since the last such pruning, so it stays near limit long.
func (r pendingRepo) createLimited(ctx context.Context, p *storage.PendingRequest, limit int) error {
	if err := r.lockX(ctx, lkPending, p.ID); err != nil {
		return err
	}
	if _, ok := r.s.pending.get(p.ID); ok {
		return storage.ErrDuplicate
	}
	if err := r.lockX(ctx, lkPendByAcct, p.AccountID); err != nil {
		return err
	}
	ids, _ := r.s.pendByAcct.get(p.AccountID)
	live := make([]string, 0, min(len(ids), limit)+1)
	var earliest time.Time
	for _, id := range ids {
		if err := r.lockS(ctx, lkPending, id); err != nil {
			return err
		}
		q, ok := r.s.pending.get(id)
		if !ok || !q.ConsumedAt.IsZero() || !q.ExpiresAt.After(p.CreatedAt) {
			continue
		}
		live = append(live, id)
		if earliest.IsZero() || q.ExpiresAt.Before(earliest) {
			earliest = q.ExpiresAt
		}
	}
	if len(live) >= limit {
		if len(live) < len(ids) {
			tput(r.tx, &r.s.pendByAcct, p.AccountID, live)
		}
		return &storage.LimitError{RetryAt: earliest}
	}
	if len(live) == 0 {
		tdel(r.tx, &r.s.pendByAcct, p.AccountID)
	} else if len(live) < len(ids) {
		tput(r.tx, &r.s.pendByAcct, p.AccountID, live)
	}
	r.insert(p)
	return nil
}

// createBounded holds the scope's list of requests exclusively, reads each
// listed request under its shared lock (a consumption in flight is waited
// for) and deletes, under its exclusive lock, every one that no longer
// counts (consumed or expired at p.CreatedAt) and the oldest live ones
// beyond limit-1. The list then holds the requests kept and p, never more
// than limit; a request swept meanwhile only leaves the list.
func (r pendingRepo) createBounded(ctx context.Context, p *storage.PendingRequest, scope string, limit int) error {
	if err := r.lockX(ctx, lkPending, p.ID); err != nil {
		return err
	}
	if _, ok := r.s.pending.get(p.ID); ok {
		return storage.ErrDuplicate
	}
	if err := r.lockX(ctx, lkPendByScope, scope); err != nil {
		return err
	}
	ids, _ := r.s.pendByScope.get(scope)
	live := make([]*storage.PendingRequest, 0, len(ids))
	var gone []string
	for _, id := range ids {
		if err := r.lockS(ctx, lkPending, id); err != nil {
			return err
		}
		q, ok := r.s.pending.get(id)
		switch {
		case !ok:
		case !q.ConsumedAt.IsZero() || !q.ExpiresAt.After(p.CreatedAt):
			gone = append(gone, id)
		default:
			live = append(live, q)
		}
	}
	slices.SortFunc(live, func(a, b *storage.PendingRequest) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), strings.Compare(a.ID, b.ID))
	})
	if n := len(live) - (limit - 1); n > 0 {
		for _, q := range live[:n] {
			gone = append(gone, q.ID)
		}
		live = live[n:]
	}
	for _, id := range gone {
		if err := r.lockX(ctx, lkPending, id); err != nil {
			return err
		}
		tdel(r.tx, &r.s.pending, id)
	}
	kept := make([]string, 0, len(live)+1)
	for _, q := range live {
		kept = append(kept, q.ID)
	}
	tput(r.tx, &r.s.pendByScope, scope, append(kept, p.ID))
	tput(r.tx, &r.s.pending, p.ID, clonePending(p))
	r.watch(kindPending, p.ID, p.ExpiresAt)
	return nil
}

func (r pendingRepo) Get(ctx context.Context, id string) (storage.PendingRequest, error) {
	if err := r.lockS(ctx, lkPending, id); err != nil {
		return storage.PendingRequest{}, err
	}
	p, ok := r.s.pending.get(id)
	if !ok {
		return storage.PendingRequest{}, storage.ErrNotFound
	}
	return copyPending(p), nil
}

func (r pendingRepo) Consume(ctx context.Context, id string, now time.Time) error {
	if err := r.lockX(ctx, lkPending, id); err != nil {
		return err
	}
	p, ok := r.s.pending.get(id)
	switch {
	case !ok:
		return &storage.ConsumeError{ID: id, Err: storage.ErrNotFound}
	case !p.ConsumedAt.IsZero():
		return &storage.ConsumeError{ID: id, Err: storage.ErrConsumed}
	case !now.Before(p.ExpiresAt):
		return &storage.ConsumeError{ID: id, Err: storage.ErrExpired}
	}
	set(r.tx, &p.ConsumedAt, now)
	return nil
}

package memory

import (
	"context"
	"slices"
	"strconv"
	"time"

	"github.com/walletgate/walletgate/storage"
)

// Idempotency keys.

type idemRepo struct{ *tx }

// idemKey is the map key of (scope, key): the scope is length-prefixed, so
// no two pairs share one.
func idemKey(scope, key string) string {
	return strconv.Itoa(len(scope)) + ":" + scope + key
}

func cloneIdem(r *storage.IdempotencyRecord) *storage.IdempotencyRecord {
	c := *r
	c.Fingerprint = slices.Clone(r.Fingerprint)
	c.Body = slices.Clone(r.Body)
	if r.Header != nil {
		c.Header = make(map[string][]string, len(r.Header))
		for k, v := range r.Header {
			c.Header[k] = slices.Clone(v)
		}
	}
	return &c
}

func (r idemRepo) Begin(ctx context.Context, rec *storage.IdempotencyRecord, now time.Time) error {
	k := idemKey(rec.Scope, rec.Key)
	if err := r.lockX(ctx, lkIdem, k); err != nil {
		return err
	}
	if old, ok := r.s.idem.get(k); ok && old.ExpiresAt.After(now) {
		return storage.ErrDuplicate
	}
	tput(r.tx, &r.s.idem, k, cloneIdem(rec))
	r.watch(kindIdempotency, k, rec.ExpiresAt)
	return nil
}

func (r idemRepo) Get(ctx context.Context, scope, key string) (storage.IdempotencyRecord, error) {
	k := idemKey(scope, key)
	if err := r.lockS(ctx, lkIdem, k); err != nil {
		return storage.IdempotencyRecord{}, err
	}
	rec, ok := r.s.idem.get(k)
	if !ok {
		return storage.IdempotencyRecord{}, storage.ErrNotFound
	}
	return *cloneIdem(rec), nil
}

func (r idemRepo) Complete(ctx context.Context, rec *storage.IdempotencyRecord) error {
	k := idemKey(rec.Scope, rec.Key)
	if err := r.lockX(ctx, lkIdem, k); err != nil {
		return err
	}
	old, ok := r.s.idem.get(k)
	switch {
	case !ok:
		return storage.ErrNotFound
	case old.Token != rec.Token || old.State != storage.IdempotencyInProgress:
		return storage.ErrConflict
	}
	next := cloneIdem(old)
	next.State = storage.IdempotencyComplete
	next.Status = rec.Status
	next.Body = slices.Clone(rec.Body)
	next.Header = cloneIdem(rec).Header
	next.ExpiresAt = rec.ExpiresAt
	tput(r.tx, &r.s.idem, k, next)
	r.watch(kindIdempotency, k, next.ExpiresAt)
	return nil
}

func (r idemRepo) Release(ctx context.Context, scope, key, token string) error {
	k := idemKey(scope, key)
	if err := r.lockX(ctx, lkIdem, k); err != nil {
		return err
	}
	old, ok := r.s.idem.get(k)
	if !ok || old.Token != token || old.State != storage.IdempotencyInProgress {
		return storage.ErrNotFound
	}
	tdel(r.tx, &r.s.idem, k)
	return nil
}

package memory

import (
	"context"
	"slices"
	"strconv"

	"github.com/walletgate/walletgate/storage"
)

// A host's records ([storage.Records]).

// recordKey names the record of kind with key, and the group of kind named
// group, in the tables and the lock table: the kind's length comes first, so
// no two pairs share a name.
func recordKey(kind, key string) string {
	return strconv.Itoa(len(kind)) + ":" + kind + key
}

func cloneRecord(r *storage.Record) *storage.Record {
	c := *r
	c.Value = slices.Clone(r.Value)
	return &c
}

type recordRepo struct{ *tx }

// Create checks for the key under its exclusive lock, then takes the group's
// exclusive lock before it adds the record to the group: a List of the group
// in another transaction waits until this one ends.
func (r recordRepo) Create(ctx context.Context, rec *storage.Record) error {
	if err := rec.Check(); err != nil {
		return err
	}
	k := recordKey(rec.Kind, rec.Key)
	if err := r.lockX(ctx, lkRecord, k); err != nil {
		return err
	}
	if _, ok := r.s.records.get(k); ok {
		return storage.ErrDuplicate
	}
	g := recordKey(rec.Kind, rec.Group)
	if err := r.lockX(ctx, lkRecordGroup, g); err != nil {
		return err
	}
	rec.Version = 1
	tput(r.tx, &r.s.records, k, cloneRecord(rec))
	appendIndex(r.tx, &r.s.recordGroups, g, k)
	return nil
}

func (r recordRepo) get(ctx context.Context, kind, key string, mode lockMode) (storage.Record, error) {
	k := recordKey(kind, key)
	if err := r.lock(ctx, lkRecord, k, mode); err != nil {
		return storage.Record{}, err
	}
	rec, ok := r.s.records.get(k)
	if !ok {
		return storage.Record{}, storage.ErrNotFound
	}
	return *cloneRecord(rec), nil
}

func (r recordRepo) Get(ctx context.Context, kind, key string) (storage.Record, error) {
	return r.get(ctx, kind, key, shared)
}

// Lock is Get under an exclusive lock, held until the transaction ends.
func (r recordRepo) Lock(ctx context.Context, kind, key string) (storage.Record, error) {
	return r.get(ctx, kind, key, exclusive)
}

// Update compares and sets under the record's exclusive lock; the group's
// index is left alone, since Group never changes (rec.Group is not read).
func (r recordRepo) Update(ctx context.Context, rec *storage.Record) error {
	if err := rec.CheckValue(); err != nil {
		return err
	}
	k := recordKey(rec.Kind, rec.Key)
	if err := r.lockX(ctx, lkRecord, k); err != nil {
		return err
	}
	cur, ok := r.s.records.get(k)
	if !ok {
		return storage.ErrNotFound
	}
	if cur.Version != rec.Version {
		return storage.ErrConflict
	}
	next := *cur
	next.Value = slices.Clone(rec.Value)
	next.Version++
	tput(r.tx, &r.s.records, k, &next)
	rec.Version = next.Version
	return nil
}

// List reads the group's index under its shared lock and each record under
// its own.
func (r recordRepo) List(ctx context.Context, kind, group string) ([]storage.Record, error) {
	g := recordKey(kind, group)
	if err := r.lockS(ctx, lkRecordGroup, g); err != nil {
		return nil, err
	}
	keys, _ := r.s.recordGroups.get(g)
	out := make([]storage.Record, 0, len(keys))
	for _, k := range keys {
		if err := r.lockS(ctx, lkRecord, k); err != nil {
			return nil, err
		}
		rec, ok := r.s.records.get(k)
		if !ok {
			continue
		}
		out = append(out, *cloneRecord(rec))
	}
	return out, nil
}

package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/walletgate/walletgate/storage"
)

const (
	recordColumns = `kind, key, group_name, value, version, created_at`
	// recordInsertSQL inserts nothing for a kind and key that exist, so
	// that Create reports ErrDuplicate with the transaction still usable;
	// a concurrent insert of the same kind and key waits for this one's
	// transaction to end.
	recordInsertSQL = `INSERT INTO {s}.host_records (` + recordColumns + `) VALUES ($1, $2, $3, $4, 1, $5)
	ON CONFLICT (kind, key) DO NOTHING`
	recordGetSQL    = `SELECT ` + recordColumns + ` FROM {s}.host_records WHERE kind = $1 AND key = $2`
	recordLockSQL   = recordGetSQL + ` FOR UPDATE`
	recordUpdateSQL = `UPDATE {s}.host_records SET value = $3, version = version + 1
	WHERE kind = $1 AND key = $2 AND version = $4 RETURNING version`
	recordExistsSQL = `SELECT 1 FROM {s}.host_records WHERE kind = $1 AND key = $2`
	recordListSQL   = `SELECT ` + recordColumns + ` FROM {s}.host_records WHERE kind = $1 AND group_name = $2 ORDER BY seq`
)

// bytea returns v as the store sends it: never NULL.
func bytea(v []byte) []byte {
	if v == nil {
		return []byte{}
	}
	return v
}

type recordRepo struct{ t *tx }

func scanRecord(row pgx.Row, r *storage.Record) error {
	return row.Scan(&r.Kind, &r.Key, &r.Group, &r.Value, &r.Version, utc(&r.CreatedAt))
}

func (r recordRepo) Create(ctx context.Context, rec *storage.Record) error {
	if err := r.t.valid("record", key("Kind", rec.Kind), key("Key", rec.Key), key("Group", rec.Group)); err != nil {
		return err
	}
	if err := rec.Check(); err != nil {
		return err
	}
	tag, err := r.t.exec(ctx, r.t.s.q.recordInsert, rec.Kind, rec.Key, rec.Group, bytea(rec.Value), rec.CreatedAt)
	if err != nil {
		return wrap("create record", err)
	}
	if tag.RowsAffected() == 0 {
		return storage.ErrDuplicate
	}
	rec.Version = 1
	return nil
}

// get reads the record of kind with key with st, recordGet or recordLock.
func (r recordRepo) get(ctx context.Context, st stmt, kind, key string) (storage.Record, error) {
	var rec storage.Record
	if !storableKey(kind) || !storableKey(key) {
		return rec, notFoundOrDone(r.t)
	}
	found, err := r.t.queryRow(ctx, st, []any{kind, key}, func(row pgx.Row) error { return scanRecord(row, &rec) })
	switch {
	case err != nil:
		return storage.Record{}, wrap("read record", err)
	case !found:
		return storage.Record{}, storage.ErrNotFound
	}
	return rec, nil
}

func (r recordRepo) Get(ctx context.Context, kind, key string) (storage.Record, error) {
	return r.get(ctx, r.t.s.q.recordGet, kind, key)
}

// Lock is SELECT ... FOR UPDATE: the row stays locked until the
// transaction ends, and a Lock that waited for it reads what its holder
// committed.
func (r recordRepo) Lock(ctx context.Context, kind, key string) (storage.Record, error) {
	return r.get(ctx, r.t.s.q.recordLock, kind, key)
}

// Update is one guarded UPDATE on version; when it matches no row, a read
// of the row decides between ErrNotFound and ErrConflict.
func (r recordRepo) Update(ctx context.Context, rec *storage.Record) error {
	if err := r.t.check(); err != nil {
		return err
	}
	if err := rec.CheckValue(); err != nil {
		return err
	}
	if !storableKey(rec.Kind) || !storableKey(rec.Key) {
		return storage.ErrNotFound
	}
	var v int64
	found, err := r.t.queryRow(ctx, r.t.s.q.recordUpdate, []any{rec.Kind, rec.Key, bytea(rec.Value), rec.Version},
		func(row pgx.Row) error { return row.Scan(&v) })
	if err != nil {
		return wrap("update record", err)
	}
	if found {
		rec.Version = v
		return nil
	}
	found, err = r.t.queryRow(ctx, r.t.s.q.recordExists, []any{rec.Kind, rec.Key}, func(row pgx.Row) error { return row.Scan(new(int)) })
	switch {
	case err != nil:
		return wrap("update record", err)
	case !found:
		return storage.ErrNotFound
	}
	return fmt.Errorf("postgres: update record: %w (stored version differs)", storage.ErrConflict)
}

func (r recordRepo) List(ctx context.Context, kind, group string) ([]storage.Record, error) {
	out := []storage.Record{}
	if !storableKey(kind) || !storableKey(group) {
		return out, r.t.check()
	}
	err := r.t.query(ctx, r.t.s.q.recordList, []any{kind, group}, func(rows pgx.Rows) error {
		var rec storage.Record
		if err := scanRecord(rows, &rec); err != nil {
			return err
		}
		out = append(out, rec)
		return nil
	})
	if err != nil {
		return nil, wrap("list records", err)
	}
	return out, nil
}

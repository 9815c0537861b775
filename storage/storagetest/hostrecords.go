package storagetest

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/walletgate/walletgate/storage"
)

// newRecord returns a record of kind with a fresh key, in group.
func newRecord(t *testing.T, kind, group, value string) storage.Record {
	return storage.Record{Kind: kind, Key: id(t, "Key"), Group: group, Value: []byte(value), CreatedAt: t0}
}

// sentinels are the storage errors; a refusal of an invalid record wraps
// none of them.
var sentinels = []error{storage.ErrNotFound, storage.ErrDuplicate, storage.ErrConflict, storage.ErrExpired,
	storage.ErrConsumed, storage.ErrExhausted, storage.ErrTxDone}

// testRecords: a host's record is created once per kind and key, read back
// as stored (and as a copy), locked, updated by compare-and-set on Version
// with its Group and CreatedAt kept, listed by kind and group in creation
// order, refused when out of bounds, rolled back whole, and never swept.
func testRecords(t *testing.T, newStore Factory) {
	ctx := t.Context()
	s := newStore(t)
	kind, other := id(t, "Kind"), id(t, "Kind")
	group := id(t, "Customer")
	// Created in this order, with keys and times in another, so that List
	// orders by creation alone.
	z, a, m := newRecord(t, kind, group, "z"), newRecord(t, kind, group, "a"), newRecord(t, kind, group, "")
	z.Key, a.Key, m.Key = "z-"+z.Key, "a-"+a.Key, "m-"+m.Key
	z.CreatedAt, a.CreatedAt, m.CreatedAt = t0.Add(2*time.Second), t0.Add(time.Second), t0
	m.Value = nil
	elsewhere := newRecord(t, kind, id(t, "Customer"), "elsewhere")
	ungrouped := newRecord(t, kind, "", "ungrouped")
	sameKey := newRecord(t, other, group, "same key, other kind")
	sameKey.Key = z.Key
	run(t, s, func(tx storage.Tx) error {
		r := tx.Records()
		for _, x := range []*storage.Record{&z, &a, &m, &elsewhere, &ungrouped, &sameKey} {
			wantErr(t, "Create", r.Create(ctx, x), nil)
			if x.Version != 1 {
				t.Fatalf("Create set Version %d, want 1", x.Version)
			}
		}
		dup := storage.Record{Kind: kind, Key: z.Key, Group: "another", Value: []byte("dup"), CreatedAt: t0}
		wantErr(t, "Create of a kind and key that exist", r.Create(ctx, &dup), storage.ErrDuplicate)
		got, err := r.Get(ctx, kind, z.Key)
		wantErr(t, "Get after a refused Create, in its transaction", err, nil)
		diff(t, "record after a refused Create", got, z)
		return nil
	})
	dup := a
	dup.Value = []byte("dup")
	err := s.Atomic(ctx, func(tx storage.Tx) error { return tx.Records().Create(ctx, &dup) })
	wantErr(t, "Create of a kind and key that exist, in another transaction", err, storage.ErrDuplicate)

	run(t, s, func(tx storage.Tx) error {
		r := tx.Records()
		for _, want := range []storage.Record{z, a, m, elsewhere, ungrouped, sameKey} {
			got, err := r.Get(ctx, want.Kind, want.Key)
			wantErr(t, "Get", err, nil)
			diff(t, "Get", got, want)
		}
		_, err := r.Get(ctx, kind, "unknown")
		wantErr(t, "Get of an unknown key", err, storage.ErrNotFound)
		_, err = r.Get(ctx, id(t, "Kind"), z.Key)
		wantErr(t, "Get of a key under an unknown kind", err, storage.ErrNotFound)
		_, err = r.Lock(ctx, kind, "unknown")
		wantErr(t, "Lock of an unknown key", err, storage.ErrNotFound)

		list, err := r.List(ctx, kind, group)
		wantErr(t, "List", err, nil)
		diff(t, "List of the group", list, []storage.Record{z, a, m})
		list, err = r.List(ctx, kind, "")
		wantErr(t, "List of the empty group", err, nil)
		diff(t, "List of the empty group", list, []storage.Record{ungrouped})
		list, err = r.List(ctx, other, group)
		wantErr(t, "List of another kind", err, nil)
		diff(t, "List of another kind", list, []storage.Record{sameKey})
		list, err = r.List(ctx, kind, id(t, "Customer"))
		if err != nil || len(list) != 0 {
			t.Fatalf("List of a group without records = %v, %v; want an empty list", list, err)
		}
		return nil
	})

	// Update: compare-and-set on Version; Group and CreatedAt are kept.
	run(t, s, func(tx storage.Tx) error {
		r := tx.Records()
		got, err := r.Lock(ctx, kind, a.Key)
		wantErr(t, "Lock", err, nil)
		diff(t, "Lock", got, a)
		got.Value = []byte("a, updated")
		got.Group, got.CreatedAt = "moved", t0.Add(time.Hour)
		wantErr(t, "Update", r.Update(ctx, &got), nil)
		if got.Version != 2 {
			t.Fatalf("Update set Version %d, want 2", got.Version)
		}
		a.Value, a.Version = got.Value, 2
		seen, err := r.Get(ctx, kind, a.Key)
		wantErr(t, "Get after Update, in its transaction", err, nil)
		diff(t, "record after Update, in its transaction", seen, a)
		return nil
	})
	stale := a
	stale.Version = 1
	err = s.Atomic(ctx, func(tx storage.Tx) error { return tx.Records().Update(ctx, &stale) })
	wantErr(t, "Update at a stale version", err, storage.ErrConflict)
	missing := newRecord(t, kind, group, "missing")
	missing.Version = 1
	err = s.Atomic(ctx, func(tx storage.Tx) error { return tx.Records().Update(ctx, &missing) })
	wantErr(t, "Update of an unknown record", err, storage.ErrNotFound)
	run(t, s, func(tx storage.Tx) error {
		got, err := tx.Records().Get(ctx, kind, a.Key)
		wantErr(t, "Get after Update", err, nil)
		diff(t, "record after Update", got, a)
		list, err := tx.Records().List(ctx, kind, group)
		wantErr(t, "List after Update", err, nil)
		diff(t, "List after Update", list, []storage.Record{z, a, m})
		return nil
	})

	t.Run("Copies", func(t *testing.T) { testRecordCopies(t, s, kind) })
	var fresh storage.Record
	t.Run("Rollback", func(t *testing.T) { fresh = testRecordRollback(t, s, a) })
	t.Run("Bounds", func(t *testing.T) { testRecordBounds(t, s) })

	if _, err := s.Sweep(ctx, t0.Add(100*365*24*time.Hour), 1000); err != nil {
		t.Fatal(err)
	}
	run(t, s, func(tx storage.Tx) error {
		list, err := tx.Records().List(ctx, kind, group)
		wantErr(t, "List after Sweep", err, nil)
		diff(t, "records after Sweep", list, []storage.Record{z, a, m, fresh})
		return nil
	})
}

// testRecordCopies: the store keeps its own copy of a Value, on the way in
// and on the way out.
func testRecordCopies(t *testing.T, s storage.Store, kind string) {
	ctx := t.Context()
	r := newRecord(t, kind, id(t, "Customer"), "kept")
	run(t, s, func(tx storage.Tx) error {
		if err := tx.Records().Create(ctx, &r); err != nil {
			return err
		}
		r.Value[0] = 'X' // the caller's slice, after Create
		got, err := tx.Records().Get(ctx, kind, r.Key)
		if err != nil {
			return err
		}
		if string(got.Value) != "kept" {
			t.Fatalf("changing the created Value changed the stored one to %q", got.Value)
		}
		got.Value[0] = 'Y' // a returned slice
		return nil
	})
	run(t, s, func(tx storage.Tx) error {
		got, err := tx.Records().Lock(ctx, kind, r.Key)
		if err != nil {
			return err
		}
		if string(got.Value) != "kept" {
			t.Fatalf("changing a returned Value changed the stored one to %q", got.Value)
		}
		listed, err := tx.Records().List(ctx, kind, r.Group)
		if err != nil || len(listed) != 1 {
			t.Fatalf("List = %v, %v; want the one record", listed, err)
		}
		listed[0].Value[0] = 'Z'
		got.Value = []byte("next")
		if err := tx.Records().Update(ctx, &got); err != nil {
			return err
		}
		got.Value[0] = 'W' // the caller's slice, after Update
		return nil
	})
	run(t, s, func(tx storage.Tx) error {
		got, err := tx.Records().Get(ctx, kind, r.Key)
		if err != nil {
			return err
		}
		if string(got.Value) != "next" {
			t.Fatalf("stored Value %q after changes of the caller's slices, want %q", got.Value, "next")
		}
		return nil
	})
}

// testRecordRollback: a transaction that rolls back leaves none of its
// creates and updates of records. It returns the record it then creates
// in kept's group, under the key the rolled-back transaction used.
func testRecordRollback(t *testing.T, s storage.Store, kept storage.Record) storage.Record {
	ctx := t.Context()
	fresh := newRecord(t, kept.Kind, kept.Group, "rolled back")
	err := s.Atomic(ctx, func(tx storage.Tx) error {
		r := tx.Records()
		if err := r.Create(ctx, &fresh); err != nil {
			return err
		}
		got, err := r.Lock(ctx, kept.Kind, kept.Key)
		if err != nil {
			return err
		}
		got.Value = []byte("rolled back")
		if err := r.Update(ctx, &got); err != nil {
			return err
		}
		return errRollback
	})
	wantErr(t, "the rolled-back transaction", err, errRollback)
	run(t, s, func(tx storage.Tx) error {
		_, err := tx.Records().Get(ctx, fresh.Kind, fresh.Key)
		wantErr(t, "Get of a record created in a rolled-back transaction", err, storage.ErrNotFound)
		got, err := tx.Records().Get(ctx, kept.Kind, kept.Key)
		wantErr(t, "Get of a record updated in a rolled-back transaction", err, nil)
		diff(t, "record updated in a rolled-back transaction", got, kept)
		list, err := tx.Records().List(ctx, kept.Kind, kept.Group)
		wantErr(t, "List after the rolled-back transaction", err, nil)
		for _, x := range list {
			if x.Key == fresh.Key {
				t.Fatalf("List finds %s, created in a rolled-back transaction", fresh.Key)
			}
		}
		return nil
	})
	// The key is free again.
	run(t, s, func(tx storage.Tx) error { return tx.Records().Create(ctx, &fresh) })
	return fresh
}

// testRecordBounds: Kind, Key and Group of at most 200 bytes and a Value of
// at most 1 MiB are stored; an empty Kind or anything longer is refused
// with an error that is none of the sentinels, storing nothing, and the
// transaction goes on.
func testRecordBounds(t *testing.T, s storage.Store) {
	ctx := t.Context()
	const name, value = 200, 1 << 20
	long := func(n int) string { return strings.Repeat("k", n) }
	edge := storage.Record{Kind: long(name), Key: long(name), Group: long(name), Value: make([]byte, value), CreatedAt: t0}
	run(t, s, func(tx storage.Tx) error { return tx.Records().Create(ctx, &edge) })
	run(t, s, func(tx storage.Tx) error {
		got, err := tx.Records().Get(ctx, edge.Kind, edge.Key)
		wantErr(t, "Get of a record at the bounds", err, nil)
		sameRecord(t, "record at the bounds", got, edge)
		return nil
	})
	kind := id(t, "Kind")
	refused := map[string]storage.Record{
		"an empty Kind":        {Key: "k"},
		"a Kind of 201 bytes":  {Kind: long(name + 1), Key: "k"},
		"a Key of 201 bytes":   {Kind: kind, Key: long(name + 1)},
		"a Group of 201 bytes": {Kind: kind, Key: "k", Group: long(name + 1)},
		"a Value over 1 MiB":   {Kind: kind, Key: "k", Value: make([]byte, value+1)},
	}
	for what, r := range refused {
		run(t, s, func(tx storage.Tx) error {
			r.CreatedAt = t0
			wantRefused(t, "Create with "+what, tx.Records().Create(ctx, &r))
			if r.Version != 0 {
				t.Fatalf("Create with %s set Version %d", what, r.Version)
			}
			_, err := tx.Records().Get(ctx, r.Kind, r.Key)
			wantErr(t, "Get after a refused Create", err, storage.ErrNotFound)
			return nil
		})
	}
	run(t, s, func(tx storage.Tx) error {
		got, err := tx.Records().Lock(ctx, edge.Kind, edge.Key)
		if err != nil {
			return err
		}
		over := got
		over.Value = make([]byte, value+1)
		wantRefused(t, "Update with a Value over 1 MiB", tx.Records().Update(ctx, &over))
		after, err := tx.Records().Get(ctx, edge.Kind, edge.Key)
		wantErr(t, "Get after a refused Update", err, nil)
		sameRecord(t, "record after a refused Update", after, got)
		return nil
	})
}

// sameRecord is diff for records whose Values are too large for it to
// compare quickly.
func sameRecord(t *testing.T, what string, got, want storage.Record) {
	t.Helper()
	if !bytes.Equal(got.Value, want.Value) {
		t.Fatalf("%s: Value of %d bytes, want the %d stored", what, len(got.Value), len(want.Value))
	}
	got.Value, want.Value = nil, nil
	diff(t, what, got, want)
}

// wantRefused fails the test unless err is an error that wraps none of the
// storage sentinels.
func wantRefused(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s succeeded, want it refused", what)
	}
	for _, s := range sentinels {
		if errors.Is(err, s) {
			t.Fatalf("%s: error %v wraps %v, want a refusal of the record", what, err, s)
		}
	}
}

// recordIn reads the record of kind with key in a transaction of its own.
func recordIn(ctx context.Context, s storage.Store, kind, key string) (storage.Record, error) {
	var r storage.Record
	err := s.Atomic(ctx, func(tx storage.Tx) error {
		var err error
		r, err = tx.Records().Get(ctx, kind, key)
		return err
	})
	return r, err
}

package postgres_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/postgres"
	"github.com/walletgate/walletgate/storage/storagetest"
)

// TestOpaqueBytesKept: JSON fields come back byte for byte (key order,
// whitespace, duplicate keys, invalid JSON alike), and payloads with every
// byte value too.
func TestOpaqueBytesKept(t *testing.T) {
	ctx := t.Context()
	s := newStore(t, newPool(t, 2))
	now := time.Date(2026, 3, 14, 15, 9, 26, 535897000, time.UTC)
	weird := json.RawMessage("{ \"b\" : 1,\n\t\"a\":[1, 2.50, 9007199254740993], \"a\": \"\\u0000\" }")
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	ext := storage.ExternalAccount{ID: newID(t, "ExternalAccount"), CustomerID: "c", Info: weird, CreatedAt: now, UpdatedAt: now}
	p := storage.PendingRequest{ID: newID(t, "Request"), AccountID: "a", BodyDigest: all[:32], Payload: all,
		Data: json.RawMessage("not json at all \x00\xff"), CreatedAt: now, ExpiresAt: now.Add(time.Minute)}
	ev := storage.Event{ID: newID(t, "Webhook"), AccountID: "a", Payload: weird, CreatedAt: now}
	mustAtomic(t, s, func(tx storage.Tx) error {
		return errors.Join(tx.ExternalAccounts().Create(ctx, &ext), tx.PendingRequests().Create(ctx, &p, storage.Quota{Limit: 1000}),
			tx.Outbox().Append(ctx, &ev))
	})
	evs := storagetest.Events(t, s, "a")
	mustAtomic(t, s, func(tx storage.Tx) error {
		gotExt, err1 := tx.ExternalAccounts().Get(ctx, ext.ID)
		gotP, err2 := tx.PendingRequests().Get(ctx, p.ID)
		if err := errors.Join(err1, err2); err != nil {
			return err
		}
		if !bytes.Equal(gotExt.Info, weird) || !bytes.Equal(gotP.Payload, all) || !bytes.Equal(gotP.Data, p.Data) ||
			!bytes.Equal(gotP.BodyDigest, all[:32]) || len(evs) != 1 || !bytes.Equal(evs[0].Payload, weird) {
			t.Fatalf("opaque bytes changed:\ninfo %q\npayload %x\ndata %q\nevents %+v", gotExt.Info, gotP.Payload, gotP.Data, evs)
		}
		return nil
	})
}

// TestTimesUTCMicroseconds: times come back in UTC whatever zone they went
// in with, truncated to microseconds; zero times stay zero.
func TestTimesUTCMicroseconds(t *testing.T) {
	ctx := t.Context()
	s := newStore(t, newPool(t, 2))
	zone := time.FixedZone("UTC+5:30", 5*3600+1800)
	created := time.Date(2026, 3, 14, 20, 39, 26, 535897999, zone)
	sess := storage.Session{ID: newID(t, "Session"), AccountID: "a", CredentialID: "c", CreatedAt: created,
		ExpiresAt: created.Add(time.Hour)}
	mustAtomic(t, s, func(tx storage.Tx) error { return tx.Sessions().Create(ctx, &sess) })
	mustAtomic(t, s, func(tx storage.Tx) error {
		got, err := tx.Sessions().Get(ctx, sess.ID)
		if err != nil {
			return err
		}
		want := created.Truncate(time.Microsecond)
		if got.CreatedAt.Location() != time.UTC || !got.CreatedAt.Equal(want) || !got.RevokedAt.IsZero() {
			t.Fatalf("CreatedAt %v (%v), RevokedAt %v; want %v in UTC and a zero RevokedAt",
				got.CreatedAt, got.CreatedAt.Location(), got.RevokedAt, want.UTC())
		}
		return nil
	})
}

// TestUnstorableValues: strings PostgreSQL text cannot hold are refused
// before they reach the server, the transaction stays usable, and lookups
// by them find nothing.
func TestUnstorableValues(t *testing.T) {
	ctx := t.Context()
	s := newStore(t, newPool(t, 2))
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	long := strings.Repeat("x", postgres.MaxKeyBytes+1)
	cases := []struct {
		name  string
		write func(tx storage.Tx) error
	}{
		{"NUL in a nickname", func(tx storage.Tx) error {
			c := storage.Credential{ID: newID(t, "AuthMethod"), AccountID: "a", Type: storage.Passkey, Nickname: "a\x00b"}
			return tx.Credentials().Create(ctx, &c)
		}},
		{"invalid UTF-8 in a path", func(tx storage.Tx) error {
			p := storage.PendingRequest{ID: newID(t, "Request"), AccountID: "a", Path: "/\xff", CreatedAt: now, ExpiresAt: now}
			return tx.PendingRequests().Create(ctx, &p, storage.Quota{Limit: 1000})
		}},
		{"over-long id", func(tx storage.Tx) error {
			a := storage.ExternalAccount{ID: long, CreatedAt: now, UpdatedAt: now}
			return tx.ExternalAccounts().Create(ctx, &a)
		}},
		{"over-long WebAuthn id", func(tx storage.Tx) error {
			c := storage.Credential{ID: newID(t, "AuthMethod"), AccountID: "a", Type: storage.Passkey,
				WebAuthn: &storage.WebAuthnCredential{CredentialID: make([]byte, postgres.MaxWebAuthnIDBytes+1)}}
			return tx.Credentials().Create(ctx, &c)
		}},
		{"NUL in an OAuth subject", func(tx storage.Tx) error {
			c := storage.Credential{ID: newID(t, "AuthMethod"), AccountID: "a", Type: storage.OAuth,
				OAuth: &storage.OAuthIdentity{Issuer: "i", Audience: "a", Subject: "\x00"}}
			return tx.Credentials().Create(ctx, &c)
		}},
		{"NUL in a rate-limit key", func(tx storage.Tx) error {
			return tx.RateLimits().Hit(ctx, "k\x00", now, time.Minute, 1)
		}},
		{"NUL in a record key", func(tx storage.Tx) error {
			r := storage.Record{Kind: "k", Key: "a\x00b", CreatedAt: now}
			return tx.Records().Create(ctx, &r)
		}},
		{"invalid UTF-8 in a record group", func(tx storage.Tx) error {
			r := storage.Record{Kind: "k", Key: "k", Group: "\xff", CreatedAt: now}
			return tx.Records().Create(ctx, &r)
		}},
		{"NUL in an event type", func(tx storage.Tx) error {
			e := storage.Event{ID: newID(t, "Webhook"), Type: "\x00", AccountID: "a", CreatedAt: now}
			return tx.Outbox().Append(ctx, &e)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := storage.InternalAccount{ID: newID(t, "InternalAccount"), CustomerID: "c", CreatedAt: now, UpdatedAt: now}
			mustAtomic(t, s, func(tx storage.Tx) error {
				if err := tc.write(tx); !errors.Is(err, postgres.ErrUnstorable) {
					t.Fatalf("write: %v, want ErrUnstorable", err)
				}
				return tx.InternalAccounts().Create(ctx, &w) // the transaction still works
			})
			mustAtomic(t, s, func(tx storage.Tx) error {
				_, err := tx.InternalAccounts().Get(ctx, w.ID)
				return err
			})
		})
	}
	t.Run("Lookups", func(t *testing.T) {
		mustAtomic(t, s, func(tx storage.Tx) error {
			for _, k := range []string{"a\x00", "\xff", long} {
				_, e1 := tx.PendingRequests().Get(ctx, k)
				e2 := tx.PendingRequests().Consume(ctx, k, now)
				_, e3 := tx.Sessions().Get(ctx, k)
				_, e4 := tx.Challenges().Consume(ctx, k, k)
				e5 := tx.OTPIssuances().Consume(ctx, k, now)
				_, e6 := tx.Credentials().Get(ctx, k)
				e7 := tx.Credentials().Delete(ctx, k)
				e8 := tx.Sessions().Revoke(ctx, k, now)
				_, e9 := tx.Records().Get(ctx, k, k)
				_, e10 := tx.Records().Lock(ctx, "k", k)
				e11 := tx.Records().Update(ctx, &storage.Record{Kind: k, Key: k, Version: 1})
				for i, err := range []error{e1, e2, e3, e4, e5, e6, e7, e8, e9, e10, e11} {
					if !errors.Is(err, storage.ErrNotFound) {
						t.Fatalf("lookup %d by %q: %v, want ErrNotFound", i+1, k, err)
					}
				}
				list, err := tx.Credentials().ListEmailOTPByEmail(ctx, k, k)
				if err != nil || len(list) != 0 {
					t.Fatalf("ListEmailOTPByEmail(%q) = %v, %v", k, list, err)
				}
				if list, err := tx.Records().List(ctx, k, k); err != nil || len(list) != 0 {
					t.Fatalf("Records.List(%q) = %v, %v", k, list, err)
				}
				if err := tx.Outbox().MarkDelivered(ctx, []string{k}, now); err != nil {
					t.Fatalf("MarkDelivered(%q): %v", k, err)
				}
			}
			_, err := tx.Credentials().FindByWebAuthnID(ctx, "", make([]byte, postgres.MaxWebAuthnIDBytes+1))
			if !errors.Is(err, storage.ErrNotFound) {
				t.Fatalf("FindByWebAuthnID with an over-long id: %v", err)
			}
			return nil
		})
	})
}

// TestRateLimitBelowOne: a limit below one denies every hit for the window,
// as the memory store does.
func TestRateLimitBelowOne(t *testing.T) {
	ctx := t.Context()
	s := newStore(t, newPool(t, 2))
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var w1, w2 *storage.RateLimitError
	err := s.Atomic(ctx, func(tx storage.Tx) error {
		err1 := tx.RateLimits().Hit(ctx, "k", now, time.Minute, 0)
		err2 := tx.RateLimits().Hit(ctx, "k", now.Add(10*time.Second), time.Minute, 0)
		if !errors.As(err1, &w1) || !errors.As(err2, &w2) {
			t.Fatalf("hits at a limit of 0: %v, %v; want both refused at once", err1, err2)
		}
		return errors.Join(err1, err2)
	})
	if w1.Wait != time.Minute || w2.Wait != 50*time.Second || !errors.Is(err, storage.ErrExhausted) {
		t.Fatalf("waits %v, %v (Atomic: %v); want 1m0s, 50s and the refusal", w1.Wait, w2.Wait, err)
	}
}

// TestQuotedSchema: a schema name that needs quoting is used verbatim.
func TestQuotedSchema(t *testing.T) {
	ctx := t.Context()
	pool := newPool(t, 2)
	schema := freshSchema(t, pool) + ` Odd "name"; --`
	if _, err := postgres.Migrate(ctx, pool, postgres.Config{Schema: schema}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = pool.Exec(context.WithoutCancel(ctx), `DROP SCHEMA IF EXISTS "`+strings.ReplaceAll(schema, `"`, `""`)+`" CASCADE`)
	})
	s, err := postgres.New(pool, postgres.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := storage.PendingRequest{ID: newID(t, "Request"), AccountID: "a", CreatedAt: now, ExpiresAt: now.Add(time.Minute)}
	mustAtomic(t, s, func(tx storage.Tx) error { return tx.PendingRequests().Create(ctx, &p, storage.Quota{Limit: 1000}) })
	mustAtomic(t, s, func(tx storage.Tx) error { return tx.PendingRequests().Consume(ctx, p.ID, now) })
}

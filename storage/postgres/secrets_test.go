package postgres_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/postgres"
	"github.com/walletgate/walletgate/storage/storagetest"
)

// TestMigrationDeletesPlaintextIssuances: migration 0002 deletes the OTP
// issuances earlier releases stored in plaintext, and nothing else.
func TestMigrationDeletesPlaintextIssuances(t *testing.T) {
	ctx := t.Context()
	pool := newPool(t, 2)
	s := newStore(t, pool)
	now := time.Now().UTC()
	legacy := storage.OTPIssuance{ID: newID(t, "OTP"), CredentialID: newID(t, "AuthMethod"), AccountID: newID(t, "InternalAccount"),
		Code: "123456", TargetKey: bytes.Repeat([]byte{7}, 32), IssuedAt: now, ExpiresAt: now.Add(5 * time.Minute)}
	sess := storage.Session{ID: newID(t, "Session"), AccountID: legacy.AccountID, CredentialID: legacy.CredentialID,
		PublicKey: []byte{2, 1}, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	cred := storage.Credential{ID: legacy.CredentialID, AccountID: legacy.AccountID, Type: storage.SMSOTP,
		Phone: "+14155550100", Nickname: "+14155550100", CreatedAt: now, UpdatedAt: now}
	mustAtomic(t, s, func(tx storage.Tx) error {
		if err := tx.Credentials().Create(ctx, &cred); err != nil {
			return err
		}
		if err := tx.Sessions().Create(ctx, &sess); err != nil {
			return err
		}
		return tx.OTPIssuances().Put(ctx, &legacy)
	})
	// Roll the schema's record back to before 0002, as a database of an
	// earlier release is, and migrate.
	table := pgx.Identifier{s.Schema(), "schema_migrations"}.Sanitize()
	if _, err := pool.Exec(ctx, "DELETE FROM "+table+" WHERE version = 2"); err != nil {
		t.Fatal(err)
	}
	n, err := postgres.Migrate(ctx, pool, postgres.Config{Schema: s.Schema()})
	if err != nil || n != 1 {
		t.Fatalf("Migrate: applied %d, %v; want 1", n, err)
	}
	mustAtomic(t, s, func(tx storage.Tx) error {
		if o, err := storagetest.Issuance(ctx, tx, legacy.CredentialID); err != nil || o != nil {
			t.Fatalf("a plaintext issuance survived the migration: %v, %v", o, err)
		}
		if _, err := tx.Sessions().Get(ctx, sess.ID); err != nil {
			t.Fatalf("the migration touched a session: %v", err)
		}
		return nil
	})
	var comment string
	if err := pool.QueryRow(ctx, "SELECT col_description($1::regclass, 4)", pgx.Identifier{s.Schema(), "otp_issuances"}.Sanitize()).Scan(&comment); err != nil ||
		!strings.Contains(comment, "HMAC-SHA256") {
		t.Fatalf("comment on otp_issuances.code: %q, %v", comment, err)
	}
}

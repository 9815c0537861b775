package postgres_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/postgres"
	"github.com/walletgate/walletgate/walletauth"
	"github.com/walletgate/walletgate/walletauth/envelope"
	"github.com/walletgate/walletgate/walletauth/secret"
)

// TestMigrationDeletesPlaintextIssuances: migration 0002 deletes the OTP
// issuances earlier releases stored in plaintext, and nothing else.
// testSigningKey is the bundle signing key of the walletauth services of
// these tests.
var testSigningKey = func() *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	return k
}()

func TestMigrationDeletesPlaintextIssuances(t *testing.T) {
	ctx := t.Context()
	pool := newPool(t, 2)
	s := newStore(t, pool)
	now := time.Now().UTC()
	legacy := storage.OTPIssuance{ID: newID(t, "OTP"), CredentialID: newID(t, "AuthMethod"), AccountID: newID(t, "InternalAccount"),
		Code: "123456", TargetKey: bytes.Repeat([]byte{7}, 32), IssuedAt: now, ExpiresAt: now.Add(5 * time.Minute)}
	sess := storage.Session{ID: newID(t, "Session"), AccountID: legacy.AccountID, CredentialID: legacy.CredentialID,
		PublicKey: []byte{2, 1}, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	mustAtomic(t, s, func(tx storage.Tx) error {
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
		if _, err := tx.OTPIssuances().GetByCredential(ctx, legacy.CredentialID); err != storage.ErrNotFound {
			t.Fatalf("a plaintext issuance survived the migration: %v", err)
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

// codeSender keeps the codes it is asked to deliver.
type codeSender struct {
	mu    sync.Mutex
	codes []string
}

func (c *codeSender) Send(_ context.Context, m walletauth.Message) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.codes = append(c.codes, m.Code)
	return nil
}

// TestDatabaseHoldsNoOTPSecrets reads the otp_issuances row of a fresh
// issuance with SQL, as someone with read access to the database would: it
// holds neither the delivered code nor a target key that opens the client's
// answer. The service still verifies the code.
func TestDatabaseHoldsNoOTPSecrets(t *testing.T) {
	ctx := t.Context()
	pool := newPool(t, 4)
	s := newStore(t, pool)
	key, _ := secret.GenerateKey(nil, "pg-1")
	keys, _ := secret.NewKeyring(key)
	sender := &codeSender{}
	svc, err := walletauth.New(walletauth.Config{Store: s, Sender: sender,
		Keys: walletauth.Keys{SigningKey: testSigningKey, Sealer: keys, CodeMACKey: bytes.Repeat([]byte{9}, 32)}})
	if err != nil {
		t.Fatal(err)
	}
	_, cred, err := svc.CreateWallet(ctx, walletauth.NewWallet{CustomerID: "Customer:s", Email: "rest@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	m, err := svc.Challenge(ctx, cred.ID, walletauth.ChallengeRequest{})
	if err != nil {
		t.Fatal(err)
	}
	code := sender.codes[len(sender.codes)-1]
	var storedCode string
	var storedKey []byte
	err = pool.QueryRow(ctx, "SELECT code, target_key FROM "+pgx.Identifier{s.Schema(), "otp_issuances"}.Sanitize()+
		" WHERE credential_id = $1", cred.ID).Scan(&storedCode, &storedKey)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(storedCode, code) || len(storedCode) != 64 {
		t.Fatalf("the database holds code %q as %q", code, storedCode)
	}
	client, _ := walletauth.NewClientKey()
	answer, err := client.SealOTP(m.OTPEncryptionTargetBundle, svc.SigningPublicKey(), code, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+32 <= len(storedKey); i++ {
		if _, err := envelope.OpenOTP(storedKey[i:i+32], answer); err == nil {
			t.Fatalf("bytes %d..%d of the stored target key are the scalar", i, i+32)
		}
	}
	if id, err := secret.KeyID(storedKey); err != nil || id != "pg-1" {
		t.Fatalf("stored target key names %q (%v), want pg-1", id, err)
	}
	_, ch, err := svc.Verify(ctx, cred.ID, walletauth.VerifyRequest{Type: storage.EmailOTP, EncryptedOTPBundle: answer},
		signedretry.Request{Method: "POST", Path: "/auth/credentials/" + cred.ID + "/verify", Body: []byte(`{"type":"EMAIL_OTP"}`)})
	if err != nil || ch == nil {
		t.Fatalf("verify leg 1 with the delivered code: %v", err)
	}
}

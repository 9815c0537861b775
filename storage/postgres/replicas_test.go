package postgres_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"testing"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/signedretry/stamper"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/postgres"
	"github.com/walletgate/walletgate/storage/postgres/pgtest"
	"github.com/walletgate/walletgate/storage/storagetest"
)

const (
	replicas          = 4
	workersPerReplica = 16
)

// TestReplicasConsumeOnce stands up four replicas (four pools on one schema),
// and has 16 goroutines on each complete the same signed retry and consume
// the same pending request, OTP issuance and ownership challenge.
func TestReplicasConsumeOnce(t *testing.T) {
	ctx := t.Context()
	first := newStore(t, newPool(t, 4))
	stores := []*postgres.Store{first}
	for range replicas - 1 {
		stores = append(stores, pgtest.SameSchema(t, first, newPool(t, 4), postgres.Config{}))
	}

	t.Run("SignedRetry", func(t *testing.T) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now().UTC()
		acct := newID(t, "InternalAccount")
		sess := storage.Session{ID: newID(t, "Session"), AccountID: acct, CredentialID: newID(t, "AuthMethod"),
			PublicKey: elliptic.MarshalCompressed(elliptic.P256(), key.X, key.Y), CreatedAt: now, ExpiresAt: now.Add(15 * time.Minute)}
		cred := storage.Credential{ID: sess.CredentialID, AccountID: acct, Type: storage.OAuth, Nickname: "ada",
			OAuth: &storage.OAuthIdentity{Issuer: "https://accounts.example", Audience: "walletgate", Subject: "ada"}, CreatedAt: now, UpdatedAt: now}
		mustAtomic(t, first, func(tx storage.Tx) error {
			if err := tx.Credentials().Create(ctx, &cred); err != nil {
				return err
			}
			return tx.Sessions().Create(ctx, &sess)
		})

		body := []byte(`{"credentialId":"AuthMethod:1"}`)
		// The effect writes: exactly one write may commit.
		op := signedretry.Steps[struct{}, struct{}, struct{}]{Type: "REVOKE_CREDENTIAL",
			Bind: func(context.Context, storage.Tx) (*signedretry.Operation[struct{}], struct{}, error) {
				return &signedretry.Operation[struct{}]{AccountID: acct, Signer: signedretry.Signer{Rule: signedretry.AnySession}}, struct{}{}, nil
			},
			Effect: func(c context.Context, tx storage.Tx, _ *signedretry.Authorization, _, _ struct{}) (struct{}, error) {
				id, err := storage.NewID(nil, "Webhook")
				if err != nil {
					return struct{}{}, err
				}
				ev := storage.Event{ID: id, Type: "AUTH_METHOD.REVOKED", AccountID: acct, Payload: []byte(`{}`), CreatedAt: now}
				return struct{}{}, tx.Outbox().Append(c, &ev)
			}}
		call := signedretry.Request{Method: "DELETE", Path: "/auth/credentials/AuthMethod:1", Body: body}
		mgr, err := signedretry.New(signedretry.Config{Store: first})
		if err != nil {
			t.Fatal(err)
		}
		_, _, ch, err := signedretry.Run(ctx, mgr, call, op)
		if err != nil {
			t.Fatal(err)
		}
		stamp, err := stamper.NewStamp(key, []byte(ch.PayloadToSign))
		if err != nil {
			t.Fatal(err)
		}
		retry := call
		retry.Signature, retry.RequestID = stamp, ch.RequestID
		managers := map[*postgres.Store]*signedretry.Manager{}
		for _, s := range stores {
			if managers[s], err = signedretry.New(signedretry.Config{Store: s}); err != nil {
				t.Fatal(err)
			}
		}
		errs := pgtest.Race(t, stores, workersPerReplica, func(c context.Context, s *postgres.Store) error {
			_, _, _, err := signedretry.Run(c, managers[s], retry, op)
			return err
		})
		pgtest.OneWinner(t, "signed retry", errs, func(err error) bool {
			e := apierror.As(err)
			return apierror.CodeOf(err) == apierror.Unauthorized && e != nil && e.Reason() == "request id already used"
		})
		if evs := storagetest.Events(t, first, acct); len(evs) != 1 {
			t.Fatalf("the effect committed %d times, want once", len(evs))
		}
	})

	now := time.Date(2026, 3, 14, 15, 9, 26, 535897000, time.UTC)
	t.Run("PendingRequest", func(t *testing.T) {
		p := storage.PendingRequest{ID: newID(t, "Request"), Kind: "REVOKE_SESSION", AccountID: newID(t, "InternalAccount"),
			Method: "DELETE", Path: "/auth/sessions/x", Payload: []byte(`{"type":"REVOKE_SESSION"}`),
			CreatedAt: now, ExpiresAt: now.Add(time.Minute)}
		mustAtomic(t, first, func(tx storage.Tx) error { return tx.PendingRequests().Create(ctx, &p, storage.Quota{Limit: 1000}) })
		errs := pgtest.Race(t, stores, workersPerReplica, func(c context.Context, s *postgres.Store) error {
			return s.Atomic(c, func(tx storage.Tx) error { return tx.PendingRequests().Consume(c, p.ID, now) })
		})
		pgtest.OneWinner(t, "pending request", errs, func(err error) bool { return errors.Is(err, storage.ErrConsumed) })
	})

	t.Run("OTPIssuance", func(t *testing.T) {
		o := storage.OTPIssuance{ID: newID(t, "OTP"), CredentialID: newID(t, "AuthMethod"), AccountID: newID(t, "InternalAccount"),
			Code: "123456", TargetKey: []byte{1, 2, 3}, IssuedAt: now, ExpiresAt: now.Add(5 * time.Minute)}
		mustAtomic(t, first, func(tx storage.Tx) error { return tx.OTPIssuances().Put(ctx, &o) })
		errs := pgtest.Race(t, stores, workersPerReplica, func(c context.Context, s *postgres.Store) error {
			return s.Atomic(c, func(tx storage.Tx) error { return tx.OTPIssuances().Consume(c, o.ID, now) })
		})
		pgtest.OneWinner(t, "OTP issuance", errs, func(err error) bool { return errors.Is(err, storage.ErrConsumed) })
	})

	t.Run("OwnershipChallenge", func(t *testing.T) {
		c := storage.OwnershipChallenge{ID: newID(t, "Challenge"), AccountID: newID(t, "ExternalAccount"),
			Method: "WALLET_SIGNATURE", Message: "sign this", Nonce: "n", IssuedAt: now, ExpiresAt: now.Add(30 * time.Minute)}
		mustAtomic(t, first, func(tx storage.Tx) error { return tx.Challenges().Put(ctx, &c) })
		errs := pgtest.Race(t, stores, workersPerReplica, func(cx context.Context, s *postgres.Store) error {
			return s.Atomic(cx, func(tx storage.Tx) error {
				_, err := tx.Challenges().Consume(cx, c.AccountID, c.ID)
				return err
			})
		})
		pgtest.OneWinner(t, "ownership challenge", errs, func(err error) bool { return errors.Is(err, storage.ErrNotFound) })
	})
}

package walletauth_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/memory"
	"github.com/walletgate/walletgate/storage/postgres"
	"github.com/walletgate/walletgate/storage/postgres/pgtest"
	"github.com/walletgate/walletgate/storage/storagetest"
	"github.com/walletgate/walletgate/walletauth"
	"github.com/walletgate/walletgate/walletauth/authclient"
)

// Signed operations racing revokes of their signer, on the memory store and,
// when WALLETGATE_POSTGRES_DSN names a database, on PostgreSQL.

// eachStore runs fn on a new memory store and on a new PostgreSQL schema.
func eachStore(t *testing.T, fn func(t *testing.T, newStore func(t *testing.T) storage.Store)) {
	t.Run("memory", func(t *testing.T) { fn(t, func(*testing.T) storage.Store { return memory.New() }) })
	t.Run("postgres", func(t *testing.T) {
		dsn := pgtest.DSN(t)
		fn(t, func(t *testing.T) storage.Store {
			return pgtest.Store(t, pgtest.Pool(t, dsn, 16, nil), postgres.Config{})
		})
	})
}

// twoSessions returns an environment whose wallet has an EMAIL_OTP and an
// SMS_OTP credential with a session each.
func twoSessions(t *testing.T, store storage.Store) (e *env, emailSess *walletauth.AuthSession, emailKey *authclient.ClientKey,
	sms *walletauth.AuthMethod, smsSess *walletauth.AuthSession, smsKey *authclient.ClientKey) {
	t.Helper()
	e = newEnvOn(t, store, nil)
	emailSess, emailKey = e.login(t, e.email.ID, storage.EmailOTP)
	sms = e.addSMS(t, emailKey)
	smsKey = newKey(t)
	bundle, err := smsKey.SealOTP(sms.OTPEncryptionTargetBundle, e.svc.SigningPublicKey(), e.outbox.last(t).Code, nil)
	if err != nil {
		t.Fatal(err)
	}
	smsSess, _ = e.verify(t, sms.ID, storage.SMSOTP, bundle, smsKey)
	return e, emailSess, emailKey, sms, smsSess, smsKey
}

// TestSignedOperationHoldsItsSigner runs a host operation signed by the
// SMS_OTP session whose effect, inside the consuming transaction, starts a
// revoke of its signer (the session, or its credential, signed by the
// EMAIL_OTP session) and waits a while for it. The revoke must not commit
// while the operation it would invalidate is still uncommitted: either it
// waits for the operation, or (had it committed first) the operation would
// have answered 401. A revoke that completes inside the window means the
// operation committed after its signer's revoke had.
func TestSignedOperationHoldsItsSigner(t *testing.T) {
	ctx := t.Context()
	for _, target := range []string{"session", "credential"} {
		t.Run(target, func(t *testing.T) {
			eachStore(t, func(t *testing.T, newStore func(*testing.T) storage.Store) {
				e, _, emailKey, sms, smsSess, smsKey := twoSessions(t, newStore(t))
				// The revoke's first leg, stamped now, sent from the effect.
				var revoke func() error
				switch target {
				case "session":
					rc := call(http.MethodDelete, "/auth/sessions/"+smsSess.ID, "")
					ch, err := e.svc.RevokeSession(ctx, smsSess.ID, rc)
					if err != nil {
						t.Fatal(err)
					}
					retry := signed(t, rc, ch, emailKey)
					revoke = func() error { _, err := e.svc.RevokeSession(ctx, smsSess.ID, retry); return err }
				case "credential":
					rc := call(http.MethodDelete, "/auth/credentials/"+sms.ID, "")
					ch, err := e.svc.RevokeCredential(ctx, sms.ID, rc)
					if err != nil {
						t.Fatal(err)
					}
					retry := signed(t, rc, ch, emailKey)
					revoke = func() error { _, err := e.svc.RevokeCredential(ctx, sms.ID, retry); return err }
				}
				op := walletauth.HostOperation[map[string]string, struct{}]{Type: "TRANSFER_OUT", AccountID: e.wallet.ID, Parameters: map[string]string{"amount": "10"}}
				oc := call(http.MethodPost, "/transfers", `{"amount":"10"}`)
				_, _, ch, err := walletauth.Authorize(ctx, e.svc, op, oc)
				if err != nil {
					t.Fatal(err)
				}
				revoked := make(chan error, 1)
				var started atomic.Bool
				var overtaken atomic.Bool
				op.Effect = func(context.Context, storage.Tx, *signedretry.Authorization, map[string]string) (struct{}, error) {
					if started.CompareAndSwap(false, true) {
						go func() { revoked <- revoke() }()
					}
					select {
					case err := <-revoked:
						revoked <- err
						overtaken.Store(err == nil)
					case <-time.After(200 * time.Millisecond):
					}
					return struct{}{}, nil
				}
				_, got, _, opErr := walletauth.Authorize(ctx, e.svc, op, signed(t, oc, ch, smsKey))
				revokeErr := <-revoked
				if revokeErr != nil {
					t.Fatalf("the revoke failed: %v", revokeErr)
				}
				switch {
				case opErr == nil && overtaken.Load():
					t.Fatal("the operation answered 200 and committed after the revoke of its signer had committed")
				case opErr == nil:
					if got.SessionID != smsSess.ID {
						t.Fatalf("signed by %s, want %s", got.SessionID, smsSess.ID)
					}
				default:
					apierrortest.Want(t, opErr, apierror.WalletSignatureInvalid, "")
				}
			})
		})
	}
}

// TestRevokeCredentialCrossSignedThree revokes two of three credentials at
// once, each retry stamped by a session of the other: in any serial order
// the second finds its signer revoked, so exactly one succeeds and the other
// is 401 WALLET_SIGNATURE_INVALID (the third credential keeps the count
// above one, so only the signer check can refuse it).
func TestRevokeCredentialCrossSignedThree(t *testing.T) {
	ctx := t.Context()
	eachStore(t, func(t *testing.T, newStore func(*testing.T) storage.Store) {
		store := newStore(t)
		for round := range 8 {
			e, _, emailKey, sms, _, smsKey := twoSessions(t, store)
			thirdID, err := storage.NewID(nil, "AuthMethod")
			if err != nil {
				t.Fatal(err)
			}
			third := storage.Credential{ID: thirdID, AccountID: e.wallet.ID, Type: storage.OAuth, Nickname: "ada",
				OAuth:     &storage.OAuthIdentity{Issuer: "https://accounts.example", Audience: "walletgate", Subject: "ada"},
				CreatedAt: e.clock.Now(), UpdatedAt: e.clock.Now()}
			if err := e.store.Atomic(ctx, func(tx storage.Tx) error { return tx.Credentials().Create(ctx, &third) }); err != nil {
				t.Fatal(err)
			}
			errs := e.revokeCrossSigned(t, sms, emailKey, smsKey)
			apierrortest.OneWins(t, fmt.Sprintf("round %d", round), errs, apierror.WalletSignatureInvalid)
			creds, err := e.svc.ListCredentials(ctx, e.wallet.ID)
			if err != nil || len(creds) != 2 {
				t.Fatalf("round %d: credentials after the revokes: %+v %v, want 2", round, creds, err)
			}
		}
	})
}

// TestRefreshRacesRevoke sends refreshes of a session together with a
// revoke of it (signed by another session): a refresh commits before the
// revoke or answers 401, so no AUTH_SESSION.REFRESHED event of the session
// follows its AUTH_SESSION.REVOKED in the outbox (events get Seq in commit
// order).
func TestRefreshRacesRevoke(t *testing.T) {
	ctx := t.Context()
	const refreshes = 12
	eachStore(t, func(t *testing.T, newStore func(*testing.T) storage.Store) {
		store := newStore(t)
		for round := range 4 {
			e, emailSess, emailKey, _, _, smsKey := twoSessions(t, store)
			var fns []func() error
			for range refreshes {
				client := newKey(t)
				body := `{"clientPublicKey":"` + client.PublicKeyHex() + `"}`
				req := walletauth.RefreshRequest{ClientPublicKey: client.PublicKeyHex()}
				c := call(http.MethodPost, "/auth/sessions/"+emailSess.ID+"/refresh", body)
				_, ch, err := e.svc.RefreshSession(ctx, emailSess.ID, req, c)
				if err != nil {
					t.Fatal(err)
				}
				retry := signed(t, c, ch, emailKey)
				fns = append(fns, func() error { _, _, err := e.svc.RefreshSession(ctx, emailSess.ID, req, retry); return err })
			}
			rc := call(http.MethodDelete, "/auth/sessions/"+emailSess.ID, "")
			ch, err := e.svc.RevokeSession(ctx, emailSess.ID, rc)
			if err != nil {
				t.Fatal(err)
			}
			retry := signed(t, rc, ch, smsKey)
			// The revoke goes in the middle of the refreshes.
			fns = slices.Insert(fns, refreshes/2, func() error { _, err := e.svc.RevokeSession(ctx, emailSess.ID, retry); return err })
			errs := together(fns...)
			for i, err := range errs {
				switch {
				case i == refreshes/2:
					if err != nil {
						t.Fatalf("round %d: the revoke failed: %v", round, err)
					}
				case err != nil && !isAPIError(err, http.StatusUnauthorized, apierror.WalletSignatureInvalid, ""):
					t.Fatalf("round %d: a refresh failed with %v, want success or 401 WALLET_SIGNATURE_INVALID", round, err)
				}
			}
			events := storagetest.Events(t, e.store, e.wallet.ID)
			at := slices.IndexFunc(events, func(ev storage.Event) bool { return ev.Type == walletauth.EventSessionRevoked })
			if at < 0 {
				t.Fatal("no AUTH_SESSION.REVOKED event")
			}
			for _, ev := range events[at+1:] {
				if ev.Type == walletauth.EventSessionRefreshed {
					t.Fatalf("round %d: a refresh of the session committed after its revoke (event %s at Seq %d, the revoke at %d)",
						round, ev.ID, ev.Seq, events[at].Seq)
				}
			}
		}
	})
}

// TestMaxPendingChallenges: first legs of one wallet past
// Config.MaxPendingChallenges are 429 RATE_LIMITED with Retry-After; another
// wallet is not affected; a negative cap is refused.
func TestMaxPendingChallenges(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t, func(c *walletauth.Config) { c.MaxPendingChallenges = 2 })
	op := walletauth.HostOperation[map[string]string, struct{}]{Type: "TRANSFER_OUT", AccountID: e.wallet.ID, Parameters: map[string]string{"amount": "10"}}
	first := call(http.MethodPost, "/transfers", `{"amount":"10"}`)
	for range 2 {
		if _, _, _, err := walletauth.Authorize(ctx, e.svc, op, first); err != nil {
			t.Fatal(err)
		}
	}
	_, _, _, err := walletauth.Authorize(ctx, e.svc, op, first)
	if !isAPIError(err, http.StatusTooManyRequests, apierror.RateLimited, "") || apierror.As(err).RetryAfterSeconds() <= 0 {
		t.Fatalf("a first leg past the cap: %v, want 429 RATE_LIMITED with Retry-After", err)
	}
	_, _, err = e.svc.UpdateWalletPrivacy(ctx, e.wallet.ID, walletauth.PrivacyRequest{PrivateEnabled: new(bool)},
		call(http.MethodPatch, "/wallets/"+e.wallet.ID, `{"privateEnabled":false}`), nil)
	apierrortest.Want(t, err, apierror.RateLimited, "")
	other, _, err := e.svc.CreateWallet(ctx, walletauth.NewWallet{CustomerID: "Customer:2", Email: "grace@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	op.AccountID = other.ID
	if _, _, _, err := walletauth.Authorize(ctx, e.svc, op, first); err != nil {
		t.Fatalf("another wallet: %v", err)
	}
	if _, err := walletauth.New(walletauth.Config{Store: memory.New(), Sandbox: true, MaxPendingChallenges: -1}); err == nil {
		t.Fatal("a negative MaxPendingChallenges was accepted")
	}
}

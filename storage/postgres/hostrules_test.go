package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/ownership"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/walletauth"
)

// wantStandalone asserts the answer of an operation that commits on its
// own called inside a host transaction: 500 INTERNAL_ERROR whose cause
// wraps storage.ErrStandalone and names the operation.
func wantStandalone(t *testing.T, err error, op string) {
	t.Helper()
	apierrortest.Want(t, err, apierror.InternalError, "")
	if !errors.Is(err, storage.ErrStandalone) || !containsText(errors.Unwrap(err).Error(), op) {
		t.Fatalf("error %v, want one wrapping storage.ErrStandalone and naming %s", err, op)
	}
}

// TestHostTxOTPGuessesSurviveRollback: a host that binds its transaction
// to one-time code verifications and rolls back on every error cannot buy
// a guesser more attempts. On the issuance of one code, 60 wrong codes are
// sent inside host transactions that roll back: none is compared (each
// call is refused before anything is sent, naming the operation), and the
// challenge that would mail a code is refused the same way. Outside the
// host transaction the fifth wrong code exhausts the issuance and the
// right code no longer logs in.
func TestHostTxOTPGuessesSurviveRollback(t *testing.T) {
	ctx := t.Context()
	r := newWauthReplicas(t, walletauth.OTPConfig{}, nil)
	s, svc := r.stores[0], r.services[0]
	pool := newPool(t, 2)
	_, cred, err := svc.CreateWallet(ctx, walletauth.NewWallet{CustomerID: "Customer:guessed", Email: "guessed@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	m, err := svc.Challenge(ctx, cred.ID, walletauth.ChallengeRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for range 60 {
		tx := begin(t, pool, pgx.TxOptions{})
		hctx := s.WithTx(ctx, tx)
		wantStandalone(t, guessIn(t, hctx, svc, cred.ID, m.OTPEncryptionTargetBundle, "123456"), "walletauth.Verify")
		hostEnds(t, tx, false)
	}
	tx := begin(t, pool, pgx.TxOptions{})
	_, err = svc.Challenge(s.WithTx(ctx, tx), cred.ID, walletauth.ChallengeRequest{})
	wantStandalone(t, err, "walletauth.Challenge")
	hostEnds(t, tx, false)

	for i := range walletauth.DefaultOTPMaxAttempts {
		err := guess(t, svc, cred.ID, storage.EmailOTP, m.OTPEncryptionTargetBundle, "123456")
		reason := "Invalid OTP code"
		if i == walletauth.DefaultOTPMaxAttempts-1 {
			reason = "" // the last attempt may already answer the lockout
		}
		apierrortest.Want(t, err, apierror.Unauthorized, reason)
	}
	err = guess(t, svc, cred.ID, storage.EmailOTP, m.OTPEncryptionTargetBundle, walletauth.SandboxOTPCode)
	apierrortest.Want(t, err, apierror.Unauthorized, "too many failed attempts; request a new code")
}

// guessIn is guess with the context given.
func guessIn(t *testing.T, ctx context.Context, svc *walletauth.Service, credID, bundle, code string) error {
	t.Helper()
	key, err := walletauth.NewClientKey()
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := key.SealOTP(bundle, svc.SigningPublicKey(), code, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = svc.Verify(ctx, credID, walletauth.VerifyRequest{Type: storage.EmailOTP, EncryptedOTPBundle: sealed},
		verifyCall(credID, storage.EmailOTP))
	return err
}

// TestHostTxOwnershipRefusalSurvivesRollback: an invalid signature sent
// inside a host transaction is refused before anything is sent, so a host
// that rolls back on the 400 cannot keep the account
// PENDING_OWNERSHIP_VERIFICATION with its challenge open; outside, the
// same signature makes the account UNVERIFIED and consumes the challenge,
// and the gate then refuses even a payout below the threshold.
func TestHostTxOwnershipRefusalSurvivesRollback(t *testing.T) {
	ctx := t.Context()
	pool := newPool(t, 4)
	s := newStore(t, pool)
	svc := gateService(t, s)
	id := pendingWallet(t, s, svc)
	bad := ownership.VerifyRequest{Signature: "0x00"}
	for range 3 {
		tx := begin(t, pool, pgx.TxOptions{})
		_, err := svc.Verify(s.WithTx(ctx, tx), id, bad, ownership.AnyTree)
		wantStandalone(t, err, "ownership.Verify")
		hostEnds(t, tx, false)
	}
	tx := begin(t, pool, pgx.TxOptions{})
	_, err := svc.CompleteLiveness(s.WithTx(ctx, tx), id, false)
	wantStandalone(t, err, "ownership.CompleteLiveness")
	hostEnds(t, tx, false)

	_, err = svc.Verify(ctx, id, bad, ownership.AnyTree)
	apierrortest.Want(t, err, apierror.InvalidInput, "")
	_, err = svc.Verify(ctx, id, bad, ownership.AnyTree)
	apierrortest.Want(t, err, apierror.Conflict, "")
	_, err = svc.CheckPayout(ctx, ownership.Payout{AccountID: id, Amount: 1, Currency: "USDC"})
	apierrortest.Want(t, err, apierror.ExternalAccountVerificationRequired, "")
}

// TestHostTxIsolationLevels: walletgate's rules were proven at READ
// COMMITTED, so a host transaction at any other level is refused at its
// first statement, a read or a write, with an error naming the level;
// nothing walletgate wrote in it stays. Among what a SERIALIZABLE host
// could otherwise do: tie one address to two customers' EMAIL_OTP
// credentials beside a plain transaction, and revoke a credential while
// missing a session committed after its snapshot.
func TestHostTxIsolationLevels(t *testing.T) {
	ctx := t.Context()
	r := newWauthReplicas(t, walletauth.OTPConfig{}, nil)
	s, svc := r.stores[0], r.services[0]
	pool := newPool(t, 4)
	for _, level := range []pgx.TxIsoLevel{pgx.Serializable, pgx.RepeatableRead} {
		tx := begin(t, pool, pgx.TxOptions{IsoLevel: level})
		_, _, err := svc.CreateWallet(s.WithTx(ctx, tx), walletauth.NewWallet{CustomerID: "Customer:iso", Email: "iso@example.com"})
		if err == nil || !containsText(err.Error(), strings.ToUpper(string(level))) || !containsText(err.Error(), "READ COMMITTED") {
			t.Fatalf("%s: CreateWallet answered %v, want a refusal naming the level", level, err)
		}
		hostEnds(t, tx, true) // even a host that commits keeps nothing of walletgate's
		var wallets []storage.InternalAccount
		mustAtomic(t, s, func(wt storage.Tx) error {
			var err error
			wallets, err = wt.InternalAccounts().ListByCustomer(ctx, "Customer:iso")
			return err
		})
		if len(wallets) != 0 {
			t.Fatalf("%s: wallets %v after a refused CreateWallet", level, wallets)
		}

		tx = begin(t, pool, pgx.TxOptions{IsoLevel: level})
		_, err = svc.ListCredentials(s.WithTx(ctx, tx), "InternalAccount:00000000-0000-4000-8000-000000000000")
		if err == nil || !containsText(err.Error(), strings.ToUpper(string(level))) {
			t.Fatalf("%s: a read answered %v, want a refusal naming the level", level, err)
		}
		hostEnds(t, tx, false)
	}
	tx := begin(t, pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if _, _, err := svc.CreateWallet(s.WithTx(ctx, tx), walletauth.NewWallet{CustomerID: "Customer:iso", Email: "iso@example.com"}); err != nil {
		t.Fatalf("READ COMMITTED: %v", err)
	}
	hostEnds(t, tx, true)
}

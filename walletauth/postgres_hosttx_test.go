package walletauth_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/postgres"
	"github.com/walletgate/walletgate/storage/postgres/pgtest"
	"github.com/walletgate/walletgate/walletauth"
	"github.com/walletgate/walletgate/walletauth/authclient"
	"github.com/walletgate/walletgate/walletauth/envelope"
	"github.com/walletgate/walletgate/walletauth/secret"
)

// debit writes the host's ledger row id through the host transaction
// behind wt.
func debit(ctx context.Context, wt storage.Tx, table, id string) error {
	pg, err := postgres.HostTx(ctx, wt)
	if err != nil {
		return err
	}
	_, err = pg.Exec(ctx, "INSERT INTO "+table+" (id) VALUES ($1)", id)
	return err
}

// TestHostTxCreateWallet: a host's customer row and its embedded wallet
// commit together or not at all; a wallet refused (its address is another
// customer's) leaves the host transaction usable.
func TestHostTxCreateWallet(t *testing.T) {
	ctx := t.Context()
	r := newWauthReplicas(t, walletauth.OTPConfig{}, nil)
	s, svc := r.stores[0], r.services[0]
	pool := newPool(t, 2)
	table := pgtest.Ledger(t, pool, s.Schema())
	if _, _, err := svc.CreateWallet(ctx, walletauth.NewWallet{CustomerID: "Customer:taken", Email: "taken@example.com"}); err != nil {
		t.Fatal(err)
	}
	for _, commit := range []bool{false, true} {
		tx := pgtest.Begin(t, pool, pgx.TxOptions{})
		hctx := s.WithTx(ctx, tx)
		customer := newID(t, "Customer")
		pgtest.HostWrite(t, tx, table, customer)
		_, _, err := svc.CreateWallet(hctx, walletauth.NewWallet{CustomerID: customer, Email: "taken@example.com"})
		apierrortest.Want(t, err, apierror.EmailOTPEmailAlreadyExists, "")
		w, _, err := svc.CreateWallet(hctx, walletauth.NewWallet{CustomerID: customer, Email: customer[len("Customer:"):] + "@example.com"})
		if err != nil {
			t.Fatalf("wallet after a refused one: %v", err)
		}
		pgtest.End(t, tx, commit)
		var wallets []storage.InternalAccount
		mustAtomic(t, s, func(wt storage.Tx) error {
			var err error
			wallets, err = wt.InternalAccounts().ListByCustomer(ctx, customer)
			return err
		})
		row := slices.Contains(pgtest.LedgerRows(t, pool, table), customer)
		if got := len(wallets) == 1 && wallets[0].ID == w.ID; got != commit || row != commit {
			t.Fatalf("commit=%v: wallets %v, customer row committed %v", commit, wallets, row)
		}
	}
}

// TestHostTxAuthorize: the signed retry of a host operation runs in the
// host's transaction: its effect reaches that transaction and knows the
// signer; the host's rollback leaves the request usable, its commit
// consumes it with the effect's write, and a replay is refused.
func TestHostTxAuthorize(t *testing.T) {
	ctx := t.Context()
	r := newWauthReplicas(t, walletauth.OTPConfig{}, nil)
	s, svc := r.stores[0], r.services[0]
	pool := newPool(t, 2)
	table := pgtest.Ledger(t, pool, s.Schema())
	w, _, key := r.wallet(t, "Customer:host", "host@example.com")
	call := signedretry.Request{Method: http.MethodPost, Path: "/payouts", Body: []byte(`{"amount":5}`)}
	boom := apierror.New(apierror.InvalidInput, "the host refused")
	op := func(ledgerID string, fail bool) walletauth.HostOperation[map[string]int, struct{}] {
		return walletauth.HostOperation[map[string]int, struct{}]{Type: "PAYOUT", AccountID: w.ID, Parameters: map[string]int{"amount": 5},
			Effect: func(c context.Context, wt storage.Tx, a *signedretry.Authorization, _ map[string]int) (struct{}, error) {
				if a.SessionID == "" || a.CredentialID == "" {
					t.Error("the effect does not know the signer")
				}
				if err := debit(c, wt, table, ledgerID); err != nil {
					return struct{}{}, err
				}
				if fail {
					return struct{}{}, boom
				}
				return struct{}{}, nil
			}}
	}
	_, _, ch, err := walletauth.Authorize(ctx, svc, op("", false), call)
	if err != nil {
		t.Fatal(err)
	}
	retry := stamped(t, call, ch, key)
	for _, commit := range []bool{false, true} {
		tx := pgtest.Begin(t, pool, pgx.TxOptions{})
		hctx := s.WithTx(ctx, tx)
		failed, paid := newID(t, "Ledger"), newID(t, "Ledger")
		_, _, _, err := walletauth.Authorize(hctx, svc, op(failed, true), retry)
		apierrortest.Want(t, err, apierror.InvalidInput, "")
		_, a, _, err := walletauth.Authorize(hctx, svc, op(paid, false), retry)
		if err != nil {
			t.Fatalf("commit=%v: retry after a failed effect: %v", commit, err)
		}
		if a.RequestID != ch.RequestID {
			t.Fatalf("authorized %s, want %s", a.RequestID, ch.RequestID)
		}
		_, _, _, err = walletauth.Authorize(hctx, svc, op(newID(t, "Ledger"), false), retry)
		apierrortest.Want(t, err, apierror.Unauthorized, "")
		pgtest.End(t, tx, commit)
		got := pgtest.LedgerRows(t, pool, table)
		if slices.Contains(got, failed) || slices.Contains(got, paid) != commit {
			t.Fatalf("commit=%v: ledger %v", commit, got)
		}
	}
	_, _, _, err = walletauth.Authorize(ctx, svc, op(newID(t, "Ledger"), false), retry)
	apierrortest.Want(t, err, apierror.Unauthorized, "")
}

// TestHostTxUpdateEmail: a signed email change runs in the host's
// transaction with the host's own update of its customer row.
func TestHostTxUpdateEmail(t *testing.T) {
	ctx := t.Context()
	r := newWauthReplicas(t, walletauth.OTPConfig{}, nil)
	s, svc := r.stores[0], r.services[0]
	pool := newPool(t, 2)
	table := pgtest.Ledger(t, pool, s.Schema())
	w, _, key := r.wallet(t, "Customer:mail", "old@example.com")
	call := signedretry.Request{Method: http.MethodPatch, Path: "/customers/mail", Body: []byte(`{"email":"new@example.com"}`)}
	_, ch, err := svc.UpdateEmail(ctx, "Customer:mail", "new@example.com", nil, call)
	if err != nil || ch == nil {
		t.Fatalf("first leg: %v, challenge %v", err, ch)
	}
	retry := stamped(t, call, ch, key)
	for _, commit := range []bool{false, true} {
		tx := pgtest.Begin(t, pool, pgx.TxOptions{})
		hctx := s.WithTx(ctx, tx)
		row := newID(t, "Ledger")
		pgtest.HostWrite(t, tx, table, row)
		if _, _, err := svc.UpdateEmail(hctx, "Customer:mail", "", nil, retry); err != nil {
			t.Fatalf("commit=%v: retry: %v", commit, err)
		}
		pgtest.End(t, tx, commit)
		var got storage.InternalAccount
		mustAtomic(t, s, func(wt storage.Tx) error {
			var err error
			got, err = wt.InternalAccounts().Get(ctx, w.ID)
			return err
		})
		want := map[bool]string{false: "old@example.com", true: "new@example.com"}[commit]
		if got.Email != want || slices.Contains(pgtest.LedgerRows(t, pool, table), row) != commit {
			t.Fatalf("commit=%v: wallet email %q, want %q", commit, got.Email, want)
		}
	}
}

// wantStandalone asserts the answer of an operation that commits on its
// own called inside a host transaction: 500 INTERNAL_ERROR whose cause
// wraps storage.ErrStandalone and names the operation.
func wantStandalone(t *testing.T, err error, op string) {
	t.Helper()
	apierrortest.Want(t, err, apierror.InternalError, "")
	if !errors.Is(err, storage.ErrStandalone) || !strings.Contains(errors.Unwrap(err).Error(), op) {
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
		tx := pgtest.Begin(t, pool, pgx.TxOptions{})
		hctx := s.WithTx(ctx, tx)
		wantStandalone(t, guessIn(t, hctx, svc, cred.ID, m.OTPEncryptionTargetBundle, "123456"), "walletauth.Verify")
		pgtest.End(t, tx, false)
	}
	tx := pgtest.Begin(t, pool, pgx.TxOptions{})
	_, err = svc.Challenge(s.WithTx(ctx, tx), cred.ID, walletauth.ChallengeRequest{})
	wantStandalone(t, err, "walletauth.Challenge")
	pgtest.End(t, tx, false)

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
	key, err := authclient.NewClientKey()
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
		tx := pgtest.Begin(t, pool, pgx.TxOptions{IsoLevel: level})
		_, _, err := svc.CreateWallet(s.WithTx(ctx, tx), walletauth.NewWallet{CustomerID: "Customer:iso", Email: "iso@example.com"})
		if err == nil || !strings.Contains(err.Error(), strings.ToUpper(string(level))) || !strings.Contains(err.Error(), "READ COMMITTED") {
			t.Fatalf("%s: CreateWallet answered %v, want a refusal naming the level", level, err)
		}
		pgtest.End(t, tx, true) // even a host that commits keeps nothing of walletgate's
		var wallets []storage.InternalAccount
		mustAtomic(t, s, func(wt storage.Tx) error {
			var err error
			wallets, err = wt.InternalAccounts().ListByCustomer(ctx, "Customer:iso")
			return err
		})
		if len(wallets) != 0 {
			t.Fatalf("%s: wallets %v after a refused CreateWallet", level, wallets)
		}

		tx = pgtest.Begin(t, pool, pgx.TxOptions{IsoLevel: level})
		_, err = svc.ListCredentials(s.WithTx(ctx, tx), "InternalAccount:00000000-0000-4000-8000-000000000000")
		if err == nil || !strings.Contains(err.Error(), strings.ToUpper(string(level))) {
			t.Fatalf("%s: a read answered %v, want a refusal naming the level", level, err)
		}
		pgtest.End(t, tx, false)
	}
	tx := pgtest.Begin(t, pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if _, _, err := svc.CreateWallet(s.WithTx(ctx, tx), walletauth.NewWallet{CustomerID: "Customer:iso", Email: "iso@example.com"}); err != nil {
		t.Fatalf("READ COMMITTED: %v", err)
	}
	pgtest.End(t, tx, true)
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
	client, _ := authclient.NewClientKey()
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

package postgres_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/ownership"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/postgres"
	"github.com/walletgate/walletgate/walletauth"
)

// hostEnds ends tx by commit or rollback.
func hostEnds(t *testing.T, tx pgx.Tx, commit bool) {
	t.Helper()
	end := tx.Rollback
	if commit {
		end = tx.Commit
	}
	if err := end(t.Context()); err != nil {
		t.Fatal(err)
	}
}

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

func events(t *testing.T, s storage.Store, account string) int {
	t.Helper()
	var n int
	mustAtomic(t, s, func(tx storage.Tx) error {
		evs, err := tx.Outbox().ListByAccount(t.Context(), account)
		n = len(evs)
		return err
	})
	return n
}

// TestHostTxPayoutGate: the payout gate, its event and the host's debit
// run in the host's transaction: they commit with it or not at all, and a
// refused payout leaves the transaction usable.
func TestHostTxPayoutGate(t *testing.T) {
	ctx := t.Context()
	pool := newPool(t, 4)
	s := newStore(t, pool)
	table := ledger(t, pool, s)
	svc := gateService(t, s)
	id := pendingWallet(t, s, svc)
	base := events(t, s, id)
	pay := func(hctx context.Context, amount int64, ledgerID string) error {
		return s.Atomic(hctx, func(wt storage.Tx) error {
			if _, err := svc.CheckPayoutIn(ctx, wt, ownership.Payout{AccountID: id, Amount: amount, Currency: "USDC"}); err != nil {
				return err
			}
			if err := payoutEvent(ctx, wt, id); err != nil {
				return err
			}
			return debit(ctx, wt, table, ledgerID)
		})
	}
	for _, commit := range []bool{false, true} {
		tx := begin(t, pool, pgx.TxOptions{})
		hctx := s.WithTx(ctx, tx)
		refused, paid := newID(t, "Ledger"), newID(t, "Ledger")
		err := pay(hctx, 1_000_000_000, refused) // at the threshold: refused
		apierrortest.Want(t, err, apierror.ExternalAccountVerificationRequired, "")
		if err := pay(hctx, 5_000_000, paid); err != nil {
			t.Fatalf("payout below the threshold after a refused one: %v", err)
		}
		hostEnds(t, tx, commit)
		got := ledgerRows(t, pool, table)
		if contains(got, refused) || contains(got, paid) != commit {
			t.Fatalf("commit=%v: ledger %v", commit, got)
		}
		if want := base + map[bool]int{true: 1}[commit]; events(t, s, id) != want {
			t.Fatalf("commit=%v: %d events, want %d", commit, events(t, s, id), want)
		}
	}
}

// TestHostTxRegisterAndStatus: an account registration and a status change
// made in a host transaction commit with the host's row or not at all.
func TestHostTxRegisterAndStatus(t *testing.T) {
	ctx := t.Context()
	pool := newPool(t, 4)
	s := newStore(t, pool)
	table := ledger(t, pool, s)
	svc := gateService(t, s)
	for _, commit := range []bool{false, true} {
		tx := begin(t, pool, pgx.TxOptions{})
		hctx := s.WithTx(ctx, tx)
		customer := newID(t, "Customer")
		hostWrite(t, tx, table, customer)
		a, err := svc.RegisterAccount(hctx, ownership.NewAccount{CustomerID: customer, AccountType: ownership.AccountEthereum,
			Address: "0x00000000000000000000000000000000000000aa", Currency: "USDC", OwnershipType: ownership.FirstParty})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := svc.SetStatus(hctx, a.ID, storage.StatusUnderReview); err != nil {
			t.Fatal(err)
		}
		_, err = svc.SetStatus(hctx, a.ID, "NO_SUCH_STATUS")
		apierrortest.WantFields(t, err, apierror.InvalidInput, "status")
		hostEnds(t, tx, commit)
		var got storage.ExternalAccount
		err = s.Atomic(ctx, func(wt storage.Tx) error {
			var err error
			got, err = wt.ExternalAccounts().Get(ctx, a.ID)
			return err
		})
		switch {
		case commit && (err != nil || got.Status != storage.StatusUnderReview):
			t.Fatalf("committed: account %v, %v; want UNDER_REVIEW", got.Status, err)
		case !commit && !errors.Is(err, storage.ErrNotFound):
			t.Fatalf("rolled back: account %v, %v; want none", got.Status, err)
		}
		if row := contains(ledgerRows(t, pool, table), customer); row != commit {
			t.Fatalf("commit=%v: host row committed %v", commit, row)
		}
	}
}

// TestHostTxCreateWallet: a host's customer row and its embedded wallet
// commit together or not at all; a wallet refused (its address is another
// customer's) leaves the host transaction usable.
func TestHostTxCreateWallet(t *testing.T) {
	ctx := t.Context()
	r := newWauthReplicas(t, walletauth.OTPConfig{}, nil)
	s, svc := r.stores[0], r.services[0]
	pool := newPool(t, 2)
	table := ledger(t, pool, s)
	if _, _, err := svc.CreateWallet(ctx, walletauth.NewWallet{CustomerID: "Customer:taken", Email: "taken@example.com"}); err != nil {
		t.Fatal(err)
	}
	for _, commit := range []bool{false, true} {
		tx := begin(t, pool, pgx.TxOptions{})
		hctx := s.WithTx(ctx, tx)
		customer := newID(t, "Customer")
		hostWrite(t, tx, table, customer)
		_, _, err := svc.CreateWallet(hctx, walletauth.NewWallet{CustomerID: customer, Email: "taken@example.com"})
		apierrortest.Want(t, err, apierror.EmailOTPEmailAlreadyExists, "")
		w, _, err := svc.CreateWallet(hctx, walletauth.NewWallet{CustomerID: customer, Email: customer[len("Customer:"):] + "@example.com"})
		if err != nil {
			t.Fatalf("wallet after a refused one: %v", err)
		}
		hostEnds(t, tx, commit)
		var wallets []storage.InternalAccount
		mustAtomic(t, s, func(wt storage.Tx) error {
			var err error
			wallets, err = wt.InternalAccounts().ListByCustomer(ctx, customer)
			return err
		})
		row := contains(ledgerRows(t, pool, table), customer)
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
	table := ledger(t, pool, s)
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
		tx := begin(t, pool, pgx.TxOptions{})
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
		hostEnds(t, tx, commit)
		got := ledgerRows(t, pool, table)
		if contains(got, failed) || contains(got, paid) != commit {
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
	table := ledger(t, pool, s)
	w, _, key := r.wallet(t, "Customer:mail", "old@example.com")
	call := signedretry.Request{Method: http.MethodPatch, Path: "/customers/mail", Body: []byte(`{"email":"new@example.com"}`)}
	_, ch, err := svc.UpdateEmail(ctx, "Customer:mail", "new@example.com", nil, call)
	if err != nil || ch == nil {
		t.Fatalf("first leg: %v, challenge %v", err, ch)
	}
	retry := stamped(t, call, ch, key)
	for _, commit := range []bool{false, true} {
		tx := begin(t, pool, pgx.TxOptions{})
		hctx := s.WithTx(ctx, tx)
		row := newID(t, "Ledger")
		hostWrite(t, tx, table, row)
		if _, _, err := svc.UpdateEmail(hctx, "Customer:mail", "", nil, retry); err != nil {
			t.Fatalf("commit=%v: retry: %v", commit, err)
		}
		hostEnds(t, tx, commit)
		var got storage.InternalAccount
		mustAtomic(t, s, func(wt storage.Tx) error {
			var err error
			got, err = wt.InternalAccounts().Get(ctx, w.ID)
			return err
		})
		want := map[bool]string{false: "old@example.com", true: "new@example.com"}[commit]
		if got.Email != want || contains(ledgerRows(t, pool, table), row) != commit {
			t.Fatalf("commit=%v: wallet email %q, want %q", commit, got.Email, want)
		}
	}
}

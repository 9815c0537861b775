package ownership_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/ownership"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/postgres"
	"github.com/walletgate/walletgate/storage/postgres/pgtest"
	"github.com/walletgate/walletgate/storage/storagetest"
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

func events(t *testing.T, s storage.Store, account string) int {
	t.Helper()
	return len(storagetest.Events(t, s, account))
}

// TestHostTxPayoutGate: the payout gate, its event and the host's debit
// run in the host's transaction: they commit with it or not at all, and a
// refused payout leaves the transaction usable.
func TestHostTxPayoutGate(t *testing.T) {
	ctx := t.Context()
	pool := newPool(t, 4)
	s := newStore(t, pool)
	table := pgtest.Ledger(t, pool, s.Schema())
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
		tx := pgtest.Begin(t, pool, pgx.TxOptions{})
		hctx := s.WithTx(ctx, tx)
		refused, paid := newID(t, "Ledger"), newID(t, "Ledger")
		err := pay(hctx, 1_000_000_000, refused) // at the threshold: refused
		apierrortest.Want(t, err, apierror.ExternalAccountVerificationRequired, "")
		if err := pay(hctx, 5_000_000, paid); err != nil {
			t.Fatalf("payout below the threshold after a refused one: %v", err)
		}
		pgtest.End(t, tx, commit)
		got := pgtest.LedgerRows(t, pool, table)
		if slices.Contains(got, refused) || slices.Contains(got, paid) != commit {
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
	table := pgtest.Ledger(t, pool, s.Schema())
	svc := gateService(t, s)
	for _, commit := range []bool{false, true} {
		tx := pgtest.Begin(t, pool, pgx.TxOptions{})
		hctx := s.WithTx(ctx, tx)
		customer := newID(t, "Customer")
		pgtest.HostWrite(t, tx, table, customer)
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
		pgtest.End(t, tx, commit)
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
		if row := slices.Contains(pgtest.LedgerRows(t, pool, table), customer); row != commit {
			t.Fatalf("commit=%v: host row committed %v", commit, row)
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
		tx := pgtest.Begin(t, pool, pgx.TxOptions{})
		_, err := svc.Verify(s.WithTx(ctx, tx), id, bad, ownership.AnyTree)
		wantStandalone(t, err, "ownership.Verify")
		pgtest.End(t, tx, false)
	}
	tx := pgtest.Begin(t, pool, pgx.TxOptions{})
	_, err := svc.CompleteLiveness(s.WithTx(ctx, tx), id, false)
	wantStandalone(t, err, "ownership.CompleteLiveness")
	pgtest.End(t, tx, false)

	_, err = svc.Verify(ctx, id, bad, ownership.AnyTree)
	apierrortest.Want(t, err, apierror.InvalidInput, "")
	_, err = svc.Verify(ctx, id, bad, ownership.AnyTree)
	apierrortest.Want(t, err, apierror.Conflict, "")
	_, err = svc.CheckPayout(ctx, ownership.Payout{AccountID: id, Amount: 1, Currency: "USDC"})
	apierrortest.Want(t, err, apierror.ExternalAccountVerificationRequired, "")
}

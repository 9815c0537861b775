package ownership_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/ownership"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/postgres"
	"github.com/walletgate/walletgate/storage/postgres/pgtest"
	"github.com/walletgate/walletgate/storage/storagetest"
)

// gatePolicy: a wallet pending verification receives below 1000 USDC; no
// payout is above 1,000,000 USDC.
var gatePolicy = ownership.PayoutPolicy{VerificationThresholds: ownership.Limits{ByCurrency: map[string]int64{"USDC": 1_000_000_000}},
	MaxAmounts: ownership.Limits{ByCurrency: map[string]int64{"USDC": 1_000_000_000_000}}}

func gateService(t *testing.T, s storage.Store) *ownership.Service {
	t.Helper()
	svc, err := ownership.New(ownership.Config{Store: s, Payouts: gatePolicy})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// pendingWallet stores a first-party wallet pending ownership verification
// with an outstanding WALLET_SIGNATURE challenge.
func pendingWallet(t *testing.T, s storage.Store, svc *ownership.Service) string {
	t.Helper()
	ctx := t.Context()
	a := storage.ExternalAccount{ID: newID(t, "ExternalAccount"), CustomerID: "Customer:gate", OwnershipType: ownership.FirstParty,
		Status: storage.StatusPendingOwnershipVerification, Currency: "USDC", AccountType: ownership.AccountEthereum,
		Address: "0x00000000000000000000000000000000000000aa", CreatedAt: time.Now().UTC(), UpdatedAt: time.Now().UTC()}
	mustAtomic(t, s, func(tx storage.Tx) error { return tx.ExternalAccounts().Create(ctx, &a) })
	if _, err := svc.StartChallenge(ctx, a.ID, ownership.MethodWalletSignature, ownership.AnyTree); err != nil {
		t.Fatal(err)
	}
	return a.ID
}

// payoutEvent is the payout's effect in the race: an outbox event, whose Seq
// orders it against the status event of the flip in commit order.
func payoutEvent(c context.Context, tx storage.Tx, id string) error {
	eid, err := storage.NewID(nil, "Webhook")
	if err != nil {
		return err
	}
	return tx.Outbox().Append(c, &storage.Event{ID: eid, Type: "PAYOUT", AccountID: id, Payload: []byte(`{}`), CreatedAt: time.Now()})
}

// TestPayoutGateReplicasRace: four replicas (four pools on one schema), four
// goroutines each, make payouts below the threshold through
// ownership.CheckPayoutIn, each writing a PAYOUT event in its transaction,
// while a verify with an invalid signature flips the wallet to UNVERIFIED.
// The outbox's Seq is commit order: no PAYOUT event may follow the status
// event of the flip, and every payout after it is refused with 400
// EXTERNAL_ACCOUNT_VERIFICATION_REQUIRED.
func TestPayoutGateReplicasRace(t *testing.T) {
	ctx := t.Context()
	first := newStore(t, newPool(t, 4))
	stores := []*postgres.Store{first}
	for range replicas - 1 {
		stores = append(stores, pgtest.SameSchema(t, first, newPool(t, 4), postgres.Config{}))
	}
	svcs := map[*postgres.Store]*ownership.Service{}
	for _, s := range stores {
		svcs[s] = gateService(t, s)
	}
	id := pendingWallet(t, first, svcs[first])

	var passed, refused, conflicts, flipTries atomic.Int64
	flipped := make(chan struct{})
	go func() {
		defer close(flipped)
		for passed.Load() < 5 {
			time.Sleep(time.Millisecond)
		}
		deadline := time.Now().Add(20 * time.Second)
		for i := 0; ; i++ {
			_, err := svcs[stores[i%len(stores)]].Verify(ctx, id, ownership.VerifyRequest{Signature: "0x00"}, ownership.AnyTree)
			switch {
			case apierror.CodeOf(err) == apierror.InvalidInput:
				flipTries.Store(int64(i + 1))
				return // flipped to UNVERIFIED
			case apierror.CodeOf(err) != apierror.Conflict || time.Now().After(deadline):
				t.Errorf("flip (attempt %d): %v", i+1, err)
				return
			}
		}
	}()
	// Four payers per replica pay until the flip and a few times after it.
	payout := func(s *postgres.Store) error {
		err := s.Atomic(ctx, func(tx storage.Tx) error {
			if _, err := svcs[s].CheckPayoutIn(ctx, tx, ownership.Payout{AccountID: id, Amount: 1_000_000}); err != nil {
				return err
			}
			time.Sleep(200 * time.Microsecond) // the host's debit
			return payoutEvent(ctx, tx, id)
		})
		switch apierror.CodeOf(err) {
		case apierror.Code{}:
			passed.Add(1)
		case apierror.ExternalAccountVerificationRequired:
			refused.Add(1)
			if e := apierror.As(err); !strings.Contains(e.Reason(), "UNVERIFIED") || e.Status() != 400 {
				return err
			}
		case apierror.Conflict:
			conflicts.Add(1)
		default:
			return err
		}
		return nil
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(stores)*4)
	for _, s := range stores {
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				after := 0
				for after < 3 {
					select {
					case <-flipped:
						after++
					default:
					}
					time.Sleep(time.Duration(rand.IntN(1000)) * time.Microsecond)
					if err := payout(s); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("payout: %v", err)
	}
	evs := storagetest.Events(t, first, id)
	flipSeq, payouts := int64(-1), int64(0)
	for _, e := range evs {
		switch e.Type {
		case "PAYOUT":
			payouts++
			if flipSeq >= 0 {
				t.Fatalf("a payout (seq %d) committed after the flip to UNVERIFIED (seq %d)", e.Seq, flipSeq)
			}
		case ownership.EventStatusUpdated:
			if !strings.Contains(string(e.Payload), `"status":"UNVERIFIED"`) {
				t.Fatalf("status event %s", e.Payload)
			}
			flipSeq = e.Seq
		}
	}
	if flipSeq < 0 || payouts != passed.Load() || passed.Load() == 0 || refused.Load() == 0 {
		t.Fatalf("flip seq %d, %d payout events, %d passed", flipSeq, payouts, passed.Load())
	}
	// After the flip every payout is refused, on every replica.
	for _, s := range stores {
		err := s.Atomic(ctx, func(tx storage.Tx) error {
			_, err := svcs[s].CheckPayoutIn(ctx, tx, ownership.Payout{AccountID: id, Amount: 1})
			return err
		})
		if e := apierror.As(err); e == nil || e.Code != apierror.ExternalAccountVerificationRequired || !strings.Contains(e.Reason(), "UNVERIFIED") {
			t.Fatalf("payout after the flip: %v", err)
		}
	}
	t.Logf("%d payouts passed before the flip, %d refused after it, %d gave up on a changing account; the flip took %d attempts",
		passed.Load(), refused.Load(), conflicts.Load(), flipTries.Load())
}

// TestPayoutGateHold shows both orders of a payout and a status change on
// two replicas, deterministically:
//
//   - the payout holds the account first: the change (a compare-and-set on
//     the version it read) waits for the payout to commit and then loses
//     with storage.ErrConflict; retried, it commits after the payout;
//   - the change holds the account first (updated, not committed): the
//     payout's gate waits for it and then refuses on the new status.
func TestPayoutGateHold(t *testing.T) {
	ctx := t.Context()
	poolA := newPool(t, 4)
	a := newStore(t, poolA)
	b := pgtest.SameSchema(t, a, newPool(t, 4), postgres.Config{})
	svcA := gateService(t, a)
	id := pendingWallet(t, a, svcA)
	flip := func(s storage.Store, during func()) error {
		return s.Atomic(ctx, func(tx storage.Tx) error {
			acct, err := tx.ExternalAccounts().Get(ctx, id)
			if err != nil {
				return err
			}
			acct.Status = storage.StatusUnverified
			if err := tx.ExternalAccounts().Update(ctx, &acct); err != nil {
				return err
			}
			during()
			return nil
		})
	}

	// 1. The payout holds first.
	held, flipDone := make(chan struct{}), make(chan error, 1)
	var payoutCommitted atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		<-held
		err := b.Atomic(ctx, func(tx storage.Tx) error {
			acct, err := tx.ExternalAccounts().Get(ctx, id)
			if err != nil {
				return err
			}
			// Read while the payout holds the account: the version is the
			// committed one, which the payout's hold has already replaced.
			acct.Status = storage.StatusUnverified
			return tx.ExternalAccounts().Update(ctx, &acct)
		})
		if err == nil && !payoutCommitted.Load() {
			err = errors.New("the change committed while the payout held the account")
		}
		flipDone <- err
	}()
	err := a.Atomic(ctx, func(tx storage.Tx) error {
		d, err := svcA.CheckPayoutIn(ctx, tx, ownership.Payout{AccountID: id, Amount: 1_000_000})
		if err != nil {
			return err
		}
		if d.Rule != ownership.RuleBelowThreshold {
			t.Errorf("rule %s", d.Rule)
		}
		close(held)
		pgtest.AwaitLockWait(t, poolA, a.Schema()) // the change waits on the row
		payoutCommitted.Store(true)
		return payoutEvent(ctx, tx, id)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-flipDone; err != nil {
		t.Fatalf("change queued behind a held payout: %v", err)
	}
	wg.Wait()
	if err := flip(b, func() {}); err != nil {
		t.Fatalf("retried change: %v", err)
	}
	if err := a.Atomic(ctx, func(tx storage.Tx) error {
		_, err := svcA.CheckPayoutIn(ctx, tx, ownership.Payout{AccountID: id, Amount: 1})
		return err
	}); apierror.CodeOf(err) != apierror.ExternalAccountVerificationRequired {
		t.Fatalf("payout after the change: %v", err)
	}

	// 2. The change holds first: back to pending, then flip again while a
	// payout is waiting.
	mustAtomic(t, a, func(tx storage.Tx) error {
		acct, err := tx.ExternalAccounts().Get(ctx, id)
		if err != nil {
			return err
		}
		acct.Status = storage.StatusPendingOwnershipVerification
		return tx.ExternalAccounts().Update(ctx, &acct)
	})
	updated, payoutDone := make(chan struct{}), make(chan error, 1)
	var changeCommitted atomic.Bool
	go func() {
		<-updated
		payoutDone <- a.Atomic(ctx, func(tx storage.Tx) error {
			_, err := svcA.CheckPayoutIn(ctx, tx, ownership.Payout{AccountID: id, Amount: 1_000_000})
			if err == nil && !changeCommitted.Load() {
				return errors.New("the gate decided while the change held the account")
			}
			return err
		})
	}()
	if err := flip(b, func() {
		close(updated)
		pgtest.AwaitLockWait(t, poolA, a.Schema()) // the payout waits on the row
		changeCommitted.Store(true)
	}); err != nil {
		t.Fatal(err)
	}
	err = <-payoutDone
	if e := apierror.As(err); e == nil || e.Code != apierror.ExternalAccountVerificationRequired || !strings.Contains(e.Reason(), "UNVERIFIED") {
		t.Fatalf("payout racing a held change: %v", err)
	}
}

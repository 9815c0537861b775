package ownership_test

import (
	"context"
	"crypto/ecdsa"
	"encoding/hex"
	"encoding/json"
	"os"
	"sync"
	"testing"

	"github.com/ethereum/go-ethereum/accounts"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/ownership"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/memory"
	"github.com/walletgate/walletgate/storage/postgres"
	"github.com/walletgate/walletgate/storage/postgres/pgtest"
)

// regStores returns the stores the registration tests run on: memory, and
// PostgreSQL when WALLETGATE_POSTGRES_DSN is set.
func regStores(t *testing.T) map[string]storage.Store {
	t.Helper()
	out := map[string]storage.Store{"memory": memory.New()}
	if dsn := os.Getenv(pgtest.EnvDSN); dsn != "" {
		out["postgres"] = pgtest.Store(t, pgtest.Pool(t, dsn, 4, nil), postgres.Config{})
	}
	return out
}

// Concurrent host-driven changes queue on the held account: every change
// that happened has exactly one event, in order, and the last event carries
// the stored status.
func TestSetStatusConcurrent(t *testing.T) {
	ctx := t.Context()
	for name, store := range regStores(t) {
		t.Run(name, func(t *testing.T) {
			svc, err := ownership.New(ownership.Config{Store: store, Payouts: testPolicy})
			if err != nil {
				t.Fatal(err)
			}
			a, err := svc.RegisterAccount(ctx, ownership.NewAccount{CustomerID: "Customer:1", AccountType: ownership.AccountSolana,
				Address: regSolana, Currency: "USDC", OwnershipType: ownership.FirstParty})
			if err != nil {
				t.Fatal(err)
			}
			targets := []storage.AccountStatus{storage.StatusUnderReview, storage.StatusActive, storage.StatusUnverified, storage.StatusPending}
			var wg sync.WaitGroup
			for i := 0; i < 16; i++ {
				wg.Add(1)
				go func(to storage.AccountStatus) {
					defer wg.Done()
					if _, err := svc.SetStatus(ctx, a.ID, to); err != nil {
						t.Errorf("SetStatus(%s): %v", to, err)
					}
				}(targets[i%len(targets)])
			}
			wg.Wait()
			var stored storage.ExternalAccount
			_ = store.Atomic(ctx, func(tx storage.Tx) error { stored, err = tx.ExternalAccounts().Get(ctx, a.ID); return err })
			if err != nil {
				t.Fatal(err)
			}
			ev := eventsOf(t, store, a.ID)
			// One event for the registration plus one per version bump.
			if int64(len(ev)) != stored.Version {
				t.Fatalf("%d events for version %d", len(ev), stored.Version)
			}
			if got := eventStatus(t, ev[len(ev)-1]); got != string(stored.Status) {
				t.Fatalf("last event %s, stored %s", got, stored.Status)
			}
			for i := 1; i < len(ev); i++ {
				if eventStatus(t, ev[i]) == eventStatus(t, ev[i-1]) {
					t.Fatalf("event %d repeats status %s", i, eventStatus(t, ev[i]))
				}
			}
		})
	}
}

// A proof applies only to the account it was checked against: when the
// address changes between the signature check and the status change (here
// from inside the verifier, which runs between Verify's two transactions),
// Verify answers 409 and changes nothing; the same signature then answers
// 409 because the challenge names the old address; a new challenge signed
// by the new address's key activates the account, and the status event
// names the proven address.
func TestVerifyAppliesToTheProvenAddress(t *testing.T) {
	ctx := t.Context()
	oldKey, newKey := mustKey(), mustKeyN(2)
	oldAddr, newAddr := crypto.PubkeyToAddress(oldKey.PublicKey).Hex(), crypto.PubkeyToAddress(newKey.PublicKey).Hex()
	for name, store := range regStores(t) {
		t.Run(name, func(t *testing.T) {
			var id string
			swap := true
			evm := ownership.EVMVerifier{}
			vs := ownership.DefaultVerifiers()
			vs[ownership.AccountEthereum] = ownership.VerifierFunc(func(c context.Context, w ownership.Wallet, msg []byte, sig ownership.Signature) error {
				if swap { // the host changes the address while the signature is checked
					swap = false
					err := store.Atomic(c, func(tx storage.Tx) error {
						a, err := tx.ExternalAccounts().Get(c, id)
						if err != nil {
							return err
						}
						a.Address = newAddr
						return tx.ExternalAccounts().Update(c, &a)
					})
					if err != nil {
						t.Fatal(err)
					}
				}
				return evm.Verify(c, w, msg, sig)
			})
			svc, err := ownership.New(ownership.Config{Store: store, Payouts: testPolicy, Verifiers: vs})
			if err != nil {
				t.Fatal(err)
			}
			a, err := svc.RegisterAccount(ctx, ownership.NewAccount{CustomerID: "Customer:1", AccountType: ownership.AccountEthereum,
				Address: oldAddr, Currency: "USDC", OwnershipType: ownership.FirstParty})
			if err != nil {
				t.Fatal(err)
			}
			id = a.ID
			c, err := svc.StartChallenge(ctx, id, ownership.MethodWalletSignature, ownership.CustomerTree)
			if err != nil {
				t.Fatal(err)
			}
			sig := signEVMWith(t, oldKey, c.MessageToSign)
			_, err = svc.Verify(ctx, id, ownership.VerifyRequest{Signature: sig}, ownership.CustomerTree)
			apierrortest.Want(t, err, apierror.Conflict, "the account changed after the signature was checked; submit the signature again")
			stored := storedAccount(t, store, id)
			if stored.Status != storage.StatusPendingOwnershipVerification || stored.Address != newAddr {
				t.Fatalf("after the 409: status %s address %s", stored.Status, stored.Address)
			}
			if err := store.Atomic(ctx, func(tx storage.Tx) error { _, err := tx.Challenges().Get(ctx, id); return err }); err != nil {
				t.Fatalf("the 409 consumed the challenge: %v", err)
			}
			// The same signature again: the challenge names the old address.
			_, err = svc.Verify(ctx, id, ownership.VerifyRequest{Signature: sig}, ownership.CustomerTree)
			apierrortest.Want(t, err, apierror.Conflict, "the challenge was issued for other account details (address, type or network); start a new challenge")
			if st := storedAccount(t, store, id).Status; st != storage.StatusPendingOwnershipVerification {
				t.Fatalf("status %s after a stale challenge", st)
			}
			// A proof of the new address activates it, and the event says so.
			c, err = svc.StartChallenge(ctx, id, ownership.MethodWalletSignature, ownership.CustomerTree)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := svc.Verify(ctx, id, ownership.VerifyRequest{Signature: signEVMWith(t, newKey, c.MessageToSign)}, ownership.CustomerTree); err != nil {
				t.Fatal(err)
			}
			ev := eventsOf(t, store, id)
			var last struct {
				Data struct {
					Status string
					Proof  struct{ Method, Address string }
				}
			}
			if err := json.Unmarshal(ev[len(ev)-1].Payload, &last); err != nil {
				t.Fatal(err)
			}
			if last.Data.Status != "ACTIVE" || last.Data.Proof.Method != ownership.MethodWalletSignature || last.Data.Proof.Address != newAddr {
				t.Fatalf("last event %s", ev[len(ev)-1].Payload)
			}
			for _, e := range ev[:len(ev)-1] {
				if eventStatus(t, e) == "ACTIVE" {
					t.Fatalf("an ACTIVE event before the proof of the new address: %s", e.Payload)
				}
			}
		})
	}
}

func mustKeyN(n byte) *ecdsa.PrivateKey {
	seed := make([]byte, 32)
	seed[31] = n
	k, err := crypto.ToECDSA(seed)
	if err != nil {
		panic(err)
	}
	return k
}

func signEVMWith(t *testing.T, k *ecdsa.PrivateKey, msg string) string {
	t.Helper()
	sig, err := crypto.Sign(accounts.TextHash([]byte(msg)), k)
	if err != nil {
		t.Fatal(err)
	}
	sig[64] += 27
	return "0x" + hex.EncodeToString(sig)
}

func storedAccount(t *testing.T, store storage.Store, id string) storage.ExternalAccount {
	ctx := t.Context()
	t.Helper()
	var a storage.ExternalAccount
	err := store.Atomic(ctx, func(tx storage.Tx) error {
		var err error
		a, err = tx.ExternalAccounts().Get(ctx, id)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

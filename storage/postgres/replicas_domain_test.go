package postgres_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/accounts"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/ownership"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/postgres"
	"github.com/walletgate/walletgate/walletauth"
	"github.com/walletgate/walletgate/walletauth/secret"
)

// TestReplicasDomainOnce runs the domain operations that must happen once
// (an OTP verify leg and an ownership verify) from 16 goroutines on each of
// four replicas: one succeeds, every other attempt gets a typed error.
func TestReplicasDomainOnce(t *testing.T) {
	ctx := t.Context()
	first := newStore(t, newPool(t, 4))
	stores := []*postgres.Store{first}
	for range replicas - 1 {
		stores = append(stores, sameSchema(t, first, newPool(t, 4)))
	}

	t.Run("OTPVerifyLeg1", func(t *testing.T) {
		services := map[*postgres.Store]*walletauth.Service{}
		// Replicas share the at-rest keys, as they must.
		atRest, _ := secret.GenerateKey(nil, "replicas")
		keys, _ := secret.NewKeyring(atRest)
		for _, s := range stores {
			svc, err := walletauth.New(walletauth.Config{Store: s, Sandbox: true, Keys: walletauth.Keys{SigningKey: testSigningKey, Sealer: keys, CodeMACKey: bytes.Repeat([]byte{3}, 32)}})
			if err != nil {
				t.Fatal(err)
			}
			services[s] = svc
		}
		svc := services[first]
		_, cred, err := svc.CreateWallet(ctx, walletauth.NewWallet{CustomerID: "Customer:r", Email: "replica@example.com"})
		if err != nil {
			t.Fatal(err)
		}
		m, err := svc.Challenge(ctx, cred.ID, walletauth.ChallengeRequest{})
		if err != nil {
			t.Fatal(err)
		}
		key, _ := walletauth.NewClientKey()
		bundle, err := key.SealOTP(m.OTPEncryptionTargetBundle, nil, walletauth.SandboxOTPCode, nil)
		if err != nil {
			t.Fatal(err)
		}
		req := walletauth.VerifyRequest{Type: storage.EmailOTP, EncryptedOTPBundle: bundle}
		call := signedretry.Request{Method: "POST", Path: "/auth/credentials/" + cred.ID + "/verify", Body: []byte(`{"type":"EMAIL_OTP"}`)}
		errs := race(t, stores, func(c context.Context, s *postgres.Store) error {
			_, _, err := services[s].Verify(c, cred.ID, req, call)
			return err
		})
		oneWinner(t, "OTP verify leg 1", errs, func(err error) bool {
			return apierror.CodeOf(err) == apierror.Unauthorized && apierror.As(err).Reason() == "OTP already used"
		})
	})

	t.Run("OwnershipVerify", func(t *testing.T) {
		key, _ := crypto.HexToECDSA("4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318")
		addr := crypto.PubkeyToAddress(key.PublicKey).Hex()
		now := time.Now().UTC()
		a := storage.ExternalAccount{ID: newID(t, "ExternalAccount"), CustomerID: "Customer:r", OwnershipType: "FIRST_PARTY",
			Status: storage.StatusPendingOwnershipVerification, Currency: "USDC", AccountType: ownership.AccountEthereum,
			Address: addr, Info: json.RawMessage(`{"accountType":"ETHEREUM_WALLET"}`), CreatedAt: now, UpdatedAt: now}
		mustAtomic(t, first, func(tx storage.Tx) error { return tx.ExternalAccounts().Create(ctx, &a) })
		services := map[*postgres.Store]*ownership.Service{}
		for _, s := range stores {
			svc, err := ownership.New(ownership.Config{Store: s})
			if err != nil {
				t.Fatal(err)
			}
			services[s] = svc
		}
		c, err := services[first].StartChallenge(ctx, a.ID, ownership.MethodWalletSignature, ownership.CustomerTree)
		if err != nil {
			t.Fatal(err)
		}
		sig, _ := crypto.Sign(accounts.TextHash([]byte(c.MessageToSign)), key)
		sig[64] += 27
		req := ownership.VerifyRequest{Signature: "0x" + hex.EncodeToString(sig)}
		errs := race(t, stores, func(cx context.Context, s *postgres.Store) error {
			_, err := services[s].Verify(cx, a.ID, req, ownership.CustomerTree)
			return err
		})
		oneWinner(t, "ownership verify", errs, func(err error) bool { return apierror.CodeOf(err) == apierror.Conflict })
		mustAtomic(t, first, func(tx storage.Tx) error {
			evs, err := tx.Outbox().ListByAccount(ctx, a.ID)
			if err == nil && len(evs) != 1 {
				t.Fatalf("%d status events, want 1", len(evs))
			}
			return err
		})
	})
}

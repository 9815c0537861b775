package sandbox_test

import (
	"bytes"
	"testing"

	"github.com/walletgate/walletgate/sandbox"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/memory"
	"github.com/walletgate/walletgate/storage/storagetest"
	"github.com/walletgate/walletgate/walletauth"
	"github.com/walletgate/walletgate/walletauth/authclient"
	"github.com/walletgate/walletgate/walletauth/secret"
)

// TestSimulatorSecretKeys: the sandbox stores OTP issuances sealed and
// MAC'd like production does, under generated keys by default and under the
// configured ones when given; two simulators given the same keys on one
// store verify each other's codes.
func TestSimulatorSecretKeys(t *testing.T) {
	ctx := t.Context()
	issue := func(t *testing.T, sim *sandbox.Simulator) (string, walletauth.ChallengeResponse, storage.OTPIssuance) {
		t.Helper()
		_, cred, err := sim.Auth().CreateWallet(ctx, walletauth.NewWallet{CustomerID: "Customer:k", Email: "keys@example.com"})
		if err != nil {
			t.Fatal(err)
		}
		m, err := sim.Auth().Challenge(ctx, cred.ID, walletauth.ChallengeRequest{})
		if err != nil {
			t.Fatal(err)
		}
		var iss *storage.OTPIssuance
		err = sim.Store().Atomic(ctx, func(tx storage.Tx) error {
			iss, err = storagetest.Issuance(ctx, tx, cred.ID)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if iss == nil {
			t.Fatalf("no issuance stored for %s", cred.ID)
		}
		if iss.Code == walletauth.SandboxOTPCode || len(iss.Code) != 64 {
			t.Fatalf("the sandbox stores the code as %q", iss.Code)
		}
		return cred.ID, *m, *iss
	}

	t.Run("generated", func(t *testing.T) {
		sim, err := sandbox.New(sandbox.Config{})
		if err != nil {
			t.Fatal(err)
		}
		defer sim.Close()
		_, _, iss := issue(t, sim)
		if _, err := secret.KeyID(iss.TargetKey); err != nil {
			t.Fatalf("target key not sealed: %v", err)
		}
	})
	t.Run("configured and shared", func(t *testing.T) {
		k, _ := secret.GenerateKey(nil, "sandbox-1")
		keys, _ := secret.NewKeyring(k)
		mac := bytes.Repeat([]byte{4}, 32)
		store := memory.New()
		var sims [2]*sandbox.Simulator
		for i := range sims {
			sim, err := sandbox.New(sandbox.Config{Store: store, Sealer: keys, CodeMACKey: mac})
			if err != nil {
				t.Fatal(err)
			}
			defer sim.Close()
			sims[i] = sim
		}
		credID, m, iss := issue(t, sims[0])
		if id, err := secret.KeyID(iss.TargetKey); err != nil || id != "sandbox-1" {
			t.Fatalf("target key sealed under %q (%v), want sandbox-1", id, err)
		}
		key, _ := authclient.NewClientKey()
		bundle, err := key.SealOTP(m.OTPEncryptionTargetBundle, sims[0].Auth().SigningPublicKey(), walletauth.SandboxOTPCode, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, ch, err := sims[1].Auth().Verify(ctx, credID, walletauth.VerifyRequest{Type: storage.EmailOTP, EncryptedOTPBundle: bundle},
			signedretry.Request{Method: "POST", Path: "/auth/credentials/" + credID + "/verify", Body: []byte(`{"type":"EMAIL_OTP"}`)})
		if err != nil || ch == nil {
			t.Fatalf("the other simulator's leg 1: %v", err)
		}
	})
}

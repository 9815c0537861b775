package sandbox_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/sandbox"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/walletauth"
	"github.com/walletgate/walletgate/walletauth/authclient"
)

// goLogin logs a wallet in through walletauth's Go API and returns the
// session key.
func goLogin(t *testing.T, sim *sandbox.Simulator, walletID string) *authclient.ClientKey {
	ctx := t.Context()
	creds, err := sim.Auth().ListCredentials(ctx, walletID)
	if err != nil {
		t.Fatal(err)
	}
	m, err := sim.Auth().Challenge(ctx, creds[0].ID, walletauth.ChallengeRequest{})
	if err != nil {
		t.Fatal(err)
	}
	key, _ := authclient.NewClientKey()
	bundle, err := key.SealOTP(m.OTPEncryptionTargetBundle, sim.Auth().SigningPublicKey(), walletauth.SandboxOTPCode, nil)
	if err != nil {
		t.Fatal(err)
	}
	req := walletauth.VerifyRequest{Type: storage.EmailOTP, EncryptedOTPBundle: bundle}
	call := signedretry.Request{Method: "POST", Path: "/auth/credentials/" + creds[0].ID + "/verify", Body: []byte(`{}`)}
	_, ch, err := sim.Auth().Verify(ctx, creds[0].ID, req, call)
	if err != nil {
		t.Fatal(err)
	}
	call.Signature, _ = key.Stamp(ch.PayloadToSign)
	call.RequestID = ch.RequestID
	if _, _, err := sim.Auth().Verify(ctx, creds[0].ID, req, call); err != nil {
		t.Fatal(err)
	}
	return key
}

// stamped returns the retry of a challenge, stamped by key.
func stamped(key *authclient.ClientKey, ch *signedretry.Challenge) signedretry.Request {
	sig, _ := key.Stamp(ch.PayloadToSign)
	return signedretry.Request{Signature: sig, RequestID: ch.RequestID}
}

func TestGoAPIFlow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		sim, err := sandbox.New(sandbox.Config{WalletCurrency: "USD"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(sim.Close)
		cust, err := sim.CreateCustomer(ctx, sandbox.CustomerCreate{CustomerType: "INDIVIDUAL", FullName: "Go Api", Email: "goapi@example.com"})
		if err != nil {
			t.Fatal(err)
		}
		wallets, _ := sim.ListInternalAccounts(ctx, cust.ID, sandbox.ListOptions{})
		wallet := wallets.Data[0].ID
		key := goLogin(t, sim, wallet)

		info, _ := json.Marshal(map[string]any{"accountType": "USD_ACCOUNT", "accountNumber": "40400001", "routingNumber": "021000021",
			"beneficiary": map[string]any{"beneficiaryType": "INDIVIDUAL", "fullName": "Go Api"}})
		ext, err := sim.CreateExternalAccount(ctx, sandbox.ExternalAccountCreate{CustomerID: cust.ID, Currency: "USD", AccountInfo: info})
		if err != nil || ext.BeneficiaryVerificationStatus != "MATCHED" {
			t.Fatalf("external: %v %+v", err, ext)
		}
		_, err = sim.CreateExternalAccount(ctx, sandbox.ExternalAccountCreate{CustomerID: cust.ID})
		apierrortest.Want(t, err, apierror.InvalidInput, "")
		tx, err := sim.TransferIn(ctx, sandbox.TransferRequest{Source: sandbox.AccountRef{AccountID: ext.ID},
			Destination: sandbox.AccountRef{AccountID: wallet}, Amount: 5_000})
		if err != nil || tx.Status != "COMPLETED" {
			t.Fatalf("transfer-in: %v %+v", err, tx)
		}
		a, _ := sim.GetInternalAccount(ctx, wallet)
		if a.Balance != (sandbox.Money{Amount: 5_000, Currency: "USD"}) {
			t.Fatalf("balance %+v", a.Balance)
		}

		q, err := sim.CreateQuote(ctx, sandbox.QuoteRequest{Source: sandbox.QuoteSource{AccountID: wallet},
			Destination: sandbox.QuoteDestination{AccountID: ext.ID}, LockedCurrencySide: "SENDING", LockedCurrencyAmount: 1_000})
		if err != nil {
			t.Fatal(err)
		}
		_, ch, err := sim.ExecuteQuote(ctx, q.ID, "", signedretry.Request{})
		if err != nil || ch == nil {
			t.Fatalf("execute leg 1: %v %v", err, ch)
		}
		done, _, err := sim.ExecuteQuote(ctx, q.ID, "", stamped(key, ch))
		if err != nil || done.Status != "COMPLETED" {
			t.Fatalf("execute leg 2: %v %+v", err, done)
		}
		got, _ := sim.GetTransaction(ctx, done.TransactionID)
		if got.SentAmount.Amount != 1_000 {
			t.Fatalf("transaction %+v", got)
		}

		_, ch, err = sim.UpdateWallet(ctx, wallet, walletauth.PrivacyRequest{PrivateEnabled: new(bool)}, signedretry.Request{})
		if err != nil || ch == nil {
			t.Fatalf("privacy leg 1: %v", err)
		}
		time.Sleep(time.Minute)
		w, _, err := sim.UpdateWallet(ctx, wallet, walletauth.PrivacyRequest{PrivateEnabled: new(bool)}, stamped(key, ch))
		if err != nil || !w.UpdatedAt.Equal(time.Now()) {
			t.Fatalf("privacy leg 2: %v %+v", err, w)
		}
		_, pub := exportKey(t)
		_, ch, err = sim.ExportWallet(ctx, wallet, walletauth.ExportRequest{ClientPublicKey: pub}, signedretry.Request{})
		if err != nil || ch == nil {
			t.Fatalf("export leg 1: %v", err)
		}
		exp, _, err := sim.ExportWallet(ctx, wallet, walletauth.ExportRequest{ClientPublicKey: pub}, stamped(key, ch))
		if err != nil || exp.ID != wallet {
			t.Fatalf("export leg 2: %v", err)
		}

		card, err := sim.CreateCard(ctx, sandbox.CardRequest{CustomerID: cust.ID})
		apierrortest.Want(t, err, apierror.CardholderKYCNotApproved, "")
		if card != nil {
			t.Fatalf("card before KYC: %+v", card)
		}
		if _, err := sim.VerifyCustomer(ctx, sandbox.VerificationRequest{CustomerID: cust.ID}); err != nil {
			t.Fatal(err)
		}
		card, err = sim.CreateCard(ctx, sandbox.CardRequest{CustomerID: cust.ID})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sim.UpdateCard(ctx, card.ID, sandbox.CardUpdate{State: "CLOSED"}); err != nil {
			t.Fatal(err)
		}
		if _, err := sim.GetCard(ctx, card.ID); err != nil {
			t.Fatal(err)
		}
		if err := sim.DeleteExternalAccount(ctx, ext.ID); err != nil {
			t.Fatal(err)
		}
	})
}

func TestFieldLimits(t *testing.T) {
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	body, _ := json.Marshal(map[string]any{"customerType": "INDIVIDUAL", "email": "a@b.co",
		"fullName": strings.Repeat("é", 256), "platformCustomerId": "bad\u0007id",
		"sourceOfWealthCategories": slices.Repeat([]string{"OTHER"}, 17)})
	_, err := sandbox.ParseCustomerCreate(body, now)
	if got := fields(apierrortest.Want(t, err, apierror.InvalidInput, "")); !slices.Equal(got, []string{"platformCustomerId", "sourceOfWealthCategories", "fullName"}) {
		t.Fatalf("fields %v (%v)", got, err)
	}
	_, err = sandbox.ParseCustomerCreate([]byte(`{"customerType":"INDIVIDUAL","email":"a@b.co","fullName":"A","birthDate":"1899-12-31"}`), now)
	apierrortest.Want(t, err, apierror.InvalidInput, "")
}

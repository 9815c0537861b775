package payout_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/ownership"
	"github.com/walletgate/walletgate/ownership/payout"
	"github.com/walletgate/walletgate/ownership/policy"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/memory"
	"github.com/walletgate/walletgate/walletauth"
	"github.com/walletgate/walletgate/walletauth/authclient"
)

// A host's payout of an embedded wallet: the wallet's session signs it,
// the library runs the chain (the destination the customer's own, the
// payout gate, the payout policy) and the host's Pay debits and records an
// allowed payout in the same transaction. A payout the policy holds pays
// nothing until the risk desk approves it.
func Example() {
	ctx := context.Background()
	store := memory.New()
	keys, _ := walletauth.EphemeralKeys(nil)
	auth, _ := walletauth.New(walletauth.Config{Store: store, Keys: keys, Sandbox: true}) // every code is 000000
	gate, _ := ownership.New(ownership.Config{Store: store,
		Payouts: ownership.PayoutPolicy{MaxAmounts: ownership.Limits{ByCurrency: map[string]int64{"USD": 10_000_000}}}})
	rules, _ := policy.Parse([]byte(`{"referenceCurrency": "USD", "rules": [
		{"name": "review", "match": {"minAmount": 100000}, "action": "REQUIRE_APPROVAL",
			"approval": {"count": 1, "operators": ["risk-desk"], "ttl": "24h"}},
		{"name": "default", "match": {}, "action": "ALLOW"}]}`))
	limits, _ := policy.New(policy.Config{Rules: rules})
	payouts, err := payout.New(payout.Config{Store: store, Gate: gate, Policy: limits, Wallets: auth, Clock: time.Now})
	if err != nil {
		fmt.Println(err)
		return
	}

	// A customer's wallet, a session of it, and a bank account of the
	// customer's.
	wallet, email, _ := auth.CreateWallet(ctx, walletauth.NewWallet{CustomerID: "Customer:42", Email: "ada@example.com"})
	key := sandboxLogin(ctx, auth, email.ID)
	bank, _ := gate.RegisterAccount(ctx, ownership.NewAccount{CustomerID: "Customer:42", AccountType: "USD_ACCOUNT",
		Address: "000123456789", Currency: "USD"})

	// The host's payout: what the wallet signs, and the host's debit and
	// record, written in the payout's transaction (on PostgreSQL through
	// postgres.HostTx, in the host's transaction).
	type request struct {
		Wallet string `json:"wallet"`
		To     string `json:"to"`
		Amount int64  `json:"amount"` // US cents
	}
	type paid struct {
		ID     string
		Amount int64
		Rule   string
	}
	record := func(ctx context.Context, tx storage.Tx, pay *payout.Payment) (paid, error) {
		e, err := storage.NewEvent(nil, "HOST.PAYOUT_CREATED", pay.Transfer.SourceID,
			map[string]any{"id": pay.ID, "amount": pay.Transfer.Amount}, pay.Now)
		if err != nil {
			return paid{}, err
		}
		return paid{ID: pay.ID, Amount: pay.Transfer.Amount, Rule: pay.Allowed.Rule}, tx.Outbox().Append(ctx, &e)
	}
	spec := func(r request) payout.Spec[request, paid] {
		return payout.Spec[request, paid]{Type: "PAYOUT", AccountID: wallet.ID, Parameters: r, DestinationField: "to",
			Transfer: func(r request) payout.Transfer {
				return payout.Transfer{SourceID: r.Wallet, DestinationID: r.To, Amount: r.Amount, Currency: "USD"}
			},
			// Pay gets the parameters as signed, never the retry's.
			Pay: func(ctx context.Context, tx storage.Tx, _ request, pay *payout.Payment) (paid, error) {
				return record(ctx, tx, pay)
			}}
	}
	send := func(r request) (payout.Outcome[paid], error) {
		body, _ := json.Marshal(r)
		call := signedretry.Request{Method: "POST", Path: "/payouts", Body: body}
		// First leg: the chain runs, then the challenge to sign.
		_, _, ch, err := walletauth.Authorize(ctx, auth, payout.Operation(payouts, spec(r), call), call)
		if err != nil {
			return payout.Outcome[paid]{}, err
		}
		call.Signature, _ = key.Stamp(ch.PayloadToSign)
		call.RequestID = ch.RequestID
		// The retry: the chain again, the policy's decision and, for an
		// allowed payout only, Pay. The retry's own values are not read.
		out, _, _, err := walletauth.Authorize(ctx, auth, payout.Operation(payouts, spec(request{}), call), call)
		return out, err
	}
	show := func(out payout.Outcome[paid], err error) {
		switch {
		case err != nil:
			fmt.Println("refused:", apierror.CodeOf(err), apierror.As(err).Details["field"])
		case out.Paid != nil:
			fmt.Println("paid", out.Paid.Amount, "by rule", out.Paid.Rule)
		case out.Held != nil:
			fmt.Println("held by rule", out.Held.Rule, policy.StateOf(out.Held, time.Now()))
		}
	}

	show(send(request{Wallet: wallet.ID, To: bank.ID, Amount: 25_000}))
	held, err := send(request{Wallet: wallet.ID, To: bank.ID, Amount: 200_000})
	show(held, err)

	// Another customer's account is no destination of this wallet: it
	// answers as an unknown account does, before any signature.
	other, _ := gate.RegisterAccount(ctx, ownership.NewAccount{CustomerID: "Customer:7", AccountType: "USD_ACCOUNT",
		Address: "000987654321", Currency: "USD"})
	show(send(request{Wallet: wallet.ID, To: other.ID, Amount: 1_000}))

	// The risk desk approves the held payout: it is paid once, from the
	// approval's fields, by the host's same record.
	done, err := payout.Approve(ctx, payouts, held.Held.ID, "risk-desk", record)
	fmt.Println(err, done.Approval.State, "paid", done.Paid.Amount, "by rule", done.Paid.Rule)
	_, err = payout.Approve(ctx, payouts, held.Held.ID, "risk-desk", record)
	fmt.Println(apierror.CodeOf(err), apierror.As(err).Details["state"])
	// Output:
	// paid 25000 by rule default
	// held by rule review WAITING
	// refused: REFERENCE_NOT_FOUND to
	// <nil> APPROVED paid 200000 by rule review
	// CONFLICT APPROVED
}

// sandboxLogin logs the credential in with the sandbox's one-time code
// and returns the session's key.
func sandboxLogin(ctx context.Context, auth *walletauth.Service, credential string) *authclient.ClientKey {
	m, _ := auth.Challenge(ctx, credential, walletauth.ChallengeRequest{})
	key, _ := authclient.NewClientKey()
	bundle, _ := key.SealOTP(m.OTPEncryptionTargetBundle, auth.SigningPublicKey(), walletauth.SandboxOTPCode, nil)
	req := walletauth.VerifyRequest{Type: storage.EmailOTP, EncryptedOTPBundle: bundle}
	call := signedretry.Request{Method: "POST", Path: "/verify", Body: []byte(`{}`)}
	_, ch, _ := auth.Verify(ctx, credential, req, call)
	call.Signature, _ = key.Stamp(ch.PayloadToSign)
	call.RequestID = ch.RequestID
	_, _, _ = auth.Verify(ctx, credential, req, call)
	return key
}

package walletauth_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/memory"
	"github.com/walletgate/walletgate/walletauth"
)

// A one-time-code login, as the platform backend relays it: challenge, leg 1
// with the sealed code, leg 2 stamped by the key that becomes the session key.
func Example_otpLogin() {
	ctx := context.Background()
	keys, _ := walletauth.EphemeralKeys(nil)                                                    // one process: keys held in memory
	svc, _ := walletauth.New(walletauth.Config{Store: memory.New(), Sandbox: true, Keys: keys}) // the code is 000000
	wallet, email, _ := svc.CreateWallet(ctx, walletauth.NewWallet{CustomerID: "Customer:42", Email: "ada@example.com"})

	// Server: issue a code; the client gets the target bundle.
	m, _ := svc.Challenge(ctx, email.ID, walletauth.ChallengeRequest{})

	// Client: a fresh key seals the code to the bundle.
	key, _ := walletauth.NewClientKey()
	bundle, _ := key.SealOTP(m.OTPEncryptionTargetBundle, svc.SigningPublicKey(), "000000", nil)

	// Leg 1: the server checks the code and answers a payload to sign.
	req := walletauth.VerifyRequest{Type: storage.EmailOTP, EncryptedOTPBundle: bundle}
	call := signedretry.Request{Method: "POST", Path: "/auth/credentials/" + email.ID + "/verify", Body: []byte(`{"encryptedOtpBundle":"..."}`)}
	_, challenge, _ := svc.Verify(ctx, email.ID, req, call)

	// Leg 2: the same request, stamped by the key.
	call.Signature, _ = key.Stamp(challenge.PayloadToSign)
	call.RequestID = challenge.RequestID
	session, _, err := svc.Verify(ctx, email.ID, req, call)
	fmt.Println(err, session.AccountID == wallet.ID, session.Type)

	sessions, _ := svc.ListSessions(ctx, wallet.ID)
	fmt.Println(len(sessions))
	// Output:
	// <nil> true EMAIL_OTP
	// 1
}

// The service mounts under the host's base path, behind a guard that lets
// a platform act on its own customers' wallets only. Another platform's
// wallet answers as an unknown one would.
func ExampleService_Handler() {
	ctx := context.Background()
	keys, _ := walletauth.EphemeralKeys(nil)
	svc, _ := walletauth.New(walletauth.Config{Store: memory.New(), Sandbox: true, Keys: keys})
	wallet, _, _ := svc.CreateWallet(ctx, walletauth.NewWallet{CustomerID: "Customer:42", Email: "ada@example.com"})
	platformOf := map[string]string{"Customer:42": "platform-a"} // the host's customers table
	h, err := svc.Handler(walletauth.HandlerConfig{Guard: func(r *http.Request, w storage.InternalAccount) error {
		// The host's authentication, here a header, names the caller.
		if platformOf[w.CustomerID] != r.Header.Get("X-Platform") {
			return errors.New("the wallet of another platform")
		}
		return nil
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	mux := http.NewServeMux()
	mux.Handle("/2025-10-13/", http.StripPrefix("/2025-10-13", h))
	for _, platform := range []string{"platform-a", "platform-b"} {
		r := httptest.NewRequest("GET", "/2025-10-13/auth/credentials?accountId="+wallet.ID, nil)
		r.Header.Set("X-Platform", platform)
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, r)
		fmt.Println(platform, rec.Code)
	}
	// Output:
	// platform-a 200
	// platform-b 404
}

// A host operation (here a payout) authorized by a session of the wallet:
// the first call binds the parameters, the retry returns them as signed and
// the host acts on those alone.
func ExampleAuthorize() {
	ctx := context.Background()
	keys, _ := walletauth.EphemeralKeys(nil)
	svc, _ := walletauth.New(walletauth.Config{Store: memory.New(), Sandbox: true, Keys: keys})
	wallet, email, _ := svc.CreateWallet(ctx, walletauth.NewWallet{CustomerID: "Customer:42", Email: "ada@example.com"})
	// A session of the wallet (a login, as in the OTP example).
	m, _ := svc.Challenge(ctx, email.ID, walletauth.ChallengeRequest{})
	key, _ := walletauth.NewClientKey()
	bundle, _ := key.SealOTP(m.OTPEncryptionTargetBundle, svc.SigningPublicKey(), walletauth.SandboxOTPCode, nil)
	req := walletauth.VerifyRequest{Type: storage.EmailOTP, EncryptedOTPBundle: bundle}
	login := signedretry.Request{Method: "POST", Path: "/verify", Body: []byte(`{}`)}
	_, ch, _ := svc.Verify(ctx, email.ID, req, login)
	login.Signature, _ = key.Stamp(ch.PayloadToSign)
	login.RequestID = ch.RequestID
	_, _, _ = svc.Verify(ctx, email.ID, req, login)

	type payout struct {
		To     string `json:"to"`
		Amount int64  `json:"amount"`
	}
	op := walletauth.HostOperation[payout, payout]{Type: "PAYOUT", AccountID: wallet.ID, Parameters: payout{"ExternalAccount:1", 500},
		// The effect gets the parameters the first call stored, and its
		// result is what Authorize returns.
		Effect: func(_ context.Context, _ storage.Tx, _ *signedretry.Authorization, p payout) (payout, error) {
			return p, nil
		}}
	call := signedretry.Request{Method: "POST", Path: "/payouts", Body: []byte(`{"to":"ExternalAccount:1","amount":500}`)}

	// First call: 202 with the payload to sign.
	_, _, challenge, _ := walletauth.Authorize(ctx, svc, op, call)

	// Retry, stamped by the session key: the effect runs on the stored
	// parameters.
	call.Signature, _ = key.Stamp(challenge.PayloadToSign)
	call.RequestID = challenge.RequestID
	p, _, _, err := walletauth.Authorize(ctx, svc, op, call)
	fmt.Println(err, p.To, p.Amount)
	// Output:
	// <nil> ExternalAccount:1 500
}

package walletauth_test

import (
	"context"
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

// The service mounts under the host's base path.
func ExampleService_Handler() {
	keys, _ := walletauth.EphemeralKeys(nil)
	svc, _ := walletauth.New(walletauth.Config{Store: memory.New(), Sandbox: true, Keys: keys})
	mux := http.NewServeMux()
	mux.Handle("/2025-10-13/", http.StripPrefix("/2025-10-13", svc.Handler()))
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest("GET", "/2025-10-13/auth/credentials?accountId=nope", nil))
	fmt.Println(rec.Code, rec.Body.String())
	// Output: 400 {"status":400,"code":"INVALID_INPUT","message":"invalid field accountId: must be an InternalAccount id","details":{"errors":[{"field":"accountId","constraint":{"pattern":"^InternalAccount:[0-9a-fA-F-]{36}$"},"message":"must be an InternalAccount id"}]}}
}

// A host operation (here a payout) authorized by a session of the wallet:
// the first call binds the parameters, the retry returns them as signed and
// the host acts on those alone.
func ExampleService_Authorize() {
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
	op := walletauth.HostOperation{Type: "PAYOUT", AccountID: wallet.ID, Parameters: payout{"ExternalAccount:1", 500}}
	call := signedretry.Request{Method: "POST", Path: "/payouts", Body: []byte(`{"to":"ExternalAccount:1","amount":500}`)}

	// First call: 202 with the payload to sign.
	_, challenge, _ := svc.Authorize(ctx, op, call)

	// Retry, stamped by the session key: the stored parameters come back.
	call.Signature, _ = key.Stamp(challenge.PayloadToSign)
	call.RequestID = challenge.RequestID
	a, _, err := svc.Authorize(ctx, op, call)
	var p payout
	_ = a.DecodeParameters(&p)
	fmt.Println(err, p.To, p.Amount)
	// Output:
	// <nil> ExternalAccount:1 500
}

package walletauth_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/memory"
	"github.com/walletgate/walletgate/walletauth"
	"github.com/walletgate/walletgate/walletauth/authclient"
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
	key, _ := authclient.NewClientKey()
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

// The service mounts under the host's base path. Its guard, in the
// service's configuration, lets a platform act on its own tenant's wallets
// only: the host's authentication (here a middleware reading a header)
// puts the calling platform in the request's context, and the guard
// compares it with the wallet's Tenant. Another platform's wallet answers
// as an unknown one would, over HTTP and in a direct call alike.
func ExampleService_Handler() {
	ctx := context.Background()
	keys, _ := walletauth.EphemeralKeys(nil)
	svc, _ := walletauth.New(walletauth.Config{Store: memory.New(), Sandbox: true, Keys: keys,
		Guard: func(ctx context.Context, w storage.InternalAccount) error {
			if platform, _ := ctx.Value(platformKey{}).(string); platform != w.Tenant {
				return errors.New("the wallet of another platform")
			}
			return nil
		}})
	// platform-a creates a wallet of its tenant.
	asA := context.WithValue(ctx, platformKey{}, "platform-a")
	wallet, _, _ := svc.CreateWallet(asA, walletauth.NewWallet{CustomerID: "Customer:42", Tenant: "platform-a", Email: "ada@example.com"})
	h, err := svc.Handler()
	if err != nil {
		fmt.Println(err)
		return
	}
	// The host's authentication names the platform of the request.
	authenticated := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), platformKey{}, r.Header.Get("X-Platform"))))
	})
	mux := http.NewServeMux()
	mux.Handle("/2025-10-13/", http.StripPrefix("/2025-10-13", authenticated))
	for _, platform := range []string{"platform-a", "platform-b"} {
		r := httptest.NewRequest("GET", "/2025-10-13/auth/credentials?accountId="+wallet.ID, nil)
		r.Header.Set("X-Platform", platform)
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, r)
		fmt.Println(platform, rec.Code)
	}
	_, err = svc.ListCredentials(context.WithValue(ctx, platformKey{}, "platform-b"), wallet.ID)
	fmt.Println("direct call of platform-b:", apierror.CodeOf(err))
	// Output:
	// platform-a 200
	// platform-b 404
	// direct call of platform-b: REFERENCE_NOT_FOUND
}

// platformKey is the context key of the calling platform in
// ExampleService_Handler.
type platformKey struct{}

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
	key, _ := authclient.NewClientKey()
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

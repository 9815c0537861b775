package walletauth_test

import (
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/storagetest"
	"github.com/walletgate/walletgate/walletauth"
	"github.com/walletgate/walletgate/walletauth/authclient"
)

// together runs every fn at once and returns their errors in order.
func together(fns ...func() error) []error {
	errs := make([]error, len(fns))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, fn := range fns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = fn()
		}()
	}
	close(start)
	wg.Wait()
	return errs
}

// isAPIError reports whether err is an *apierror.Error with that status, code
// and (when not empty) details.reason.
func isAPIError(err error, status int, code apierror.Code, reason string) bool {
	e := apierror.As(err)
	return e != nil && e.Status() == status && apierror.CodeOf(err) == code && (reason == "" || e.Reason() == reason)
}

// TestRevokeCredentialCrossSigned revokes two credentials at once, each
// retry stamped by a session of the other: exactly one revoke succeeds and
// the account keeps one credential with its session.
func TestRevokeCredentialCrossSigned(t *testing.T) {
	ctx := t.Context()
	for range 5 {
		e := newEnv(t, nil)
		_, emailKey := e.login(t, e.email.ID, storage.EmailOTP)
		sms := e.addSMS(t, emailKey)
		smsKey := newKey(t)
		bundle, err := smsKey.SealOTP(sms.OTPEncryptionTargetBundle, e.svc.SigningPublicKey(), e.outbox.last(t).Code, nil)
		if err != nil {
			t.Fatal(err)
		}
		e.verify(t, sms.ID, storage.SMSOTP, bundle, smsKey)

		// Revoking EMAIL_OTP is signed by the SMS_OTP session and the other
		// way round.
		errs := e.revokeCrossSigned(t, sms, emailKey, smsKey)
		checkCrossSigned(t, errs, []string{e.email.ID, sms.ID}, func() ([]walletauth.AuthMethod, []walletauth.AuthSession) {
			creds, err := e.svc.ListCredentials(ctx, e.wallet.ID)
			if err != nil {
				t.Fatal(err)
			}
			sessions, err := e.svc.ListSessions(ctx, e.wallet.ID)
			if err != nil {
				t.Fatal(err)
			}
			return creds, sessions
		})
		checkOutbox(t, e.store, e.clock.Now(), e.wallet.ID)
	}
}

// checkCrossSigned checks the outcome of two cross-signed revokes of ids[0]
// and ids[1]: one succeeded, the other was refused (400 INVALID_INPUT for the
// last credential, or 401 WALLET_SIGNATURE_INVALID when its signer's session
// was revoked first), and the loser's credential is the one left, with one
// active session.
func checkCrossSigned(t *testing.T, errs []error, ids []string, state func() ([]walletauth.AuthMethod, []walletauth.AuthSession)) {
	t.Helper()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil:
			if winner >= 0 {
				t.Fatalf("both revokes succeeded")
			}
			winner = i
		case isAPIError(err, http.StatusBadRequest, apierror.InvalidInput, ""),
			isAPIError(err, http.StatusUnauthorized, apierror.WalletSignatureInvalid, ""):
		default:
			t.Fatalf("revoke of %s failed with %v, want 400 INVALID_INPUT or 401 WALLET_SIGNATURE_INVALID", ids[i], err)
		}
	}
	if winner < 0 {
		t.Fatalf("no revoke succeeded: %v", errs)
	}
	creds, sessions := state()
	if len(creds) != 1 || creds[0].ID != ids[1-winner] {
		t.Fatalf("credentials after the revokes: %+v, want only %s", creds, ids[1-winner])
	}
	if len(sessions) != 1 {
		t.Fatalf("active sessions after the revokes: %+v, want the kept credential's one", sessions)
	}
}

// TestOTPLeg1Burst sends many leg-1 verifications of one issuance at once:
// at most MaxAttempts codes are compared (at most that many answers are
// "Invalid OTP code"; the rest are "too many failed attempts"), and the right
// code fails once the limit is reached.
func TestOTPLeg1Burst(t *testing.T) {
	ctx := t.Context()
	const wrongGuesses = 40
	setup := func(t *testing.T) (*env, string, string) {
		e := newEnv(t, nil)
		m, err := e.svc.Challenge(ctx, e.email.ID, walletauth.ChallengeRequest{})
		if err != nil {
			t.Fatal(err)
		}
		return e, m.OTPEncryptionTargetBundle, e.outbox.last(t).Code
	}
	leg1 := func(t *testing.T, e *env, bundle, code string) func() error {
		sealed, err := newKey(t).SealOTP(bundle, e.svc.SigningPublicKey(), code, nil)
		if err != nil {
			t.Fatal(err)
		}
		return func() error {
			_, _, err := e.svc.Verify(ctx, e.email.ID, walletauth.VerifyRequest{Type: storage.EmailOTP, EncryptedOTPBundle: sealed},
				call(http.MethodPost, "/auth/credentials/"+e.email.ID+"/verify", `{"type":"EMAIL_OTP"}`))
			return err
		}
	}

	t.Run("wrong guesses, then the right code", func(t *testing.T) {
		e, bundle, code := setup(t)
		var fns []func() error
		for range wrongGuesses {
			fns = append(fns, leg1(t, e, bundle, otherCode(code)))
		}
		invalid, tooMany := countOTPAnswers(t, together(fns...), -1)
		checkOutbox(t, e.store, e.clock.Now(), e.wallet.ID)
		if invalid != walletauth.DefaultOTPMaxAttempts || tooMany != wrongGuesses-walletauth.DefaultOTPMaxAttempts {
			t.Fatalf("%d answers were Invalid OTP code and %d too many failed attempts, want %d and %d",
				invalid, tooMany, walletauth.DefaultOTPMaxAttempts, wrongGuesses-walletauth.DefaultOTPMaxAttempts)
		}
		err := leg1(t, e, bundle, code)()
		if !isAPIError(err, http.StatusUnauthorized, apierror.Unauthorized, tooManyAttempts) {
			t.Fatalf("the right code after the limit: %v, want 401 UNAUTHORIZED %q", err, tooManyAttempts)
		}
	})
	t.Run("the right code inside the burst", func(t *testing.T) {
		e, bundle, code := setup(t)
		fns := []func() error{leg1(t, e, bundle, code)}
		for range wrongGuesses {
			fns = append(fns, leg1(t, e, bundle, otherCode(code)))
		}
		countOTPAnswers(t, together(fns...), 0)
		checkOutbox(t, e.store, e.clock.Now(), e.wallet.ID)
	})
}

const tooManyAttempts = "too many failed attempts; request a new code"

// otherCode returns a six-digit code other than code.
func otherCode(code string) string {
	if code == "111111" {
		return "222222"
	}
	return "111111"
}

// countOTPAnswers checks the answers of a burst of leg-1 calls in which the
// call at index right (if any) carries the right code: every answer is 401
// UNAUTHORIZED ("Invalid OTP code", too many attempts, or "OTP already used"
// after the right code got through) except a success of the right code; at
// most DefaultOTPMaxAttempts codes were compared; a refused right code was
// refused for the limit. It returns the counts of the first two answers.
func countOTPAnswers(t *testing.T, errs []error, right int) (invalid, tooMany int) {
	t.Helper()
	compared := 0
	for i, err := range errs {
		switch {
		case err == nil && i == right:
			compared++
		case i == right && !isAPIError(err, http.StatusUnauthorized, apierror.Unauthorized, tooManyAttempts):
			t.Fatalf("the right code failed with %v, want success or 401 UNAUTHORIZED %q", err, tooManyAttempts)
		case isAPIError(err, http.StatusUnauthorized, apierror.Unauthorized, "Invalid OTP code"):
			invalid++
			compared++
		case isAPIError(err, http.StatusUnauthorized, apierror.Unauthorized, tooManyAttempts):
			tooMany++
		case right >= 0 && errs[right] == nil && isAPIError(err, http.StatusUnauthorized, apierror.Unauthorized, "OTP already used"):
		default:
			t.Fatalf("call %d answered %v", i, err)
		}
	}
	if compared > walletauth.DefaultOTPMaxAttempts {
		t.Fatalf("%d codes were compared (%d answers Invalid OTP code), want at most %d",
			compared, invalid, walletauth.DefaultOTPMaxAttempts)
	}
	return invalid, tooMany
}

// TestCreateWalletSameAddress creates wallets of two customers with one
// address at once: one succeeds, the other is 409, and the same customer may
// hold the address on a second wallet.
func TestCreateWalletSameAddress(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t, nil)
	wallets := []string{e.wallet.ID, "", ""}
	create := func(i int, customer, email string) func() error {
		return func() error {
			w, _, err := e.svc.CreateWallet(ctx, walletauth.NewWallet{CustomerID: customer, Email: email})
			if err == nil {
				wallets[i] = w.ID
			}
			return err
		}
	}
	errs := together(create(1, "Customer:a", "Shared@example.com"), create(2, "Customer:b", "shared@example.com"))
	apierrortest.OneWins(t, "two wallets on one address", errs, apierror.EmailOTPEmailAlreadyExists)
	second, _, err := e.svc.CreateWallet(ctx, walletauth.NewWallet{CustomerID: "Customer:1", Email: "ada@example.com"})
	if err != nil {
		t.Fatalf("a second wallet of the same customer: %v", err)
	}
	checkOutbox(t, e.store, e.clock.Now(), append(slices.DeleteFunc(wallets, func(id string) bool { return id == "" }), second.ID)...)
}

// TestAddEmailOTPRacesEmailChange races the retry of an EMAIL_OTP add for a
// wallet's address against another customer's signed change to that
// address, both first legs passed: exactly one wins, the other is 409
// EMAIL_OTP_EMAIL_ALREADY_EXISTS, and the address is tied to one customer.
func TestAddEmailOTPRacesEmailChange(t *testing.T) {
	ctx := t.Context()
	for round := range 5 {
		e := newEnv(t, nil)
		_, key := e.login(t, e.email.ID, storage.EmailOTP)
		smsKey := e.dropEmailOTP(t, key)
		req := walletauth.AddCredentialRequest{Type: storage.EmailOTP, AccountID: e.wallet.ID}
		c := call(http.MethodPost, "/auth/credentials", `{"type":"EMAIL_OTP"}`)
		_, ch, err := e.svc.AddCredential(ctx, req, c)
		if err != nil {
			t.Fatal(err)
		}
		add := signed(t, c, ch, smsKey)
		change := e.takeAddress(t, "Customer:2", "ada@example.com")
		errs := together(
			func() error { _, _, err := e.svc.AddCredential(ctx, req, add); return err },
			change,
		)
		apierrortest.OneWins(t, fmt.Sprintf("round %d", round), errs, apierror.EmailOTPEmailAlreadyExists)
		if err := e.store.Atomic(ctx, func(tx storage.Tx) error {
			tied, err := tx.Credentials().ListEmailOTPByEmail(ctx, "", "ada@example.com")
			if err == nil && len(tied) != 1 {
				t.Fatalf("round %d: %d EMAIL_OTP credentials hold the address, want 1", round, len(tied))
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestOTPAttemptBudgetBurst sends more concurrent wrong codes than a
// credential's budget of compared codes (the per-issuance limit set far
// above it): exactly the budget's worth are compared, every other one is
// 429 RATE_LIMITED, one AUTH_CREDENTIAL.OTP_THROTTLED is written, and the
// right code is refused afterwards.
func TestOTPAttemptBudgetBurst(t *testing.T) {
	ctx := t.Context()
	const budget, guesses = 7, 40
	e := newEnv(t, func(c *walletauth.Config) { c.OTP.AttemptBudget, c.OTP.MaxAttempts = budget, 1000 })
	m, err := e.svc.Challenge(ctx, e.email.ID, walletauth.ChallengeRequest{})
	if err != nil {
		t.Fatal(err)
	}
	code := e.outbox.last(t).Code
	guess := func(code string) func() error {
		sealed, err := newKey(t).SealOTP(m.OTPEncryptionTargetBundle, e.svc.SigningPublicKey(), code, nil)
		if err != nil {
			t.Fatal(err)
		}
		return func() error {
			_, _, err := e.svc.Verify(ctx, e.email.ID, walletauth.VerifyRequest{Type: storage.EmailOTP, EncryptedOTPBundle: sealed},
				call(http.MethodPost, "/auth/credentials/"+e.email.ID+"/verify", `{"type":"EMAIL_OTP"}`))
			return err
		}
	}
	var fns []func() error
	for range guesses {
		fns = append(fns, guess(otherCode(code)))
	}
	compared, throttled := 0, 0
	for i, err := range together(fns...) {
		switch {
		case isAPIError(err, http.StatusUnauthorized, apierror.Unauthorized, "Invalid OTP code"):
			compared++
		case isAPIError(err, http.StatusTooManyRequests, apierror.RateLimited, "") && apierror.As(err).RetryAfter > 0:
			throttled++
		default:
			t.Fatalf("guess %d answered %v", i, err)
		}
	}
	if compared != budget || throttled != guesses-budget {
		t.Fatalf("%d codes compared and %d refused, want %d and %d", compared, throttled, budget, guesses-budget)
	}
	if err := guess(code)(); !isAPIError(err, http.StatusTooManyRequests, apierror.RateLimited, "") {
		t.Fatalf("the right code past the budget: %v, want 429 RATE_LIMITED", err)
	}
	n := 0
	for _, ev := range storagetest.Events(t, e.store, e.wallet.ID) {
		if ev.Type == walletauth.EventCredentialOTPThrottled {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d OTP_THROTTLED events, want 1", n)
	}
}

// revokeCrossSigned revokes e's EMAIL_OTP credential and sms at once, each
// retry stamped by a session of the other, and returns both results.
func (e *env) revokeCrossSigned(t *testing.T, sms *walletauth.AuthMethod, emailKey, smsKey *authclient.ClientKey) []error {
	t.Helper()
	ctx := t.Context()
	revokeEmail := call(http.MethodDelete, "/auth/credentials/"+e.email.ID, "")
	chEmail, err := e.svc.RevokeCredential(ctx, e.email.ID, revokeEmail)
	if err != nil {
		t.Fatal(err)
	}
	revokeSMS := call(http.MethodDelete, "/auth/credentials/"+sms.ID, "")
	chSMS, err := e.svc.RevokeCredential(ctx, sms.ID, revokeSMS)
	if err != nil {
		t.Fatal(err)
	}
	retryEmail, retrySMS := signed(t, revokeEmail, chEmail, smsKey), signed(t, revokeSMS, chSMS, emailKey)
	return together(
		func() error { _, err := e.svc.RevokeCredential(ctx, e.email.ID, retryEmail); return err },
		func() error { _, err := e.svc.RevokeCredential(ctx, sms.ID, retrySMS); return err },
	)
}

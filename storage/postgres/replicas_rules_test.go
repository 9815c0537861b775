package postgres_test

import (
	"bytes"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/postgres"
	"github.com/walletgate/walletgate/storage/storagetest"
	"github.com/walletgate/walletgate/walletauth"
	"github.com/walletgate/walletgate/walletauth/secret"
)

// replicaStores returns four stores on one fresh schema, each through its
// own pool: four replicas of one service.
func replicaStores(tb testing.TB) []*postgres.Store {
	tb.Helper()
	first := newStore(tb, newPool(tb, 4))
	stores := []*postgres.Store{first}
	for range replicas - 1 {
		stores = append(stores, sameSchema(tb, first, newPool(tb, 4)))
	}
	return stores
}

// TestReplicasRaces runs the check-then-act race cases of storagetest with
// 16 goroutines on each of four replicas.
func TestReplicasRaces(t *testing.T) {
	storagetest.RunRaces(t, func(tb testing.TB) []storage.Store {
		var out []storage.Store
		for _, s := range replicaStores(tb) {
			out = append(out, s)
		}
		return out
	}, workersPerReplica)
}

// isAPIError reports whether err is an *apierror.Error with that status, code
// and (when not empty) details.reason.
func isAPIError(err error, status int, code apierror.Code, reason string) bool {
	e := apierror.As(err)
	return e != nil && e.Status() == status && apierror.CodeOf(err) == code && (reason == "" || e.Reason() == reason)
}

// TestReplicasDomainRules runs the walletauth operations whose rules span
// several rows from several replicas at once: cross-signed revokes of an
// account's two credentials, two customers moving to one email address, and
// a burst of OTP guesses.
func TestReplicasDomainRules(t *testing.T) {
	ctx := t.Context()
	stores := replicaStores(t)
	// Replicas share the keys that protect OTP issuances at rest.
	key, err := secret.GenerateKey(nil, "replicas")
	if err != nil {
		t.Fatal(err)
	}
	ring, err := secret.NewKeyring(key)
	if err != nil {
		t.Fatal(err)
	}
	macKey := bytes.Repeat([]byte{0x5a}, walletauth.MinCodeMACKeyLen)
	services := make([]*walletauth.Service, len(stores))
	for i, s := range stores {
		svc, err := walletauth.New(walletauth.Config{Store: s, Sandbox: true, Keys: walletauth.Keys{SigningKey: testSigningKey, Sealer: ring, CodeMACKey: macKey},
			OTP: walletauth.OTPConfig{ReissueLimit: 100}})
		if err != nil {
			t.Fatal(err)
		}
		services[i] = svc
	}
	svc := services[0]
	verifyPath := func(credID string) string { return "/auth/credentials/" + credID + "/verify" }
	// login verifies an OTP credential from a bundle of its live issuance
	// and returns the session's key.
	login := func(t *testing.T, credID string, typ storage.CredentialType, bundle string) *walletauth.ClientKey {
		t.Helper()
		key, err := walletauth.NewClientKey()
		if err != nil {
			t.Fatal(err)
		}
		sealed, err := key.SealOTP(bundle, svc.SigningPublicKey(), walletauth.SandboxOTPCode, nil)
		if err != nil {
			t.Fatal(err)
		}
		req := walletauth.VerifyRequest{Type: typ, EncryptedOTPBundle: sealed}
		c := signedretry.Request{Method: http.MethodPost, Path: verifyPath(credID), Body: []byte(`{"type":"` + string(typ) + `"}`)}
		_, ch, err := svc.Verify(ctx, credID, req, c)
		if err != nil {
			t.Fatalf("leg 1: %v", err)
		}
		if _, _, err := svc.Verify(ctx, credID, req, stamped(t, c, ch, key)); err != nil {
			t.Fatalf("leg 2: %v", err)
		}
		return key
	}

	// twoCredentials creates a wallet, logs in with its EMAIL_OTP
	// credential, adds an SMS_OTP credential through a signed retry and logs
	// in with it too.
	twoCredentials := func(t *testing.T, customer, address string) (wallet *storage.InternalAccount, email *walletauth.AuthMethod,
		emailKey *walletauth.ClientKey, sms *walletauth.AuthMethod, smsKey *walletauth.ClientKey) {
		t.Helper()
		wallet, email, err := svc.CreateWallet(ctx, walletauth.NewWallet{CustomerID: customer, Email: address, Phone: "+14155550123"})
		if err != nil {
			t.Fatal(err)
		}
		m, err := svc.Challenge(ctx, email.ID, walletauth.ChallengeRequest{})
		if err != nil {
			t.Fatal(err)
		}
		emailKey = login(t, email.ID, storage.EmailOTP, m.OTPEncryptionTargetBundle)
		add := signedretry.Request{Method: http.MethodPost, Path: "/auth/credentials",
			Body: []byte(`{"type":"SMS_OTP","accountId":"` + wallet.ID + `"}`)}
		addReq := walletauth.AddCredentialRequest{Type: storage.SMSOTP, AccountID: wallet.ID}
		_, ch, err := svc.AddCredential(ctx, addReq, add)
		if err != nil {
			t.Fatal(err)
		}
		sms, _, err = svc.AddCredential(ctx, addReq, stamped(t, add, ch, emailKey))
		if err != nil {
			t.Fatal(err)
		}
		return wallet, email, emailKey, sms, login(t, sms.ID, storage.SMSOTP, sms.OTPEncryptionTargetBundle)
	}

	t.Run("RevokeCredentialCrossSigned", func(t *testing.T) {
		for round := range 8 {
			wallet, email, emailKey, sms, smsKey := twoCredentials(t, "Customer:rules", "rules@example.com")

			revokeEmail := signedretry.Request{Method: http.MethodDelete, Path: "/auth/credentials/" + email.ID}
			chEmail, err := svc.RevokeCredential(ctx, email.ID, revokeEmail)
			if err != nil {
				t.Fatal(err)
			}
			revokeSMS := signedretry.Request{Method: http.MethodDelete, Path: "/auth/credentials/" + sms.ID}
			chSMS, err := svc.RevokeCredential(ctx, sms.ID, revokeSMS)
			if err != nil {
				t.Fatal(err)
			}
			retryEmail, retrySMS := stamped(t, revokeEmail, chEmail, smsKey), stamped(t, revokeSMS, chSMS, emailKey)
			a, b := services[1+round%(len(services)-1)], services[(2+round)%len(services)]
			errs := together(
				func() error { _, err := a.RevokeCredential(ctx, email.ID, retryEmail); return err },
				func() error { _, err := b.RevokeCredential(ctx, sms.ID, retrySMS); return err },
			)
			winner := -1
			for i, err := range errs {
				switch {
				case err == nil:
					if winner >= 0 {
						t.Fatalf("round %d: both cross-signed revokes succeeded", round)
					}
					winner = i
				case isAPIError(err, http.StatusBadRequest, apierror.InvalidInput, ""),
					isAPIError(err, http.StatusUnauthorized, apierror.WalletSignatureInvalid, ""):
				default:
					t.Fatalf("round %d: revoke %d failed with %v, want 400 INVALID_INPUT or 401 WALLET_SIGNATURE_INVALID", round, i, err)
				}
			}
			if winner < 0 {
				t.Fatalf("round %d: no revoke succeeded: %v", round, errs)
			}
			creds, err := svc.ListCredentials(ctx, wallet.ID)
			if err != nil {
				t.Fatal(err)
			}
			kept := []string{sms.ID, email.ID}[winner]
			if len(creds) != 1 || creds[0].ID != kept {
				t.Fatalf("round %d: credentials after the revokes: %+v, want only %s", round, creds, kept)
			}
			sessions, err := svc.ListSessions(ctx, wallet.ID)
			if err != nil {
				t.Fatal(err)
			}
			if len(sessions) != 1 {
				t.Fatalf("round %d: active sessions after the revokes: %+v, want the kept credential's one", round, sessions)
			}
		}
	})

	t.Run("SessionWhileRevoked", func(t *testing.T) {
		const logins = 8
		for round := range 4 {
			wallet, email, _, _, smsKey := twoCredentials(t, "Customer:revoked", "revoked@example.com")

			// Logins of EMAIL_OTP that passed leg 1, their leg 2 pending.
			var fns []func() error
			for i := range logins {
				m, err := svc.Challenge(ctx, email.ID, walletauth.ChallengeRequest{})
				if err != nil {
					t.Fatal(err)
				}
				key, err := walletauth.NewClientKey()
				if err != nil {
					t.Fatal(err)
				}
				sealed, err := key.SealOTP(m.OTPEncryptionTargetBundle, svc.SigningPublicKey(), walletauth.SandboxOTPCode, nil)
				if err != nil {
					t.Fatal(err)
				}
				req := walletauth.VerifyRequest{Type: storage.EmailOTP, EncryptedOTPBundle: sealed}
				c := signedretry.Request{Method: http.MethodPost, Path: verifyPath(email.ID), Body: []byte(`{"type":"EMAIL_OTP"}`)}
				_, ch, err := svc.Verify(ctx, email.ID, req, c)
				if err != nil {
					t.Fatalf("leg 1: %v", err)
				}
				leg2, s := stamped(t, c, ch, key), services[1+i%(len(services)-1)]
				fns = append(fns, func() error {
					_, _, err := s.Verify(ctx, email.ID, req, leg2)
					return err
				})
			}
			revoke := signedretry.Request{Method: http.MethodDelete, Path: "/auth/credentials/" + email.ID}
			ch, err := svc.RevokeCredential(ctx, email.ID, revoke)
			if err != nil {
				t.Fatal(err)
			}
			retry := stamped(t, revoke, ch, smsKey)
			fns = append(fns, func() error { _, err := services[0].RevokeCredential(ctx, email.ID, retry); return err })
			errs := together(fns...)
			if err := errs[logins]; err != nil {
				t.Fatalf("round %d: revoke: %v", round, err)
			}
			for i, err := range errs[:logins] {
				if err != nil && !isAPIError(err, http.StatusNotFound, apierror.ReferenceNotFound, "") {
					t.Fatalf("round %d: leg 2 of login %d failed with %v, want success or 404 REFERENCE_NOT_FOUND", round, i, err)
				}
			}
			mustAtomic(t, stores[0], func(tx storage.Tx) error {
				active, err := tx.Sessions().ListActive(ctx, wallet.ID, time.Now())
				for _, s := range active {
					if s.CredentialID == email.ID {
						t.Fatalf("round %d: session %s of the revoked credential is active", round, s.ID)
					}
				}
				return err
			})
		}
	})

	t.Run("UpdateEmailSameAddress", func(t *testing.T) {
		for round := range 8 {
			var retries []signedretry.Request
			var customers []string
			for _, who := range []string{"a", "b"} {
				customer := fmt.Sprintf("Customer:%s-%d", who, round)
				_, email, err := svc.CreateWallet(ctx, walletauth.NewWallet{CustomerID: customer, Email: fmt.Sprintf("%s-%d@example.com", who, round)})
				if err != nil {
					t.Fatal(err)
				}
				m, err := svc.Challenge(ctx, email.ID, walletauth.ChallengeRequest{})
				if err != nil {
					t.Fatal(err)
				}
				key := login(t, email.ID, storage.EmailOTP, m.OTPEncryptionTargetBundle)
				c := signedretry.Request{Method: http.MethodPatch, Path: "/customers/" + customer,
					Body: []byte(fmt.Sprintf(`{"email":"shared-%d@example.com"}`, round))}
				_, ch, err := svc.UpdateEmail(ctx, customer, fmt.Sprintf("shared-%d@example.com", round), nil, c)
				if err != nil {
					t.Fatal(err)
				}
				retries = append(retries, stamped(t, c, ch, key))
				customers = append(customers, customer)
			}
			shared := fmt.Sprintf("shared-%d@example.com", round)
			errs := together(
				func() error {
					_, _, err := services[1].UpdateEmail(ctx, customers[0], shared, nil, retries[0])
					return err
				},
				func() error {
					_, _, err := services[2].UpdateEmail(ctx, customers[1], shared, nil, retries[1])
					return err
				},
			)
			apierrortest.OneWins(t, fmt.Sprintf("round %d", round), errs, apierror.EmailOTPEmailAlreadyExists)
			mustAtomic(t, stores[0], func(tx storage.Tx) error {
				tied, err := tx.Credentials().ListEmailOTPByEmail(ctx, shared)
				if err == nil && len(tied) != 1 {
					t.Fatalf("round %d: %d EMAIL_OTP credentials hold the address, want 1", round, len(tied))
				}
				return err
			})
		}
	})

	t.Run("CreateWalletSameAddress", func(t *testing.T) {
		for round := range 8 {
			shared := fmt.Sprintf("new-%d@example.com", round)
			errs := together(
				func() error {
					_, _, err := services[1].CreateWallet(ctx, walletauth.NewWallet{CustomerID: fmt.Sprintf("Customer:c-%d", round), Email: shared})
					return err
				},
				func() error {
					_, _, err := services[2].CreateWallet(ctx, walletauth.NewWallet{CustomerID: fmt.Sprintf("Customer:d-%d", round), Email: shared})
					return err
				},
			)
			apierrortest.OneWins(t, fmt.Sprintf("round %d", round), errs, apierror.EmailOTPEmailAlreadyExists)
		}
	})

	t.Run("OTPLeg1Burst", func(t *testing.T) {
		const wrongGuesses = 40
		const tooMany = "too many failed attempts; request a new code"
		burst := func(t *testing.T, right bool) (errs []error, invalid, refused int) {
			_, email, err := svc.CreateWallet(ctx, walletauth.NewWallet{CustomerID: "Customer:burst", Email: "burst@example.com"})
			if err != nil {
				t.Fatal(err)
			}
			m, err := svc.Challenge(ctx, email.ID, walletauth.ChallengeRequest{})
			if err != nil {
				t.Fatal(err)
			}
			key, err := walletauth.NewClientKey()
			if err != nil {
				t.Fatal(err)
			}
			codes := make([]string, wrongGuesses)
			for i := range codes {
				codes[i] = "111111"
			}
			if right {
				codes = append(codes, walletauth.SandboxOTPCode)
			}
			var fns []func() error
			for i, code := range codes {
				sealed, err := key.SealOTP(m.OTPEncryptionTargetBundle, svc.SigningPublicKey(), code, nil)
				if err != nil {
					t.Fatal(err)
				}
				s := services[i%len(services)]
				fns = append(fns, func() error {
					_, _, err := s.Verify(ctx, email.ID, walletauth.VerifyRequest{Type: storage.EmailOTP, EncryptedOTPBundle: sealed},
						signedretry.Request{Method: http.MethodPost, Path: verifyPath(email.ID), Body: []byte(`{"type":"EMAIL_OTP"}`)})
					return err
				})
			}
			errs = together(fns...)
			rightOK := right && errs[wrongGuesses] == nil
			for i, err := range errs[:wrongGuesses] {
				switch {
				case isAPIError(err, http.StatusUnauthorized, apierror.Unauthorized, "Invalid OTP code"):
					invalid++
				case isAPIError(err, http.StatusUnauthorized, apierror.Unauthorized, tooMany):
					refused++
				case rightOK && isAPIError(err, http.StatusUnauthorized, apierror.Unauthorized, "OTP already used"):
				default:
					t.Fatalf("wrong guess %d answered %v", i, err)
				}
			}
			if right && !rightOK && !isAPIError(errs[wrongGuesses], http.StatusUnauthorized, apierror.Unauthorized, tooMany) {
				t.Fatalf("the right code failed with %v, want success or 401 UNAUTHORIZED %q", errs[wrongGuesses], tooMany)
			}
			compared := invalid
			if rightOK {
				compared++
			}
			if compared > walletauth.DefaultOTPMaxAttempts {
				t.Fatalf("%d codes were compared (%d answers Invalid OTP code), want at most %d",
					compared, invalid, walletauth.DefaultOTPMaxAttempts)
			}
			// Whatever happened, the right code now fails: used or dead.
			sealed, err := key.SealOTP(m.OTPEncryptionTargetBundle, svc.SigningPublicKey(), walletauth.SandboxOTPCode, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = svc.Verify(ctx, email.ID, walletauth.VerifyRequest{Type: storage.EmailOTP, EncryptedOTPBundle: sealed},
				signedretry.Request{Method: http.MethodPost, Path: verifyPath(email.ID), Body: []byte(`{"type":"EMAIL_OTP"}`)})
			want := tooMany
			if rightOK {
				want = "OTP already used"
			}
			if !isAPIError(err, http.StatusUnauthorized, apierror.Unauthorized, want) {
				t.Fatalf("the right code after the burst: %v, want 401 UNAUTHORIZED %q", err, want)
			}
			return errs, invalid, refused
		}
		t.Run("wrong guesses, then the right code", func(t *testing.T) {
			_, invalid, refused := burst(t, false)
			if invalid != walletauth.DefaultOTPMaxAttempts || refused != wrongGuesses-walletauth.DefaultOTPMaxAttempts {
				t.Fatalf("%d answers were Invalid OTP code and %d too many failed attempts, want %d and %d",
					invalid, refused, walletauth.DefaultOTPMaxAttempts, wrongGuesses-walletauth.DefaultOTPMaxAttempts)
			}
		})
		t.Run("the right code inside the burst", func(t *testing.T) {
			burst(t, true)
		})
	})
}

// stamped returns c as the retry of ch, stamped by key.
func stamped(t *testing.T, c signedretry.Request, ch *signedretry.Challenge, key *walletauth.ClientKey) signedretry.Request {
	t.Helper()
	if ch == nil {
		t.Fatal("no challenge to sign")
	}
	sig, err := key.Stamp(ch.PayloadToSign)
	if err != nil {
		t.Fatal(err)
	}
	c.Signature, c.RequestID = sig, ch.RequestID
	return c
}

// together runs every fn at once and returns their errors in order.
func together(fns ...func() error) []error {
	errs := make([]error, len(fns))
	start := make(chan struct{})
	done := make(chan struct{})
	for i, fn := range fns {
		go func() {
			defer func() { done <- struct{}{} }()
			<-start
			errs[i] = fn()
		}()
	}
	close(start)
	for range fns {
		<-done
	}
	return errs
}

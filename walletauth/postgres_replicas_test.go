package walletauth_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/accounts"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/ownership"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/postgres"
	"github.com/walletgate/walletgate/storage/postgres/pgtest"
	"github.com/walletgate/walletgate/storage/storagetest"
	"github.com/walletgate/walletgate/walletauth"
	"github.com/walletgate/walletgate/walletauth/authclient"
	"github.com/walletgate/walletgate/walletauth/secret"
)

// wauthReplicas is one walletauth deployment on four replicas of one
// schema: a sandbox service per store, sharing the keys that protect OTP
// issuances at rest and the key that signs target bundles.
type wauthReplicas struct {
	stores   []*postgres.Store
	services []*walletauth.Service
}

// newWauthReplicas starts a service with the OTP policy otp on each of
// replicaStores; wrap, when not nil, wraps the store of replica i.
func newWauthReplicas(t *testing.T, otp walletauth.OTPConfig, wrap func(i int, s storage.Store) storage.Store) *wauthReplicas {
	t.Helper()
	r := &wauthReplicas{stores: pgtest.Replicas(t, replicas, 4, postgres.Config{})}
	key, err := secret.GenerateKey(nil, "replicas")
	if err != nil {
		t.Fatal(err)
	}
	ring, err := secret.NewKeyring(key)
	if err != nil {
		t.Fatal(err)
	}
	// Replicas share the key that signs OTP target bundles, as they must.
	signer, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range r.stores {
		var st storage.Store = s
		if wrap != nil {
			st = wrap(i, s)
		}
		svc, err := walletauth.New(walletauth.Config{Store: st, Sandbox: true,
			Keys: walletauth.Keys{SigningKey: signer, Sealer: ring, CodeMACKey: bytes.Repeat([]byte{0x5a}, walletauth.MinCodeMACKeyLen)}, OTP: otp})
		if err != nil {
			t.Fatal(err)
		}
		r.services = append(r.services, svc)
	}
	return r
}

func verifyCall(credID string, typ storage.CredentialType) signedretry.Request {
	return signedretry.Request{Method: http.MethodPost, Path: "/auth/credentials/" + credID + "/verify",
		Body: []byte(`{"type":"` + string(typ) + `"}`)}
}

// guess runs leg 1 of an OTP verify of credID with code sealed to bundle.
func guess(t *testing.T, svc *walletauth.Service, credID string, typ storage.CredentialType, bundle, code string) error {
	t.Helper()
	ctx := t.Context()
	key, err := authclient.NewClientKey()
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := key.SealOTP(bundle, svc.SigningPublicKey(), code, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = svc.Verify(ctx, credID, walletauth.VerifyRequest{Type: typ, EncryptedOTPBundle: sealed}, verifyCall(credID, typ))
	return err
}

// otpLogin verifies an OTP credential with the sandbox code sealed to
// bundle and returns the session's key.
func otpLogin(t *testing.T, svc *walletauth.Service, credID string, typ storage.CredentialType, bundle string) *authclient.ClientKey {
	t.Helper()
	ctx := t.Context()
	key, err := authclient.NewClientKey()
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := key.SealOTP(bundle, svc.SigningPublicKey(), walletauth.SandboxOTPCode, nil)
	if err != nil {
		t.Fatal(err)
	}
	req := walletauth.VerifyRequest{Type: typ, EncryptedOTPBundle: sealed}
	c := verifyCall(credID, typ)
	_, ch, err := svc.Verify(ctx, credID, req, c)
	if err != nil {
		t.Fatalf("leg 1: %v", err)
	}
	if _, _, err := svc.Verify(ctx, credID, req, stamped(t, c, ch, key)); err != nil {
		t.Fatalf("leg 2: %v", err)
	}
	return key
}

// wallet creates a wallet of customer on address, logs in with its EMAIL_OTP
// credential and returns the wallet, the credential and the session's key.
func (r *wauthReplicas) wallet(t *testing.T, customer, address string) (*storage.InternalAccount, *walletauth.AuthMethod, *authclient.ClientKey) {
	t.Helper()
	ctx := t.Context()
	svc := r.services[0]
	w, email, err := svc.CreateWallet(ctx, walletauth.NewWallet{CustomerID: customer, Email: address, Phone: "+14155550123"})
	if err != nil {
		t.Fatal(err)
	}
	m, err := svc.Challenge(ctx, email.ID, walletauth.ChallengeRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return w, email, otpLogin(t, svc, email.ID, storage.EmailOTP, m.OTPEncryptionTargetBundle)
}

// addSMS adds an SMS_OTP credential to wallet through a retry stamped by key.
func (r *wauthReplicas) addSMS(t *testing.T, wallet *storage.InternalAccount, key *authclient.ClientKey) *walletauth.AuthMethod {
	t.Helper()
	ctx := t.Context()
	svc := r.services[0]
	add := signedretry.Request{Method: http.MethodPost, Path: "/auth/credentials",
		Body: []byte(`{"type":"SMS_OTP","accountId":"` + wallet.ID + `"}`)}
	req := walletauth.AddCredentialRequest{Type: storage.SMSOTP, AccountID: wallet.ID}
	_, ch, err := svc.AddCredential(ctx, req, add)
	if err != nil {
		t.Fatal(err)
	}
	sms, _, err := svc.AddCredential(ctx, req, stamped(t, add, ch, key))
	if err != nil {
		t.Fatal(err)
	}
	return sms
}

// revoke runs both legs of a credential revoke on svc, the retry stamped by
// key.
func revoke(t *testing.T, svc *walletauth.Service, credID string, key *authclient.ClientKey) error {
	t.Helper()
	ctx := t.Context()
	c := signedretry.Request{Method: http.MethodDelete, Path: "/auth/credentials/" + credID}
	ch, err := svc.RevokeCredential(ctx, credID, c)
	if err != nil {
		return err
	}
	_, err = svc.RevokeCredential(ctx, credID, stamped(t, c, ch, key))
	return err
}

// TestReplicasAddEmailOTPRacesEmailChange races, on two replicas, the retry
// of an EMAIL_OTP add for a wallet's address (its own EMAIL_OTP credential
// was revoked) against another customer's signed change to that address:
// exactly one wins, the other is 409 EMAIL_OTP_EMAIL_ALREADY_EXISTS, and one
// EMAIL_OTP credential holds the address.
func TestReplicasAddEmailOTPRacesEmailChange(t *testing.T) {
	ctx := t.Context()
	r := newWauthReplicas(t, walletauth.OTPConfig{ReissueLimit: 100}, nil)
	svc := r.services[0]
	for round := range 8 {
		address := fmt.Sprintf("taken-%d@example.com", round)
		w, email, key := r.wallet(t, fmt.Sprintf("Customer:a-%d", round), address)
		sms := r.addSMS(t, w, key)
		smsKey := otpLogin(t, svc, sms.ID, storage.SMSOTP, sms.OTPEncryptionTargetBundle)
		if err := revoke(t, svc, email.ID, smsKey); err != nil {
			t.Fatal(err)
		}
		req := walletauth.AddCredentialRequest{Type: storage.EmailOTP, AccountID: w.ID}
		add := signedretry.Request{Method: http.MethodPost, Path: "/auth/credentials", Body: []byte(`{"type":"EMAIL_OTP"}`)}
		_, ch, err := svc.AddCredential(ctx, req, add)
		if err != nil {
			t.Fatal(err)
		}
		addRetry := stamped(t, add, ch, smsKey)

		other := fmt.Sprintf("Customer:b-%d", round)
		_, _, otherKey := r.wallet(t, other, "first-"+address)
		change := signedretry.Request{Method: http.MethodPatch, Path: "/customers/" + other, Body: []byte(`{"email":"` + address + `"}`)}
		_, ch, err = svc.UpdateEmail(ctx, other, address, nil, change)
		if err != nil {
			t.Fatal(err)
		}
		changeRetry := stamped(t, change, ch, otherKey)

		a, b := r.services[1+round%(len(r.services)-1)], r.services[(2+round)%len(r.services)]
		errs := together(
			func() error { _, _, err := a.AddCredential(ctx, req, addRetry); return err },
			func() error { _, _, err := b.UpdateEmail(ctx, other, address, nil, changeRetry); return err },
		)
		apierrortest.OneWins(t, fmt.Sprintf("round %d", round), errs, apierror.EmailOTPEmailAlreadyExists)
		mustAtomic(t, r.stores[0], func(tx storage.Tx) error {
			tied, err := tx.Credentials().ListEmailOTPByEmail(ctx, "", address)
			if err == nil && len(tied) != 1 {
				t.Fatalf("round %d: %d EMAIL_OTP credentials hold the address, want 1", round, len(tied))
			}
			return err
		})
	}
}

// pausingStore runs pause, once armed, when a transaction reads the live OTP
// issuance of the armed credential, and then goes on: the point of an OTP
// verify between taking the credential (with its attempt) and writing what
// the attempt decided.
type pausingStore struct {
	storage.Store
	mu     sync.Mutex
	credID string
	pause  func()
}

func (p *pausingStore) arm(credID string, pause func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.credID, p.pause = credID, pause
}

func (p *pausingStore) Atomic(ctx context.Context, fn func(tx storage.Tx) error) error {
	return p.Store.Atomic(ctx, func(tx storage.Tx) error { return fn(pausingTx{tx, p}) })
}

type pausingTx struct {
	storage.Tx
	p *pausingStore
}

func (t pausingTx) Credentials() storage.Credentials { return pausingCreds{t.Tx.Credentials(), t.p} }

type pausingCreds struct {
	storage.Credentials
	p *pausingStore
}

func (c pausingCreds) Lock(ctx context.Context, id string, a *storage.OTPAttempt) (storage.LockedCredential, error) {
	r, err := c.Credentials.Lock(ctx, id, a)
	if a != nil {
		c.p.reached(id)
	}
	return r, err
}

// reached runs the armed pause, once, when credentialID is the armed
// credential's.
func (p *pausingStore) reached(credentialID string) {
	p.mu.Lock()
	pause := p.pause
	if credentialID == p.credID {
		p.credID, p.pause = "", nil
	} else {
		pause = nil
	}
	p.mu.Unlock()
	if pause != nil {
		pause()
	}
}

// TestReplicasOTPLockedNotAfterRevoked runs a revoke of an SMS_OTP credential
// on one replica while an OTP verify of it on another has read the
// credential and is about to record the wrong code that locks its issuance:
// the verify holds the credential, so the revoke commits after it, and no
// event about the credential follows its AUTH_CREDENTIAL.REVOKED.
func TestReplicasOTPLockedNotAfterRevoked(t *testing.T) {
	var paused *pausingStore
	r := newWauthReplicas(t, walletauth.OTPConfig{MaxAttempts: 1}, func(i int, s storage.Store) storage.Store {
		if i == 0 {
			paused = &pausingStore{Store: s}
			return paused
		}
		return s
	})
	w, _, key := r.wallet(t, "Customer:locked", "locked@example.com")
	sms := r.addSMS(t, w, key)

	// The revoke, signed by the EMAIL_OTP session, runs on replica 1 while
	// the verify on replica 0 is paused; the verify waits for it to finish
	// (or, when the verify holds the credential, until it is stuck on it).
	var revokeErr error
	revoked := make(chan struct{})
	paused.arm(sms.ID, func() {
		go func() {
			defer close(revoked)
			revokeErr = revoke(t, r.services[1], sms.ID, key)
		}()
		select {
		case <-revoked:
		case <-time.After(2 * time.Second):
		}
	})
	err := guess(t, r.services[0], sms.ID, storage.SMSOTP, sms.OTPEncryptionTargetBundle, "111111")
	<-revoked
	if revokeErr != nil {
		t.Fatalf("revoke: %v", revokeErr)
	}
	if !isAPIError(err, http.StatusUnauthorized, apierror.Unauthorized, "Invalid OTP code") &&
		!isAPIError(err, http.StatusNotFound, apierror.ReferenceNotFound, "") {
		t.Fatalf("verify: %v, want 401 UNAUTHORIZED Invalid OTP code or 404 REFERENCE_NOT_FOUND", err)
	}
	gone := false
	for _, e := range storagetest.Events(t, r.stores[0], w.ID) {
		var p struct {
			Type string
			Data struct{ ID string }
		}
		if err := json.Unmarshal(e.Payload, &p); err != nil {
			t.Fatal(err)
		}
		if p.Data.ID != sms.ID {
			continue
		}
		if gone {
			t.Fatalf("event %s about %s follows its AUTH_CREDENTIAL.REVOKED", p.Type, sms.ID)
		}
		gone = p.Type == walletauth.EventCredentialRevoked
	}
	if !gone {
		t.Fatalf("no AUTH_CREDENTIAL.REVOKED of %s", sms.ID)
	}
}

// TestReplicasOTPAttemptBudget sends wrong codes of one credential from 16
// goroutines on each of four replicas, the per-issuance limit set far above
// the credential's budget of compared codes: exactly the budget's worth are
// compared, every other one is 429 RATE_LIMITED with Retry-After, one
// AUTH_CREDENTIAL.OTP_THROTTLED is written, and the right code is refused
// afterwards.
func TestReplicasOTPAttemptBudget(t *testing.T) {
	ctx := t.Context()
	const budget = 10
	r := newWauthReplicas(t, walletauth.OTPConfig{AttemptBudget: budget, MaxAttempts: 1000}, nil)
	svc := r.services[0]
	w, email, err := svc.CreateWallet(ctx, walletauth.NewWallet{CustomerID: "Customer:budget", Email: "budget@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	m, err := svc.Challenge(ctx, email.ID, walletauth.ChallengeRequest{})
	if err != nil {
		t.Fatal(err)
	}
	key, err := authclient.NewClientKey()
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := key.SealOTP(m.OTPEncryptionTargetBundle, svc.SigningPublicKey(), "111111", nil)
	if err != nil {
		t.Fatal(err)
	}
	byStore := map[*postgres.Store]*walletauth.Service{}
	for i, s := range r.stores {
		byStore[s] = r.services[i]
	}
	errs := pgtest.Race(t, r.stores, workersPerReplica, func(c context.Context, s *postgres.Store) error {
		_, _, err := byStore[s].Verify(c, email.ID, walletauth.VerifyRequest{Type: storage.EmailOTP, EncryptedOTPBundle: sealed},
			verifyCall(email.ID, storage.EmailOTP))
		return err
	})
	compared, throttled := 0, 0
	for i, err := range errs {
		switch {
		case isAPIError(err, http.StatusUnauthorized, apierror.Unauthorized, "Invalid OTP code"):
			compared++
		case isAPIError(err, http.StatusTooManyRequests, apierror.RateLimited, "") && apierror.As(err).RetryAfter > 0:
			throttled++
		default:
			t.Fatalf("guess %d answered %v", i, err)
		}
	}
	if compared != budget || throttled != len(errs)-budget {
		t.Fatalf("%d codes compared and %d refused, want %d and %d", compared, throttled, budget, len(errs)-budget)
	}
	err = guess(t, r.services[1], email.ID, storage.EmailOTP, m.OTPEncryptionTargetBundle, walletauth.SandboxOTPCode)
	if !isAPIError(err, http.StatusTooManyRequests, apierror.RateLimited, "") {
		t.Fatalf("the right code past the budget: %v, want 429 RATE_LIMITED", err)
	}
	n := 0
	for _, e := range storagetest.Events(t, r.stores[0], w.ID) {
		if e.Type == walletauth.EventCredentialOTPThrottled {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d OTP_THROTTLED events, want 1", n)
	}
}

// TestReplicasDomainOnce runs the domain operations that must happen once
// (an OTP verify leg and an ownership verify) from 16 goroutines on each of
// four replicas: one succeeds, every other attempt gets a typed error.
func TestReplicasDomainOnce(t *testing.T) {
	ctx := t.Context()
	first := newStore(t, newPool(t, 4))
	stores := []*postgres.Store{first}
	for range replicas - 1 {
		stores = append(stores, pgtest.SameSchema(t, first, newPool(t, 4), postgres.Config{}))
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
		key, _ := authclient.NewClientKey()
		bundle, err := key.SealOTP(m.OTPEncryptionTargetBundle, nil, walletauth.SandboxOTPCode, nil)
		if err != nil {
			t.Fatal(err)
		}
		req := walletauth.VerifyRequest{Type: storage.EmailOTP, EncryptedOTPBundle: bundle}
		call := signedretry.Request{Method: "POST", Path: "/auth/credentials/" + cred.ID + "/verify", Body: []byte(`{"type":"EMAIL_OTP"}`)}
		errs := pgtest.Race(t, stores, workersPerReplica, func(c context.Context, s *postgres.Store) error {
			_, _, err := services[s].Verify(c, cred.ID, req, call)
			return err
		})
		pgtest.OneWinner(t, "OTP verify leg 1", errs, func(err error) bool {
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
		errs := pgtest.Race(t, stores, workersPerReplica, func(cx context.Context, s *postgres.Store) error {
			_, err := services[s].Verify(cx, a.ID, req, ownership.CustomerTree)
			return err
		})
		pgtest.OneWinner(t, "ownership verify", errs, func(err error) bool { return apierror.CodeOf(err) == apierror.Conflict })
		if evs := storagetest.Events(t, first, a.ID); len(evs) != 1 {
			t.Fatalf("%d status events, want 1", len(evs))
		}
	})
}

// TestReplicasDomainRules runs the walletauth operations whose rules span
// several rows from several replicas at once: cross-signed revokes of an
// account's two credentials, two customers moving to one email address, and
// a burst of OTP guesses.
func TestReplicasDomainRules(t *testing.T) {
	ctx := t.Context()
	stores := pgtest.Replicas(t, replicas, 4, postgres.Config{})
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
	login := func(t *testing.T, credID string, typ storage.CredentialType, bundle string) *authclient.ClientKey {
		t.Helper()
		key, err := authclient.NewClientKey()
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
		emailKey *authclient.ClientKey, sms *walletauth.AuthMethod, smsKey *authclient.ClientKey) {
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
				key, err := authclient.NewClientKey()
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
				tied, err := tx.Credentials().ListEmailOTPByEmail(ctx, "", shared)
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
			key, err := authclient.NewClientKey()
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
func stamped(t *testing.T, c signedretry.Request, ch *signedretry.Challenge, key *authclient.ClientKey) signedretry.Request {
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

package walletauth_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/memory"
	"github.com/walletgate/walletgate/storage/storagetest"
	"github.com/walletgate/walletgate/walletauth"
	"github.com/walletgate/walletgate/walletauth/envelope"
	"github.com/walletgate/walletgate/walletauth/secret"
)

// testSigningKey is the bundle signing key of the test services.
var testSigningKey = func() *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	return k
}()

// testCodeMACKey is the CodeMACKey of the test services.
var testCodeMACKey = bytes.Repeat([]byte{0x5c}, walletauth.MinCodeMACKeyLen)

// testKey returns a keyring key with id whose secret is derived from the id.
func testKey(t testing.TB, id string) secret.Key {
	t.Helper()
	sec := make([]byte, secret.KeySize)
	copy(sec, id)
	k, err := secret.NewKey(id, sec)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// testKeyring returns a keyring of testKey(current), opening also older.
func testKeyring(t testing.TB, current string, older ...string) *secret.Keyring {
	t.Helper()
	var olds []secret.Key
	for _, id := range older {
		olds = append(olds, testKey(t, id))
	}
	r, err := secret.NewKeyring(testKey(t, current), olds...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// storedIssuance reads the live issuance of a credential as the store holds
// it: what a read of the database gives.
func (e *env) storedIssuance(t testing.TB, credID string) storage.OTPIssuance {
	t.Helper()
	ctx := t.Context()
	var iss *storage.OTPIssuance
	err := e.store.Atomic(ctx, func(tx storage.Tx) error {
		var err error
		iss, err = storagetest.Issuance(ctx, tx, credID)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if iss == nil {
		t.Fatalf("no issuance stored for %s", credID)
	}
	return *iss
}

// writeIssuance overwrites the stored issuance, as someone with write access
// to the database could.
func (e *env) writeIssuance(t testing.TB, iss storage.OTPIssuance) {
	t.Helper()
	ctx := t.Context()
	if err := e.store.Atomic(ctx, func(tx storage.Tx) error { return tx.OTPIssuances().Put(ctx, &iss) }); err != nil {
		t.Fatal(err)
	}
}

// leg1 seals code to the target bundle and runs verify leg 1.
func (e *env) leg1(t testing.TB, svc *walletauth.Service, credID, bundle, code string) error {
	t.Helper()
	ctx := t.Context()
	sealed, err := newKey(t).SealOTP(bundle, nil, code, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = svc.Verify(ctx, credID, walletauth.VerifyRequest{Type: storage.EmailOTP, EncryptedOTPBundle: sealed},
		call("POST", "/auth/credentials/"+credID+"/verify", `{"type":"EMAIL_OTP"}`))
	return err
}

// TestStoreHoldsNoOTPSecrets is the regression test of secrets at rest: what
// the store holds for a fresh issuance is neither the code the Sender
// delivered nor a target key that opens the client's answer.
func TestStoreHoldsNoOTPSecrets(t *testing.T) {
	ctx := t.Context()
	for _, sandbox := range []bool{false, true} {
		e := newEnv(t, func(c *walletauth.Config) { c.Sandbox = sandbox })
		m, err := e.svc.Challenge(ctx, e.email.ID, walletauth.ChallengeRequest{})
		if err != nil {
			t.Fatal(err)
		}
		code := walletauth.SandboxOTPCode
		if !sandbox {
			code = e.outbox.last(t).Code
		}
		iss := e.storedIssuance(t, e.email.ID)
		if iss.Code == code || strings.Contains(iss.Code, code) {
			t.Fatalf("sandbox %v: the store holds the code %q as %q", sandbox, code, iss.Code)
		}
		if mac, err := hex.DecodeString(iss.Code); err != nil || len(mac) != 32 {
			t.Fatalf("sandbox %v: stored code %q is not a hex HMAC-SHA256", sandbox, iss.Code)
		}
		if id, err := secret.KeyID(iss.TargetKey); err != nil || id != "test-1" {
			t.Fatalf("sandbox %v: stored target key is not sealed under test-1: %q, %v", sandbox, id, err)
		}
		// The client's answer, sealed to this issuance's target: neither the
		// stored bytes nor any 32-byte window of them opens it.
		key := newKey(t)
		answer, err := key.SealOTP(m.OTPEncryptionTargetBundle, nil, code, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := envelope.OpenOTP(iss.TargetKey, answer); err == nil {
			t.Fatalf("sandbox %v: the stored target key opens the client's answer", sandbox)
		}
		for i := 0; i+32 <= len(iss.TargetKey); i++ {
			if _, err := envelope.OpenOTP(iss.TargetKey[i:i+32], answer); err == nil {
				t.Fatalf("sandbox %v: bytes %d..%d of the stored target key are the scalar", sandbox, i, i+32)
			}
		}
		// The service itself still completes the login.
		e.verify(t, e.email.ID, storage.EmailOTP, answer, key)
	}
}

// TestCodeMACBoundToIssuance: a stored MAC copied into another issuance's row
// (a superseded one of the same credential, or another credential's) does
// not accept the code it was made for.
func TestCodeMACBoundToIssuance(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t, nil)
	if _, err := e.svc.Challenge(ctx, e.email.ID, walletauth.ChallengeRequest{}); err != nil {
		t.Fatal(err)
	}
	oldCode, oldIss := e.outbox.last(t).Code, e.storedIssuance(t, e.email.ID)
	second, err := e.svc.Challenge(ctx, e.email.ID, walletauth.ChallengeRequest{})
	if err != nil {
		t.Fatal(err)
	}
	newCode, iss := e.outbox.last(t).Code, e.storedIssuance(t, e.email.ID)
	if oldCode == newCode {
		t.Skip("two random codes collided")
	}
	iss.Code = oldIss.Code // roll the row's MAC back to the superseded issuance's
	e.writeIssuance(t, iss)
	apierrortest.Want(t, e.leg1(t, e.svc, e.email.ID, second.OTPEncryptionTargetBundle, oldCode), apierror.Unauthorized, "Invalid OTP code")
	apierrortest.Want(t, e.leg1(t, e.svc, e.email.ID, second.OTPEncryptionTargetBundle, newCode), apierror.Unauthorized, "Invalid OTP code")

	// Another credential's MAC, with that credential's code.
	_, other, err := e.svc.CreateWallet(ctx, walletauth.NewWallet{CustomerID: "Customer:2", Email: "grace@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Challenge(ctx, other.ID, walletauth.ChallengeRequest{}); err != nil {
		t.Fatal(err)
	}
	otherCode, otherIss := e.outbox.last(t).Code, e.storedIssuance(t, other.ID)
	third, err := e.svc.Challenge(ctx, e.email.ID, walletauth.ChallengeRequest{})
	if err != nil {
		t.Fatal(err)
	}
	iss = e.storedIssuance(t, e.email.ID)
	iss.Code = otherIss.Code
	e.writeIssuance(t, iss)
	apierrortest.Want(t, e.leg1(t, e.svc, e.email.ID, third.OTPEncryptionTargetBundle, otherCode), apierror.Unauthorized, "Invalid OTP code")
}

// TestSealedTargetKeyBoundToIssuance: a sealed target key moved into another
// issuance's row does not open there, even with a client answer sealed to
// the moved key's public half; the verification answers 500 INTERNAL_ERROR
// (the stored state is at fault) and charges no attempt.
func TestSealedTargetKeyBoundToIssuance(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t, nil)
	_, other, err := e.svc.CreateWallet(ctx, walletauth.NewWallet{CustomerID: "Customer:2", Email: "grace@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	otherCh, err := e.svc.Challenge(ctx, other.ID, walletauth.ChallengeRequest{})
	if err != nil {
		t.Fatal(err)
	}
	otherIss := e.storedIssuance(t, other.ID)
	if _, err := e.svc.Challenge(ctx, e.email.ID, walletauth.ChallengeRequest{}); err != nil {
		t.Fatal(err)
	}
	code := e.outbox.last(t).Code
	iss := e.storedIssuance(t, e.email.ID)
	iss.TargetKey = otherIss.TargetKey
	e.writeIssuance(t, iss)
	err = e.leg1(t, e.svc, e.email.ID, otherCh.OTPEncryptionTargetBundle, code)
	if ae := apierrortest.Want(t, err, apierror.InternalError, ""); ae.Message != "internal error" || !errors.Is(err, secret.ErrNotAuthentic) {
		t.Fatalf("moved target key: %q, cause %v", ae.Message, errors.Unwrap(err))
	}
	if got := e.storedIssuance(t, e.email.ID); got.Attempts != iss.Attempts || !got.ConsumedAt.IsZero() {
		t.Fatalf("a 500 charged an attempt: %d -> %d", iss.Attempts, got.Attempts)
	}
}

// TestTargetKeyUnopenable: a stored target key that is altered, or sealed
// under a key the service's keyring does not hold, answers 500
// INTERNAL_ERROR without details, directly and over HTTP.
func TestTargetKeyUnopenable(t *testing.T) {
	ctx := t.Context()
	for _, tc := range []struct {
		name   string
		break_ func(t *testing.T, e *env, iss *storage.OTPIssuance) *walletauth.Service
		cause  error
	}{
		{"tampered ciphertext", func(t *testing.T, e *env, iss *storage.OTPIssuance) *walletauth.Service {
			iss.TargetKey[len(iss.TargetKey)-20] ^= 0x01
			e.writeIssuance(t, *iss)
			return e.svc
		}, secret.ErrNotAuthentic},
		{"truncated", func(t *testing.T, e *env, iss *storage.OTPIssuance) *walletauth.Service {
			iss.TargetKey = iss.TargetKey[:10]
			e.writeIssuance(t, *iss)
			return e.svc
		}, secret.ErrMalformed},
		{"legacy plaintext scalar", func(t *testing.T, e *env, iss *storage.OTPIssuance) *walletauth.Service {
			iss.TargetKey = bytes.Repeat([]byte{7}, 32)
			e.writeIssuance(t, *iss)
			return e.svc
		}, secret.ErrMalformed},
		{"key id rewritten", func(t *testing.T, e *env, iss *storage.OTPIssuance) *walletauth.Service {
			iss.TargetKey[2] = 'T' // "test-1" -> "Test-1"
			e.writeIssuance(t, *iss)
			return e.svc
		}, secret.ErrUnknownKey},
		{"keyring without the key", func(t *testing.T, e *env, iss *storage.OTPIssuance) *walletauth.Service {
			return e.service(t, testKeyring(t, "test-2"), testCodeMACKey)
		}, secret.ErrUnknownKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, guarded) // HTTP needs a tenant guard
			m, err := e.svc.Challenge(ctx, e.email.ID, walletauth.ChallengeRequest{})
			if err != nil {
				t.Fatal(err)
			}
			code := e.outbox.last(t).Code
			iss := e.storedIssuance(t, e.email.ID)
			svc := tc.break_(t, e, &iss)
			err = e.leg1(t, svc, e.email.ID, m.OTPEncryptionTargetBundle, code)
			apierrortest.Want(t, err, apierror.InternalError, "")
			if !errors.Is(err, tc.cause) {
				t.Fatalf("cause %v, want %v", errors.Unwrap(err), tc.cause)
			}
			if got := e.storedIssuance(t, e.email.ID); got.Attempts != iss.Attempts {
				t.Fatalf("a 500 charged an attempt: %d -> %d", iss.Attempts, got.Attempts)
			}

			srv := httptest.NewServer(handler(t, svc))
			defer srv.Close()
			sealed, _ := newKey(t).SealOTP(m.OTPEncryptionTargetBundle, nil, code, nil)
			body, _ := json.Marshal(map[string]string{"type": "EMAIL_OTP", "encryptedOtpBundle": sealed})
			res, err := srv.Client().Post(srv.URL+"/auth/credentials/"+e.email.ID+"/verify", "application/json", bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(res.Body)
			res.Body.Close()
			var got map[string]any
			if err := json.Unmarshal(raw, &got); err != nil {
				t.Fatalf("body %s: %v", raw, err)
			}
			if res.StatusCode != http.StatusInternalServerError || got["status"] != 500.0 || got["code"] != "INTERNAL_ERROR" ||
				got["message"] != "internal error" || got["details"] != nil {
				t.Fatalf("HTTP: %d %s", res.StatusCode, raw)
			}
			for _, leak := range []string{"secret", "test-", "OTP:", "authenticate", "key"} {
				if strings.Contains(string(raw), leak) {
					t.Fatalf("the 500 body %s mentions %q", raw, leak)
				}
			}
		})
	}
}

// service returns another service on e's store with the given at-rest keys
// and e's guard.
func (e *env) service(t testing.TB, sealer secret.Sealer, macKey []byte) *walletauth.Service {
	t.Helper()
	svc, err := walletauth.New(walletauth.Config{Store: e.store, Sender: e.outbox, Clock: e.clock.Now, OrganizationID: "org-test",
		Keys: walletauth.Keys{SigningKey: testSigningKey, Sealer: sealer, CodeMACKey: macKey}, Guard: e.cfg.Guard})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// TestSecretKeyRotation: a replica restarted with a new current key (the old
// one kept for opening) verifies codes issued before the rotation, and seals
// new issuances under the new key. A different CodeMACKey rejects earlier
// codes as wrong.
func TestSecretKeyRotation(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t, nil)
	m, err := e.svc.Challenge(ctx, e.email.ID, walletauth.ChallengeRequest{})
	if err != nil {
		t.Fatal(err)
	}
	code := e.outbox.last(t).Code
	rotated := e.service(t, testKeyring(t, "test-2", "test-1"), testCodeMACKey)
	if err := e.leg1(t, rotated, e.email.ID, m.OTPEncryptionTargetBundle, code); err != nil {
		t.Fatalf("a code issued under test-1, verified after rotating to test-2: %v", err)
	}
	if _, err := rotated.Challenge(ctx, e.email.ID, walletauth.ChallengeRequest{}); err != nil {
		t.Fatal(err)
	}
	if id, err := secret.KeyID(e.storedIssuance(t, e.email.ID).TargetKey); err != nil || id != "test-2" {
		t.Fatalf("after rotation the target key is sealed under %q (%v), want test-2", id, err)
	}
	// The original service (test-1 only) cannot open it: rotation needs
	// every replica to hold the new key before any seals with it.
	m, _ = rotated.Challenge(ctx, e.email.ID, walletauth.ChallengeRequest{})
	err = e.leg1(t, e.svc, e.email.ID, m.OTPEncryptionTargetBundle, e.outbox.last(t).Code)
	apierrortest.Want(t, err, apierror.InternalError, "")

	otherMAC := e.service(t, testKeyring(t, "test-2", "test-1"), bytes.Repeat([]byte{0x36}, 32))
	m, _ = rotated.Challenge(ctx, e.email.ID, walletauth.ChallengeRequest{})
	err = e.leg1(t, otherMAC, e.email.ID, m.OTPEncryptionTargetBundle, e.outbox.last(t).Code)
	apierrortest.Want(t, err, apierror.Unauthorized, "Invalid OTP code")
}

// TestNewRequiresKeys: New refuses to run without all three keys, in
// sandbox mode too, and refuses a short CodeMACKey and a Sealer that does
// not work.
func TestNewRequiresKeys(t *testing.T) {
	base := walletauth.Config{Store: memory.New(), Sender: &outbox{}}
	keys := testKeyring(t, "k")
	full := func(c *walletauth.Config) {
		c.Keys = walletauth.Keys{SigningKey: testSigningKey, Sealer: keys, CodeMACKey: testCodeMACKey}
	}
	for _, tc := range []struct {
		name string
		mod  func(*walletauth.Config)
		want error // nil: New succeeds
	}{
		{"none", func(*walletauth.Config) {}, walletauth.ErrKeysRequired},
		{"none, sandbox", func(c *walletauth.Config) { c.Sandbox = true }, walletauth.ErrKeysRequired},
		{"no SigningKey", func(c *walletauth.Config) { full(c); c.Keys.SigningKey = nil }, walletauth.ErrKeysRequired},
		{"no CodeMACKey", func(c *walletauth.Config) { full(c); c.Keys.CodeMACKey = nil }, walletauth.ErrKeysRequired},
		{"no Sealer", func(c *walletauth.Config) { full(c); c.Keys.Sealer = nil }, walletauth.ErrKeysRequired},
		{"empty CodeMACKey", func(c *walletauth.Config) { full(c); c.Keys.CodeMACKey = []byte{} }, errShort},
		{"short CodeMACKey", func(c *walletauth.Config) { full(c); c.Keys.CodeMACKey = make([]byte, 31) }, errShort},
		{"nil *Keyring", func(c *walletauth.Config) { full(c); c.Keys.Sealer = (*secret.Keyring)(nil) }, errBroken},
		{"failing Sealer", func(c *walletauth.Config) { full(c); c.Keys.Sealer = brokenSealer{} }, errBroken},
		{"failing Sealer, sandbox", func(c *walletauth.Config) { full(c); c.Sandbox, c.Keys.Sealer = true, brokenSealer{} }, errBroken},
		{"all", full, nil},
		{"sandbox", func(c *walletauth.Config) { full(c); c.Sandbox = true }, nil},
		{"ephemeral", func(c *walletauth.Config) {
			k, err := walletauth.EphemeralKeys(nil)
			if err != nil {
				t.Fatal(err)
			}
			c.Keys = k
		}, nil},
	} {
		cfg := base
		tc.mod(&cfg)
		_, err := walletauth.New(cfg)
		switch {
		case tc.want == nil && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want == errShort && (err == nil || !strings.Contains(err.Error(), "CodeMACKey is")):
			t.Errorf("%s: %v, want a CodeMACKey length error", tc.name, err)
		case tc.want == errBroken && (err == nil || !strings.Contains(err.Error(), "Sealer does not work")):
			t.Errorf("%s: %v, want a Sealer error", tc.name, err)
		case tc.want != nil && tc.want != errShort && tc.want != errBroken && !errors.Is(err, tc.want):
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}

var errShort, errBroken = errors.New("short key"), errors.New("broken sealer")

// brokenSealer is a Sealer whose key service is unreachable.
type brokenSealer struct{}

func (brokenSealer) Seal([]byte, []byte) ([]byte, error) {
	return nil, errors.New("kms: connection refused")
}
func (brokenSealer) Open([]byte, []byte) ([]byte, error) {
	return nil, errors.New("kms: connection refused")
}

// ephemeralKeys is walletauth.EphemeralKeys that fails t on an error.
func ephemeralKeys(t testing.TB) walletauth.Keys {
	t.Helper()
	k, err := walletauth.EphemeralKeys(nil)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestEphemeralKeys: ephemeral keys run logins on generated keys, which
// never reach the store in plaintext and which another process does not
// hold.
func TestEphemeralKeys(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t, func(c *walletauth.Config) { c.Keys = ephemeralKeys(t) })
	e.login(t, e.email.ID, storage.EmailOTP)

	m, err := e.svc.Challenge(ctx, e.email.ID, walletauth.ChallengeRequest{})
	if err != nil {
		t.Fatal(err)
	}
	code, iss := e.outbox.last(t).Code, e.storedIssuance(t, e.email.ID)
	if iss.Code == code || len(iss.Code) != 64 {
		t.Fatalf("ephemeral keys store the code as %q", iss.Code)
	}
	if _, err := secret.KeyID(iss.TargetKey); err != nil {
		t.Fatalf("ephemeral keys store an unsealed target key: %v", err)
	}
	restarted, err := walletauth.New(walletauth.Config{Store: e.store, Sender: e.outbox, Clock: e.clock.Now, Keys: ephemeralKeys(t)})
	if err != nil {
		t.Fatal(err)
	}
	apierrortest.Want(t, e.leg1(t, restarted, e.email.ID, m.OTPEncryptionTargetBundle, code), apierror.InternalError, "")
}

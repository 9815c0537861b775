package signedretry_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/signedretry/stamper"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/memory"
	"github.com/walletgate/walletgate/storage/storagetest"
)

// fixture is an account with two credentials and a session on each.
type fixture struct {
	store          storage.Store
	clock          *storagetest.Clock
	mgr            *signedretry.Manager
	account        string
	credA, credB   string
	sessA, sessB   string
	keyA, keyB     *ecdsa.PrivateKey
	stranger       *ecdsa.PrivateKey
	strangerSessID string
}

func newFixture(t testing.TB, sandbox bool) *fixture {
	t.Helper()
	return newFixtureOn(t, memory.New(), sandbox)
}

// newFixtureOn is newFixture on store.
func newFixtureOn(t testing.TB, store storage.Store, sandbox bool) *fixture {
	t.Helper()
	f := &fixture{store: store, clock: storagetest.NewClock(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))}
	f.mgr = newManager(t, signedretry.Config{Store: f.store, Clock: f.clock.Now, Sandbox: sandbox})
	f.account = newID(t, "InternalAccount")
	f.credA, f.credB = newID(t, "AuthMethod"), newID(t, "AuthMethod")
	f.keyA, f.keyB, f.stranger = newKey(t), newKey(t), newKey(t)
	f.sessA = f.addSession(t, f.account, f.credA, f.keyA)
	f.sessB = f.addSession(t, f.account, f.credB, f.keyB)
	// The stranger has an active session, on another account.
	f.strangerSessID = f.addSession(t, newID(t, "InternalAccount"), newID(t, "AuthMethod"), f.stranger)
	return f
}

func (f *fixture) addSession(t testing.TB, account, cred string, key *ecdsa.PrivateKey) string {
	t.Helper()
	ctx := t.Context()
	s := storage.Session{ID: newID(t, "Session"), AccountID: account, CredentialID: cred,
		PublicKey: elliptic.MarshalCompressed(elliptic.P256(), key.X, key.Y),
		CreatedAt: f.clock.Now(), ExpiresAt: f.clock.Now().Add(15 * time.Minute)}
	if err := f.store.Atomic(ctx, func(tx storage.Tx) error {
		if err := tx.Credentials().Create(ctx, oauthCredential(cred, account, f.clock.Now())); err != nil {
			return err
		}
		return tx.Sessions().Create(ctx, &s)
	}); err != nil {
		t.Fatal(err)
	}
	return s.ID
}

// oauthCredential is a credential a session can be issued by.
func oauthCredential(id, account string, now time.Time) *storage.Credential {
	return &storage.Credential{ID: id, AccountID: account, Type: storage.OAuth, Nickname: "test",
		OAuth:     &storage.OAuthIdentity{Issuer: "https://issuer.example", Audience: "walletgate", Subject: id},
		CreatedAt: now, UpdatedAt: now}
}

func newID(t testing.TB, prefix string) string {
	id, err := storage.NewID(nil, prefix)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func compressedHex(k *ecdsa.PrivateKey) string {
	return hex.EncodeToString(elliptic.MarshalCompressed(elliptic.P256(), k.X, k.Y))
}

func stamp(t testing.TB, k *ecdsa.PrivateKey, payload string) string {
	t.Helper()
	s, err := stamper.NewStamp(k, []byte(payload))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

const body = `{"accountId":"InternalAccount:x","nickname":"laptop","amounts":[1,2.50,9007199254740993]}`

func (f *fixture) issue(t testing.TB, signer signedretry.Signer) *signedretry.Challenge {
	t.Helper()
	c, err := f.mgr.Issue(t.Context(), first(), signedretry.TestOperation{Type: "ADD_CREDENTIAL", AccountID: f.account,
		Signer: signer, Parameters: map[string]string{"credentialType": "PASSKEY"}, CredentialType: "PASSKEY"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// first is the first call the fixture's challenges are issued for.
func first() signedretry.Request {
	return signedretry.Request{Method: "POST", Path: "/auth/credentials", Body: []byte(body)}
}

// opType is the operation type of the fixture's challenges.
const opType = "ADD_CREDENTIAL"

func retry(c *signedretry.Challenge, sig string) signedretry.Request {
	r := first()
	r.Signature, r.RequestID = sig, c.RequestID
	return r
}

// newManager is signedretry.New that fails t on an error.
func newManager(t testing.TB, cfg signedretry.Config) *signedretry.Manager {
	t.Helper()
	m, err := signedretry.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestIssuePayload(t *testing.T) {
	f := newFixture(t, false)
	f.mgr = newManager(t, signedretry.Config{Store: f.store, Clock: f.clock.Now,
		Rand: bytes.NewReader(bytes.Repeat([]byte{0xab}, 16)), TTL: 2 * time.Minute})
	c := f.issue(t, signedretry.Signer{Rule: signedretry.AnySession})
	if c.RequestID != "Request:abababab-abab-4bab-abab-abababababab" {
		t.Fatalf("request id %s", c.RequestID)
	}
	digest, _ := stamper.BodyDigest([]byte(body))
	want := `{"type":"ADD_CREDENTIAL","requestId":"Request:abababab-abab-4bab-abab-abababababab","accountId":"` + f.account +
		`","parameters":{"credentialType":"PASSKEY"},"bodySha256":"` + hex.EncodeToString(digest[:]) +
		`","timestampMs":"1777636800000","expiresAt":"2026-05-01T12:02:00Z"}`
	if c.PayloadToSign != want {
		t.Fatalf("payload\n got %s\nwant %s", c.PayloadToSign, want)
	}
	if !c.ExpiresAt.Equal(f.clock.Now().Add(2*time.Minute)) || c.Type != "PASSKEY" {
		t.Fatalf("challenge %+v", c)
	}
	b, _ := json.Marshal(c)
	var wire map[string]any
	_ = json.Unmarshal(b, &wire)
	if wire["expiresAt"] != "2026-05-01T12:02:00Z" || wire["type"] != "PASSKEY" || len(wire) != 4 {
		t.Fatalf("202 body %s", b)
	}
}

func TestIssueRejects(t *testing.T) {
	ctx := t.Context()
	f := newFixture(t, false)
	op := signedretry.TestOperation{Type: "X", AccountID: f.account, Signer: signedretry.Signer{Rule: signedretry.AnySession}}
	req := signedretry.Request{Method: "POST", Path: "/x"}
	badReq := req
	badReq.Body = []byte(`{"a":`)
	_, err := f.mgr.Issue(ctx, badReq, op)
	bad := op
	apierrortest.Want(t, err, apierror.InvalidInput, "")
	bad.Parameters = []string{"not", "an", "object"}
	_, err = f.mgr.Issue(ctx, req, bad)
	apierrortest.Want(t, err, apierror.InternalError, "")
	bad = op
	bad.Signer.Rule = "EVERYONE"
	_, err = f.mgr.Issue(ctx, req, bad)
	apierrortest.Want(t, err, apierror.InternalError, "")
	bad = op
	bad.Parameters = func() {}
	_, err = f.mgr.Issue(ctx, req, bad)
	apierrortest.Want(t, err, apierror.InternalError, "")
	// An empty body (DELETE) is fine.
	if _, err := f.mgr.Issue(ctx, req, op); err != nil {
		t.Fatalf("empty body: %v", err)
	}
	broken := newManager(t, signedretry.Config{Store: f.store, Rand: bytes.NewReader(nil)})
	_, err = broken.Issue(ctx, req, op)
	apierrortest.Want(t, err, apierror.InternalError, "")
}

func TestCompleteAnySession(t *testing.T) {
	ctx := t.Context()
	f := newFixture(t, false)
	c := f.issue(t, signedretry.Signer{Rule: signedretry.AnySession})
	ran := false
	a, err := f.mgr.Complete(ctx, retry(c, stamp(t, f.keyB, c.PayloadToSign)), opType, func(ctx context.Context, tx storage.Tx, a *signedretry.Authorization) error {
		ran = true
		p, err := tx.PendingRequests().Get(ctx, a.RequestID)
		if err != nil || p.ConsumedAt.IsZero() {
			t.Errorf("effect runs after consumption in the same transaction: %v %+v", err, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !ran || a.SessionID != f.sessB || a.CredentialID != f.credB || a.AccountID != f.account ||
		a.Type != "ADD_CREDENTIAL" || string(a.Parameters) != `{"credentialType":"PASSKEY"}` || a.Sandbox ||
		!a.PublicKey.Equal(&f.keyB.PublicKey) {
		t.Fatalf("authorization %+v", a)
	}
	// Request-Id reuse after success.
	_, err = f.mgr.Complete(ctx, retry(c, stamp(t, f.keyB, c.PayloadToSign)), opType, nil)
	apierrortest.Want(t, err, apierror.Unauthorized, "request id already used")
}

func TestCompleteFailures(t *testing.T) {
	ctx := t.Context()
	type tc struct {
		name   string
		signer func(f *fixture) signedretry.Signer
		before func(t *testing.T, f *fixture)
		retry  func(t *testing.T, f *fixture, c *signedretry.Challenge) signedretry.Request
		typ    string // the operation type the route expects; empty is opType
		code   apierror.Code
		reason string
	}
	anySession := func(*fixture) signedretry.Signer { return signedretry.Signer{Rule: signedretry.AnySession} }
	signedBy := func(k func(*fixture) *ecdsa.PrivateKey) func(t *testing.T, f *fixture, c *signedretry.Challenge) signedretry.Request {
		return func(t *testing.T, f *fixture, c *signedretry.Challenge) signedretry.Request {
			return retry(c, stamp(t, k(f), c.PayloadToSign))
		}
	}
	keyA := func(f *fixture) *ecdsa.PrivateKey { return f.keyA }
	valid := signedBy(keyA)
	edit := func(change func(r *signedretry.Request)) func(t *testing.T, f *fixture, c *signedretry.Challenge) signedretry.Request {
		return func(t *testing.T, f *fixture, c *signedretry.Challenge) signedretry.Request {
			r := valid(t, f, c)
			change(&r)
			return r
		}
	}
	revoke := func(id func(*fixture) string) func(t *testing.T, f *fixture) {
		return func(t *testing.T, f *fixture) {
			if err := f.store.Atomic(ctx, func(tx storage.Tx) error { return tx.Sessions().Revoke(ctx, id(f), f.clock.Now()) }); err != nil {
				t.Fatal(err)
			}
		}
	}
	tests := []tc{
		{name: "signature missing", signer: anySession, retry: edit(func(r *signedretry.Request) { r.Signature = "" }),
			code: apierror.WalletSignatureMissing},
		{name: "request id missing", signer: anySession, retry: edit(func(r *signedretry.Request) { r.RequestID = "" }),
			code: apierror.RequestIDMissing},
		{name: "both missing", signer: anySession, retry: edit(func(r *signedretry.Request) { r.RequestID, r.Signature = "", "" }),
			code: apierror.WalletSignatureMissing},
		{name: "malformed header", signer: anySession, retry: edit(func(r *signedretry.Request) { r.Signature = "not-a-stamp" }),
			code: apierror.WalletSignatureMalformed},
		{name: "sandbox literal outside sandbox", signer: anySession,
			retry: edit(func(r *signedretry.Request) { r.Signature = signedretry.SandboxSignature }), code: apierror.WalletSignatureMalformed},
		{name: "unknown request id", signer: anySession,
			retry: edit(func(r *signedretry.Request) { r.RequestID = "Request:00000000-0000-4000-8000-000000000000" }),
			code:  apierror.Unauthorized, reason: "unknown request id"},
		{name: "request id of another shape", signer: anySession,
			retry: edit(func(r *signedretry.Request) { r.RequestID = "Session:" + r.RequestID[len("Request:"):] }),
			code:  apierror.Unauthorized, reason: "unknown request id"},
		{name: "expired at expiresAt", signer: anySession, before: func(t *testing.T, f *fixture) { f.clock.Add(signedretry.DefaultTTL) },
			retry: valid, code: apierror.Unauthorized, reason: "request id expired"},
		{name: "other path", signer: anySession, retry: edit(func(r *signedretry.Request) { r.Path = "/auth/credentials/AuthMethod:1" }),
			code: apierror.Unauthorized, reason: "request id is bound to another operation"},
		{name: "other method", signer: anySession, retry: edit(func(r *signedretry.Request) { r.Method = "PUT" }),
			code: apierror.Unauthorized, reason: "request id is bound to another operation"},
		{name: "other operation", signer: anySession, retry: valid, typ: "EXPORT_WALLET",
			code: apierror.Unauthorized, reason: "request id is bound to another operation"},
		{name: "changed value", signer: anySession,
			retry: edit(func(r *signedretry.Request) { r.Body = bytes.Replace(r.Body, []byte("993"), []byte("992"), 1) }),
			code:  apierror.WalletSignatureBodyMismatch},
		{name: "added field", signer: anySession,
			retry: edit(func(r *signedretry.Request) { r.Body = []byte(`{"x":1,` + string(r.Body[1:])) }),
			code:  apierror.WalletSignatureBodyMismatch},
		{name: "body not JSON", signer: anySession, retry: edit(func(r *signedretry.Request) { r.Body = []byte("nickname=laptop") }),
			code: apierror.WalletSignatureBodyMismatch},
		{name: "body dropped", signer: anySession, retry: edit(func(r *signedretry.Request) { r.Body = nil }),
			code: apierror.WalletSignatureBodyMismatch},
		{name: "signature over another payload", signer: anySession,
			retry: func(t *testing.T, f *fixture, c *signedretry.Challenge) signedretry.Request {
				return retry(c, stamp(t, f.keyA, c.PayloadToSign+" "))
			}, code: apierror.WalletSignatureInvalid},
		{name: "key of another account", signer: anySession, retry: signedBy(func(f *fixture) *ecdsa.PrivateKey { return f.stranger }),
			code: apierror.WalletSignatureInvalid},
		{name: "session revoked after issue", signer: anySession, before: revoke(func(f *fixture) string { return f.sessA }),
			retry: valid, code: apierror.WalletSignatureInvalid},
		{name: "same credential may not revoke itself",
			signer: func(f *fixture) signedretry.Signer {
				return signedretry.Signer{Rule: signedretry.OtherCredentialSession, Ref: f.credA}
			}, retry: valid, code: apierror.WalletSignatureInvalid},
		{name: "another session of the account for a session rule",
			signer: func(f *fixture) signedretry.Signer {
				return signedretry.Signer{Rule: signedretry.Session, Ref: f.sessB}
			},
			retry: valid, code: apierror.WalletSignatureInvalid},
		{name: "session rule with the session revoked",
			signer: func(f *fixture) signedretry.Signer {
				return signedretry.Signer{Rule: signedretry.Session, Ref: f.sessA}
			},
			before: revoke(func(f *fixture) string { return f.sessA }), retry: valid, code: apierror.WalletSignatureInvalid},
		{name: "session rule with an unknown session",
			signer: func(f *fixture) signedretry.Signer {
				return signedretry.Signer{Rule: signedretry.Session, Ref: "Session:00000000-0000-4000-8000-000000000000"}
			}, retry: valid, code: apierror.WalletSignatureInvalid},
		{name: "session rule with a session of another account",
			signer: func(f *fixture) signedretry.Signer {
				return signedretry.Signer{Rule: signedretry.Session, Ref: f.strangerSessID}
			}, retry: signedBy(func(f *fixture) *ecdsa.PrivateKey { return f.stranger }), code: apierror.WalletSignatureInvalid},
		{name: "bound key: another key",
			signer: func(f *fixture) signedretry.Signer {
				return signedretry.Signer{Rule: signedretry.BoundKey, Ref: compressedHex(f.stranger)}
			}, retry: valid, code: apierror.WalletSignatureInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, false)
			c := f.issue(t, tt.signer(f))
			if tt.before != nil {
				tt.before(t, f)
			}
			effectRan := false
			typ := tt.typ
			if typ == "" {
				typ = opType
			}
			_, err := f.mgr.Complete(ctx, tt.retry(t, f, c), typ, func(context.Context, storage.Tx, *signedretry.Authorization) error {
				effectRan = true
				return nil
			})
			apierrortest.Want(t, err, tt.code, tt.reason)
			if effectRan {
				t.Fatal("the effect ran for a rejected retry")
			}
			// A failed retry does not consume the request.
			if err := f.store.Atomic(ctx, func(tx storage.Tx) error {
				p, err := tx.PendingRequests().Get(ctx, c.RequestID)
				if err == nil && !p.ConsumedAt.IsZero() {
					t.Fatal("a rejected retry consumed the request")
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestCompleteSessionExpiresBeforeRetry(t *testing.T) {
	ctx := t.Context()
	f := newFixture(t, false)
	f.clock.Add(14 * time.Minute) // sessions expire at +15 min; the challenge at +19
	c := f.issue(t, signedretry.Signer{Rule: signedretry.AnySession})
	f.clock.Add(time.Minute)
	_, err := f.mgr.Complete(ctx, retry(c, stamp(t, f.keyA, c.PayloadToSign)), opType, nil)
	apierrortest.Want(t, err, apierror.WalletSignatureInvalid, "")
}

func TestCompleteAccepted(t *testing.T) {
	ctx := t.Context()
	tests := []struct {
		name   string
		signer func(f *fixture) signedretry.Signer
		retry  func(t *testing.T, f *fixture, c *signedretry.Challenge) signedretry.Request
		sessID func(f *fixture) string
	}{
		{"just before expiresAt", func(f *fixture) signedretry.Signer { return signedretry.Signer{Rule: signedretry.AnySession} },
			func(t *testing.T, f *fixture, c *signedretry.Challenge) signedretry.Request {
				f.clock.Add(signedretry.DefaultTTL - time.Nanosecond)
				return retry(c, stamp(t, f.keyA, c.PayloadToSign))
			}, func(f *fixture) string { return f.sessA }},
		{"reordered but equal body", func(f *fixture) signedretry.Signer { return signedretry.Signer{Rule: signedretry.AnySession} },
			func(t *testing.T, f *fixture, c *signedretry.Challenge) signedretry.Request {
				r := retry(c, stamp(t, f.keyA, c.PayloadToSign))
				r.Body = []byte("{\n  \"amounts\": [1, 2.5, 9007199254740993],\n  \"nickname\": \"l\\u0061ptop\",\n  \"accountId\": \"InternalAccount:x\"\n}\n")
				return r
			}, func(f *fixture) string { return f.sessA }},
		{"other credential's session", func(f *fixture) signedretry.Signer {
			return signedretry.Signer{Rule: signedretry.OtherCredentialSession, Ref: f.credA}
		}, func(t *testing.T, f *fixture, c *signedretry.Challenge) signedretry.Request {
			return retry(c, stamp(t, f.keyB, c.PayloadToSign))
		}, func(f *fixture) string { return f.sessB }},
		{"the session itself", func(f *fixture) signedretry.Signer {
			return signedretry.Signer{Rule: signedretry.Session, Ref: f.sessA}
		}, func(t *testing.T, f *fixture, c *signedretry.Challenge) signedretry.Request {
			return retry(c, stamp(t, f.keyA, c.PayloadToSign))
		}, func(f *fixture) string { return f.sessA }},
		{"bound key, stamped with the uncompressed key", func(f *fixture) signedretry.Signer {
			return signedretry.Signer{Rule: signedretry.BoundKey, Ref: compressedHex(f.stranger)}
		}, func(t *testing.T, f *fixture, c *signedretry.Challenge) signedretry.Request {
			return retry(c, uncompressedStamp(t, f.stranger, c.PayloadToSign))
		}, func(*fixture) string { return "" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, false)
			c := f.issue(t, tt.signer(f))
			a, err := f.mgr.Complete(ctx, tt.retry(t, f, c), opType, nil)
			if err != nil {
				t.Fatal(err)
			}
			if a.SessionID != tt.sessID(f) {
				t.Fatalf("signed by session %q, want %q", a.SessionID, tt.sessID(f))
			}
		})
	}
}

// uncompressedStamp stamps with the uncompressed public key in the header, as
// older clients do.
func uncompressedStamp(t *testing.T, k *ecdsa.PrivateKey, payload string) string {
	raw, _ := base64.RawURLEncoding.DecodeString(stamp(t, k, payload))
	var m map[string]string
	_ = json.Unmarshal(raw, &m)
	m["publicKey"] = hex.EncodeToString(elliptic.Marshal(elliptic.P256(), k.X, k.Y)) //nolint:staticcheck // the wire format is SEC1
	raw, _ = json.Marshal(m)
	return base64.URLEncoding.EncodeToString(raw) // padded, which is accepted too
}

func TestEffectFailureKeepsRequest(t *testing.T) {
	ctx := t.Context()
	f := newFixture(t, false)
	c := f.issue(t, signedretry.Signer{Rule: signedretry.AnySession})
	errEffect := apierror.New(apierror.Conflict, "credential set changed")
	_, err := f.mgr.Complete(ctx, retry(c, stamp(t, f.keyA, c.PayloadToSign)), opType, func(ctx context.Context, tx storage.Tx, a *signedretry.Authorization) error {
		// Writes of a failed effect are rolled back with it.
		s := storage.Session{ID: newID(t, "Session"), AccountID: f.account, ExpiresAt: f.clock.Now().Add(time.Hour)}
		if err := tx.Sessions().Create(ctx, &s); err != nil {
			return err
		}
		return errEffect
	})
	if err != errEffect {
		t.Fatalf("Complete returned %v, want the effect's error unchanged", err)
	}
	var n int
	_ = f.store.Atomic(ctx, func(tx storage.Tx) error {
		ss, _ := tx.Sessions().ListActive(ctx, f.account, f.clock.Now())
		n = len(ss)
		return nil
	})
	if n != 2 {
		t.Fatalf("the failed effect's session persisted: %d sessions", n)
	}
	// A bad signature first, then the valid retry: still accepted once.
	_, err = f.mgr.Complete(ctx, retry(c, stamp(t, f.stranger, c.PayloadToSign)), opType, nil)
	apierrortest.Want(t, err, apierror.WalletSignatureInvalid, "")
	if _, err := f.mgr.Complete(ctx, retry(c, stamp(t, f.keyA, c.PayloadToSign)), opType, nil); err != nil {
		t.Fatalf("retry after failures: %v", err)
	}
}

func TestSandboxLiteral(t *testing.T) {
	ctx := t.Context()
	f := newFixture(t, true)
	c := f.issue(t, signedretry.Signer{Rule: signedretry.AnySession})
	r := retry(c, signedretry.SandboxSignature)
	a, err := f.mgr.Complete(ctx, r, opType, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !a.Sandbox || a.PublicKey != nil || a.SessionID == "" {
		t.Fatalf("authorization %+v", a)
	}
	_, err = f.mgr.Complete(ctx, r, opType, nil)
	apierrortest.Want(t, err, apierror.Unauthorized, "request id already used")
	r.RequestID = ""
	_, err = f.mgr.Complete(ctx, r, opType, nil)
	apierrortest.Want(t, err, apierror.RequestIDMissing, "")

	// Real stamps still work in sandbox mode and are still checked.
	c = f.issue(t, signedretry.Signer{Rule: signedretry.AnySession})
	_, err = f.mgr.Complete(ctx, retry(c, stamp(t, f.stranger, c.PayloadToSign)), opType, nil)
	apierrortest.Want(t, err, apierror.WalletSignatureInvalid, "")
	if _, err := f.mgr.Complete(ctx, retry(c, stamp(t, f.keyA, c.PayloadToSign)), opType, nil); err != nil {
		t.Fatal(err)
	}

	// The literal stands in for the key, not for the rule.
	c = f.issue(t, signedretry.Signer{Rule: signedretry.Session, Ref: f.sessA})
	_ = f.store.Atomic(ctx, func(tx storage.Tx) error { return tx.Sessions().Revoke(ctx, f.sessA, f.clock.Now()) })
	_, err = f.mgr.Complete(ctx, retry(c, signedretry.SandboxSignature), opType, nil)
	apierrortest.Want(t, err, apierror.WalletSignatureInvalid, "")
	c = f.issue(t, signedretry.Signer{Rule: signedretry.BoundKey, Ref: compressedHex(f.stranger)})
	if _, err := f.mgr.Complete(ctx, retry(c, signedretry.SandboxSignature), opType, nil); err != nil {
		t.Fatalf("bound key with the literal: %v", err)
	}
}

func TestConcurrentComplete(t *testing.T) {
	ctx := t.Context()
	f := newFixture(t, false)
	c := f.issue(t, signedretry.Signer{Rule: signedretry.AnySession})
	r := retry(c, stamp(t, f.keyA, c.PayloadToSign))
	const workers = 64
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins, effects := 0, 0
	var losses []error
	start := make(chan struct{})
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, err := f.mgr.Complete(ctx, r, opType, func(context.Context, storage.Tx, *signedretry.Authorization) error {
				mu.Lock()
				effects++
				mu.Unlock()
				return nil
			})
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				wins++
			} else {
				losses = append(losses, err)
			}
		}()
	}
	close(start)
	wg.Wait()
	if wins != 1 || effects != 1 {
		t.Fatalf("%d completions and %d effects, want exactly 1 each", wins, effects)
	}
	for _, err := range losses {
		apierrortest.Want(t, err, apierror.Unauthorized, "request id already used")
	}
}

func TestNewWithoutStore(t *testing.T) {
	if m, err := signedretry.New(signedretry.Config{}); err == nil || m != nil {
		t.Fatalf("New without a store: %v, %v; want an error", m, err)
	}
}

// TestMaxPending caps the live challenges of one account: the first leg past
// the cap is 429 RATE_LIMITED with Retry-After until the earliest expires,
// other accounts are not affected, and a used or expired challenge stops
// counting.
func TestMaxPending(t *testing.T) {
	ctx := t.Context()
	f := newFixture(t, false)
	f.mgr = newManager(t, signedretry.Config{Store: f.store, Clock: f.clock.Now, MaxPending: 3, TTL: time.Minute})
	var oldest *signedretry.Challenge
	for i := range 3 {
		c := f.issue(t, signedretry.Signer{Rule: signedretry.AnySession})
		if i == 0 {
			oldest = c
		}
		f.clock.Add(10 * time.Second)
	}
	_, err := f.mgr.Issue(ctx, first(), signedretry.TestOperation{Type: "ADD_CREDENTIAL", AccountID: f.account,
		Signer: signedretry.Signer{Rule: signedretry.AnySession}})
	apierrortest.Want(t, err, apierror.RateLimited, "")
	if s := apierror.As(err).RetryAfterSeconds(); s != 30 {
		t.Fatalf("Retry-After %d s, want 30 (until the first challenge expires)", s)
	}
	rec := httptest.NewRecorder()
	apierror.Write(rec, err)
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "30" {
		t.Fatalf("written as %d with Retry-After %q, want 429 and 30", rec.Code, rec.Header().Get("Retry-After"))
	}
	// Another account has its own cap.
	other := signedretry.TestOperation{Type: "ADD_CREDENTIAL", AccountID: newID(t, "InternalAccount"),
		Signer: signedretry.Signer{Rule: signedretry.AnySession}}
	if _, err := f.mgr.Issue(ctx, first(), other); err != nil {
		t.Fatalf("another account: %v", err)
	}
	// Using a challenge frees its place.
	if _, err := f.mgr.Complete(ctx, retry(oldest, stamp(t, f.keyA, oldest.PayloadToSign)), opType, nil); err != nil {
		t.Fatal(err)
	}
	f.issue(t, signedretry.Signer{Rule: signedretry.AnySession})
	_, err = f.mgr.Issue(ctx, first(), signedretry.TestOperation{Type: "ADD_CREDENTIAL", AccountID: f.account,
		Signer: signedretry.Signer{Rule: signedretry.AnySession}})
	apierrortest.Want(t, err, apierror.RateLimited, "")
	// So does expiring.
	f.clock.Add(time.Minute)
	f.issue(t, signedretry.Signer{Rule: signedretry.AnySession})
}

func TestNewNegativeMaxPending(t *testing.T) {
	if m, err := signedretry.New(signedretry.Config{Store: memory.New(), MaxPending: -1}); err == nil || m != nil {
		t.Fatalf("New with a negative MaxPending: %v, %v; want an error", m, err)
	}
}

// TestRun runs an operation written as its two legs: the first call's Bind
// commits its writes with the challenge (or alone when it binds nothing)
// and rolls them back when it fails; the retry runs Lock, then Effect, and
// never Bind.
func TestRun(t *testing.T) {
	ctx := t.Context()
	f := newFixture(t, false)
	now := f.clock.Now()
	// spent reports whether Bind's write under key committed: a rate-limit
	// window of one that is used up.
	spent := func(key string) bool {
		rollBack := errors.New("roll back") // only look
		err := f.store.Atomic(ctx, func(tx storage.Tx) error {
			if err := tx.RateLimits().Hit(ctx, key, now, time.Hour, 1); err != nil {
				return err
			}
			return rollBack
		})
		var refused *storage.RateLimitError
		switch {
		case errors.As(err, &refused):
			return true
		case errors.Is(err, rollBack):
			return false
		}
		t.Fatal(err)
		return false
	}
	type params struct {
		CredentialType string `json:"credentialType"`
	}
	var order []string
	steps := func(key string, bound *signedretry.Operation[params], bindErr error) signedretry.Steps[params, string, int] {
		return signedretry.Steps[params, string, int]{
			Type: opType,
			Bind: func(ctx context.Context, tx storage.Tx) (*signedretry.Operation[params], int, error) {
				order = append(order, "bind")
				if err := tx.RateLimits().Hit(ctx, key, now, time.Hour, 1); err != nil {
					return nil, 0, err
				}
				return bound, 7, bindErr
			},
			Lock: func(_ context.Context, _ storage.Tx, _ *signedretry.Authorization, p params) (string, error) {
				order = append(order, "lock")
				return "locked " + p.CredentialType, nil
			},
			Effect: func(_ context.Context, _ storage.Tx, _ *signedretry.Authorization, p params, l string) (int, error) {
				order = append(order, "effect")
				if l != "locked "+p.CredentialType {
					t.Errorf("the effect got %q from the lock step", l)
				}
				return len(l), nil
			},
		}
	}
	op := &signedretry.Operation[params]{AccountID: f.account, Signer: signedretry.Signer{Rule: signedretry.AnySession},
		Parameters: params{CredentialType: "PASSKEY"}}

	res, a, c, err := signedretry.Run(ctx, f.mgr, first(), steps("bound", op, nil))
	if err != nil || a != nil || c == nil || res != 0 || !spent("bound") {
		t.Fatalf("first leg: %v, %v, %v, %v; Bind's write committed: %v", res, a, c, err, spent("bound"))
	}
	p, err := stamper.ParsePayload(c.PayloadToSign)
	if err != nil || p.Type != opType || p.AccountID != f.account {
		t.Fatalf("payload %+v %v: want the type of Steps and the bound account", p, err)
	}
	if res, a, c, err := signedretry.Run(ctx, f.mgr, first(), steps("nothing", nil, nil)); err != nil || a != nil || c != nil || res != 7 || !spent("nothing") {
		t.Fatalf("a Bind that binds nothing: %v, %v, %v, %v; its write committed: %v; want Bind's result 7", res, a, c, err, spent("nothing"))
	}
	refused := apierror.New(apierror.InvalidInput, "refused")
	_, _, _, err = signedretry.Run(ctx, f.mgr, first(), steps("failed", op, refused))
	apierrortest.Want(t, err, apierror.InvalidInput, "")
	if spent("failed") {
		t.Fatal("a failed Bind's write committed")
	}

	order = nil
	res, a, c, err = signedretry.Run(ctx, f.mgr, retry(c, stamp(t, f.keyA, c.PayloadToSign)), steps("retry", op, nil))
	if err != nil || c != nil || a == nil || a.Type != opType || a.SessionID != f.sessA {
		t.Fatalf("retry: %+v, %v, %v", a, c, err)
	}
	if !slices.Equal(order, []string{"lock", "effect"}) {
		t.Fatalf("the retry ran %v, want lock then effect", order)
	}
	if res != len("locked PASSKEY") {
		t.Fatalf("Run returned %d, want the effect's result %d", res, len("locked PASSKEY"))
	}
}

// TestRunStoredParameters: the retry's steps get the parameters the first
// call stored, decoded strictly, whatever the Go values of the retry's own
// Steps hold: an unknown field among the stored parameters is 500
// INTERNAL_ERROR and leaves the request unconsumed, and an operation with
// no parameters stores the empty object.
func TestRunStoredParameters(t *testing.T) {
	ctx := t.Context()
	f := newFixture(t, false)
	type wide struct {
		Amount int    `json:"amount"`
		Extra  string `json:"extra"`
	}
	type narrow struct {
		Amount int `json:"amount"`
	}
	bind := func(amount int) func(context.Context, storage.Tx) (*signedretry.Operation[wide], int, error) {
		return func(context.Context, storage.Tx) (*signedretry.Operation[wide], int, error) {
			return &signedretry.Operation[wide]{AccountID: f.account, Signer: signedretry.Signer{Rule: signedretry.AnySession},
				Parameters: wide{Amount: amount, Extra: "x"}}, 0, nil
		}
	}
	_, _, c, err := signedretry.Run(ctx, f.mgr, first(), signedretry.Steps[wide, struct{}, int]{Type: opType, Bind: bind(5)})
	if err != nil || c == nil {
		t.Fatalf("first leg: %v, %v", c, err)
	}
	r := retry(c, stamp(t, f.keyA, c.PayloadToSign))
	ran := false
	_, _, _, err = signedretry.Run(ctx, f.mgr, r, signedretry.Steps[narrow, struct{}, struct{}]{Type: opType,
		Effect: func(context.Context, storage.Tx, *signedretry.Authorization, narrow, struct{}) (struct{}, error) {
			ran = true
			return struct{}{}, nil
		}})
	apierrortest.Want(t, err, apierror.InternalError, "")
	if ran {
		t.Fatal("the effect ran on parameters that did not decode")
	}
	// The retry's own Bind (here binding 500) is never run: the effect gets
	// the 5 the first call stored, and the request was left unconsumed.
	got, _, _, err := signedretry.Run(ctx, f.mgr, r, signedretry.Steps[wide, struct{}, int]{Type: opType, Bind: bind(500),
		Effect: func(_ context.Context, _ storage.Tx, _ *signedretry.Authorization, p wide, _ struct{}) (int, error) {
			return p.Amount, nil
		}})
	if err != nil || got != 5 {
		t.Fatalf("retry: %d, %v; want the stored amount 5", got, err)
	}

	// No parameters (a nil map) is the empty object.
	_, _, c, err = signedretry.Run(ctx, f.mgr, first(), signedretry.Steps[map[string]int, struct{}, struct{}]{Type: opType,
		Bind: func(context.Context, storage.Tx) (*signedretry.Operation[map[string]int], struct{}, error) {
			return &signedretry.Operation[map[string]int]{AccountID: f.account, Signer: signedretry.Signer{Rule: signedretry.AnySession}}, struct{}{}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	if p, err := stamper.ParsePayload(c.PayloadToSign); err != nil || string(p.Parameters) != "{}" {
		t.Fatalf("payload parameters %s, %v; want {}", p.Parameters, err)
	}
	// Parameters that are not an object are refused on the first leg.
	_, _, _, err = signedretry.Run(ctx, f.mgr, first(), signedretry.Steps[[]int, struct{}, struct{}]{Type: opType,
		Bind: func(context.Context, storage.Tx) (*signedretry.Operation[[]int], struct{}, error) {
			return &signedretry.Operation[[]int]{AccountID: f.account, Signer: signedretry.Signer{Rule: signedretry.AnySession}, Parameters: []int{1}}, struct{}{}, nil
		}})
	apierrortest.Want(t, err, apierror.InternalError, "")
	_, _, _, err = signedretry.Run(ctx, f.mgr, first(), signedretry.Steps[wide, struct{}, struct{}]{Type: opType})
	apierrortest.Want(t, err, apierror.InternalError, "")
}

// TestRunRerun: when the store runs the retry's transaction again, each run
// decodes the stored parameters anew and starts from fresh lock and effect
// values, so what a discarded run changed in them is not seen, and Run
// returns the last run's result.
func TestRunRerun(t *testing.T) {
	ctx := t.Context()
	store := memory.New()
	f := newFixtureOn(t, store, false)
	mgr := newManager(t, signedretry.Config{Store: rerunStore{Store: store, between: func() {}}, Clock: f.clock.Now})
	type params struct {
		Amounts map[string]int `json:"amounts"`
	}
	steps := signedretry.Steps[params, []string, int]{
		Type: opType,
		Bind: func(context.Context, storage.Tx) (*signedretry.Operation[params], int, error) {
			return &signedretry.Operation[params]{AccountID: f.account, Signer: signedretry.Signer{Rule: signedretry.AnySession},
				Parameters: params{Amounts: map[string]int{"a": 5}}}, 0, nil
		},
		Lock: func(_ context.Context, _ storage.Tx, _ *signedretry.Authorization, p params) ([]string, error) {
			return []string{"locked"}, nil
		},
	}
	runs := 0
	steps.Effect = func(_ context.Context, _ storage.Tx, _ *signedretry.Authorization, p params, l []string) (int, error) {
		runs++
		if p.Amounts["a"] != 5 || len(l) != 1 {
			t.Errorf("run %d got %v and %v, want the stored parameters and one lock", runs, p.Amounts, l)
		}
		// A discarded run's changes must not reach the next run.
		p.Amounts["a"] = 0
		return runs, nil
	}
	_, _, c, err := signedretry.Run(ctx, mgr, first(), steps)
	if err != nil {
		t.Fatal(err)
	}
	got, _, _, err := signedretry.Run(ctx, mgr, retry(c, stamp(t, f.keyA, c.PayloadToSign)), steps)
	if err != nil || runs != 2 || got != 2 {
		t.Fatalf("retry: %d, %v after %d runs; want the second run's result", got, err, runs)
	}
}

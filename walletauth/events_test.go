package walletauth_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	"github.com/descope/virtualwebauthn"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/memory"
	"github.com/walletgate/walletgate/storage/storagetest"
	"github.com/walletgate/walletgate/walletauth"
	"github.com/walletgate/walletgate/walletauth/authclient"
	"github.com/walletgate/walletgate/walletauth/oidc"
	"github.com/walletgate/walletgate/walletauth/passkey"
	"github.com/walletgate/walletgate/walletauth/secret"
)

// recStore is a store that logs, per transaction, the changes and outbox
// appends of the transactions that committed, so a test can check that an
// event was written in the transaction of its change. failEventTx makes
// the next transactions that append an event fail after their function
// returned (as a failed commit would): nothing of them persists.
type recStore struct {
	storage.Store
	mu          sync.Mutex
	n           int
	ops         []txOp
	failEventTx int
}

type txOp struct {
	tx  int
	op  string
	arg string // a record id, or an appended event's payload
}

var errInjected = errors.New("injected commit failure")

func (r *recStore) Atomic(ctx context.Context, fn func(tx storage.Tx) error) error {
	r.mu.Lock()
	r.n++
	n := r.n
	r.mu.Unlock()
	var local []txOp
	err := r.Store.Atomic(ctx, func(tx storage.Tx) error {
		local = local[:0]
		log := func(op, arg string) { local = append(local, txOp{n, op, arg}) }
		if err := fn(recTx{Tx: tx, log: log}); err != nil {
			return err
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.failEventTx > 0 && slices.ContainsFunc(local, func(o txOp) bool { return o.op == "Outbox.Append" }) {
			r.failEventTx--
			return errInjected
		}
		return nil
	})
	if err == nil {
		r.mu.Lock()
		r.ops = append(r.ops, local...)
		r.mu.Unlock()
	}
	return err
}

func (r *recStore) failNextEventTx() { r.mu.Lock(); r.failEventTx++; r.mu.Unlock() }

func (r *recStore) committed() []txOp { r.mu.Lock(); defer r.mu.Unlock(); return slices.Clone(r.ops) }

type recTx struct {
	storage.Tx
	log func(op, arg string)
}

func (t recTx) Outbox() storage.Outbox           { return recOutbox{t.Tx.Outbox(), t.log} }
func (t recTx) Sessions() storage.Sessions       { return recSessions{t.Tx.Sessions(), t.log} }
func (t recTx) Credentials() storage.Credentials { return recCredentials{t.Tx.Credentials(), t.log} }
func (t recTx) InternalAccounts() storage.InternalAccounts {
	return recAccounts{t.Tx.InternalAccounts(), t.log}
}
func (t recTx) RateLimits() storage.RateLimits { return recLimits{t.Tx.RateLimits(), t.log} }
func (t recTx) PendingRequests() storage.PendingRequests {
	return recPending{t.Tx.PendingRequests(), t.log}
}

type recPending struct {
	storage.PendingRequests
	log func(op, arg string)
}

func (p recPending) Consume(ctx context.Context, id string, now time.Time) error {
	err := p.PendingRequests.Consume(ctx, id, now)
	if err == nil {
		p.log("PendingRequests.Consume", id)
	}
	return err
}

// recLimits logs the hits a rate limit counted, with the part of the key
// after its first colon (a credential id for the OTP limits).
type recLimits struct {
	storage.RateLimits
	log func(op, arg string)
}

func (l recLimits) Hit(ctx context.Context, key string, now time.Time, window time.Duration, limit int) error {
	err := l.RateLimits.Hit(ctx, key, now, window, limit)
	if err == nil {
		_, id, _ := strings.Cut(key, ":")
		l.log("RateLimits.Hit", id)
	}
	return err
}

type recOutbox struct {
	storage.Outbox
	log func(op, arg string)
}

func (o recOutbox) Append(ctx context.Context, e *storage.Event) error {
	err := o.Outbox.Append(ctx, e)
	if err == nil {
		o.log("Outbox.Append", string(e.Payload))
	}
	return err
}

type recSessions struct {
	storage.Sessions
	log func(op, arg string)
}

func (s recSessions) Create(ctx context.Context, x *storage.Session) error {
	err := s.Sessions.Create(ctx, x)
	if err == nil {
		s.log("Sessions.Create", x.ID)
	}
	return err
}

func (s recSessions) Revoke(ctx context.Context, id string, at time.Time) error {
	err := s.Sessions.Revoke(ctx, id, at)
	if err == nil {
		s.log("Sessions.Revoke", id)
	}
	return err
}

type recCredentials struct {
	storage.Credentials
	log func(op, arg string)
}

func (c recCredentials) Create(ctx context.Context, x *storage.Credential) error {
	err := c.Credentials.Create(ctx, x)
	if err == nil {
		c.log("Credentials.Create", x.ID)
	}
	return err
}

func (c recCredentials) Delete(ctx context.Context, id string) error {
	err := c.Credentials.Delete(ctx, id)
	if err == nil {
		c.log("Credentials.Delete", id)
	}
	return err
}

type recAccounts struct {
	storage.InternalAccounts
	log func(op, arg string)
}

func (a recAccounts) Update(ctx context.Context, x *storage.InternalAccount) error {
	err := a.InternalAccounts.Update(ctx, x)
	if err == nil {
		a.log("InternalAccounts.Update", x.ID)
	}
	return err
}

// MarkSecurityChanged is an update of the wallet, logged as one.
func (a recAccounts) MarkSecurityChanged(ctx context.Context, id string, at time.Time) error {
	err := a.InternalAccounts.MarkSecurityChanged(ctx, id, at)
	if err == nil {
		a.log("InternalAccounts.Update", id)
	}
	return err
}

// Lock logs an attempt it reserved on the credential's one-time code.
func (c recCredentials) Lock(ctx context.Context, id string, a *storage.OTPAttempt) (storage.LockedCredential, error) {
	r, err := c.Credentials.Lock(ctx, id, a)
	if err == nil && r.Reserved != nil {
		c.log("Credentials.Lock attempt", r.Reserved.CredentialID)
	}
	return r, err
}

// changeOf is the change each event type reports: the logged operation
// that must commit in the event's transaction, and the data member naming
// its record.
var changeOf = map[string]struct{ op, member string }{
	walletauth.EventCredentialAdded:     {"Credentials.Create", "id"},
	walletauth.EventCredentialRevoked:   {"Credentials.Delete", "id"},
	walletauth.EventCredentialOTPLocked: {"Credentials.Lock attempt", "id"},
	// The first refusal of a window counts a hit of the window that marks
	// the exhaustion reported.
	walletauth.EventCredentialOTPThrottled: {"RateLimits.Hit", "id"},
	walletauth.EventSessionCreated:         {"Sessions.Create", "id"},
	walletauth.EventSessionRevoked:         {"Sessions.Revoke", "id"},
	walletauth.EventSessionRefreshed:       {"Sessions.Create", "id"},
	walletauth.EventEmailUpdated:           {"InternalAccounts.Update", "accountId"},
	walletauth.EventHostOperation:          {"PendingRequests.Consume", "requestId"},
	// The wallet records the change of its means of authentication.
	walletauth.EventSecurityNotice: {"InternalAccounts.Update", "accountId"},
}

// checkSameTransaction checks that every committed event was appended in
// the transaction of its change, and that every committed creation or
// deletion of a credential and creation or revocation of a session has its
// event in its transaction.
func checkSameTransaction(t *testing.T, rec *recStore) {
	t.Helper()
	for _, p := range sameTransactionProblems(rec.committed()) {
		t.Error(p)
	}
}

func sameTransactionProblems(ops []txOp) []string {
	type key struct {
		tx      int
		op, arg string
	}
	have := map[key]bool{}
	for _, o := range ops {
		have[key{o.tx, o.op, o.arg}] = true
	}
	var out []string
	reported := map[key]bool{}
	for _, o := range ops {
		if o.op != "Outbox.Append" {
			continue
		}
		var p struct {
			Type string
			Data map[string]any
		}
		if err := json.Unmarshal([]byte(o.arg), &p); err != nil {
			out = append(out, "payload is not JSON: "+err.Error())
			continue
		}
		ch, ok := changeOf[p.Type]
		if !ok {
			out = append(out, "unknown event type "+p.Type)
			continue
		}
		id, _ := p.Data[ch.member].(string)
		if !have[key{o.tx, ch.op, id}] {
			out = append(out, fmt.Sprintf("event %s about %s was not appended in the transaction of its %s", p.Type, id, ch.op))
		}
		reported[key{o.tx, ch.op, id}] = true
	}
	for _, o := range ops {
		switch o.op {
		case "Credentials.Create", "Credentials.Delete", "Sessions.Create", "Sessions.Revoke":
			if !reported[key{o.tx, o.op, o.arg}] {
				out = append(out, fmt.Sprintf("%s %s committed without its event in its transaction", o.op, o.arg))
			}
		}
	}
	return out
}

// TestSameTransactionCheck shows that the check finds an event written in
// another transaction than its change, and a change without its event.
func TestSameTransactionCheck(t *testing.T) {
	ev := `{"type":"AUTH_SESSION.CREATED","data":{"id":"Session:1"}}`
	if p := sameTransactionProblems([]txOp{{1, "Sessions.Create", "Session:1"}, {1, "Outbox.Append", ev}}); p != nil {
		t.Fatalf("one transaction: %v", p)
	}
	if p := sameTransactionProblems([]txOp{{1, "Sessions.Create", "Session:1"}, {2, "Outbox.Append", ev}}); len(p) != 2 {
		t.Fatalf("two transactions: %v", p)
	}
	if p := sameTransactionProblems([]txOp{{1, "Credentials.Delete", "AuthMethod:1"}}); len(p) != 1 {
		t.Fatalf("no event: %v", p)
	}
}

// evEnv runs the flows of every event type through the Service API and
// keeps every secret it meets on the way.
type evEnv struct {
	*env
	rec      *recStore
	idp      *idp
	seen     map[string]int    // events already taken, per account
	secrets  map[string]string // secret value -> what it is
	produced map[string]bool   // event types seen
}

// Codes are drawn from letters that are no hex digit, so a code is found in
// a payload only if it was put there.
const evAlphabet = "QWXZJKVY"

// evAttemptBudget is the budget of compared codes per credential of the
// flows: small enough to spend in a few issuances, larger than any flow but
// the one that spends it compares.
const evAttemptBudget = 12

func newEvEnv(t *testing.T, mods ...func(*walletauth.Config)) *evEnv {
	t.Helper()
	p := newIDP(t)
	rec := &recStore{Store: memory.New()}
	signer, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	var e *env
	e = newEnv(t, func(c *walletauth.Config) {
		pk, err := passkey.New(passkey.Config{RelyingParty: passkey.RelyingParty{ID: rpID, Name: "Wallet", Origins: []string{origin}}})
		if err != nil {
			t.Fatal(err)
		}
		v, err := oidc.New(context.Background(), oidc.Config{HTTPClient: p.srv.Client(), Clock: func() time.Time { return e.clock.Now() },
			Issuers: []oidc.Issuer{{ID: "https://idp.example.com", Audiences: []string{"client-1"}, JWKSURL: p.srv.URL + "/jwks"}}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(v.Close)
		c.Store, c.Passkeys, c.OIDC, c.Keys.SigningKey = rec, pk, v, signer
		c.OTP = walletauth.OTPConfig{Alphabet: evAlphabet, Length: 12, AttemptBudget: evAttemptBudget}
		for _, mod := range mods {
			mod(c)
		}
	})
	e.store = rec
	ev := &evEnv{env: e, rec: rec, idp: p, seen: map[string]int{}, secrets: map[string]string{}, produced: map[string]bool{}}
	ev.addBytes("CodeMACKey", testCodeMACKey)
	sealerKey := make([]byte, secret.KeySize)
	copy(sealerKey, "test-1")
	ev.addBytes("sealer key", sealerKey)
	ev.addString("sealer key (encoded)", testKey(t, "test-1").Encode())
	ev.addPrivateKey("service signing key", signer)
	ev.addPrivateKey("IdP signing key", p.key)
	return ev
}

// addString records a secret value and its JSON-escaped form.
func (e *evEnv) addString(what, s string) {
	if len(s) < 12 {
		return
	}
	e.secrets[s] = what
	if b, err := json.Marshal(s); err == nil {
		e.secrets[string(b[1:len(b)-1])] = what + " (JSON-escaped)"
	}
}

// addSealed records a secret container (a bundle, a sealed key, a stamp)
// and every secret inside it: its JSON members and their hex or base64
// contents, down to the bytes. Identifiers, URLs, addresses and short
// strings inside are not secrets and are skipped.
func (e *evEnv) addSealed(what, s string) { e.addSealedDepth(what, s, 0) }

func (e *evEnv) addSealedDepth(what, s string, depth int) {
	if len(s) < 16 || depth > 4 || idLike.MatchString(s) || strings.HasPrefix(s, "http") || strings.Contains(s, "@") {
		return
	}
	e.addString(what, s)
	var v any
	if json.Unmarshal([]byte(s), &v) == nil {
		walkStrings(v, func(inner string) { e.addSealedDepth(what+" member", inner, depth+1) })
		return
	}
	for _, dec := range []func(string) ([]byte, error){hex.DecodeString, base64.StdEncoding.DecodeString,
		base64.RawStdEncoding.DecodeString, base64.URLEncoding.DecodeString, base64.RawURLEncoding.DecodeString} {
		if b, err := dec(s); err == nil && len(b) >= 8 {
			e.addBytes(what+" decoded", b)
			if json.Valid(b) {
				e.addSealedDepth(what+" decoded", string(b), depth+1)
			}
		}
	}
}

var idLike = regexp.MustCompile(`^[A-Za-z]+:[0-9a-fA-F-]{36}$`)

func walkStrings(v any, fn func(string)) {
	switch v := v.(type) {
	case string:
		fn(v)
	case []any:
		for _, x := range v {
			walkStrings(x, fn)
		}
	case map[string]any:
		for _, x := range v {
			walkStrings(x, fn)
		}
	}
}

// addBytes records a binary secret in every encoding a payload could carry
// it in.
func (e *evEnv) addBytes(what string, b []byte) {
	if len(b) < 8 {
		return
	}
	for _, enc := range []string{hex.EncodeToString(b), strings.ToUpper(hex.EncodeToString(b)),
		base64.StdEncoding.EncodeToString(b), base64.RawStdEncoding.EncodeToString(b),
		base64.URLEncoding.EncodeToString(b), base64.RawURLEncoding.EncodeToString(b)} {
		e.secrets[enc] = what
	}
}

// addBase64URL records a base64url value and the bytes it encodes.
func (e *evEnv) addBase64URL(what, s string) {
	e.addString(what, s)
	if b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "=")); err == nil {
		e.addBytes(what+" decoded", b)
	}
}

// addPrivateKey records a P-256 key pair: the private scalar and the public
// key, compressed and uncompressed.
func (e *evEnv) addPrivateKey(what string, k *ecdsa.PrivateKey) {
	e.addBytes(what+" (private)", k.D.FillBytes(make([]byte, 32)))
	e.addBytes(what+" (public, compressed)", elliptic.MarshalCompressed(elliptic.P256(), k.X, k.Y))
	e.addBytes(what+" (public, uncompressed)", elliptic.Marshal(elliptic.P256(), k.X, k.Y)) //nolint:staticcheck // the wire form
	if der, err := x509.MarshalPKIXPublicKey(&k.PublicKey); err == nil {
		e.addBytes(what+" (public, DER)", der)
	}
}

func (e *evEnv) addClientKey(what string, k *authclient.ClientKey) {
	e.addPrivateKey(what, k.PrivateKey())
	e.addString(what+" (public hex)", k.PublicKeyHex())
}

func (e *evEnv) newKey(t *testing.T, what string) *authclient.ClientKey {
	k := newKey(t)
	e.addClientKey(what, k)
	return k
}

// call records the request body and returns the call.
func (e *evEnv) call(method, path, body string) signedretry.Request {
	e.addString("request body of "+method+" "+path, body)
	return call(method, path, body)
}

// sign stamps the challenge's payload with k and records the payload and the
// stamp.
func (e *evEnv) sign(t *testing.T, c signedretry.Request, ch *signedretry.Challenge, k *authclient.ClientKey) signedretry.Request {
	t.Helper()
	c = signed(t, c, ch, k)
	e.addString("payload to sign", ch.PayloadToSign)
	e.addSealed("stamp", c.Signature)
	return c
}

// issued records the secrets of the live issuance of a credential: the code
// sent, the bundle, and what the store holds (code MAC, sealed target key).
func (e *evEnv) issued(t *testing.T, credID, bundle string) string {
	t.Helper()
	code := e.outbox.last(t).Code
	if e.outbox.last(t).CredentialID != credID || strings.Trim(code, evAlphabet) != "" {
		t.Fatalf("last code %+v is not one of %s", e.outbox.last(t), credID)
	}
	e.secrets[code] = "OTP code"
	e.addSealed("OTP target bundle", bundle)
	iss := e.storedIssuance(t, credID)
	e.addSealed("stored code MAC", iss.Code)
	e.addBytes("stored sealed target key", iss.TargetKey)
	return code
}

// seal seals code to the bundle with a new key and records both.
func (e *evEnv) seal(t *testing.T, bundle, code string) (string, *authclient.ClientKey) {
	t.Helper()
	k := e.newKey(t, "OTP client key")
	sealed, err := k.SealOTP(bundle, e.svc.SigningPublicKey(), code, nil)
	if err != nil {
		t.Fatal(err)
	}
	e.addSealed("encrypted OTP bundle", sealed)
	if strings.Trim(code, evAlphabet) == "" {
		e.secrets[code] = "OTP code"
	}
	return sealed, k
}

// otpLogin runs the two legs of an OTP verification with a code already
// issued for credID and returns the session and its key.
func (e *evEnv) otpLogin(t *testing.T, credID string, typ storage.CredentialType, bundle string) (*walletauth.AuthSession, *authclient.ClientKey) {
	t.Helper()
	ctx := t.Context()
	sealed, k := e.seal(t, bundle, e.issued(t, credID, bundle))
	req := walletauth.VerifyRequest{Type: typ, EncryptedOTPBundle: sealed}
	c := e.call("POST", "/auth/credentials/"+credID+"/verify", `{"type":"`+string(typ)+`","encryptedOtpBundle":`+quote(sealed)+`}`)
	_, ch, err := e.svc.Verify(ctx, credID, req, c)
	if err != nil || ch == nil {
		t.Fatalf("leg 1: %+v %v", ch, err)
	}
	e.none(t, "verify leg 1")
	// A stamp of another key: 401, nothing written.
	_, _, err = e.svc.Verify(ctx, credID, req, e.sign(t, c, ch, e.newKey(t, "stranger key")))
	apierrortest.Want(t, err, apierror.WalletSignatureInvalid, "")
	e.none(t, "a badly signed leg 2")
	sess, _, err := e.svc.Verify(ctx, credID, req, e.sign(t, c, ch, k))
	if err != nil || sess == nil {
		t.Fatalf("leg 2: %+v %v", sess, err)
	}
	return sess, k
}

// challenge issues a new code for an OTP credential and returns its bundle.
func (e *evEnv) challenge(t *testing.T, credID string) string {
	t.Helper()
	ctx := t.Context()
	m, err := e.svc.Challenge(ctx, credID, walletauth.ChallengeRequest{})
	if err != nil {
		t.Fatal(err)
	}
	e.none(t, "a challenge")
	return m.OTPEncryptionTargetBundle
}

// event is an outbox event as a receiver decodes it.
type event struct {
	storage.Event
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	Timestamp time.Time       `json:"timestamp"`
	Data      map[string]any  `json:"data"`
	Raw       json.RawMessage `json:"-"`
}

func (e *evEnv) all(t *testing.T, accountID string) []event {
	t.Helper()
	evs := storagetest.Events(t, e.rec.Store, accountID)
	out := make([]event, len(evs))
	for i, ev := range evs {
		if err := json.Unmarshal(ev.Payload, &out[i]); err != nil {
			t.Fatalf("payload %s: %v", ev.Payload, err)
		}
		out[i].Event, out[i].Raw = ev, ev.Payload
	}
	return out
}

// take returns the events of the account appended since the last take.
func (e *evEnv) take(t *testing.T, accountID string) []event {
	t.Helper()
	all := e.all(t, accountID)
	out := all[e.seen[accountID]:]
	e.seen[accountID] = len(all)
	for _, ev := range out {
		e.produced[ev.Type] = true
	}
	return out
}

// none asserts that the last operation (on the wallet of the env) appended
// no event.
func (e *evEnv) none(t *testing.T, what string) {
	t.Helper()
	if got := e.take(t, e.wallet.ID); len(got) != 0 {
		t.Fatalf("%s appended %d events, first %s", what, len(got), got[0].Raw)
	}
}

// present stands for a member whose value is not compared.
const present = "<present>"

type want struct {
	typ  string
	data map[string]any
}

// expect asserts that exactly the wanted events were appended to the
// account since the last take, in order, each with exactly the wanted data
// members and values, the account as subject and the envelope members.
func (e *evEnv) expect(t *testing.T, accountID string, wants ...want) []event {
	t.Helper()
	got := e.take(t, accountID)
	if len(got) != len(wants) {
		var types []string
		for _, g := range got {
			types = append(types, g.Type)
		}
		t.Fatalf("events %v, want %d", types, len(wants))
	}
	for i, w := range wants {
		g := got[i]
		if g.Type != w.typ || g.Event.Type != w.typ || g.Event.AccountID != accountID || g.ID != g.Event.ID ||
			!storage.ValidID(g.ID, "Webhook") || !g.Timestamp.Equal(g.Event.CreatedAt) || !g.Timestamp.Equal(e.clock.Now()) {
			t.Fatalf("event %d: %+v, want type %s about %s at %v", i, g.Event, w.typ, accountID, e.clock.Now())
		}
		var envelope map[string]json.RawMessage
		_ = json.Unmarshal(g.Raw, &envelope)
		if k := slices.Sorted(maps.Keys(envelope)); !slices.Equal(k, []string{"data", "id", "timestamp", "type"}) {
			t.Fatalf("%s envelope members %v", w.typ, k)
		}
		if k, wk := slices.Sorted(maps.Keys(g.Data)), slices.Sorted(maps.Keys(w.data)); !slices.Equal(k, wk) {
			t.Fatalf("%s data members %v, want %v (%s)", w.typ, k, wk, g.Raw)
		}
		for k, v := range w.data {
			if v == present {
				continue
			}
			if s, ok := v.(time.Time); ok {
				v = s.UTC().Format(time.RFC3339Nano)
			}
			gb, _ := json.Marshal(g.Data[k])
			wb, _ := json.Marshal(v)
			if string(gb) != string(wb) {
				t.Fatalf("%s data.%s = %s, want %s", w.typ, k, gb, wb)
			}
		}
	}
	return got
}

func (e *evEnv) credentialWant(typ string, m *walletauth.AuthMethod, extra map[string]any) want {
	d := map[string]any{"id": m.ID, "accountId": m.AccountID, "customerId": "Customer:1", "type": m.Type,
		"nickname": m.Nickname, "createdAt": m.CreatedAt, "updatedAt": present}
	if m.CredentialID != "" {
		d["credentialId"] = m.CredentialID
	}
	maps.Copy(d, extra)
	return want{typ, d}
}

func (e *evEnv) sessionWant(typ string, s *walletauth.AuthSession, authMethodID string, extra map[string]any) want {
	d := map[string]any{"id": s.ID, "accountId": s.AccountID, "customerId": "Customer:1", "authMethodId": authMethodID,
		"type": s.Type, "nickname": s.Nickname, "createdAt": s.CreatedAt, "updatedAt": s.UpdatedAt,
		"authenticatedAt": s.AuthenticatedAt, "expiresAt": s.ExpiresAt}
	maps.Copy(d, extra)
	return want{typ, d}
}

// noticeWant is the INTERNAL_ACCOUNT.SECURITY_NOTICE of a change of
// wallet w of Customer:1 now: cred the credential added or revoked (nil
// for an email change), signed by session of a signerCred of signerType,
// told to the channels notify ("TYPE:to").
func (e *evEnv) noticeWant(w, change string, cred *walletauth.AuthMethod, session, signerCred string, signerType storage.CredentialType,
	notify []string, extra map[string]any) want {
	chans := []map[string]string{}
	for _, n := range notify {
		typ, to, _ := strings.Cut(n, ":")
		chans = append(chans, map[string]string{"type": typ, "to": to})
	}
	d := map[string]any{"accountId": w, "customerId": "Customer:1", "change": change, "changedAt": e.clock.Now(),
		"signedBy": map[string]any{"sessionId": session, "authMethodId": signerCred, "type": signerType}, "notify": chans}
	if cred != nil {
		d["credential"] = map[string]any{"id": cred.ID, "type": cred.Type, "nickname": cred.Nickname}
	}
	maps.Copy(d, extra)
	return want{walletauth.EventSecurityNotice, d}
}

// passkeyAuthenticator is an authenticator whose private key the test keeps.
func (e *evEnv) passkeyAuthenticator(t *testing.T) *authenticator {
	t.Helper()
	for {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		if len(k.X.Bytes()) != 32 || len(k.Y.Bytes()) != 32 {
			continue
		}
		e.addPrivateKey("passkey private key", k)
		der, _ := x509.MarshalPKCS8PrivateKey(k)
		e.addBytes("passkey private key (PKCS#8)", der)
		return &authenticator{rp: virtualwebauthn.RelyingParty{ID: rpID, Name: "Wallet", Origin: origin},
			auth: virtualwebauthn.NewAuthenticator(), cred: virtualwebauthn.NewCredentialWithImportedKey(virtualwebauthn.KeyTypeEC2, der)}
	}
}

func (e *evEnv) oidcToken(t *testing.T, claims map[string]any) string {
	t.Helper()
	tok := e.idp.token(t, claims)
	e.addString("OIDC token", tok)
	for _, seg := range strings.Split(tok, ".") {
		e.addString("OIDC token segment", seg)
	}
	e.addBase64URL("OIDC token signature", tok[strings.LastIndexByte(tok, '.')+1:])
	sum := sha256.Sum256([]byte(tok))
	e.addBytes("OIDC token SHA-256", sum[:])
	return tok
}

func (e *evEnv) storedCredential(t *testing.T, id string) storage.Credential {
	t.Helper()
	ctx := t.Context()
	var c storage.Credential
	if err := e.store.Atomic(ctx, func(tx storage.Tx) error {
		var err error
		c, err = tx.Credentials().Get(ctx, id)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return c
}

// runFlows drives every flow that writes an event through the Service API
// and asserts, step by step, exactly the events each appended.
func runFlows(t *testing.T, mods ...func(*walletauth.Config)) *evEnv {
	ctx := t.Context()
	e := newEvEnv(t, mods...)
	w := e.wallet.ID

	// CreateWallet: the wallet's first credential.
	e.expect(t, w, e.credentialWant(walletauth.EventCredentialAdded, e.email, nil))

	// OTP login.
	bundle := e.challenge(t, e.email.ID)
	code := e.issued(t, e.email.ID, bundle)
	wrong, _ := e.seal(t, bundle, otherEvCode(code))
	_, _, err := e.svc.Verify(ctx, e.email.ID, walletauth.VerifyRequest{Type: storage.EmailOTP, EncryptedOTPBundle: wrong},
		e.call("POST", "/auth/credentials/"+e.email.ID+"/verify", `{"wrong":1}`))
	apierrortest.Want(t, err, apierror.Unauthorized, "Invalid OTP code")
	e.none(t, "a wrong code that leaves attempts")
	s1, k1 := e.otpLogin(t, e.email.ID, storage.EmailOTP, bundle)
	e.expect(t, w, e.sessionWant(walletauth.EventSessionCreated, s1, e.email.ID, nil))

	// Add SMS_OTP through the signed retry.
	addReq := walletauth.AddCredentialRequest{Type: storage.SMSOTP, AccountID: w}
	c := e.call("POST", "/auth/credentials", `{"type":"SMS_OTP","accountId":"`+w+`"}`)
	_, ch, err := e.svc.AddCredential(ctx, addReq, c)
	if err != nil {
		t.Fatal(err)
	}
	e.none(t, "add leg 1")
	_, _, err = e.svc.AddCredential(ctx, addReq, e.sign(t, c, ch, e.newKey(t, "stranger key")))
	apierrortest.Want(t, err, apierror.WalletSignatureInvalid, "")
	e.none(t, "a badly signed add")
	sms, _, err := e.svc.AddCredential(ctx, addReq, e.sign(t, c, ch, k1))
	if err != nil {
		t.Fatal(err)
	}
	// The owner hears of it at the wallet's address; an SMS_OTP added by
	// an EMAIL_OTP session is of the same strength and carries its own
	// type's assurance at once.
	e.expect(t, w, e.credentialWant(walletauth.EventCredentialAdded, sms, map[string]any{"signedBySessionId": s1.ID}),
		e.noticeWant(w, "CREDENTIAL_ADDED", sms, s1.ID, e.email.ID, storage.EmailOTP, []string{"EMAIL_OTP:ada@example.com"}, nil))

	// A host's operation through Authorize is audited with its effect:
	// who signed which request; a failed effect writes nothing.
	type hostParams struct {
		To     string `json:"to"`
		Amount int64  `json:"amount"`
	}
	hc := e.call("POST", "/host/payouts", `{"to":"ExternalAccount:x","amount":5}`)
	_, _, hch, err := walletauth.Authorize(ctx, e.svc, walletauth.HostOperation[hostParams, struct{}]{Type: "HOST_PAYOUT", AccountID: w,
		Parameters: hostParams{To: "ExternalAccount:x", Amount: 5}}, hc)
	if err != nil {
		t.Fatal(err)
	}
	e.none(t, "host operation leg 1")
	errEffect := errors.New("the host's debit failed")
	failing := walletauth.HostOperation[hostParams, struct{}]{Type: "HOST_PAYOUT", AccountID: w,
		Effect: func(context.Context, storage.Tx, *signedretry.Authorization, hostParams) (struct{}, error) {
			return struct{}{}, errEffect
		}}
	if _, _, _, err := walletauth.Authorize(ctx, e.svc, failing, e.sign(t, hc, hch, k1)); !errors.Is(err, errEffect) {
		t.Fatalf("a failing effect: %v", err)
	}
	e.none(t, "a host operation whose effect failed")
	if _, _, _, err := walletauth.Authorize(ctx, e.svc, walletauth.HostOperation[hostParams, struct{}]{Type: "HOST_PAYOUT", AccountID: w},
		e.sign(t, hc, hch, k1)); err != nil {
		t.Fatal(err)
	}
	e.expect(t, w, want{walletauth.EventHostOperation, map[string]any{"requestId": hch.RequestID, "type": "HOST_PAYOUT", "accountId": w,
		"authorizedAt": e.clock.Now(), "signedBySessionId": s1.ID, "authMethodId": e.email.ID}})

	// Lock the SMS code with wrong codes: the last attempt writes
	// OTP_LOCKED and still answers 401.
	smsCode := e.issued(t, sms.ID, sms.OTPEncryptionTargetBundle)
	attempt := func() error {
		sealed, _ := e.seal(t, sms.OTPEncryptionTargetBundle, otherEvCode(smsCode))
		_, _, err := e.svc.Verify(ctx, sms.ID, walletauth.VerifyRequest{Type: storage.SMSOTP, EncryptedOTPBundle: sealed},
			e.call("POST", "/auth/credentials/"+sms.ID+"/verify", `{"type":"SMS_OTP","encryptedOtpBundle":`+quote(sealed)+`}`))
		return err
	}
	for i := 1; i < walletauth.DefaultOTPMaxAttempts; i++ {
		apierrortest.Want(t, attempt(), apierror.Unauthorized, "Invalid OTP code")
		e.none(t, "attempt "+strconv.Itoa(i))
	}
	// The locking attempt's transaction fails to commit: neither the
	// attempt nor its event persists.
	e.rec.failNextEventTx()
	apierrortest.Want(t, attempt(), apierror.InternalError, "")
	e.none(t, "a locking attempt that did not commit")
	if n := e.storedIssuance(t, sms.ID).Attempts; n != walletauth.DefaultOTPMaxAttempts-1 {
		t.Fatalf("attempts after a failed commit: %d", n)
	}
	apierrortest.Want(t, attempt(), apierror.Unauthorized, "Invalid OTP code")
	e.expect(t, w, e.credentialWant(walletauth.EventCredentialOTPLocked, sms,
		map[string]any{"failedAttempts": walletauth.DefaultOTPMaxAttempts}))
	if n := e.storedIssuance(t, sms.ID).Attempts; n != walletauth.DefaultOTPMaxAttempts {
		t.Fatalf("attempts after the lock: %d", n)
	}
	apierrortest.Want(t, attempt(), apierror.Unauthorized, "too many failed attempts; request a new code")
	e.none(t, "an attempt on a locked code")
	s2, _ := e.otpLogin(t, sms.ID, storage.SMSOTP, e.challenge(t, sms.ID))
	e.expect(t, w, e.sessionWant(walletauth.EventSessionCreated, s2, sms.ID, nil))

	// PASSKEY: registration through the signed retry, then a login.
	a := e.passkeyAuthenticator(t)
	rc, err := e.svc.PasskeyRegistrationChallenge(ctx, w)
	if err != nil {
		t.Fatal(err)
	}
	e.addBase64URL("registration challenge", rc.Challenge)
	att := a.attest(t, rc.Challenge, w)
	e.addBase64URL("attestation clientDataJSON", att.ClientDataJSON)
	e.addBase64URL("attestation object", att.AttestationObject)
	pkReq := walletauth.AddCredentialRequest{Type: storage.Passkey, AccountID: w, Nickname: "iPhone", Challenge: rc.Challenge, Attestation: att}
	body, _ := json.Marshal(pkReq)
	c = e.call("POST", "/auth/credentials", string(body))
	_, ch, err = e.svc.AddCredential(ctx, pkReq, c)
	if err != nil {
		t.Fatal(err)
	}
	e.none(t, "passkey add leg 1")
	pk, _, err := e.svc.AddCredential(ctx, pkReq, e.sign(t, c, ch, k1))
	if err != nil {
		t.Fatal(err)
	}
	e.addBytes("passkey COSE public key", e.storedCredential(t, pk.ID).WebAuthn.PublicKey)
	// A passkey enrolled by an EMAIL_OTP session carries EMAIL_OTP's
	// assurance for its security-change period, and the notice says so.
	e.expect(t, w, e.credentialWant(walletauth.EventCredentialAdded, pk, map[string]any{"signedBySessionId": s1.ID}),
		e.noticeWant(w, "CREDENTIAL_ADDED", pk, s1.ID, e.email.ID, storage.EmailOTP,
			[]string{"EMAIL_OTP:ada@example.com", "SMS_OTP:+14155550123"},
			map[string]any{"assurance": "EMAIL_OTP", "settlesAt": e.clock.Now().Add(walletauth.DefaultSecurityChangePeriod)}))
	pkClient := e.newKey(t, "passkey client key")
	cr, err := e.svc.Challenge(ctx, pk.ID, walletauth.ChallengeRequest{ClientPublicKey: pkClient.PublicKeyHex()})
	if err != nil {
		t.Fatal(err)
	}
	e.addSealed("passkey challenge", cr.Challenge)
	e.none(t, "passkey challenge")
	as := a.assert(t, cr.Challenge)
	e.addBase64URL("assertion clientDataJSON", as.ClientDataJSON)
	e.addBase64URL("assertion authenticatorData", as.AuthenticatorData)
	e.addBase64URL("assertion signature", as.Signature)
	verifyPasskey := func(as *passkey.Assertion) (*walletauth.AuthSession, error) {
		s, _, err := e.svc.Verify(ctx, pk.ID, walletauth.VerifyRequest{Type: storage.Passkey, Assertion: as},
			signedretry.Request{Method: "POST", Path: "/auth/credentials/" + pk.ID + "/verify", RequestID: cr.RequestID})
		return s, err
	}
	forged := *as
	forged.Signature = base64.RawURLEncoding.EncodeToString(make([]byte, 70))
	_, err = verifyPasskey(&forged)
	apierrortest.Want(t, err, apierror.Unauthorized, "")
	e.none(t, "a failed passkey verification")
	s3, err := verifyPasskey(as)
	if err != nil {
		t.Fatal(err)
	}
	e.addSealed("encryptedSessionSigningKey", s3.EncryptedSessionSigningKey)
	pkSessionKey, err := pkClient.OpenSessionKey(s3.EncryptedSessionSigningKey)
	if err != nil {
		t.Fatal(err)
	}
	e.addClientKey("passkey session key", pkSessionKey)
	e.expect(t, w, e.sessionWant(walletauth.EventSessionCreated, s3, pk.ID, nil))

	// OAUTH: add, then a login.
	claims := func(mod map[string]any) map[string]any {
		c := map[string]any{"iss": "https://idp.example.com", "aud": "client-1", "sub": "user-7", "email": "ada@idp.example",
			"iat": e.clock.Now().Unix(), "exp": e.clock.Now().Add(time.Hour).Unix()}
		maps.Copy(c, mod)
		return c
	}
	oaReq := walletauth.AddCredentialRequest{Type: storage.OAuth, AccountID: w, OIDCToken: e.oidcToken(t, claims(nil))}
	body, _ = json.Marshal(oaReq)
	c = e.call("POST", "/auth/credentials", string(body))
	_, ch, err = e.svc.AddCredential(ctx, oaReq, c)
	if err != nil {
		t.Fatal(err)
	}
	e.none(t, "OAUTH add leg 1")
	oa, _, err := e.svc.AddCredential(ctx, oaReq, e.sign(t, c, ch, k1))
	if err != nil {
		t.Fatal(err)
	}
	e.expect(t, w, e.credentialWant(walletauth.EventCredentialAdded, oa, map[string]any{"signedBySessionId": s1.ID}),
		e.noticeWant(w, "CREDENTIAL_ADDED", oa, s1.ID, e.email.ID, storage.EmailOTP,
			[]string{"EMAIL_OTP:ada@example.com", "SMS_OTP:+14155550123"},
			map[string]any{"assurance": "EMAIL_OTP", "settlesAt": e.clock.Now().Add(walletauth.DefaultSecurityChangePeriod)}))
	oaClient := e.newKey(t, "OAUTH client key")
	verifyOAuth := func(nonce string) (*walletauth.AuthSession, error) {
		s, _, err := e.svc.Verify(ctx, oa.ID, walletauth.VerifyRequest{Type: storage.OAuth,
			OIDCToken: e.oidcToken(t, claims(map[string]any{"nonce": nonce})), ClientPublicKey: oaClient.PublicKeyHex()}, signedretry.Request{})
		return s, err
	}
	_, err = verifyOAuth("00")
	apierrortest.Want(t, err, apierror.Unauthorized, "")
	e.none(t, "an OAUTH token with another nonce")
	// A login whose transaction fails to commit: no session, no event.
	e.rec.failNextEventTx()
	_, err = verifyOAuth(oidc.NonceFor(oaClient.PublicKeyHex()))
	apierrortest.Want(t, err, apierror.InternalError, "")
	e.none(t, "an OAUTH login that did not commit")
	if list, _ := e.svc.ListSessions(ctx, w); len(list) != 3 {
		t.Fatalf("sessions after a failed commit: %d", len(list))
	}
	s4, err := verifyOAuth(oidc.NonceFor(oaClient.PublicKeyHex()))
	if err != nil {
		t.Fatal(err)
	}
	e.addSealed("encryptedSessionSigningKey", s4.EncryptedSessionSigningKey)
	oaSessionKey, err := oaClient.OpenSessionKey(s4.EncryptedSessionSigningKey)
	if err != nil {
		t.Fatal(err)
	}
	e.addClientKey("OAUTH session key", oaSessionKey)
	e.expect(t, w, e.sessionWant(walletauth.EventSessionCreated, s4, oa.ID, nil))

	// Refresh s1: the new session's CREATED, then REFRESHED.
	e.clock.Add(time.Minute)
	refreshClient := e.newKey(t, "refresh client key")
	rreq := walletauth.RefreshRequest{ClientPublicKey: refreshClient.PublicKeyHex()}
	c = e.call("POST", "/auth/sessions/"+s1.ID+"/refresh", `{"clientPublicKey":"`+refreshClient.PublicKeyHex()+`"}`)
	_, ch, err = e.svc.RefreshSession(ctx, s1.ID, rreq, c)
	if err != nil {
		t.Fatal(err)
	}
	e.none(t, "refresh leg 1")
	_, _, err = e.svc.RefreshSession(ctx, s1.ID, rreq, e.sign(t, c, ch, pkSessionKey))
	apierrortest.Want(t, err, apierror.WalletSignatureInvalid, "")
	e.none(t, "a refresh signed by another session")
	s5, _, err := e.svc.RefreshSession(ctx, s1.ID, rreq, e.sign(t, c, ch, k1))
	if err != nil {
		t.Fatal(err)
	}
	e.addSealed("encryptedSessionSigningKey", s5.EncryptedSessionSigningKey)
	refreshedKey, err := refreshClient.OpenSessionKey(s5.EncryptedSessionSigningKey)
	if err != nil {
		t.Fatal(err)
	}
	e.addClientKey("refreshed session key", refreshedKey)
	e.expect(t, w, e.sessionWant(walletauth.EventSessionCreated, s5, e.email.ID, nil),
		e.sessionWant(walletauth.EventSessionRefreshed, s5, e.email.ID, map[string]any{"previousSessionId": s1.ID, "signedBySessionId": s1.ID}))

	// Revoke the OAUTH session, signed by the refreshed one.
	c = e.call("DELETE", "/auth/sessions/"+s4.ID, "")
	ch, err = e.svc.RevokeSession(ctx, s4.ID, c)
	if err != nil {
		t.Fatal(err)
	}
	e.none(t, "revoke leg 1")
	if _, err := e.svc.RevokeSession(ctx, s4.ID, e.sign(t, c, ch, refreshedKey)); err != nil {
		t.Fatal(err)
	}
	e.expect(t, w, e.sessionWant(walletauth.EventSessionRevoked, s4, oa.ID, map[string]any{"signedBySessionId": s5.ID}))
	_, err = e.svc.RevokeSession(ctx, s4.ID, e.call("DELETE", "/auth/sessions/"+s4.ID, ""))
	apierrortest.Want(t, err, apierror.ReferenceNotFound, "")
	e.none(t, "revoking a revoked session")

	// Revoke SMS_OTP, signed by a session of another credential; its
	// session s2 is revoked with it. The passkey, enrolled by an EMAIL_OTP
	// session less than its period ago, may not revoke the older SMS_OTP;
	// the EMAIL_OTP's refreshed session may.
	c = e.call("DELETE", "/auth/credentials/"+sms.ID, "")
	ch, err = e.svc.RevokeCredential(ctx, sms.ID, c)
	if err != nil {
		t.Fatal(err)
	}
	e.none(t, "revoke credential leg 1")
	_, err = e.svc.RevokeCredential(ctx, sms.ID, e.sign(t, c, ch, pkSessionKey))
	if fe := apierrortest.Want(t, err, apierror.Forbidden, ""); fe.Details["assurance"] != "EMAIL_OTP" {
		t.Fatalf("refusal details %v", fe.Details)
	}
	e.none(t, "a revoke of an older credential by a passkey within its period")
	if _, err := e.svc.RevokeCredential(ctx, sms.ID, e.sign(t, c, ch, refreshedKey)); err != nil {
		t.Fatal(err)
	}
	e.expect(t, w, e.credentialWant(walletauth.EventCredentialRevoked, sms,
		map[string]any{"signedBySessionId": s5.ID, "revokedSessionCount": 1}),
		e.noticeWant(w, "CREDENTIAL_REVOKED", sms, s5.ID, e.email.ID, storage.EmailOTP,
			[]string{"EMAIL_OTP:ada@example.com", "SMS_OTP:+14155550123"}, nil))

	// UpdateEmail through the signed retry.
	c = e.call("PATCH", "/customers/Customer:1", `{"email":"ada@lovelace.example"}`)
	_, ch, err = e.svc.UpdateEmail(ctx, "Customer:1", "Ada@Lovelace.example", nil, c)
	if err != nil {
		t.Fatal(err)
	}
	e.none(t, "email leg 1")
	if _, _, err := e.svc.UpdateEmail(ctx, "Customer:1", "", nil, e.sign(t, c, ch, refreshedKey)); err != nil {
		t.Fatal(err)
	}
	e.expect(t, w, want{walletauth.EventEmailUpdated, map[string]any{"accountId": w, "customerId": "Customer:1",
		"email": "ada@lovelace.example", "authMethodIds": []string{e.email.ID}, "updatedAt": e.clock.Now(), "signedBySessionId": s5.ID}},
		e.noticeWant(w, "EMAIL_UPDATED", nil, s5.ID, e.email.ID, storage.EmailOTP, []string{"EMAIL_OTP:ada@example.com"}, nil))
	// The same address again changes nothing and writes nothing.
	c = e.call("PATCH", "/customers/Customer:1", `{"email":"ada@lovelace.example","again":true}`)
	_, ch, err = e.svc.UpdateEmail(ctx, "Customer:1", "ada@lovelace.example", nil, c)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.svc.UpdateEmail(ctx, "Customer:1", "", nil, e.sign(t, c, ch, refreshedKey)); err != nil {
		t.Fatal(err)
	}
	e.none(t, "an email update to the same address")

	// Revoke EMAIL_OTP: its two sessions (s1 and the refreshed one) go
	// with it; then an email change needs no signature. The passkey may
	// revoke the older EMAIL_OTP once its security-change period has
	// passed, with a session of a new login.
	c = e.call("DELETE", "/auth/credentials/"+e.email.ID, "")
	ch, err = e.svc.RevokeCredential(ctx, e.email.ID, c)
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.RevokeCredential(ctx, e.email.ID, e.sign(t, c, ch, pkSessionKey))
	apierrortest.Want(t, err, apierror.Forbidden, "")
	e.none(t, "a revoke of the EMAIL_OTP by a passkey within its period")
	e.clock.Add(walletauth.DefaultSecurityChangePeriod)
	cr, err = e.svc.Challenge(ctx, pk.ID, walletauth.ChallengeRequest{ClientPublicKey: pkClient.PublicKeyHex()})
	if err != nil {
		t.Fatal(err)
	}
	e.addSealed("passkey challenge", cr.Challenge)
	as = a.assert(t, cr.Challenge)
	e.addBase64URL("assertion clientDataJSON", as.ClientDataJSON)
	e.addBase64URL("assertion authenticatorData", as.AuthenticatorData)
	e.addBase64URL("assertion signature", as.Signature)
	s6, err := verifyPasskey(as)
	if err != nil {
		t.Fatal(err)
	}
	e.addSealed("encryptedSessionSigningKey", s6.EncryptedSessionSigningKey)
	pkSessionKey, err = pkClient.OpenSessionKey(s6.EncryptedSessionSigningKey)
	if err != nil {
		t.Fatal(err)
	}
	e.addClientKey("second passkey session key", pkSessionKey)
	e.expect(t, w, e.sessionWant(walletauth.EventSessionCreated, s6, pk.ID, nil))
	c = e.call("DELETE", "/auth/credentials/"+e.email.ID, "")
	ch, err = e.svc.RevokeCredential(ctx, e.email.ID, c)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.RevokeCredential(ctx, e.email.ID, e.sign(t, c, ch, pkSessionKey)); err != nil {
		t.Fatal(err)
	}
	email := *e.email
	email.Nickname = "ada@lovelace.example"
	e.expect(t, w, e.credentialWant(walletauth.EventCredentialRevoked, &email,
		map[string]any{"signedBySessionId": s6.ID, "revokedSessionCount": 2}),
		e.noticeWant(w, "CREDENTIAL_REVOKED", &email, s6.ID, pk.ID, storage.Passkey, []string{"EMAIL_OTP:ada@lovelace.example"}, nil))
	if _, _, err := e.svc.UpdateEmail(ctx, "Customer:1", "new@example.com", nil, e.call("PATCH", "/customers/Customer:1", `{"email":"new@example.com"}`)); err != nil {
		t.Fatal(err)
	}
	e.expect(t, w, want{walletauth.EventEmailUpdated, map[string]any{"accountId": w, "customerId": "Customer:1",
		"email": "new@example.com", "authMethodIds": []string{}, "updatedAt": e.clock.Now()}})

	// Two wallets of one customer: one EMAIL_UPDATED each, about itself.
	w1, m1, err := e.svc.CreateWallet(ctx, walletauth.NewWallet{CustomerID: "Customer:3", Email: "grace@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	w2, m2, err := e.svc.CreateWallet(ctx, walletauth.NewWallet{CustomerID: "Customer:3", Email: "grace@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range []struct {
		w *storage.InternalAccount
		m *walletauth.AuthMethod
	}{{w1, m1}, {w2, m2}} {
		d := e.credentialWant(walletauth.EventCredentialAdded, x.m, nil)
		d.data["customerId"] = "Customer:3"
		e.expect(t, x.w.ID, d)
	}
	gs, gk := e.otpLogin(t, m1.ID, storage.EmailOTP, e.challenge(t, m1.ID))
	sw := e.sessionWant(walletauth.EventSessionCreated, gs, m1.ID, nil)
	sw.data["customerId"] = "Customer:3"
	e.expect(t, w1.ID, sw)
	c = e.call("PATCH", "/customers/Customer:3", `{"email":"grace@hopper.example"}`)
	_, ch, err = e.svc.UpdateEmail(ctx, "Customer:3", "grace@hopper.example", nil, c)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.svc.UpdateEmail(ctx, "Customer:3", "", nil, e.sign(t, c, ch, gk)); err != nil {
		t.Fatal(err)
	}
	for _, x := range []struct {
		w *storage.InternalAccount
		m *walletauth.AuthMethod
	}{{w1, m1}, {w2, m2}} {
		notice := e.noticeWant(x.w.ID, "EMAIL_UPDATED", nil, gs.ID, m1.ID, storage.EmailOTP, []string{"EMAIL_OTP:grace@example.com"}, nil)
		notice.data["customerId"] = "Customer:3"
		e.expect(t, x.w.ID, want{walletauth.EventEmailUpdated, map[string]any{"accountId": x.w.ID, "customerId": "Customer:3",
			"email": "grace@hopper.example", "authMethodIds": []string{x.m.ID}, "updatedAt": e.clock.Now(), "signedBySessionId": gs.ID}},
			notice)
	}
	e.none(t, "another customer's changes")

	// Spend m1's budget of compared codes across issuances (its login
	// compared one), four wrong codes per issuance so none locks: the first
	// verification past the budget writes OTP_THROTTLED and answers 429,
	// the next ones only answer 429, and codes are compared again once the
	// window ends.
	guess := func(bundle, code string) error {
		sealed, _ := e.seal(t, bundle, code)
		_, _, err := e.svc.Verify(ctx, m1.ID, walletauth.VerifyRequest{Type: storage.EmailOTP, EncryptedOTPBundle: sealed},
			e.call("POST", "/auth/credentials/"+m1.ID+"/verify", `{"type":"EMAIL_OTP"}`))
		return err
	}
	var bundle1, code1 string
	for spent, onIssuance := 1, 0; spent < evAttemptBudget; spent, onIssuance = spent+1, onIssuance+1 {
		if bundle1 == "" || onIssuance == walletauth.DefaultOTPMaxAttempts-1 {
			bundle1, onIssuance = e.challenge(t, m1.ID), 0
			code1 = e.issued(t, m1.ID, bundle1)
		}
		apierrortest.Want(t, guess(bundle1, otherEvCode(code1)), apierror.Unauthorized, "Invalid OTP code")
	}
	e.expect(t, w1.ID)
	throttled := func(what string) time.Duration {
		t.Helper()
		err := guess(bundle1, code1) // the right code: not compared
		if !isAPIError(err, http.StatusTooManyRequests, apierror.RateLimited, "") || apierror.As(err).RetryAfter <= 0 {
			t.Fatalf("%s: %v, want 429 RATE_LIMITED with Retry-After", what, err)
		}
		return apierror.As(err).RetryAfter
	}
	wait := throttled("the first verification past the budget")
	tw := e.credentialWant(walletauth.EventCredentialOTPThrottled, m1, map[string]any{"customerId": "Customer:3",
		"nickname": "grace@hopper.example", "attemptBudget": evAttemptBudget, "throttledUntil": e.clock.Now().Add(wait)})
	e.expect(t, w1.ID, tw)
	e.clock.Add(time.Minute)
	if again := throttled("a later verification in the window"); again != wait-time.Minute {
		t.Fatalf("Retry-After %v a minute later, want %v", again, wait-time.Minute)
	}
	e.expect(t, w1.ID)
	e.clock.Add(wait - time.Minute)
	bundle1 = e.challenge(t, m1.ID)
	code1 = e.issued(t, m1.ID, bundle1)
	apierrortest.Want(t, guess(bundle1, otherEvCode(code1)), apierror.Unauthorized, "Invalid OTP code")
	e.expect(t, w1.ID)

	checkSameTransaction(t, e.rec)
	// Every event is about one of these wallets: leasing everything the
	// outbox holds finds no other subject and no other event.
	accounts := []string{w, w1.ID, w2.ID}
	total := 0
	for _, id := range accounts {
		total += len(e.all(t, id))
	}
	if leased := e.leaseAll(t); len(leased) != total {
		t.Fatalf("the outbox holds %d events, the wallets %d", len(leased), total)
	} else {
		for _, ev := range leased {
			if !slices.Contains(accounts, ev.AccountID) {
				t.Fatalf("event %s about %s", ev.Type, ev.AccountID)
			}
		}
	}
	return e
}

// leaseAll returns every event of the outbox, delivering them (the store's
// order per account lets a lease take one event per account at a time).
func (e *evEnv) leaseAll(t *testing.T) []storage.Event {
	t.Helper()
	ctx := t.Context()
	var out []storage.Event
	for {
		var batch []storage.Event
		if err := e.store.Atomic(ctx, func(tx storage.Tx) error {
			var err error
			if batch, err = tx.Outbox().Lease(ctx, "test", e.clock.Now().Add(time.Hour), time.Minute, 100); err != nil {
				return err
			}
			ids := make([]string, len(batch))
			for i := range batch {
				ids[i] = batch[i].ID
			}
			return tx.Outbox().MarkDelivered(ctx, ids, e.clock.Now())
		}); err != nil {
			t.Fatal(err)
		}
		if len(batch) == 0 {
			return out
		}
		out = append(out, batch...)
	}
}

// otherEvCode is a wrong code of the test alphabet.
func otherEvCode(code string) string {
	b := []byte(code)
	if b[0] == evAlphabet[0] {
		b[0] = evAlphabet[1]
	} else {
		b[0] = evAlphabet[0]
	}
	return string(b)
}

// TestEvents drives every flow that writes an event and asserts exactly the
// events each step appended, their subject and data, that failed steps
// append none, and that each event commits in the transaction of its change.
func TestEvents(t *testing.T) {
	e := runFlows(t)
	if got, want := slices.Sorted(maps.Keys(e.produced)), slices.Sorted(slices.Values(walletauth.EventTypes())); !slices.Equal(got, want) {
		t.Fatalf("the flows produced %v, want %v", got, want)
	}
}

// forbiddenWords are words of member names no event may carry: a member
// whose name has one of them as a word (camelCase, snake_case or a single
// word: "code", "otpCode", "session_key", "encryptedBundle") is a secret or
// names one.
var forbiddenWords = []string{"code", "otp", "key", "keys", "token", "bundle", "secret", "challenge", "signature",
	"stamp", "mac", "hash", "sha256", "cipher", "ciphertext", "encrypted", "sealed", "private", "public", "password",
	"pin", "nonce", "attestation", "assertion", "jwt", "essk", "credentials"}

// memberWords splits a member name into its lowercase words: "codeMAC" is
// code and mac, "otp_code" otp and code.
func memberWords(name string) []string {
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToLower(string(cur)))
		}
		cur = nil
	}
	for _, r := range name {
		switch {
		case r == '_' || r == '-' || r == '.':
			flush()
		case unicode.IsUpper(r) && len(cur) > 0 && !unicode.IsUpper(cur[len(cur)-1]):
			flush()
			cur = []rune{r}
		default:
			cur = append(cur, r)
		}
	}
	flush()
	return words
}

// leaks returns what of the secrets and forbidden member names payload
// carries.
func leaks(payload []byte, secrets map[string]string) []string {
	var out []string
	for v, what := range secrets {
		if strings.Contains(string(payload), v) {
			out = append(out, what+" "+strconv.Quote(v))
		}
	}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			// A secret with characters JSON escapes shows only when decoded.
			for sec, what := range secrets {
				if strings.Contains(v, sec) {
					out = append(out, what+" "+strconv.Quote(sec))
				}
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		case map[string]any:
			for k, x := range v {
				for _, w := range memberWords(k) {
					if slices.Contains(forbiddenWords, w) {
						out = append(out, "member "+k)
					}
				}
				walk(x)
			}
		}
	}
	var v any
	if err := json.Unmarshal(payload, &v); err != nil {
		return []string{"payload is not JSON: " + err.Error()}
	}
	walk(v)
	slices.Sort(out)
	return slices.Compact(out)
}

// TestEventsCarryNoSecrets scans every event the flows wrote, of every type,
// for every secret the test met (codes, bundles, keys in every encoding,
// tokens, challenges, stamps, request bodies, what the store holds for a
// code) and for member names of secrets.
func TestEventsCarryNoSecrets(t *testing.T) {
	ctx := t.Context()
	e := runFlows(t)
	for _, m := range e.outbox.sent {
		e.secrets[m.Code] = "OTP code"
	}
	if len(e.secrets) < 200 {
		t.Fatalf("only %d secrets collected", len(e.secrets))
	}
	// The scanner finds what it looks for.
	var planted string
	for v := range e.secrets {
		planted = v
		break
	}
	if leaks([]byte(`{"data":{"x":`+strconv.Quote(planted)+`}}`), e.secrets) == nil ||
		leaks([]byte(`{"data":{"sessionPublicKey":"x"}}`), nil) == nil ||
		leaks([]byte(`{"data":{"x":[{"otp_code":"x"}]}}`), nil) == nil ||
		leaks([]byte(`{"data":{"encryptedSessionSigningKey":"x"}}`), nil) == nil ||
		leaks([]byte(`{"data":{"issuanceMAC":"x"}}`), nil) == nil ||
		leaks([]byte(`{"data":{"timestamp":"x","nickname":"x","signedBySessionId":"x"}}`), nil) != nil {
		t.Fatal("the scanner misses a planted secret")
	}

	// The secrets cover the key of every session the flows created, in
	// every encoding.
	sessions := 0
	for id := range e.seen {
		for _, ev := range e.all(t, id) {
			if ev.Type != walletauth.EventSessionCreated {
				continue
			}
			var sess storage.Session
			if err := e.store.Atomic(ctx, func(tx storage.Tx) error {
				var err error
				sess, err = tx.Sessions().Get(ctx, ev.Data["id"].(string))
				return err
			}); err != nil {
				t.Fatal(err)
			}
			for _, enc := range []string{hex.EncodeToString(sess.PublicKey), base64.StdEncoding.EncodeToString(sess.PublicKey),
				base64.RawURLEncoding.EncodeToString(sess.PublicKey)} {
				if _, ok := e.secrets[enc]; !ok {
					t.Errorf("the key of session %s (%s) is not among the secrets", sess.ID, enc)
				}
			}
			sessions++
		}
	}
	if sessions < 5 {
		t.Fatalf("only %d sessions checked", sessions)
	}

	scanned := map[string]int{}
	var all []event
	for id := range e.seen {
		all = append(all, e.all(t, id)...)
	}
	for _, ev := range all {
		scanned[ev.Type]++
		if l := leaks(ev.Raw, e.secrets); len(l) != 0 {
			t.Errorf("%s event carries %v:\n%s", ev.Type, l, ev.Raw)
		}
		if strings.Contains(ev.Event.AccountID+ev.Event.ID, e.outbox.last(t).Code) {
			t.Errorf("%s event's subject or id carries a code", ev.Type)
		}
	}

	// Every type the package declares was produced and scanned, and
	// EventTypes lists exactly those.
	declared := declaredEventTypes(t)
	if got := slices.Sorted(slices.Values(walletauth.EventTypes())); !slices.Equal(got, declared) {
		t.Errorf("EventTypes() = %v, events.go declares %v", got, declared)
	}
	if got := slices.Sorted(maps.Keys(scanned)); !slices.Equal(got, declared) {
		t.Errorf("the flows produced %v, events.go declares %v", got, declared)
	}
}

// declaredEventTypes returns the values of the Event* string constants of
// events.go.
func declaredEventTypes(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "events.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			for i, n := range vs.Names {
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !strings.HasPrefix(n.Name, "Event") || !ok || lit.Kind != token.STRING {
					continue
				}
				v, _ := strconv.Unquote(lit.Value)
				out = append(out, v)
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("events.go declares no event type")
	}
	slices.Sort(out)
	return out
}

// TestEventOTPLockedOnceInABurst sends more concurrent wrong codes than
// the attempt limit: exactly one of them writes OTP_LOCKED.
func TestEventOTPLockedOnceInABurst(t *testing.T) {
	ctx := t.Context()
	e := newEvEnv(t)
	e.take(t, e.wallet.ID)
	bundle := e.challenge(t, e.email.ID)
	code := e.issued(t, e.email.ID, bundle)
	var fns []func() error
	for range 3 * walletauth.DefaultOTPMaxAttempts {
		sealed, _ := e.seal(t, bundle, otherEvCode(code))
		fns = append(fns, func() error {
			_, _, err := e.svc.Verify(ctx, e.email.ID, walletauth.VerifyRequest{Type: storage.EmailOTP, EncryptedOTPBundle: sealed},
				call("POST", "/auth/credentials/"+e.email.ID+"/verify", `{}`))
			return err
		})
	}
	invalid := 0
	for _, err := range together(fns...) {
		if apierror.As(err).Reason() == "Invalid OTP code" {
			invalid++
		}
	}
	if invalid != walletauth.DefaultOTPMaxAttempts {
		t.Fatalf("%d codes compared, want %d", invalid, walletauth.DefaultOTPMaxAttempts)
	}
	e.expect(t, e.wallet.ID, e.credentialWant(walletauth.EventCredentialOTPLocked, e.email,
		map[string]any{"failedAttempts": walletauth.DefaultOTPMaxAttempts}))
	checkSameTransaction(t, e.rec)
}

package ownership_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/ownership"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/storagetest"
)

// admitAll is a guard that lets every caller act on every account.
func admitAll(context.Context, storage.ExternalAccount) error { return nil }

// handler serves svc's routes; svc must have a guard.
func handler(t testing.TB, svc *ownership.Service) http.Handler {
	t.Helper()
	h, err := svc.Handler()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// with returns another service on l's store, configured as l's but with
// the guard g: a replica of the host whose tenant guard is g.
func (l *lifecycle) with(t testing.TB, g ownership.AccountGuard) *ownership.Service {
	t.Helper()
	cfg := l.cfg
	cfg.Guard = g
	svc, err := ownership.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// principalKey is the context key of the calling platform, as a host's
// authentication middleware would set it.
type principalKey struct{}

// post sends one POST to h and returns the recorded answer.
func post(h http.Handler, path, body string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, "platform-test")))
	return w
}

// answerError decodes an error answer; its status must be its code's.
func answerError(t testing.TB, w *httptest.ResponseRecorder) *apierror.Error {
	t.Helper()
	var e apierror.Error
	if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil {
		t.Fatalf("%d %s is no error body: %v", w.Code, w.Body, err)
	}
	if w.Code != e.Status() {
		t.Fatalf("status %d, body says %d", w.Code, e.Status())
	}
	return &e
}

// challenge reads the outstanding challenge of an account (ErrNotFound when
// none).
func (l *lifecycle) challenge(t *testing.T, id string) (storage.OwnershipChallenge, error) {
	t.Helper()
	ctx := t.Context()
	var c storage.OwnershipChallenge
	err := l.store.Atomic(ctx, func(tx storage.Tx) error {
		var err error
		c, err = tx.Challenges().Get(ctx, id)
		return err
	})
	return c, err
}

func TestHandlerRequiresGuard(t *testing.T) {
	l := newLifecycle(t)
	h, err := l.svc.Handler()
	if err == nil || h != nil || !strings.Contains(err.Error(), "Config.Guard is required") {
		t.Fatalf("a handler without a guard: %v, %v", h, err)
	}
	if _, err := l.with(t, admitAll).Handler(); err != nil {
		t.Fatalf("a handler with a guard: %v", err)
	}
}

// TestHandlerGuardSeesAccount: each route of both trees asks the service's
// guard once, before it acts, with the request's context and the account of
// its path; an account that is not in the route's tree, or none, is 404
// without asking.
func TestHandlerGuardSeesAccount(t *testing.T) {
	l := newLifecycle(t)
	customer := l.account(t, func(a *storage.ExternalAccount) { a.CustomerID = "Customer:2" })
	platform := l.account(t, func(a *storage.ExternalAccount) { a.CustomerID = "" })
	var asked []storage.ExternalAccount
	h := handler(t, l.with(t, func(ctx context.Context, a storage.ExternalAccount) error {
		if ctx.Value(principalKey{}) != "platform-test" {
			return errors.New("the guard did not get the request's context")
		}
		asked = append(asked, a)
		return nil
	}))
	for _, tc := range []struct{ tree, id, customer string }{
		{"/customers", customer, "Customer:2"},
		{"/platform", platform, ""},
	} {
		w := post(h, tc.tree+"/external-accounts/"+tc.id+"/challenge", `{"method":"WALLET_SIGNATURE"}`)
		var c ownership.Challenge
		if err := json.Unmarshal(w.Body.Bytes(), &c); err != nil || w.Code != http.StatusCreated {
			t.Fatalf("%s challenge: %d %s", tc.tree, w.Code, w.Body)
		}
		w = post(h, tc.tree+"/external-accounts/"+tc.id+"/verify", `{"signature":"`+l.signEVM(t, c.MessageToSign)+`"}`)
		if w.Code != http.StatusOK {
			t.Fatalf("%s verify: %d %s", tc.tree, w.Code, w.Body)
		}
		if len(asked) != 2 || asked[0].ID != tc.id || asked[1].ID != tc.id || asked[0].CustomerID != tc.customer {
			t.Fatalf("%s: the guard was asked %+v, want twice with %s", tc.tree, asked, tc.id)
		}
		asked = nil
	}
	for _, path := range []string{
		"/platform/external-accounts/" + customer + "/challenge",
		"/customers/external-accounts/" + platform + "/verify",
		"/customers/external-accounts/ExternalAccount:00000000-0000-4000-8000-000000000000/challenge",
	} {
		apierrortest.Want(t, answerError(t, post(h, path, `{"method":"WALLET_SIGNATURE","signature":"0x00"}`)), apierror.ReferenceNotFound, "")
	}
	if len(asked) != 0 {
		t.Fatalf("the guard was asked about accounts outside the route's tree: %+v", asked)
	}
}

// TestHandlerGuardRefuses: a guard that refuses another platform's
// accounts blocks challenge and verify on both trees before anything is
// written: the outstanding challenge is neither superseded nor consumed, a
// bad signature does not make the account UNVERIFIED, no LIVENESS session
// starts and no event is written. A plain refusal answers exactly what an
// unknown account answers; an *apierror.Error is written as it is.
func TestHandlerGuardRefuses(t *testing.T) {
	ctx := t.Context()
	l := newLifecycle(t)
	customer := l.account(t, func(a *storage.ExternalAccount) { a.CustomerID = "Customer:2" })
	platform := l.account(t, func(a *storage.ExternalAccount) { a.CustomerID = "" })
	outstanding := map[string]storage.OwnershipChallenge{}
	events := map[string]int{}
	for _, tc := range []struct {
		id   string
		tree ownership.Tree
	}{{customer, ownership.CustomerTree}, {platform, ownership.PlatformTree}} {
		if _, err := l.svc.StartChallenge(ctx, tc.id, ownership.MethodWalletSignature, tc.tree); err != nil {
			t.Fatal(err)
		}
		c, err := l.challenge(t, tc.id)
		if err != nil {
			t.Fatal(err)
		}
		outstanding[tc.id] = c
		events[tc.id] = len(l.events(t, tc.id))
	}
	// Two replicas of the host on l's store, each with its guard, and a
	// liveness provider that counts the sessions they start.
	liveness := &liveness{}
	l.cfg.Liveness = liveness
	refuse := handler(t, l.with(t, func(_ context.Context, a storage.ExternalAccount) error {
		return fmt.Errorf("account %s belongs to another platform", a.ID)
	}))
	forbid := handler(t, l.with(t, func(context.Context, storage.ExternalAccount) error {
		return fmt.Errorf("host: %w", apierror.New(apierror.Forbidden, "not this platform's account"))
	}))
	const unknown = "ExternalAccount:00000000-0000-4000-8000-000000000000"
	for _, tc := range []struct{ tree, id string }{{"/customers", customer}, {"/platform", platform}} {
		bad := `{"signature":"` + l.signEVM(t, "not the message") + `"}`
		for _, rt := range []struct{ op, body string }{
			{"challenge", `{"method":"WALLET_SIGNATURE"}`},
			{"challenge", `{"method":"LIVENESS"}`},
			{"verify", bad},
		} {
			path := tc.tree + "/external-accounts/" + tc.id + "/" + rt.op
			got := apierrortest.Want(t, answerError(t, post(refuse, path, rt.body)), apierror.ReferenceNotFound, "")
			none := apierrortest.Want(t, answerError(t, post(refuse, strings.Replace(path, tc.id, unknown, 1), rt.body)), apierror.ReferenceNotFound, "")
			if got.Message != strings.Replace(none.Message, unknown, tc.id, 1) {
				t.Fatalf("%s: a refusal says %q, an unknown account %q", path, got.Message, none.Message)
			}
			apierrortest.Want(t, answerError(t, post(forbid, path, rt.body)), apierror.Forbidden, "")
		}
		if got := l.status(t, tc.id); got != storage.StatusPendingOwnershipVerification {
			t.Fatalf("%s: status %s after refused requests", tc.tree, got)
		}
		if c, err := l.challenge(t, tc.id); err != nil || c.ID != outstanding[tc.id].ID {
			t.Fatalf("%s: the outstanding challenge after refused requests: %+v, %v", tc.tree, c, err)
		}
		if evs := l.events(t, tc.id); len(evs) != events[tc.id] {
			t.Fatalf("%s: events %v after refused requests", tc.tree, evs)
		}
	}
	if liveness.calls != 0 {
		t.Fatalf("refused requests started %d LIVENESS sessions", liveness.calls)
	}
}

// TestGuardDirect: a host that calls the Service methods itself (its own
// HTTP stack, gRPC, a provider's callback) gets the same guard as the
// handler. Every operation on an account asks Config.Guard once, about the
// account it acts on; a refusal writes nothing (no challenge stored or
// consumed, no LIVENESS session, no status change, no event) and answers as
// an unknown account does (403 FORBIDDEN for a registration); an
// *apierror.Error is answered as it is; an id that names nothing is 404
// before the guard is asked.
func TestGuardDirect(t *testing.T) {
	ctx := t.Context()
	l := newLifecycle(t)
	g := &storagetest.Guard{}
	live := &liveness{}
	l.cfg.Liveness = live
	svc := l.with(t, g.Account)
	id := l.account(t, nil)
	refused := errors.New("the account of another tenant")

	askedOnce := func(name, account string) {
		t.Helper()
		if got := g.Take(); !slices.Equal(got, []string{account}) {
			t.Fatalf("%s: the guard was asked about %v, want once about %s", name, got, account)
		}
	}
	// refuse runs op with the guard refusing: it answers as an unknown
	// account (the same message), asks once and writes no event.
	refuse := func(name, account string, op func() error) {
		t.Helper()
		events := len(l.events(t, account))
		g.Set(refused)
		err := op()
		g.Set(nil)
		got := apierrortest.Want(t, err, apierror.ReferenceNotFound, "")
		if want := "external account " + account + " not found"; got.Message != want {
			t.Fatalf("%s refused: %q, want %q", name, got.Message, want)
		}
		if n := len(l.events(t, account)); n != events {
			t.Fatalf("%s refused: %d events written", name, n-events)
		}
		askedOnce(name+" refused", account)
	}
	admit := func(name, account string, op func() error) {
		t.Helper()
		if err := op(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		askedOnce(name, account)
	}

	// Reads.
	refuse("Account", id, func() error { _, err := svc.Account(ctx, id); return err })
	admit("Account", id, func() error { _, err := svc.Account(ctx, id); return err })
	g.Set(refused)
	if as, err := svc.Accounts(ctx, "Customer:1"); err != nil || len(as) != 0 {
		t.Fatalf("Accounts refused: %+v, %v; want the account left out", as, err)
	}
	g.Set(nil)
	askedOnce("Accounts refused", id)
	if as, err := svc.Accounts(ctx, "Customer:1"); err != nil || len(as) != 1 || as[0].ID != id {
		t.Fatalf("Accounts: %+v, %v", as, err)
	}
	askedOnce("Accounts", id)

	// The proof: challenges of both methods, then the verification.
	for _, method := range []string{ownership.MethodLiveness, ownership.MethodWalletSignature} {
		refuse("StartChallenge "+method, id, func() error {
			_, err := svc.StartChallenge(ctx, id, method, ownership.CustomerTree)
			return err
		})
		if _, err := l.challenge(t, id); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("a refused %s challenge was stored: %v", method, err)
		}
	}
	if live.calls != 0 {
		t.Fatalf("refused challenges started %d LIVENESS sessions", live.calls)
	}
	var c *ownership.Challenge
	admit("StartChallenge", id, func() (err error) {
		c, err = svc.StartChallenge(ctx, id, ownership.MethodWalletSignature, ownership.CustomerTree)
		return err
	})
	outstanding, err := l.challenge(t, id)
	if err != nil {
		t.Fatal(err)
	}
	bad := ownership.VerifyRequest{Signature: l.signEVM(t, "not the message")}
	refuse("Verify", id, func() error { _, err := svc.Verify(ctx, id, bad, ownership.CustomerTree); return err })
	if got, err := l.challenge(t, id); err != nil || got.ID != outstanding.ID || l.status(t, id) != storage.StatusPendingOwnershipVerification {
		t.Fatalf("a refused verify consumed the challenge (%+v, %v) or changed the status (%s)", got, err, l.status(t, id))
	}
	admit("Verify", id, func() error {
		_, err := svc.Verify(ctx, id, ownership.VerifyRequest{Signature: l.signEVM(t, c.MessageToSign)}, ownership.CustomerTree)
		return err
	})

	// A LIVENESS outcome, delivered by the host.
	other := l.account(t, nil)
	if _, err := svc.StartChallenge(ctx, other, ownership.MethodLiveness, ownership.CustomerTree); err != nil {
		t.Fatal(err)
	}
	g.Take()
	refuse("CompleteLiveness", other, func() error { _, err := svc.CompleteLiveness(ctx, other, true); return err })
	if _, err := l.challenge(t, other); err != nil || l.status(t, other) != storage.StatusPendingOwnershipVerification {
		t.Fatalf("a refused CompleteLiveness consumed the challenge (%v) or changed the status (%s)", err, l.status(t, other))
	}
	admit("CompleteLiveness", other, func() error { _, err := svc.CompleteLiveness(ctx, other, true); return err })

	// A host-driven status change.
	refuse("SetStatus", id, func() error { _, err := svc.SetStatus(ctx, id, storage.StatusUnderReview); return err })
	if got := l.status(t, id); got != storage.StatusActive {
		t.Fatalf("a refused SetStatus left the account %s", got)
	}
	admit("SetStatus", id, func() error { _, err := svc.SetStatus(ctx, id, storage.StatusActive); return err })

	// The payout gate, in a transaction of its own and in the host's.
	pay := ownership.Payout{AccountID: id, Amount: 5_000_000, Currency: "USDC"}
	refuse("CheckPayout", id, func() error { _, err := svc.CheckPayout(ctx, pay); return err })
	admit("CheckPayout", id, func() error { _, err := svc.CheckPayout(ctx, pay); return err })
	checkIn := func() error {
		return l.store.Atomic(ctx, func(tx storage.Tx) error { _, err := svc.CheckPayoutIn(ctx, tx, pay); return err })
	}
	refuse("CheckPayoutIn", id, checkIn)
	admit("CheckPayoutIn", id, checkIn)

	// A registration: a plain refusal is 403, there being no id to be
	// unknown, and stores nothing.
	n := ownership.NewAccount{ID: "ExternalAccount:6b0c2a5e-1f7d-4c3e-9a8b-2d4e6f8a0b1c", CustomerID: "Customer:1",
		AccountType: "USD_ACCOUNT", Address: "021000021:1234567890", Currency: "USD"}
	g.Set(refused)
	_, err = svc.RegisterAccount(ctx, n)
	g.Set(nil)
	apierrortest.Want(t, err, apierror.Forbidden, "")
	askedOnce("RegisterAccount refused", n.ID)
	if _, err := l.svc.Account(ctx, n.ID); apierror.CodeOf(err) != apierror.ReferenceNotFound {
		t.Fatalf("a refused registration stored the account: %v", err)
	}
	admit("RegisterAccount", n.ID, func() error { _, err := svc.RegisterAccount(ctx, n); return err })

	// An *apierror.Error is answered as it is.
	g.Set(fmt.Errorf("host: %w", apierror.New(apierror.Forbidden, "not this platform's account")))
	_, err = svc.Account(ctx, id)
	wantMessage(t, apierrortest.Want(t, err, apierror.Forbidden, ""), "not this platform's account")
	_, err = svc.Accounts(ctx, "Customer:1")
	wantMessage(t, apierrortest.Want(t, err, apierror.Forbidden, ""), "not this platform's account")
	g.Set(nil)
	g.Take()

	// Ids that name nothing, or nothing in the call's tree, are 404 before
	// the guard is asked.
	const none = "ExternalAccount:00000000-0000-4000-8000-000000000000"
	for name, op := range map[string]func() error{
		"Account": func() error { _, err := svc.Account(ctx, none); return err },
		"StartChallenge": func() error {
			_, err := svc.StartChallenge(ctx, none, ownership.MethodWalletSignature, ownership.AnyTree)
			return err
		},
		"StartChallenge of another tree": func() error {
			_, err := svc.StartChallenge(ctx, id, ownership.MethodWalletSignature, ownership.PlatformTree)
			return err
		},
		"SetStatus":   func() error { _, err := svc.SetStatus(ctx, none, storage.StatusActive); return err },
		"CheckPayout": func() error { _, err := svc.CheckPayout(ctx, ownership.Payout{AccountID: none, Amount: 1}); return err },
	} {
		apierrortest.Want(t, op(), apierror.ReferenceNotFound, "")
		if got := g.Take(); len(got) != 0 {
			t.Fatalf("%s of an unknown id asked the guard about %v", name, got)
		}
	}
}

// wantMessage fails t unless e says msg.
func wantMessage(t testing.TB, e *apierror.Error, msg string) {
	t.Helper()
	if e.Message != msg {
		t.Fatalf("%s %q, want %q", e.Code, e.Message, msg)
	}
}

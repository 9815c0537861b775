package ownership_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/ownership"
	"github.com/walletgate/walletgate/storage"
)

// handler serves svc's routes behind a guard that lets every request act.
func handler(t testing.TB, svc *ownership.Service) http.Handler {
	t.Helper()
	h, err := svc.Handler(ownership.HandlerConfig{Guard: func(*http.Request, storage.ExternalAccount) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// post sends one POST to h and returns the recorded answer.
func post(h http.Handler, path, body string) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, path, strings.NewReader(body)))
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
	h, err := l.svc.Handler(ownership.HandlerConfig{})
	if err == nil || h != nil || !strings.Contains(err.Error(), "HandlerConfig.Guard is required") {
		t.Fatalf("a handler without a guard: %v, %v", h, err)
	}
}

// TestHandlerGuardSeesAccount: each route of both trees asks the guard
// once, before it acts, with the account of its path; an account that is
// not in the route's tree, or none, is 404 without asking.
func TestHandlerGuardSeesAccount(t *testing.T) {
	l := newLifecycle(t)
	customer := l.account(t, func(a *storage.ExternalAccount) { a.CustomerID = "Customer:2" })
	platform := l.account(t, func(a *storage.ExternalAccount) { a.CustomerID = "" })
	var asked []storage.ExternalAccount
	h, err := l.svc.Handler(ownership.HandlerConfig{Guard: func(r *http.Request, a storage.ExternalAccount) error {
		if r == nil {
			return errors.New("no request")
		}
		asked = append(asked, a)
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
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
	liveness := &liveness{}
	svc, err := ownership.New(ownership.Config{Store: l.store, Payouts: testPolicy, Service: "payments.example.com", Liveness: liveness})
	if err != nil {
		t.Fatal(err)
	}
	refuse, err := svc.Handler(ownership.HandlerConfig{Guard: func(_ *http.Request, a storage.ExternalAccount) error {
		return fmt.Errorf("account %s belongs to another platform", a.ID)
	}})
	if err != nil {
		t.Fatal(err)
	}
	forbid, err := svc.Handler(ownership.HandlerConfig{Guard: func(*http.Request, storage.ExternalAccount) error {
		return fmt.Errorf("host: %w", apierror.New(apierror.Forbidden, "not this platform's account"))
	}})
	if err != nil {
		t.Fatal(err)
	}
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

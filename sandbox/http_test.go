package sandbox_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/sandbox"
)

func TestPlatformCredentials(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct{ user, pass string }{
		{"", ""},
		{sandbox.DefaultClientID, "wrong"},
		{"wrong", sandbox.DefaultClientSecret},
		{sandbox.DefaultClientID, sandbox.DefaultClientSecret + "x"},
	} {
		e.user, e.pass = tc.user, tc.pass
		r := e.do("GET", "/customers/Customer:x", nil)
		r.fails(t, 401, apierror.Unauthorized)
		if !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Basic") {
			t.Fatalf("WWW-Authenticate %q", r.header.Get("WWW-Authenticate"))
		}
		// Unknown routes and walletauth's routes are behind the credentials too.
		e.do("GET", "/nothing", nil).fails(t, 401, apierror.Unauthorized)
		e.do("GET", "/auth/sessions?accountId=x", nil).fails(t, 401, apierror.Unauthorized)
	}
}

func TestCustomCredentialsAndBasePath(t *testing.T) {
	sim, err := sandbox.New(sandbox.Config{ClientID: "me", ClientSecret: "s3cret", BasePath: "v9/"})
	if err != nil {
		t.Fatal(err)
	}
	if sim.BasePath() != "/v9" {
		t.Fatalf("base %q", sim.BasePath())
	}
	srv := httptest.NewServer(sim.Handler())
	defer srv.Close()
	e := &env{t: t, sim: sim, srv: srv, base: "/v9", user: "me", pass: "s3cret"}
	e.do("GET", "/customers/Customer:x", nil).fails(t, 404, apierror.UserNotFound)
	e.base = sandbox.DefaultBasePath
	e.do("GET", "/customers/Customer:x", nil).fails(t, 404, apierror.ReferenceNotFound)
	if _, err := sandbox.New(sandbox.Config{WalletCurrency: "DOGE"}); err == nil {
		t.Fatal("unknown wallet currency accepted")
	}
}

func TestUnknownRoutesAndMethods(t *testing.T) {
	e := newEnv(t)
	e.do("GET", "/nothing/here", nil).fails(t, 404, apierror.ReferenceNotFound)
	e.base = ""
	e.do("GET", "/customers/Customer:x", nil).fails(t, 404, apierror.ReferenceNotFound)
	e.base = sandbox.DefaultBasePath
	for _, tc := range []struct{ method, path, allow string }{
		{"DELETE", "/customers/Customer:x", "GET, HEAD, PATCH"},
		{"PUT", "/quotes", "POST"},
		{"GET", "/transfer-in", "POST"},
		{"PUT", "/auth/credentials", "GET, HEAD, POST"},
		{"GET", "/sandbox/send", "POST"},
	} {
		r := e.do(tc.method, tc.path, nil)
		r.fails(t, 405, apierror.MethodNotAllowed)
		if r.header.Get("Allow") != tc.allow {
			t.Errorf("%s %s: Allow %q, want %q", tc.method, tc.path, r.header.Get("Allow"), tc.allow)
		}
	}
}

func TestRequestBodies(t *testing.T) {
	e := newEnv(t)
	big := `{"customerType":"INDIVIDUAL","fullName":"` + strings.Repeat("a", apierror.DefaultMaxBodyBytes) + `"}`
	e.do("POST", "/customers", big).fails(t, 400, apierror.InvalidInput)
	e.do("POST", "/transfer-in", `{"amount":1}{"amount":2}`).fails(t, 400, apierror.InvalidInput)
	e.do("POST", "/quotes", `not json`).fails(t, 400, apierror.InvalidInput)
	e.do("POST", "/sandbox/send", ``).fails(t, 400, apierror.InvalidInput)
	e.do("POST", "/quotes/Quote:x/execute", `[`).fails(t, 400, apierror.InvalidInput)
}

func TestHandleAddsRoutes(t *testing.T) {
	e := newEnv(t)
	err := e.sim.Handle("POST /customers/external-accounts/{id}/notes", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		apierror.WriteJSON(w, 201, map[string]string{"id": r.PathValue("id"), "path": r.URL.Path})
	}))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]string
	e.do("POST", "/customers/external-accounts/ExternalAccount:1/notes", nil).ok(t, 201, &got)
	if got["id"] != "ExternalAccount:1" || got["path"] != sandbox.DefaultBasePath+"/customers/external-accounts/ExternalAccount:1/notes" {
		t.Fatalf("extra route saw %v", got)
	}
	e.do("GET", "/customers/external-accounts/ExternalAccount:1/notes", nil).fails(t, 405, apierror.MethodNotAllowed)
	e.user = ""
	e.do("POST", "/customers/external-accounts/ExternalAccount:1/notes", nil).fails(t, 401, apierror.Unauthorized)
	for _, bad := range []string{"POST /customers", "/no-method", "POST nothing", "POST /x/{"} {
		if err := e.sim.Handle(bad, http.NotFoundHandler()); err == nil {
			t.Errorf("pattern %q accepted", bad)
		}
	}
}

// TestBadConfigIsAnError: a Config no default can stand for fails New with an
// error naming the problem; New never panics on its Config.
func TestBadConfigIsAnError(t *testing.T) {
	for name, cfg := range map[string]sandbox.Config{
		"wallet currency":    {WalletCurrency: "DOGE"},
		"wildcard base path": {BasePath: "/{v"},
		"unclosed base path": {BasePath: "v{1}x"},
		"non-HTTP webhook":   {WebhookURL: "ftp://example.com"},
	} {
		t.Run(name, func(t *testing.T) {
			sim, err := sandbox.New(cfg)
			if err == nil {
				sim.Close()
				t.Fatalf("%+v accepted", cfg)
			}
		})
	}
}

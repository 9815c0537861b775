package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/walletgate/walletgate/apierror"
)

// server is a running instance of the program.
type server struct {
	origin string // the page's origin, http://localhost:<port>
	listen string // host:port it listens on
	cancel context.CancelFunc
	done   chan error
}

// start runs the program with args on a free port until the test ends; it
// must stop cleanly.
func start(t *testing.T, args ...string) *server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &server{cancel: cancel, done: make(chan error, 1)}
	pr, pw := io.Pipe()
	go func() {
		err := run(ctx, append([]string{"-addr", "127.0.0.1:0"}, args...), pw)
		pw.Close()
		s.done <- err
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-s.done:
			if err != nil {
				t.Errorf("run returned %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("the program did not stop")
		}
	})
	lines := bufio.NewScanner(pr)
	for lines.Scan() {
		if m := regexp.MustCompile(`url=(\S+)/ listen=(\S+)`).FindStringSubmatch(lines.Text()); m != nil {
			s.origin, s.listen = m[1], m[2]
			break
		}
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	if s.origin == "" {
		t.Fatal("the program logged no url")
	}
	return s
}

// do sends one request to the program at its listen address with Host host.
func do(t *testing.T, s *server, method, host, path string, header map[string]string, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+s.listen+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	for k, v := range header {
		req.Header.Set(k, v)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, b
}

// wantError checks an error answer's status and code.
func wantError(t *testing.T, what string, res *http.Response, body []byte, status int, code apierror.Code) {
	t.Helper()
	var e struct {
		Status int    `json:"status"`
		Code   string `json:"code"`
	}
	if res.StatusCode != status || json.Unmarshal(body, &e) != nil || e.Status != status || e.Code != code.String() {
		t.Errorf("%s: HTTP %d %s, want %d %s", what, res.StatusCode, body, status, code)
	}
}

// TestServesThePageOnly checks the program's guards around the platform
// credentials it adds: the API answers the page's requests (its origin's
// Host and the page header) with the credentials added, and refuses others
// with 403 FORBIDDEN; a page request to the listen address is redirected to
// the origin; the page carries its Content-Security-Policy; /config.json
// names the base path, the RP id and the pinned key.
func TestServesThePageOnly(t *testing.T) {
	s := start(t)
	host := strings.TrimPrefix(s.origin, "http://")
	page := map[string]string{PageHeader: "1"}
	customer := `{"customerType":"INDIVIDUAL","fullName":"Ada Lovelace","email":"ada.web@example.com"}`

	res, body := do(t, s, "POST", host, "/2025-10-13/customers", page, customer)
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("the page's POST /customers: HTTP %d %s, want 201", res.StatusCode, body)
	}
	// The page's own credentials are replaced, not used.
	res, body = do(t, s, "GET", host, "/2025-10-13/customers", map[string]string{PageHeader: "1", "Authorization": "Basic d3Jvbmc6d3Jvbmc="}, "")
	if res.StatusCode != http.StatusOK {
		t.Errorf("GET /customers with other credentials: HTTP %d %s, want 200", res.StatusCode, body)
	}
	res, body = do(t, s, "POST", host, "/2025-10-13/customers", nil, customer)
	wantError(t, "API request without the page header", res, body, http.StatusForbidden, apierror.Forbidden)
	res, body = do(t, s, "POST", host, "/2025-10-13/customers", map[string]string{PageHeader: "yes"}, customer)
	wantError(t, "API request with another page header value", res, body, http.StatusForbidden, apierror.Forbidden)
	res, body = do(t, s, "POST", "attacker.example:80", "/2025-10-13/customers", page, customer)
	wantError(t, "API request for another host (DNS rebinding)", res, body, http.StatusForbidden, apierror.Forbidden)
	res, body = do(t, s, "POST", s.listen, "/2025-10-13/customers", page, customer)
	wantError(t, "API request for the listen address", res, body, http.StatusForbidden, apierror.Forbidden)
	res, body = do(t, s, "GET", "attacker.example", "/", nil, "")
	wantError(t, "page request for another host", res, body, http.StatusForbidden, apierror.Forbidden)

	res, _ = do(t, s, "GET", s.listen, "/", nil, "")
	if res.StatusCode != http.StatusTemporaryRedirect || res.Header.Get("Location") != s.origin+"/" {
		t.Errorf("GET / at the listen address: HTTP %d Location %q, want 307 to %s/", res.StatusCode, res.Header.Get("Location"), s.origin)
	}
	res, body = do(t, s, "GET", host, "/", nil, "")
	if res.StatusCode != http.StatusOK || !strings.Contains(string(body), `<meta name="viewport"`) ||
		!strings.Contains(res.Header.Get("Content-Security-Policy"), "script-src 'self'") {
		t.Errorf("GET /: HTTP %d CSP %q, want 200 with the viewport meta and the CSP", res.StatusCode, res.Header.Get("Content-Security-Policy"))
	}
	res, body = do(t, s, "POST", host, "/", nil, "")
	wantError(t, "POST /", res, body, http.StatusMethodNotAllowed, apierror.MethodNotAllowed)
	res, body = do(t, s, "POST", host, "/config.json", nil, "")
	wantError(t, "POST /config.json", res, body, http.StatusMethodNotAllowed, apierror.MethodNotAllowed)

	res, body = do(t, s, "GET", host, "/config.json", nil, "")
	var cfg map[string]string
	if res.StatusCode != http.StatusOK || json.Unmarshal(body, &cfg) != nil {
		t.Fatalf("GET /config.json: HTTP %d %s", res.StatusCode, body)
	}
	if cfg["basePath"] != "/2025-10-13" || cfg["rpId"] != "localhost" || cfg["origin"] != s.origin || cfg["pageHeader"] != PageHeader ||
		!regexp.MustCompile(`^04[0-9a-f]{128}$`).MatchString(cfg["bundleSigningKey"]) {
		t.Errorf("config %v", cfg)
	}
	res, body = do(t, s, "GET", host, "/.well-known/webauthn", nil, "")
	if res.StatusCode != http.StatusOK || !strings.Contains(string(body), s.origin) {
		t.Errorf("GET /.well-known/webauthn: HTTP %d %s, want 200 naming %s", res.StatusCode, body, s.origin)
	}
}

// TestRefusesBadFlags checks run refuses an origin that is not one and
// stray arguments.
func TestRefusesBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-addr", "127.0.0.1:0", "-origin", "localhost:8090"},
		{"-addr", "127.0.0.1:0", "-origin", "http://localhost:8090/path"},
		{"-addr", "127.0.0.1:0", "extra"},
	} {
		if err := run(context.Background(), args, io.Discard); err == nil {
			t.Errorf("run(%q) = nil, want an error", args)
		}
	}
}

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/walletgate/walletgate/examples/client"
	"github.com/walletgate/walletgate/sandbox"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/postgres/pgtest"
	"github.com/walletgate/walletgate/walletauth"
	"github.com/walletgate/walletgate/walletauth/authclient"
)

// server is an instance of run serving on a loopback port.
type server struct {
	base    string // URL of the base path
	addr    string // host:port the server listens on
	signing string // the bundle signing key it logged
	cancel  context.CancelFunc
	stopped chan struct{} // closed when run returns
	err     error         // what run returned, set before stopped is closed
}

// start starts the server with args on a free loopback port. When the test
// ends the server is stopped (if the test has not stopped it).
func start(t *testing.T, args ...string) *server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &server{cancel: cancel, stopped: make(chan struct{})}
	pr, pw := io.Pipe()
	go func() {
		s.err = run(ctx, append([]string{"-addr", "127.0.0.1:0"}, args...), pw)
		pw.Close()
		close(s.stopped)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-s.stopped:
		case <-time.After(10 * time.Second):
			t.Error("server did not stop")
		}
	})
	lines := bufio.NewScanner(pr)
	for lines.Scan() {
		if m := regexp.MustCompile(`url=(\S+)`).FindStringSubmatch(lines.Text()); m != nil {
			s.base = m[1]
			if k := regexp.MustCompile(`bundle_signing_key=(\S+)`).FindStringSubmatch(lines.Text()); k != nil {
				s.signing = k[1]
			}
			break
		}
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	if s.base == "" {
		t.Fatal("the server printed no address")
	}
	u, err := url.Parse(s.base)
	if err != nil {
		t.Fatal(err)
	}
	s.addr = u.Host
	return s
}

// stop cancels the server's context and returns what run returned; it fails
// the test if run does not return within limit.
func (s *server) stop(t *testing.T, limit time.Duration) error {
	t.Helper()
	s.cancel()
	select {
	case <-s.stopped:
		return s.err
	case <-time.After(limit):
		t.Fatalf("run did not return within %v of the cancellation", limit)
		return nil
	}
}

// serve starts the server with args and returns its base URL; the server
// stops when the test ends and must stop cleanly.
func serve(t *testing.T, args ...string) string {
	t.Helper()
	return running(t, args...).base
}

// running is serve returning the server.
func running(t *testing.T, args ...string) *server {
	t.Helper()
	s := start(t, args...)
	t.Cleanup(func() {
		if err := s.stop(t, 10*time.Second); err != nil {
			t.Errorf("server stopped with %v", err)
		}
	})
	return s
}

// dial opens a raw connection to the server at base URL. The connection
// gives up after 5s whatever happens, so that no test can hang on it.
func dial(t *testing.T, base string) net.Conn {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.DialTimeout("tcp", u.Host, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if err := conn.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	return conn
}

// basicAuth is the Authorization header of the default sandbox credentials.
const basicAuth = "Authorization: Basic c2FuZGJveC1jbGllbnQtaWQ6c2FuZGJveC1jbGllbnQtc2VjcmV0\r\n"

// exchange writes the raw request on a new connection and reads one
// response, body included.
func exchange(t *testing.T, base, raw string) (*http.Response, []byte) {
	t.Helper()
	conn := dial(t, base)
	if _, err := io.WriteString(conn, raw); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, body
}

// closedWithin reads from conn until the server closes it and fails the
// test unless that happens within limit. It returns what was read.
func closedWithin(t *testing.T, conn io.Reader, limit time.Duration) []byte {
	t.Helper()
	began := time.Now()
	data, err := io.ReadAll(conn)
	elapsed := time.Since(began)
	if err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("the connection was not closed by the server after %v: %v", elapsed.Round(time.Millisecond), err)
	}
	if elapsed > limit {
		t.Fatalf("the server closed the connection after %v, want within %v", elapsed.Round(time.Millisecond), limit)
	}
	return data
}

func TestServerMemory(t *testing.T) {
	base := serve(t, "-client-id", "id-1", "-client-secret", "s3cret")
	req, _ := http.NewRequest("POST", base+"/customers", strings.NewReader(`{"customerType":"INDIVIDUAL","fullName":"Ada Lovelace","email":"ada@example.com"}`))
	req.SetBasicAuth("id-1", "s3cret")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 201 {
		t.Fatalf("create customer: %d", res.StatusCode)
	}
	res, err = http.Get(base + "/customers")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 401 {
		t.Fatalf("without credentials: %d", res.StatusCode)
	}
}

func TestServerPostgres(t *testing.T) {
	dsn := pgtest.DSN(t)
	base := serve(t, "-postgres", dsn)
	// The database outlives the test: a fresh email keeps runs independent.
	email := fmt.Sprintf("grace+%d@example.com", time.Now().UnixNano())
	req, _ := http.NewRequest("POST", base+"/customers", strings.NewReader(`{"customerType":"INDIVIDUAL","fullName":"Grace Hopper","email":"`+email+`"}`))
	req.SetBasicAuth("sandbox-client-id", "sandbox-client-secret")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 201 {
		t.Fatalf("create customer on PostgreSQL: %d", res.StatusCode)
	}
}

// TestServerPostgresOneSandbox: two servers on one database are one
// sandbox, as the -postgres flag's documentation says: B reads the
// customer made on A, its wallet and the balance A funded.
func TestServerPostgresOneSandbox(t *testing.T) {
	dsn := pgtest.DSN(t)
	a, b := serve(t, "-postgres", dsn), serve(t, "-postgres", dsn)
	do := func(method, url, body string) (int, map[string]any) {
		req, _ := http.NewRequest(method, url, strings.NewReader(body))
		req.SetBasicAuth("sandbox-client-id", "sandbox-client-secret")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(res.Body).Decode(&out)
		return res.StatusCode, out
	}
	email := fmt.Sprintf("ada+%d@example.com", time.Now().UnixNano())
	status, c := do("POST", a+"/customers", `{"customerType":"INDIVIDUAL","fullName":"Ada Lovelace","email":"`+email+`"}`)
	if status != 201 {
		t.Fatalf("create customer on A: %d %v", status, c)
	}
	id, _ := c["id"].(string)
	if status, _ := do("GET", a+"/customers/"+id, ""); status != 200 {
		t.Fatalf("A reads its customer: %d", status)
	}
	if status, got := do("GET", b+"/customers/"+id, ""); status != 200 || got["id"] != id || got["email"] != c["email"] {
		t.Fatalf("B reads A's customer: %d %v, want %v", status, got, c)
	}
	status, l := do("GET", b+"/internal-accounts?customerId="+id, "")
	data, _ := l["data"].([]any)
	if status != 200 || len(data) != 1 {
		t.Fatalf("B lists the wallet of A's customer: %d %v, want the one wallet", status, l)
	}
	wallet, _ := data[0].(map[string]any)["id"].(string)
	if status, w := do("POST", a+"/sandbox/internal-accounts/"+wallet+"/fund", `{"amount":12345,"currency":"USD"}`); status != 200 {
		t.Fatalf("A funds the wallet: %d %v", status, w)
	}
	status, w := do("GET", b+"/internal-accounts/"+wallet, "")
	if balances, _ := w["balances"].([]any); status != 200 || !strings.Contains(fmt.Sprint(balances), "12345") {
		t.Fatalf("B reads the wallet A funded: %d %v, want a balance of 12345 USD", status, w)
	}
}

func TestServerBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-nope"},
		{"-read-timeout", "0"},
		{"-write-timeout", "-1s"},
		{"-idle-timeout", "0s"},
		{"-shutdown-timeout", "0"},
		{"-max-header-bytes", "0"},
	} {
		if err := run(context.Background(), args, io.Discard); err == nil {
			t.Errorf("%q was accepted", args)
		}
	}
}

// A request whose body never arrives is cut at the read timeout, with or
// without credentials.
func TestServerCutsStalledBody(t *testing.T) {
	const readTimeout = 300 * time.Millisecond
	base := serve(t, "-read-timeout", readTimeout.String())
	for _, tc := range []struct {
		name, auth string
		status     string
	}{
		{"no credentials", "", "HTTP/1.1 401 "},
		{"credentials", basicAuth, "HTTP/1.1 4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn := dial(t, base)
			_, err := io.WriteString(conn, "POST /2025-10-13/customers HTTP/1.1\r\nHost: sandbox\r\n"+tc.auth+
				"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n")
			if err != nil {
				t.Fatal(err)
			}
			got := closedWithin(t, conn, readTimeout+2*time.Second)
			if len(got) > 0 && !strings.HasPrefix(string(got), tc.status) {
				t.Fatalf("answer to the stalled request: %.60q, want %q...", got, tc.status)
			}
		})
	}
}

// A keep-alive connection without a next request is closed at the idle
// timeout.
func TestServerClosesIdleConnections(t *testing.T) {
	const idleTimeout = 300 * time.Millisecond
	base := serve(t, "-idle-timeout", idleTimeout.String())
	conn := dial(t, base)
	if _, err := io.WriteString(conn, "GET /2025-10-13/customers/x HTTP/1.1\r\nHost: sandbox\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized || res.Close {
		t.Fatalf("first request: status %d, close %v; want 401 on a kept-alive connection", res.StatusCode, res.Close)
	}
	if extra := closedWithin(t, br, idleTimeout+2*time.Second); len(extra) > 0 {
		t.Fatalf("unexpected data on the idle connection: %q", extra)
	}
}

// Request headers over the limit are answered 431; headers under it reach
// the handler.
func TestServerRejectsLargeHeaders(t *testing.T) {
	base := serve(t)
	res, _ := exchange(t, base, "GET /2025-10-13/customers/x HTTP/1.1\r\nHost: sandbox\r\nX-Filler: "+
		strings.Repeat("a", defaultMaxHeaderBytes/2)+"\r\n\r\n")
	if res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("headers under the limit: %d, want 401", res.StatusCode)
	}

	conn := dial(t, base)
	// The server stops reading at the limit; write from the side so that a
	// full socket buffer cannot block the test.
	go func() {
		_, _ = io.WriteString(conn, "GET /2025-10-13/customers/x HTTP/1.1\r\nHost: sandbox\r\nX-Filler: "+
			strings.Repeat("a", 2*defaultMaxHeaderBytes)+"\r\n\r\n")
	}()
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("headers over the limit: %d, want 431", res.StatusCode)
	}
}

// "OPTIONS *" goes through the sandbox's handler rather than net/http's
// default 200, and OPTIONS on a route is the JSON 405 of a wrong method.
func TestServerOptions(t *testing.T) {
	base := serve(t)
	for _, tc := range []struct {
		name, request string
		status        int
		code, allow   string
	}{
		{"asterisk without credentials", "OPTIONS * HTTP/1.1\r\nHost: sandbox\r\n\r\n", 401, "UNAUTHORIZED", ""},
		{"asterisk", "OPTIONS * HTTP/1.1\r\nHost: sandbox\r\n" + basicAuth + "\r\n", 404, "REFERENCE_NOT_FOUND", ""},
		{"route without credentials", "OPTIONS /2025-10-13/customers HTTP/1.1\r\nHost: sandbox\r\n\r\n", 401, "UNAUTHORIZED", ""},
		{"route", "OPTIONS /2025-10-13/customers HTTP/1.1\r\nHost: sandbox\r\n" + basicAuth + "\r\n", 405, "METHOD_NOT_ALLOWED", "GET, HEAD, POST"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, body := exchange(t, base, tc.request)
			var e struct{ Code string }
			if err := json.Unmarshal(body, &e); err != nil {
				t.Fatalf("status %d, body %q is not JSON: %v", res.StatusCode, body, err)
			}
			if res.StatusCode != tc.status || e.Code != tc.code || res.Header.Get("Allow") != tc.allow {
				t.Fatalf("got %d %s (Allow %q), want %d %s (Allow %q)", res.StatusCode, e.Code, res.Header.Get("Allow"),
					tc.status, tc.code, tc.allow)
			}
		})
	}
}

// A client stuck in the middle of a request cannot keep the server from
// exiting: after the shutdown timeout its connection is closed and run
// returns.
func TestServerShutdownCutsStuckConnection(t *testing.T) {
	const shutdownTimeout = 300 * time.Millisecond
	s := start(t, "-read-timeout", "1m", "-write-timeout", "1m", "-shutdown-timeout", shutdownTimeout.String())
	conn := dial(t, s.base)
	// The 100 Continue shows that the handler is reading the body, so the
	// connection is active, not idle, when the shutdown begins.
	_, err := io.WriteString(conn, "POST /2025-10-13/customers HTTP/1.1\r\nHost: sandbox\r\n"+basicAuth+
		"Content-Type: application/json\r\nContent-Length: 100\r\nExpect: 100-continue\r\n\r\n")
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusContinue {
		t.Fatalf("got %d, want 100 Continue", res.StatusCode)
	}
	if _, err := io.WriteString(conn, `{"customerType":`); err != nil {
		t.Fatal(err)
	}

	began := time.Now()
	if err := s.stop(t, shutdownTimeout+3*time.Second); err != nil {
		t.Fatalf("run: %v", err)
	}
	if elapsed := time.Since(began); elapsed < shutdownTimeout {
		t.Fatalf("run returned after %v, before the shutdown timeout: the request was not in flight", elapsed)
	}
	closedWithin(t, br, time.Second)
}

// get fetches url without credentials and returns the status and body.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, string(body)
}

// root returns the scheme and host of a base URL, where the association
// files are served.
func root(t *testing.T, base string) string {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	return u.Scheme + "://" + u.Host
}

func TestServerAssociationFiles(t *testing.T) {
	fp := strings.Repeat("ab", 32)
	fpColons := strings.TrimSuffix(strings.Repeat("AB:", 32), ":")
	host := root(t, serve(t, "-apple-app-id", "ABCDE12345.com.example.wallet,FGHIJ67890.com.example.other",
		"-apple-app-id", "KLMNO12345.com.example.third",
		"-android-package", "com.example.wallet", "-android-fingerprint", fp+", "+fpColons))
	for _, c := range []struct{ path, want string }{
		{"/.well-known/apple-app-site-association",
			`{"webcredentials":{"apps":["ABCDE12345.com.example.wallet","FGHIJ67890.com.example.other","KLMNO12345.com.example.third"]}}`},
		{"/.well-known/assetlinks.json",
			`[{"relation":["delegate_permission/common.handle_all_urls","delegate_permission/common.get_login_creds"],` +
				`"target":{"namespace":"android_app","package_name":"com.example.wallet","sha256_cert_fingerprints":["` + fpColons + `"]}}]`},
	} {
		status, body := get(t, host+c.path)
		if status != 200 || body != c.want {
			t.Errorf("GET %s: %d %s\nwant 200 %s", c.path, status, body, c.want)
		}
	}
	if status, body := get(t, host+"/.well-known/webauthn"); status != 200 || !strings.Contains(body, `"origins":["http://localhost:`) {
		t.Errorf("GET /.well-known/webauthn: %d %s", status, body)
	}
}

func TestServerAssociationFilesAbsent(t *testing.T) {
	host := root(t, serve(t))
	for _, p := range []string{"/.well-known/apple-app-site-association", "/.well-known/assetlinks.json"} {
		if status, body := get(t, host+p); status != 404 || body != "404 page not found\n" {
			t.Errorf("GET %s without apps: %d %q", p, status, body)
		}
	}
	if status, _ := get(t, host+"/.well-known/webauthn"); status != 200 {
		t.Errorf("GET /.well-known/webauthn: %d", status)
	}
}

func TestServerAssociationFlagErrors(t *testing.T) {
	for _, args := range [][]string{
		{"-android-package", "com.example.wallet"},
		{"-android-fingerprint", strings.Repeat("ab", 32)},
		{"-android-package", "com.example.wallet", "-android-fingerprint", "nothex"},
		{"-apple-app-id", "com.example.wallet"},
	} {
		if err := run(context.Background(), append([]string{"-addr", "127.0.0.1:0"}, args...), io.Discard); err == nil {
			t.Errorf("%q was accepted", args)
		}
	}
}

// clientOf returns a client of the server that pins the bundle signing key
// the server logged.
func clientOf(t *testing.T, s *server) *client.Client {
	t.Helper()
	c := client.New(s.base, sandbox.DefaultClientID, sandbox.DefaultClientSecret)
	signer, err := signedretry.ParsePublicKey(s.signing)
	if err != nil {
		t.Fatalf("the logged bundle_signing_key %q: %v", s.signing, err)
	}
	c.BundleSigner, c.OrganizationID = signer, sandbox.SandboxOrganizationID
	return c
}

// refreshWith logs in to a fresh customer's wallet with EMAIL_OTP and
// refreshes the session for a new compressed client key; it returns the
// refreshed session, the new key, and the client.
func refreshWith(t *testing.T, s *server) (*walletauth.AuthSession, *authclient.ClientKey, *client.Client) {
	t.Helper()
	ctx := context.Background()
	c := clientOf(t, s)
	var cust sandbox.Customer
	if _, err := c.Do(ctx, "POST", "/customers", map[string]any{"customerType": "INDIVIDUAL", "fullName": "Ada Lovelace",
		"email": "ada@example.com"}, nil, &cust); err != nil {
		t.Fatalf("create customer: %v", err)
	}
	var wallets struct{ Data []sandbox.InternalAccount }
	if _, err := c.Do(ctx, "GET", "/internal-accounts?customerId="+cust.ID, nil, nil, &wallets); err != nil || len(wallets.Data) != 1 {
		t.Fatalf("wallets: %+v %v", wallets, err)
	}
	wallet := wallets.Data[0].ID
	var creds struct{ Data []walletauth.AuthMethod }
	if _, err := c.Do(ctx, "GET", "/auth/credentials?accountId="+wallet, nil, nil, &creds); err != nil || len(creds.Data) != 1 {
		t.Fatalf("credentials: %+v %v", creds, err)
	}
	sess, key, err := c.LoginOTP(ctx, wallet, creds.Data[0].ID, storage.EmailOTP, walletauth.SandboxOTPCode)
	if err != nil {
		t.Fatalf("login: %v", err)
	}
	if sess.EncryptedSessionSigningKey != "" {
		t.Fatalf("an OTP login returned an encryptedSessionSigningKey: %+v", sess)
	}
	next, err := authclient.NewClientKey()
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := c.RefreshSession(ctx, wallet, sess.ID, key, next)
	if err != nil || fresh.ID == "" || fresh.ID == sess.ID || fresh.AccountID != wallet {
		t.Fatalf("refresh: %v %+v", err, fresh)
	}
	return fresh, next, c
}

func TestServerClientHeldKeys(t *testing.T) {
	fresh, key, c := refreshWith(t, running(t, "-client-held-keys"))
	if fresh.EncryptedSessionSigningKey != "" {
		t.Fatalf("client-held mode returned an encryptedSessionSigningKey: %+v", fresh)
	}
	// The client's own key is the new session's key: it stamps a revocation.
	res, err := c.RevokeSession(context.Background(), fresh.AccountID, fresh.ID, key)
	if err != nil || res.Status != http.StatusNoContent {
		t.Fatalf("revoking with the client-held key: %+v %v", res, err)
	}
}

func TestServerServerGeneratedKeysByDefault(t *testing.T) {
	fresh, key, c := refreshWith(t, running(t))
	if fresh.EncryptedSessionSigningKey == "" {
		t.Fatalf("the default mode returned no encryptedSessionSigningKey: %+v", fresh)
	}
	sessionKey, err := key.OpenSessionKey(fresh.EncryptedSessionSigningKey)
	if err != nil {
		t.Fatal(err)
	}
	// The client key is not the session key; the opened one is.
	if res, err := c.RevokeSession(context.Background(), fresh.AccountID, fresh.ID, key); err == nil {
		t.Fatalf("the client key signed for a server-generated session: %+v", res)
	}
	res, err := c.RevokeSession(context.Background(), fresh.AccountID, fresh.ID, sessionKey)
	if err != nil || res.Status != http.StatusNoContent {
		t.Fatalf("revoking with the opened session key: %+v %v", res, err)
	}
}

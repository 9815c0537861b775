package sandbox

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"strings"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/storage"
)

// Handler returns the simulator's HTTP handler, for httptest.NewServer or
// any server. Every route is served under the base path, behind HTTP Basic
// platform credentials (401 UNAUTHORIZED without or with wrong ones,
// compared in constant time):
//
//	POST   /customers                                     201 Customer
//	GET    /customers/{id}                                200 Customer
//	PATCH  /customers/{id}                                200, or 202 then 200 for a tied email change
//	GET    /customers?limit=&cursor=                      200 {"data": [Customer], "hasMore", "nextCursor"?, "totalCount"}
//	GET    /internal-accounts?customerId=&limit=&cursor=  200 {"data": [InternalAccount], "hasMore", "nextCursor"?, "totalCount"}
//	GET    /internal-accounts/{id}                        200 InternalAccount
//	PATCH  /internal-accounts/{id}                        202 then 200 InternalAccount (privacy)
//	POST   /internal-accounts/{id}/export                 202 then 200 WalletExport
//	POST   /verifications                                 200 Verification
//	POST   /customers/external-accounts                   201 ExternalAccount
//	GET    /customers/external-accounts?customerId=&limit=&cursor=  200 {"data": [ExternalAccount], "hasMore", "nextCursor"?, "totalCount"}
//	GET    /customers/external-accounts/{id}              200 ExternalAccount
//	DELETE /customers/external-accounts/{id}              204
//	POST   /customers/external-accounts/{id}/trust        200 TrustStart
//	POST   /customers/external-accounts/{id}/trust/confirm    200 TrustConfirm
//	POST   /customers/external-accounts/{id}/untrust      200 TrustStart
//	POST   /customers/external-accounts/{id}/untrust/confirm  200 TrustConfirm
//	POST   /transfer-in                                   201 Transaction (Idempotency-Key, see the package documentation)
//	POST   /transfer-out                                  202 then 201 Transaction, or 202 PayoutApproval when held (Idempotency-Key, see the package documentation)
//	GET    /payout-approvals/{id}                         200 PayoutApproval
//	POST   /payout-approvals/{id}/approve                 202 then 200 Transaction (the payout made), or 200 PayoutApproval (approvals missing)
//	POST   /sandbox/payout-approvals/{id}/approve         200 Transaction or PayoutApproval, as the operator SandboxRiskOperator
//	POST   /sandbox/payout-approvals/{id}/refuse          200 PayoutApproval (REFUSED), as the operator SandboxRiskOperator
//	POST   /quotes                                        201 Quote (Idempotency-Key, see the package documentation)
//	GET    /quotes/{id}                                   200 Quote
//	POST   /quotes/{id}/execute                           202 then 200 Quote (Idempotency-Key, see the package documentation)
//	GET    /transactions/{id}                             200 Transaction
//	POST   /cards                                         201 Card
//	GET    /cards/{id}                                    200 Card
//	PATCH  /cards/{id}                                    200 Card
//	POST   /sandbox/internal-accounts/{accountId}/fund    200 InternalAccount
//	POST   /sandbox/send                                  200 Transaction
//	POST   /sandbox/uma/receive                           200 Transaction
//	POST   /sandbox/webhooks/test                         200 {url, response_status, response_body?}: a signed TEST webhook
//	GET    /sandbox/clock                                 200 {"now"}: the simulator's time (Simulator.Now)
//	POST   /sandbox/clock/advance                         200 {"now"}: {"seconds": 1..2592000} moves the clock forward (Simulator.AdvanceClock)
//	POST   /customers/external-accounts/{id}/challenge    201 ownership challenge
//	POST   /customers/external-accounts/{id}/verify       200 ExternalAccount (ACTIVE)
//	POST   /platform/external-accounts                    201 ExternalAccount of the platform tree (customerId absent or null)
//	POST   /platform/external-accounts/{id}/challenge, /verify   the platform tree (accounts without a customer)
//	POST   /sandbox/external-accounts/{id}/liveness       200 ExternalAccount: deliver a LIVENESS outcome {"passed": bool}
//	POST   /sandbox/passkeys/registration-challenge       201 {challenge, accountId, expiresAt, rpId}: what a platform backend issues before a passkey registration
//	POST   /customers/{id}/sca/login, /sca/login/complete     200 {scaChallenge}, 200 SCASession (SCA regions only)
//	POST   /customers/{id}/sca/factors, /sca/factors/confirm  200 {scaChallenge}, 200 SCAFactor (one PASSKEY per customer)
//	DELETE /customers/{id}/sca/factors/{factor}           204
//	POST   /customers/{id}/verify-email, /verify-phone (+ /confirm)  200 (providers requiring contact verification only)
//	/auth/...                                             walletauth's routes (see walletauth.Service.Handler)
//
// Outside the base path and without credentials, /.well-known/
// apple-app-site-association, assetlinks.json and webauthn are served from
// the passkey configuration (the first two only when it lists Apple or
// Android apps; otherwise they answer net/http's plain-text 404).
//
// Unknown routes answer 404 REFERENCE_NOT_FOUND and known routes with
// another method 405 METHOD_NOT_ALLOWED (with Allow), both as JSON. Bodies
// are read with apierror's decoder (1 MiB limit; malformed JSON is 400
// INVALID_INPUT). [Simulator.Handle] adds routes to the same mux.
func (s *Simulator) Handler() http.Handler { return s.handler }

// Handle registers an extra route on the simulator's authenticated mux.
// pattern is "METHOD /path" with the path relative to the base path, in
// net/http's pattern syntax, for example
// "POST /customers/{id}/notes"; the handler sees the
// full request path and r.PathValue works. It fails (without registering)
// when the pattern is malformed or conflicts with a registered one.
func (s *Simulator) Handle(pattern string, h http.Handler) (err error) {
	method, path, ok := strings.Cut(pattern, " ")
	if !ok || !strings.HasPrefix(path, "/") || method == "" {
		return fmt.Errorf("sandbox: pattern %q is not \"METHOD /path\"", pattern)
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("sandbox: registering %q: %v", pattern, r)
		}
	}()
	s.mux.Handle(method+" "+s.cfg.BasePath+path, h)
	return nil
}

// routes builds the mux and the handler around it. The table is fixed, so
// the only pattern the mux can refuse is one under a malformed base path;
// the first refusal is the error.
func (s *Simulator) routes() error {
	s.mux = http.NewServeMux()
	var err error
	r := func(pattern string, h http.HandlerFunc) {
		if err == nil {
			err = s.Handle(pattern, h)
		}
	}
	r("POST /customers", s.hCreateCustomer)
	r("GET /customers/{id}", s.hGetCustomer)
	r("PATCH /customers/{id}", s.hUpdateCustomer)
	r("GET /internal-accounts", s.hListInternal)
	r("GET /internal-accounts/{id}", s.hGetInternal)
	r("PATCH /internal-accounts/{id}", s.hUpdateWallet)
	r("POST /internal-accounts/{id}/export", s.hExport)
	r("POST /verifications", s.hVerify)
	r("POST /customers/external-accounts", s.hCreateExternal)
	r("GET /customers/external-accounts/{id}", s.hGetExternal)
	r("DELETE /customers/external-accounts/{id}", s.hDeleteExternal)
	r("POST /customers/external-accounts/{id}/trust", s.hTrust(true))
	r("POST /customers/external-accounts/{id}/trust/confirm", s.hConfirm(true))
	r("POST /customers/external-accounts/{id}/untrust", s.hTrust(false))
	r("POST /customers/external-accounts/{id}/untrust/confirm", s.hConfirm(false))
	r("POST /transfer-in", s.hTransfer(true))
	r("POST /transfer-out", s.hTransfer(false))
	r("POST /quotes", s.hCreateQuote)
	r("GET /quotes/{id}", s.hGetQuote)
	r("POST /quotes/{id}/execute", s.hExecute)
	r("GET /transactions/{id}", s.hGetTransaction)
	r("POST /cards", s.hCreateCard)
	r("GET /cards/{id}", s.hGetCard)
	r("PATCH /cards/{id}", s.hUpdateCard)
	r("POST /sandbox/internal-accounts/{accountId}/fund", s.hFund)
	r("POST /sandbox/send", s.hSend)
	r("POST /sandbox/uma/receive", s.hReceive)
	r("POST /sandbox/webhooks/test", s.hTestWebhook)
	r("GET /sandbox/clock", s.hGetClock)
	r("POST /sandbox/clock/advance", s.hAdvanceClock)

	authHandler, aerr := s.auth.Handler()
	if aerr != nil {
		return aerr
	}
	auth := http.StripPrefix(s.cfg.BasePath, authHandler)
	for _, p := range []string{"POST /auth/credentials", "GET /auth/credentials", "DELETE /auth/credentials/{id}",
		"POST /auth/credentials/{id}/challenge", "POST /auth/credentials/{id}/verify", "GET /auth/sessions",
		"DELETE /auth/sessions/{id}", "POST /auth/sessions/{id}/refresh"} {
		r(p, auth.ServeHTTP)
	}
	if oerr := s.ownershipRoutes(r); oerr != nil && err == nil {
		err = oerr
	}
	s.listRoutes(r)
	s.platformRoutes(r)
	s.scaRoutes(r)
	s.approvalRoutes(r)
	if err != nil {
		return err
	}
	wellKnown := s.pk.Handler()
	s.handler = apierror.Observe(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The passkey association files live at the host's root, outside
		// the base path and without platform credentials.
		if strings.HasPrefix(r.URL.Path, "/.well-known/") {
			wellKnown.ServeHTTP(w, r)
			return
		}
		// Another replica may have moved the clock: every request is
		// decided on the store's.
		if err := s.syncClock(r.Context()); err != nil {
			apierror.Write(w, err)
			return
		}
		s.serve(w, r)
	}), s.cfg.Telemetry.Logger)
	return nil
}

// platformWallet is the guard of the walletauth service. The simulator
// serves one platform, which the Basic credentials authenticate, and every
// wallet of its store is that platform's (simulators sharing a store are
// replicas of one platform), so every wallet an operation names is the
// caller's.
func platformWallet(context.Context, storage.InternalAccount) error { return nil }

// serve authenticates the platform, then routes, answering unknown routes
// and wrong methods in JSON.
func (s *Simulator) serve(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Basic realm="sandbox", charset="UTF-8"`)
		apierror.Write(w, apierror.New(apierror.Unauthorized, "platform credentials are missing or wrong (HTTP Basic client id and secret)"))
		return
	}
	h, pattern := s.mux.Handler(r)
	if pattern != "" {
		s.mux.ServeHTTP(w, r) // sets the path values Handler does not
		return
	}
	// ServeMux answers in plain text; find out what it would say.
	probe := &probeWriter{header: http.Header{}}
	h.ServeHTTP(probe, r)
	if probe.status == http.StatusMethodNotAllowed {
		w.Header().Set("Allow", probe.header.Get("Allow"))
		apierror.Write(w, apierror.New(apierror.MethodNotAllowed, "method %s is not allowed on %s", r.Method, r.URL.Path))
		return
	}
	apierror.Write(w, apierror.New(apierror.ReferenceNotFound, "no route for %s %s", r.Method, r.URL.Path))
}

// authorized compares the Basic credentials in constant time: both values
// are hashed first so that neither their lengths nor their contents leak
// through timing.
func (s *Simulator) authorized(r *http.Request) bool {
	user, pass, ok := r.BasicAuth()
	if !ok {
		return false
	}
	u1, u2 := sha256.Sum256([]byte(user)), sha256.Sum256([]byte(s.cfg.ClientID))
	p1, p2 := sha256.Sum256([]byte(pass)), sha256.Sum256([]byte(s.cfg.ClientSecret))
	return subtle.ConstantTimeCompare(u1[:], u2[:])&subtle.ConstantTimeCompare(p1[:], p2[:]) == 1
}

// probeWriter records what the mux's fallback handler would write.
type probeWriter struct {
	header http.Header
	status int
}

func (p *probeWriter) Header() http.Header { return p.header }
func (p *probeWriter) WriteHeader(code int) {
	if p.status == 0 {
		p.status = code
	}
}
func (p *probeWriter) Write(b []byte) (int, error) {
	if p.status == 0 {
		p.status = http.StatusOK
	}
	return len(b), nil
}

// readBody reads the raw body and decodes it into dst (when dst is not nil
// and the body is not empty, or required); it writes the error and reports
// false on failure.
func readBody(w http.ResponseWriter, r *http.Request, dst any, required bool) ([]byte, bool) {
	body, err := apierror.Decoder{}.ReadBody(r)
	if err == nil && dst != nil && (required || len(strings.TrimSpace(string(body))) > 0) {
		err = apierror.DecodeBytes(body, dst)
	}
	if err != nil {
		apierror.Write(w, err)
		return nil, false
	}
	return body, true
}

package walletauth

import (
	"context"
	"errors"
	"net/http"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
)

// WalletGuard decides whether the request r may act on wallet: the host
// reads its own principal from r (its authentication, a value its
// middleware put in the context) and compares it with the wallet's owner,
// typically by wallet.CustomerID. It returns nil to let the route act.
//
// A refusal that is an *apierror.Error (or wraps one) is written as it is,
// for a host that wants 403 FORBIDDEN or must report its own failure (500
// through apierror.Internal). Any other error is written as the 404
// REFERENCE_NOT_FOUND an unknown id answers, with the same message, so a
// refusal does not tell the caller that another tenant's wallet, credential
// or session exists.
type WalletGuard func(r *http.Request, wallet storage.InternalAccount) error

// HandlerConfig configures [Service.Handler].
type HandlerConfig struct {
	// Guard decides whether the caller may act on a wallet. Required: the
	// routes take wallet, credential and session ids from the client, and
	// only the host knows which of them belong to the calling platform.
	Guard WalletGuard
}

// Handler serves the embedded-wallet auth endpoints:
//
//	POST   /auth/credentials                  add a credential (201, or 202 then 201)
//	GET    /auth/credentials?accountId=       list credentials ({"data": [...]})
//	DELETE /auth/credentials/{id}             revoke a credential (202 then 204)
//	POST   /auth/credentials/{id}/challenge   issue a one-time code (200)
//	POST   /auth/credentials/{id}/verify      verify (202 then 200 for codes)
//	GET    /auth/sessions?accountId=          list active sessions ({"data": [...]})
//	DELETE /auth/sessions/{id}                revoke a session (202 then 204)
//	POST   /auth/sessions/{id}/refresh        refresh a session (202 then 201)
//
// Every route, on both legs of a signed operation, first decodes its body,
// then resolves the id it was given to its wallet (the body's accountId of
// an add, the accountId of a list, the wallet of the credential or session
// of the path) and asks cfg.Guard, before anything is written: a refused
// request sends no code, spends no budget and stores no challenge. An
// accountId that is not an InternalAccount id is 400 INVALID_INPUT; an id
// that names nothing is 404 REFERENCE_NOT_FOUND, a list of an unknown wallet
// included; a refusal is answered as [WalletGuard] says. A session is
// resolved whether it is active or not, and the operation then answers 404
// for one that is not. The library never moves a credential or session to
// another wallet, nor a wallet to another customer, so the guard's answer
// still holds when the operation runs.
//
// Handler fails, returning a plain error, when cfg.Guard is nil.
//
// Paths are matched as given; mount the handler under a base path with
// http.StripPrefix. Platform authentication (HTTP Basic) is the host's.
// Every error is written with apierror.Write, under apierror.Observe with
// Config.Logger: a 5xx logs its cause once with the request id.
func (s *Service) Handler(cfg HandlerConfig) (http.Handler, error) {
	if cfg.Guard == nil {
		return nil, errors.New("walletauth: HandlerConfig.Guard is required: without it any caller could act on any wallet")
	}
	h := &handler{s: s, guard: cfg.Guard}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /auth/credentials", h.add)
	mux.HandleFunc("GET /auth/credentials", h.listCredentials)
	mux.HandleFunc("DELETE /auth/credentials/{id}", h.revokeCredential)
	mux.HandleFunc("POST /auth/credentials/{id}/challenge", h.challenge)
	mux.HandleFunc("POST /auth/credentials/{id}/verify", h.verify)
	mux.HandleFunc("GET /auth/sessions", h.listSessions)
	mux.HandleFunc("DELETE /auth/sessions/{id}", h.revokeSession)
	mux.HandleFunc("POST /auth/sessions/{id}/refresh", h.refresh)
	return apierror.Observe(mux, s.tel.log), nil
}

// handler serves [Service.Handler]'s routes, each behind guard.
type handler struct {
	s     *Service
	guard WalletGuard
}

// ref is what an id of a request names: a wallet, a credential or a
// session.
type ref int

const (
	refWallet ref = iota
	refCredential
	refSession
)

// notFound is the 404 of an id of kind k that names nothing, the same the
// service answers; a guard's plain refusal answers it too.
func (k ref) notFound(id string) *apierror.Error {
	switch k {
	case refCredential:
		return notFound("credential", id)
	case refSession:
		return notFound("active session", id)
	}
	return notFound("internal account", id)
}

// walletOf reads, in one transaction of the store, the wallet id names:
// the wallet itself, or the wallet of the credential or session. It is the
// handler's one lookup.
func (s *Service) walletOf(ctx context.Context, k ref, id string) (storage.InternalAccount, error) {
	if k == refWallet && !storage.ValidID(id, "InternalAccount") {
		return storage.InternalAccount{}, apierror.InvalidField("accountId", apierror.Pattern(`^InternalAccount:[0-9a-fA-F-]{36}$`), "must be an InternalAccount id")
	}
	var w storage.InternalAccount
	err := s.atomic(ctx, func(tx storage.Tx) error {
		var err error
		switch k {
		case refCredential:
			w, err = tx.InternalAccounts().OfCredential(ctx, id)
		case refSession:
			w, err = tx.InternalAccounts().OfSession(ctx, id)
		default:
			w, err = tx.InternalAccounts().Get(ctx, id)
		}
		return err
	})
	if errors.Is(err, storage.ErrNotFound) {
		return w, k.notFound(id)
	}
	if err != nil {
		return w, apierror.From(err)
	}
	return w, nil
}

// admit resolves id (of kind k) to its wallet and asks the guard; on any
// failure it writes the answer and reports false.
func (h *handler) admit(w http.ResponseWriter, r *http.Request, k ref, id string) bool {
	wallet, err := h.s.walletOf(r.Context(), k, id)
	if err == nil {
		if refusal := h.guard(r, wallet); refusal != nil {
			var e *apierror.Error
			if !errors.As(refusal, &e) {
				e = k.notFound(id)
			}
			err = e
		}
	}
	if err != nil {
		apierror.Write(w, err)
		return false
	}
	return true
}

// read returns the raw body and the signed-retry call of r, decoding the
// body into dst when dst is not nil (an empty body is allowed when
// optional).
func read(w http.ResponseWriter, r *http.Request, dst any, optional bool) (signedretry.Request, bool) {
	body, err := apierror.Decoder{}.ReadBody(r)
	if err == nil && dst != nil && (len(body) > 0 || !optional) {
		err = apierror.DecodeBytes(body, dst)
	}
	if err != nil {
		apierror.Write(w, err)
		return signedretry.Request{}, false
	}
	return signedretry.RequestFrom(r, body), true
}

type list[T any] struct {
	Data []T `json:"data"`
}

func (h *handler) add(w http.ResponseWriter, r *http.Request) {
	var req AddCredentialRequest
	call, ok := read(w, r, &req, false)
	if !ok || !h.admit(w, r, refWallet, req.AccountID) {
		return
	}
	m, ch, err := h.s.AddCredential(r.Context(), req, call)
	if m == nil {
		signedretry.WriteResult(w, 0, nil, ch, err)
		return
	}
	signedretry.WriteResult(w, http.StatusCreated, m, ch, err)
}

func (h *handler) listCredentials(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("accountId")
	if !h.admit(w, r, refWallet, id) {
		return
	}
	ms, err := h.s.ListCredentials(r.Context(), id)
	if err != nil {
		apierror.Write(w, err)
		return
	}
	if ms == nil {
		ms = []AuthMethod{}
	}
	apierror.WriteJSON(w, http.StatusOK, list[AuthMethod]{ms})
}

func (h *handler) revokeCredential(w http.ResponseWriter, r *http.Request) {
	call, ok := read(w, r, nil, true)
	if !ok || !h.admit(w, r, refCredential, r.PathValue("id")) {
		return
	}
	ch, err := h.s.RevokeCredential(r.Context(), r.PathValue("id"), call)
	signedretry.WriteResult(w, 0, nil, ch, err)
}

func (h *handler) challenge(w http.ResponseWriter, r *http.Request) {
	var req ChallengeRequest
	if _, ok := read(w, r, &req, true); !ok || !h.admit(w, r, refCredential, r.PathValue("id")) {
		return
	}
	m, err := h.s.Challenge(r.Context(), r.PathValue("id"), req)
	if err != nil {
		apierror.Write(w, err)
		return
	}
	apierror.WriteJSON(w, http.StatusOK, m)
}

func (h *handler) verify(w http.ResponseWriter, r *http.Request) {
	var req VerifyRequest
	call, ok := read(w, r, &req, false)
	if !ok || !h.admit(w, r, refCredential, r.PathValue("id")) {
		return
	}
	sess, ch, err := h.s.Verify(r.Context(), r.PathValue("id"), req, call)
	if sess == nil {
		signedretry.WriteResult(w, 0, nil, ch, err)
		return
	}
	signedretry.WriteResult(w, http.StatusOK, sess, ch, err)
}

func (h *handler) listSessions(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("accountId")
	if !h.admit(w, r, refWallet, id) {
		return
	}
	ss, err := h.s.ListSessions(r.Context(), id)
	if err != nil {
		apierror.Write(w, err)
		return
	}
	if ss == nil {
		ss = []AuthSession{}
	}
	apierror.WriteJSON(w, http.StatusOK, list[AuthSession]{ss})
}

func (h *handler) revokeSession(w http.ResponseWriter, r *http.Request) {
	call, ok := read(w, r, nil, true)
	if !ok || !h.admit(w, r, refSession, r.PathValue("id")) {
		return
	}
	ch, err := h.s.RevokeSession(r.Context(), r.PathValue("id"), call)
	signedretry.WriteResult(w, 0, nil, ch, err)
}

func (h *handler) refresh(w http.ResponseWriter, r *http.Request) {
	var req RefreshRequest
	call, ok := read(w, r, &req, false)
	if !ok || !h.admit(w, r, refSession, r.PathValue("id")) {
		return
	}
	sess, ch, err := h.s.RefreshSession(r.Context(), r.PathValue("id"), req, call)
	if sess == nil {
		signedretry.WriteResult(w, 0, nil, ch, err)
		return
	}
	signedretry.WriteResult(w, http.StatusCreated, sess, ch, err)
}

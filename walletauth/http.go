package walletauth

import (
	"errors"
	"net/http"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/signedretry"
)

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
// Every route decodes its body, calls the [Service] method and writes its
// answer; the tenant guard is the service's ([Config].Guard), asked by
// each method inside its transaction on the wallet of the id the request
// names (the body's accountId of an add, the accountId of a list, the
// wallet of the credential or session of the path), on both legs of a
// signed operation, before anything is written: a refused request sends no
// code, spends no attempt or budget and stores no challenge. An accountId
// that is not an InternalAccount id is 400 INVALID_INPUT; an id that names
// nothing is 404 REFERENCE_NOT_FOUND, a list of an unknown wallet included
// (the guard's read of it finds none); a refusal is answered as
// [WalletGuard] says: a plain one exactly as an unknown id, an
// *apierror.Error as it is. A session that is not active is 404 like an
// unknown one.
//
// Handler fails, returning a plain error, when the service has no
// [Config].Guard: the routes take wallet, credential and session ids from
// the client, and only the host knows which of them belong to the calling
// principal, which its guard reads from the request's context.
//
// Paths are matched as given; mount the handler under a base path with
// http.StripPrefix. Platform authentication (HTTP Basic) is the host's.
// Every error is written with apierror.Write, under apierror.Observe with
// Config.Telemetry.Logger: a 5xx logs its cause once with the request id.
func (s *Service) Handler() (http.Handler, error) {
	if s.cfg.Guard == nil {
		return nil, errors.New("walletauth: Config.Guard is required to serve HTTP: without it any caller could act on any wallet")
	}
	h := &handler{s: s}
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

// handler serves [Service.Handler]'s routes: each decodes, calls the
// service and encodes.
type handler struct {
	s *Service
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
	if !ok {
		return
	}
	m, ch, err := h.s.AddCredential(r.Context(), req, call)
	if m == nil {
		signedretry.WriteAnswer(w, 0, nil, ch, err)
		return
	}
	signedretry.WriteAnswer(w, http.StatusCreated, m, ch, err)
}

func (h *handler) listCredentials(w http.ResponseWriter, r *http.Request) {
	ms, err := h.s.ListCredentials(r.Context(), r.URL.Query().Get("accountId"))
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
	if !ok {
		return
	}
	ch, err := h.s.RevokeCredential(r.Context(), r.PathValue("id"), call)
	signedretry.WriteAnswer(w, 0, nil, ch, err)
}

func (h *handler) challenge(w http.ResponseWriter, r *http.Request) {
	var req ChallengeRequest
	if _, ok := read(w, r, &req, true); !ok {
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
	if !ok {
		return
	}
	sess, ch, err := h.s.Verify(r.Context(), r.PathValue("id"), req, call)
	if sess == nil {
		signedretry.WriteAnswer(w, 0, nil, ch, err)
		return
	}
	signedretry.WriteAnswer(w, http.StatusOK, sess, ch, err)
}

func (h *handler) listSessions(w http.ResponseWriter, r *http.Request) {
	ss, err := h.s.ListSessions(r.Context(), r.URL.Query().Get("accountId"))
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
	if !ok {
		return
	}
	ch, err := h.s.RevokeSession(r.Context(), r.PathValue("id"), call)
	signedretry.WriteAnswer(w, 0, nil, ch, err)
}

func (h *handler) refresh(w http.ResponseWriter, r *http.Request) {
	var req RefreshRequest
	call, ok := read(w, r, &req, false)
	if !ok {
		return
	}
	sess, ch, err := h.s.RefreshSession(r.Context(), r.PathValue("id"), req, call)
	if sess == nil {
		signedretry.WriteAnswer(w, 0, nil, ch, err)
		return
	}
	signedretry.WriteAnswer(w, http.StatusCreated, sess, ch, err)
}

package walletauth

import (
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
// Paths are matched as given; mount the handler under a base path with
// http.StripPrefix. Platform authentication (HTTP Basic) is the host's.
// Every error is written with apierror.Write, under apierror.Observe with
// Config.Logger: a 5xx logs its cause once with the request id.
func (s *Service) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /auth/credentials", s.handleAdd)
	mux.HandleFunc("GET /auth/credentials", s.handleListCredentials)
	mux.HandleFunc("DELETE /auth/credentials/{id}", s.handleRevokeCredential)
	mux.HandleFunc("POST /auth/credentials/{id}/challenge", s.handleChallenge)
	mux.HandleFunc("POST /auth/credentials/{id}/verify", s.handleVerify)
	mux.HandleFunc("GET /auth/sessions", s.handleListSessions)
	mux.HandleFunc("DELETE /auth/sessions/{id}", s.handleRevokeSession)
	mux.HandleFunc("POST /auth/sessions/{id}/refresh", s.handleRefresh)
	return apierror.Observe(mux, s.tel.log)
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

func (s *Service) handleAdd(w http.ResponseWriter, r *http.Request) {
	var req AddCredentialRequest
	call, ok := read(w, r, &req, false)
	if !ok {
		return
	}
	m, ch, err := s.AddCredential(r.Context(), req, call)
	if m == nil {
		signedretry.WriteResult(w, 0, nil, ch, err)
		return
	}
	signedretry.WriteResult(w, http.StatusCreated, m, ch, err)
}

func (s *Service) handleListCredentials(w http.ResponseWriter, r *http.Request) {
	ms, err := s.ListCredentials(r.Context(), r.URL.Query().Get("accountId"))
	if err != nil {
		apierror.Write(w, err)
		return
	}
	if ms == nil {
		ms = []AuthMethod{}
	}
	apierror.WriteJSON(w, http.StatusOK, list[AuthMethod]{ms})
}

func (s *Service) handleRevokeCredential(w http.ResponseWriter, r *http.Request) {
	call, ok := read(w, r, nil, true)
	if !ok {
		return
	}
	ch, err := s.RevokeCredential(r.Context(), r.PathValue("id"), call)
	signedretry.WriteResult(w, 0, nil, ch, err)
}

func (s *Service) handleChallenge(w http.ResponseWriter, r *http.Request) {
	var req ChallengeRequest
	if _, ok := read(w, r, &req, true); !ok {
		return
	}
	m, err := s.Challenge(r.Context(), r.PathValue("id"), req)
	if err != nil {
		apierror.Write(w, err)
		return
	}
	apierror.WriteJSON(w, http.StatusOK, m)
}

func (s *Service) handleVerify(w http.ResponseWriter, r *http.Request) {
	var req VerifyRequest
	call, ok := read(w, r, &req, false)
	if !ok {
		return
	}
	sess, ch, err := s.Verify(r.Context(), r.PathValue("id"), req, call)
	if sess == nil {
		signedretry.WriteResult(w, 0, nil, ch, err)
		return
	}
	signedretry.WriteResult(w, http.StatusOK, sess, ch, err)
}

func (s *Service) handleListSessions(w http.ResponseWriter, r *http.Request) {
	ss, err := s.ListSessions(r.Context(), r.URL.Query().Get("accountId"))
	if err != nil {
		apierror.Write(w, err)
		return
	}
	if ss == nil {
		ss = []AuthSession{}
	}
	apierror.WriteJSON(w, http.StatusOK, list[AuthSession]{ss})
}

func (s *Service) handleRevokeSession(w http.ResponseWriter, r *http.Request) {
	call, ok := read(w, r, nil, true)
	if !ok {
		return
	}
	ch, err := s.RevokeSession(r.Context(), r.PathValue("id"), call)
	signedretry.WriteResult(w, 0, nil, ch, err)
}

func (s *Service) handleRefresh(w http.ResponseWriter, r *http.Request) {
	var req RefreshRequest
	call, ok := read(w, r, &req, false)
	if !ok {
		return
	}
	sess, ch, err := s.RefreshSession(r.Context(), r.PathValue("id"), req, call)
	if sess == nil {
		signedretry.WriteResult(w, 0, nil, ch, err)
		return
	}
	signedretry.WriteResult(w, http.StatusCreated, sess, ch, err)
}

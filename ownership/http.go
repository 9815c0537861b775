package ownership

import (
	"errors"
	"net/http"

	"github.com/walletgate/walletgate/apierror"
)

// Handler serves the ownership endpoints of both path trees:
//
//	POST /customers/external-accounts/{id}/challenge   201 challenge
//	POST /customers/external-accounts/{id}/verify      200 account
//	POST /platform/external-accounts/{id}/challenge    201 challenge
//	POST /platform/external-accounts/{id}/verify       200 account
//
// Customer-tree calls find only accounts with a customer, platform-tree
// calls only accounts without one. Every route decodes its body, calls
// [Service.StartChallenge] or [Service.Verify] with its tree and writes the
// answer; the tenant guard is the service's ([Config].Guard), asked by the
// method inside its transaction on the account {id} names through the
// route's tree (404 REFERENCE_NOT_FOUND when there is none there, before
// the guard is asked), before anything is written: a refused request
// stores no challenge, starts no LIVENESS session and changes no status. A
// refusal is answered as [AccountGuard] says: a plain one exactly as an
// unknown account, an *apierror.Error as it is.
//
// Handler fails, returning a plain error, when the service has no
// [Config].Guard: the routes take account ids from the client, and only the
// host knows which accounts belong to the calling principal, which its
// guard reads from the request's context.
//
// Mount it under the host's base path with http.StripPrefix; platform
// authentication is the host's. Errors are written with apierror.Write,
// under apierror.Observe with Config.Telemetry.Logger: a 5xx logs its cause once with
// the request id.
func (s *Service) Handler() (http.Handler, error) {
	if s.cfg.Guard == nil {
		return nil, errors.New("ownership: Config.Guard is required to serve HTTP: without it any caller could act on any account")
	}
	mux := http.NewServeMux()
	for prefix, tree := range map[string]Tree{"/customers": CustomerTree, "/platform": PlatformTree} {
		mux.HandleFunc("POST "+prefix+"/external-accounts/{id}/challenge", func(w http.ResponseWriter, r *http.Request) {
			var req struct {
				Method string `json:"method"`
			}
			if err := apierror.Decode(r, &req); err != nil {
				apierror.Write(w, err)
				return
			}
			c, err := s.StartChallenge(r.Context(), r.PathValue("id"), req.Method, tree)
			if err != nil {
				apierror.Write(w, err)
				return
			}
			apierror.WriteJSON(w, http.StatusCreated, c)
		})
		mux.HandleFunc("POST "+prefix+"/external-accounts/{id}/verify", func(w http.ResponseWriter, r *http.Request) {
			var req VerifyRequest
			if err := apierror.Decode(r, &req); err != nil {
				apierror.Write(w, err)
				return
			}
			a, err := s.Verify(r.Context(), r.PathValue("id"), req, tree)
			if err != nil {
				apierror.Write(w, err)
				return
			}
			apierror.WriteJSON(w, http.StatusOK, s.cfg.Render(*a))
		})
	}
	return apierror.Observe(mux, s.tel.log), nil
}

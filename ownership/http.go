package ownership

import (
	"context"
	"errors"
	"net/http"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/storage"
)

// AccountGuard decides whether the request r may act on account: the host
// reads its own principal from r (its authentication, a value its
// middleware put in the context) and compares it with the account's owner,
// account.CustomerID for a customer's account and the empty string for the
// platform's own. It returns nil to let the route act.
//
// A refusal that is an *apierror.Error (or wraps one) is written as it is,
// for a host that wants 403 FORBIDDEN or must report its own failure (500
// through apierror.Internal). Any other error is written as the 404
// REFERENCE_NOT_FOUND an unknown account answers, with the same message, so
// a refusal does not tell the caller that another tenant's account exists.
type AccountGuard func(r *http.Request, account storage.ExternalAccount) error

// HandlerConfig configures [Service.Handler].
type HandlerConfig struct {
	// Guard decides whether the caller may act on an external account.
	// Required: the routes take account ids from the client, and only the
	// host knows which accounts belong to the calling platform.
	Guard AccountGuard
}

// Handler serves the ownership endpoints of both path trees:
//
//	POST /customers/external-accounts/{id}/challenge   201 challenge
//	POST /customers/external-accounts/{id}/verify      200 account
//	POST /platform/external-accounts/{id}/challenge    201 challenge
//	POST /platform/external-accounts/{id}/verify       200 account
//
// Customer-tree calls find only accounts with a customer, platform-tree
// calls only accounts without one. Every route first decodes its body,
// then reads the account {id} names through its tree (404
// REFERENCE_NOT_FOUND when there is none there) and asks cfg.Guard, before
// anything is written: a refused request stores no challenge and changes
// no status. A refusal is answered as [AccountGuard] says. The library
// never moves an account to another customer, so the guard's answer still
// holds when the operation runs.
//
// Handler fails, returning a plain error, when cfg.Guard is nil.
//
// Mount it under the host's base path with http.StripPrefix; platform
// authentication is the host's. Errors are written with apierror.Write,
// under apierror.Observe with Config.Logger: a 5xx logs its cause once with
// the request id.
func (s *Service) Handler(cfg HandlerConfig) (http.Handler, error) {
	if cfg.Guard == nil {
		return nil, errors.New("ownership: HandlerConfig.Guard is required: without it any caller could act on any account")
	}
	admit := func(w http.ResponseWriter, r *http.Request, tree Tree) bool {
		id := r.PathValue("id")
		a, err := s.accountIn(r.Context(), id, tree)
		if err == nil {
			if refusal := cfg.Guard(r, a); refusal != nil {
				var e *apierror.Error
				if !errors.As(refusal, &e) {
					e = apierror.As(notFound(id))
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
			if !admit(w, r, tree) {
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
			if !admit(w, r, tree) {
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

// accountIn reads the account id names through tree, in a transaction of
// the service's store: 404 REFERENCE_NOT_FOUND when there is none there. It
// is the handler's one lookup.
func (s *Service) accountIn(ctx context.Context, id string, tree Tree) (storage.ExternalAccount, error) {
	var a storage.ExternalAccount
	err := s.cfg.Store.Atomic(ctx, func(tx storage.Tx) error {
		var err error
		a, err = load(ctx, tx, id, tree)
		return err
	})
	if err != nil {
		return a, apierror.From(err)
	}
	return a, nil
}

package sandbox

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/ownership"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/walletauth/oidc"
	"github.com/walletgate/walletgate/walletauth/passkey"
)

// Defaults of the embedded-wallet and ownership configuration.
const (
	// DefaultRPID is the passkey relying party id when Config.RelyingParty
	// is zero; browsers accept it for pages served from localhost.
	DefaultRPID = "localhost"
	// DefaultOIDCAudience is the audience the default Google and Apple
	// issuers accept in sandbox ID tokens.
	DefaultOIDCAudience = "sandbox-client"
	// LivenessLinkPrefix starts the verificationLink of sandbox LIVENESS
	// challenges; POST /sandbox/external-accounts/{id}/liveness delivers the
	// outcome.
	LivenessLinkPrefix = "https://liveness.sandbox.invalid/session/"
)

// defaultRelyingParty serves passkeys to pages on http://localhost (any port
// the browser reports must be listed; the default covers the bare origin and
// the examples server's default port).
func defaultRelyingParty() passkey.RelyingParty {
	return passkey.RelyingParty{ID: DefaultRPID, Name: "walletgate sandbox",
		Origins: []string{"http://localhost", "http://localhost:8089"}}
}

// newWalletServices builds the passkey and OpenID verifiers of a normalized
// cfg: real WebAuthn with the legacy sandbox literal accepted, and ID tokens
// whose signature may be a dummy while every claim is checked.
func newWalletServices(cfg *Config) (*passkey.Verifier, *oidc.Verifier, error) {
	pk, err := passkey.New(passkey.Config{RelyingParty: cfg.RelyingParty, Sandbox: true, Rand: cfg.Rand})
	if err != nil {
		return nil, nil, err
	}
	ov, err := oidc.New(context.Background(), oidc.Config{Issuers: cfg.OIDCIssuers, Clock: cfg.Clock, Sandbox: true,
		Telemetry: cfg.Telemetry})
	if err != nil {
		return nil, nil, err
	}
	return pk, ov, nil
}

// sandboxLiveness is the LIVENESS provider of the sandbox: a link that leads
// nowhere; the test delivers the outcome through the sandbox endpoint.
type sandboxLiveness struct{}

func (sandboxLiveness) Start(_ context.Context, a storage.ExternalAccount, _ time.Time) (ownership.LivenessSession, error) {
	return ownership.LivenessSession{VerificationLink: LivenessLinkPrefix + a.ID}, nil
}

func (s *Simulator) newOwnership() (*ownership.Service, error) {
	vs := ownership.DefaultVerifiers()
	for t, cv := range s.cfg.ContractWallets {
		vs[t] = cv // checked by normalize; ownership.New checks each serves its type's chain
	}
	return ownership.New(ownership.Config{Store: s.cfg.Store, Clock: s.cfg.Clock, Rand: s.cfg.Rand, Liveness: sandboxLiveness{}, Verifiers: vs,
		Telemetry: s.cfg.Telemetry,
		Service:   "walletgate sandbox", Network: s.cfg.Network, Payouts: *s.gate, VASPs: sandboxVASPs, Guard: platformTree,
		// An event carries the library's stored fields only: it renders
		// the account without the simulator's record of it.
		Render: func(a storage.ExternalAccount) any { return externalView(&a, nil) }})
}

// Ownership returns the ownership service the simulator serves.
func (s *Simulator) Ownership() *ownership.Service { return s.own }

// StartOwnershipChallenge starts a WALLET_SIGNATURE or LIVENESS challenge for
// an external account of a customer (see ownership.Service.StartChallenge).
func (s *Simulator) StartOwnershipChallenge(ctx context.Context, id, method string) (*ownership.Challenge, error) {
	if _, err := s.GetExternalAccount(ctx, id); err != nil {
		return nil, err
	}
	return s.own.StartChallenge(ctx, id, method, ownership.CustomerTree)
}

// VerifyOwnership completes a WALLET_SIGNATURE challenge and returns the
// account (see ownership.Service.Verify).
func (s *Simulator) VerifyOwnership(ctx context.Context, id string, req ownership.VerifyRequest) (*ExternalAccount, error) {
	if _, err := s.GetExternalAccount(ctx, id); err != nil {
		return nil, err
	}
	if _, err := s.own.Verify(ctx, id, req, ownership.CustomerTree); err != nil {
		return nil, err
	}
	return s.GetExternalAccount(ctx, id)
}

// CompleteLiveness delivers the outcome of an account's LIVENESS challenge,
// as the provider's callback would.
func (s *Simulator) CompleteLiveness(ctx context.Context, id string, passed bool) (*ExternalAccount, error) {
	if _, err := s.GetExternalAccount(ctx, id); err != nil {
		return nil, err
	}
	if _, err := s.own.CompleteLiveness(ctx, id, passed); err != nil {
		return nil, err
	}
	return s.GetExternalAccount(ctx, id)
}

// ownershipRoutes adds the ownership endpoints: the customer tree through
// the simulator (deleted accounts are not found), the platform tree through
// ownership's handler behind platformAccount. It fails only when that
// handler cannot be built.
func (s *Simulator) ownershipRoutes(r func(string, http.HandlerFunc)) error {
	r("POST /customers/external-accounts/{id}/challenge", func(w http.ResponseWriter, req *http.Request) {
		var body struct {
			Method string `json:"method"`
		}
		if _, ok := readBody(w, req, &body, true); !ok {
			return
		}
		c, err := s.StartOwnershipChallenge(req.Context(), req.PathValue("id"), body.Method)
		signedretry.WriteAnswer(w, http.StatusCreated, c, nil, err)
	})
	r("POST /customers/external-accounts/{id}/verify", func(w http.ResponseWriter, req *http.Request) {
		var body ownership.VerifyRequest
		if _, ok := readBody(w, req, &body, true); !ok {
			return
		}
		a, err := s.VerifyOwnership(req.Context(), req.PathValue("id"), body)
		signedretry.WriteAnswer(w, http.StatusOK, a, nil, err)
	})
	own, err := s.own.Handler()
	if err != nil {
		return err
	}
	platform := http.StripPrefix(s.cfg.BasePath, own)
	// The platform tree's routes act as the platform's principal, and only
	// on accounts the simulator has not deleted (a delete is final, so the
	// check before the handler still holds when it acts).
	platformRoute := func(w http.ResponseWriter, req *http.Request) {
		if deleted, err := s.deletedExternal(req.Context(), req.PathValue("id")); err != nil || deleted {
			if err == nil {
				err = apierror.New(apierror.ReferenceNotFound, "external account %s not found", req.PathValue("id"))
			}
			apierror.Write(w, err)
			return
		}
		platform.ServeHTTP(w, req.WithContext(context.WithValue(req.Context(), platformPrincipal{}, true)))
	}
	r("POST /platform/external-accounts/{id}/challenge", platformRoute)
	r("POST /platform/external-accounts/{id}/verify", platformRoute)
	r("POST /sandbox/passkeys/registration-challenge", func(w http.ResponseWriter, req *http.Request) {
		var body struct {
			AccountID string `json:"accountId"`
		}
		if _, ok := readBody(w, req, &body, true); !ok {
			return
		}
		rc, err := s.auth.PasskeyRegistrationChallenge(req.Context(), body.AccountID)
		if err != nil {
			apierror.Write(w, err)
			return
		}
		signedretry.WriteAnswer(w, http.StatusCreated, map[string]any{"challenge": rc.Challenge, "accountId": rc.AccountID,
			"expiresAt": rc.ExpiresAt, "rpId": s.pk.RelyingParty().ID}, nil, nil)
	})
	r("POST /sandbox/external-accounts/{id}/liveness", func(w http.ResponseWriter, req *http.Request) {
		var body struct {
			Passed *bool `json:"passed"`
		}
		if _, ok := readBody(w, req, &body, true); !ok {
			return
		}
		if body.Passed == nil {
			apierror.Write(w, apierror.InvalidField("passed", nil, "is required (true or false)"))
			return
		}
		a, err := s.CompleteLiveness(req.Context(), req.PathValue("id"), *body.Passed)
		signedretry.WriteAnswer(w, http.StatusOK, a, nil, err)
	})
	return nil
}

// platformPrincipal marks the context of a request of the platform
// tree's routes.
type platformPrincipal struct{}

// platformTree is the guard of the ownership service: a request of the
// platform tree's routes acts on the platform's own accounts (without a
// customer) only. The tree already leaves out customers' accounts; the
// guard refuses them again, inside the operation's transaction, so that
// those routes never act on one whatever id reaches them. The simulator's
// own calls for customers' accounts carry no such principal.
func platformTree(ctx context.Context, a storage.ExternalAccount) error {
	if platform, _ := ctx.Value(platformPrincipal{}).(bool); platform && a.CustomerID != "" {
		return errors.New("sandbox: the account is a customer's, not the platform's")
	}
	return nil
}

// deletedExternal reports whether the simulator deleted external account
// id.
func (s *Simulator) deletedExternal(ctx context.Context, id string) (deleted bool, err error) {
	err = s.read(ctx, func(st *state) error {
		m, err := st.metaOf(id)
		deleted = m != nil && m.Deleted
		return err
	})
	return deleted, err
}

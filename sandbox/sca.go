package sandbox

import (
	"context"
	"crypto/subtle"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
)

// SCALoginTTL is how long an SCA login session lasts once
// POST /customers/{id}/sca/login/complete succeeded.
const SCALoginTTL = 180 * 24 * time.Hour

// SCA factors (ScaFactor).
const (
	FactorSMSOTP  = "SMS_OTP"
	FactorTOTP    = "TOTP"
	FactorPasskey = "PASSKEY"
)

// SCA purposes of the login and enrolment challenges.
const (
	purposeLogin  = "SCA_LOGIN"
	purposeEnroll = "SCA_FACTOR_ENROLLMENT"
)

// SCACountries is the set of address countries (ISO 3166-1 alpha-2) whose
// customers are in an SCA-regulated region: the EU, the rest of the EEA
// (IS, LI, NO) and GB. A customer is in an SCA region exactly when its
// address.country is in the set; a customer without an address, or an
// external account without a customer, is outside.
var SCACountries = map[string]bool{
	"AT": true, "BE": true, "BG": true, "HR": true, "CY": true, "CZ": true, "DK": true, "EE": true, "FI": true,
	"FR": true, "DE": true, "GR": true, "HU": true, "IE": true, "IT": true, "LV": true, "LT": true, "LU": true,
	"MT": true, "NL": true, "PL": true, "PT": true, "RO": true, "SK": true, "SI": true, "ES": true, "SE": true,
	"IS": true, "LI": true, "NO": true, "GB": true,
}

// InSCARegion reports whether a customer record is in an SCA-regulated
// region (see [SCACountries]).
func InSCARegion(c *Customer) bool {
	return c != nil && c.Address != nil && SCACountries[strings.ToUpper(strings.TrimSpace(c.Address.Country))]
}

// scaCustomer is the simulator's SCA and contact-verification record of
// one customer.
type scaCustomer struct {
	Login        *scaChallenge            `json:"login,omitempty"`
	Enroll       *scaChallenge            `json:"enroll,omitempty"`
	EnrollFactor string                   `json:"enrollFactor,omitempty"`
	SessionUntil time.Time                `json:"sessionUntil,omitzero"`
	Factors      map[string]bool          `json:"factors,omitempty"`
	Contact      map[string]*contactCheck `json:"contact,omitempty"` // by "email" or "phone"
}

// scaOf returns the SCA record of a customer, a new one when it has none.
func (st *state) scaOf(customerID string) (*scaCustomer, error) {
	r, err := load[scaCustomer](st, kindSCAOf, customerID)
	if errors.Is(err, storage.ErrNotFound) {
		r = &scaCustomer{}
		add(st, kindSCAOf, customerID, "", r)
		err = nil
	}
	if err != nil {
		return nil, err
	}
	if r.Factors == nil {
		r.Factors = map[string]bool{}
	}
	if r.Contact == nil {
		r.Contact = map[string]*contactCheck{}
	}
	return r, nil
}

// scaCustomer returns the customer after checking it is in an SCA region:
// 404 USER_NOT_FOUND, 409 CONFLICT outside.
func (st *state) scaCustomer(id string) (*customer, error) {
	c, err := st.customer(id)
	if err != nil {
		return nil, err
	}
	if !InSCARegion(&c.Rec) {
		return nil, apierror.New(apierror.Conflict, "customer %s is not in an SCA-regulated region", id)
	}
	return c, nil
}

// withSCA runs fn in one transaction (see atomic) on the SCA record of a
// customer in an SCA region: 404 USER_NOT_FOUND, 409 CONFLICT outside.
func (s *Simulator) withSCA(ctx context.Context, customerID string, fn func(r *scaCustomer, now time.Time) error) error {
	return s.atomic(ctx, func(st *state) error {
		if _, err := st.scaCustomer(customerID); err != nil {
			return err
		}
		r, err := st.scaOf(customerID)
		if err != nil {
			return err
		}
		return fn(r, st.now)
	})
}

// requireSCASession checks that the owner of an external account is in an
// SCA region (409 CONFLICT otherwise) and has a live SCA login session (409
// SCA_SESSION_REQUIRED otherwise).
func (st *state) requireSCASession(accountID string, now time.Time) error {
	m, err := st.metaOf(accountID)
	if err != nil {
		return err
	}
	if m == nil || m.CustomerID == "" {
		return apierror.New(apierror.Conflict, "external account %s has no customer in an SCA-regulated region", accountID)
	}
	if _, err := st.scaCustomer(m.CustomerID); err != nil {
		if apierror.CodeOf(err) == apierror.UserNotFound {
			return apierror.New(apierror.Conflict, "external account %s has no customer in an SCA-regulated region", accountID)
		}
		return err
	}
	r, err := st.scaOf(m.CustomerID)
	if err != nil {
		return err
	}
	if !now.Before(r.SessionUntil) {
		return apierror.New(apierror.SCASessionRequired,
			"customer %s has no SCA login session or it expired; log in with POST /customers/%s/sca/login", m.CustomerID, m.CustomerID)
	}
	return nil
}

// SCAStart is the 200 body of POST /customers/{id}/sca/login and
// POST /customers/{id}/sca/factors.
type SCAStart struct {
	SCAChallenge *SCAChallenge `json:"scaChallenge"`
}

// SCACodeRequest is the body of the SCA confirmations.
type SCACodeRequest struct {
	ChallengeID string `json:"challengeId,omitempty"`
	Code        string `json:"code"`
}

// SCASession is the 200 body of POST /customers/{id}/sca/login/complete.
type SCASession struct {
	CustomerID string    `json:"customerId"`
	ExpiresAt  time.Time `json:"expiresAt"`
}

// SCAFactorRequest is the body of POST /customers/{id}/sca/factors.
type SCAFactorRequest struct {
	Factor string `json:"factor"`
}

// SCAFactor is the 200 body of POST /customers/{id}/sca/factors/confirm.
type SCAFactor struct {
	CustomerID string `json:"customerId"`
	Factor     string `json:"factor"`
	Enrolled   bool   `json:"enrolled"`
}

// StartSCALogin issues an SCA login challenge for a customer, confirmed by
// [Simulator.CompleteSCALogin] with [SandboxSCACode]. Errors: 404
// USER_NOT_FOUND, 409 CONFLICT (not in an SCA region).
func (s *Simulator) StartSCALogin(ctx context.Context, customerID string) (*SCAStart, error) {
	id, err := s.newID("ScaChallenge")
	if err != nil {
		return nil, err
	}
	var out *SCAStart
	err = s.withSCA(ctx, customerID, func(r *scaCustomer, now time.Time) error {
		c := &scaChallenge{ID: id, Purpose: purposeLogin, ExpiresAt: now.Add(scaTTL)}
		r.Login = c
		out = &SCAStart{SCAChallenge: &SCAChallenge{ID: id, ExpiresAt: c.ExpiresAt, Factor: FactorSMSOTP,
			AvailableFactors: []string{FactorSMSOTP, FactorTOTP}, Purpose: purposeLogin}}
		return nil
	})
	return out, err
}

// CompleteSCALogin completes the outstanding SCA login of a customer and
// opens an SCA session of [SCALoginTTL]. Errors: 400 INVALID_INPUT (wrong or
// expired code, another challengeId), 404 USER_NOT_FOUND, 409 CONFLICT (not
// in an SCA region, or no login outstanding).
func (s *Simulator) CompleteSCALogin(ctx context.Context, customerID string, req SCACodeRequest) (*SCASession, error) {
	var out *SCASession
	err := s.withSCA(ctx, customerID, func(r *scaCustomer, now time.Time) error {
		if err := useCode(r.Login, req, now, "login", customerID, func() { r.Login = nil }); err != nil {
			return err
		}
		r.Login = nil
		r.SessionUntil = now.Add(SCALoginTTL)
		out = &SCASession{CustomerID: customerID, ExpiresAt: r.SessionUntil}
		return nil
	})
	return out, err
}

// StartSCAFactor starts enrolling an SCA factor (SMS_OTP, TOTP or PASSKEY)
// for a customer. A customer has at most one PASSKEY factor. Errors: 400
// INVALID_INPUT (unknown factor), 404 USER_NOT_FOUND, 409 CONFLICT (not in
// an SCA region), 409 PASSKEY_ALREADY_ENROLLED.
func (s *Simulator) StartSCAFactor(ctx context.Context, customerID string, req SCAFactorRequest) (*SCAStart, error) {
	switch req.Factor {
	case FactorSMSOTP, FactorTOTP, FactorPasskey:
	default:
		return nil, apierror.InvalidField("factor", apierror.OneOf(FactorSMSOTP, FactorTOTP, FactorPasskey), "unknown SCA factor")
	}
	id, err := s.newID("ScaChallenge")
	if err != nil {
		return nil, err
	}
	var out *SCAStart
	err = s.withSCA(ctx, customerID, func(r *scaCustomer, now time.Time) error {
		if req.Factor == FactorPasskey && r.Factors[FactorPasskey] {
			return passkeyEnrolled(customerID)
		}
		c := &scaChallenge{ID: id, Purpose: purposeEnroll, ExpiresAt: now.Add(scaTTL)}
		r.Enroll, r.EnrollFactor = c, req.Factor
		out = &SCAStart{SCAChallenge: &SCAChallenge{ID: id, ExpiresAt: c.ExpiresAt, Factor: req.Factor,
			AvailableFactors: []string{req.Factor}, Purpose: purposeEnroll}}
		return nil
	})
	return out, err
}

// ConfirmSCAFactor completes the outstanding factor enrolment with
// [SandboxSCACode]. Errors: 400 INVALID_INPUT, 404 USER_NOT_FOUND, 409
// CONFLICT (not in an SCA region, nothing outstanding), 409
// PASSKEY_ALREADY_ENROLLED.
func (s *Simulator) ConfirmSCAFactor(ctx context.Context, customerID string, req SCACodeRequest) (*SCAFactor, error) {
	var out *SCAFactor
	err := s.withSCA(ctx, customerID, func(r *scaCustomer, now time.Time) error {
		if err := useCode(r.Enroll, req, now, "factor enrolment", customerID, func() { r.Enroll, r.EnrollFactor = nil, "" }); err != nil {
			return err
		}
		factor := r.EnrollFactor
		r.Enroll, r.EnrollFactor = nil, ""
		if factor == FactorPasskey && r.Factors[FactorPasskey] {
			return passkeyEnrolled(customerID)
		}
		r.Factors[factor] = true
		out = &SCAFactor{CustomerID: customerID, Factor: factor, Enrolled: true}
		return nil
	})
	return out, err
}

// DeleteSCAFactor removes an enrolled factor. Errors: 404 USER_NOT_FOUND,
// 404 REFERENCE_NOT_FOUND (not enrolled), 409 CONFLICT (not in an SCA
// region).
func (s *Simulator) DeleteSCAFactor(ctx context.Context, customerID, factor string) error {
	return s.withSCA(ctx, customerID, func(r *scaCustomer, _ time.Time) error {
		if !r.Factors[factor] {
			return apierror.New(apierror.ReferenceNotFound, "customer %s has no %q SCA factor", customerID, factor)
		}
		delete(r.Factors, factor)
		return nil
	})
}

func passkeyEnrolled(customerID string) error {
	return apierror.New(apierror.PasskeyAlreadyEnrolled,
		"customer %s already has a passkey factor; delete it before enrolling another", customerID)
}

// checkCode checks a code against an outstanding challenge: 409 CONFLICT
// when there is none, 400 INVALID_INPUT for another challengeId, an expired
// challenge or a wrong code.
func checkCode(c *scaChallenge, req SCACodeRequest, now time.Time, what, customerID string) error {
	if c == nil {
		return apierror.New(apierror.Conflict, "no SCA %s is outstanding for customer %s", what, customerID)
	}
	if req.ChallengeID != "" && req.ChallengeID != c.ID {
		return apierror.InvalidField("challengeId", nil, "is not the outstanding challenge")
	}
	if !now.Before(c.ExpiresAt) {
		return apierror.InvalidField("code", nil, "the challenge expired; start again")
	}
	if subtle.ConstantTimeCompare([]byte(req.Code), []byte(SandboxSCACode)) != 1 {
		return apierror.InvalidField("code", nil, "invalid code (the sandbox code is "+SandboxSCACode+")")
	}
	return nil
}

// useCode is checkCode on a customer's outstanding challenge c that also
// drops it (with drop) once it expired, so the next attempt answers 409
// CONFLICT (nothing outstanding) until a new challenge starts.
func useCode(c *scaChallenge, req SCACodeRequest, now time.Time, what, customerID string, drop func()) error {
	err := checkCode(c, req, now, what, customerID)
	if err != nil && apierror.CodeOf(err) == apierror.InvalidInput && c != nil && !now.Before(c.ExpiresAt) {
		drop()
		return committing(err)
	}
	return err
}

// customerRoute is the handler of a POST on a customer whose body (required)
// decodes into Req and whose success is 200 with fn's result.
func customerRoute[Req, Out any](fn func(ctx context.Context, customerID string, req Req) (Out, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req Req
		if _, ok := readBody(w, r, &req, true); !ok {
			return
		}
		out, err := fn(r.Context(), r.PathValue("id"), req)
		signedretry.WriteAnswer(w, http.StatusOK, out, nil, err)
	}
}

// scaRoutes registers the SCA and contact-verification routes.
func (s *Simulator) scaRoutes(r func(string, http.HandlerFunc)) {
	r("POST /customers/{id}/sca/login", func(w http.ResponseWriter, r *http.Request) {
		if _, ok := readBody(w, r, nil, false); !ok {
			return
		}
		out, err := s.StartSCALogin(r.Context(), r.PathValue("id"))
		signedretry.WriteAnswer(w, http.StatusOK, out, nil, err)
	})
	r("POST /customers/{id}/sca/login/complete", customerRoute(s.CompleteSCALogin))
	r("POST /customers/{id}/sca/factors", customerRoute(s.StartSCAFactor))
	r("POST /customers/{id}/sca/factors/confirm", customerRoute(s.ConfirmSCAFactor))
	r("DELETE /customers/{id}/sca/factors/{factor}", func(w http.ResponseWriter, r *http.Request) {
		signedretry.WriteAnswer(w, 0, nil, nil, s.DeleteSCAFactor(r.Context(), r.PathValue("id"), r.PathValue("factor")))
	})
	for _, kind := range []string{contactEmail, contactPhone} {
		r("POST /customers/{id}/verify-"+kind, func(w http.ResponseWriter, r *http.Request) {
			if _, ok := readBody(w, r, nil, false); !ok {
				return
			}
			out, err := s.StartContactVerification(r.Context(), r.PathValue("id"), kind)
			signedretry.WriteAnswer(w, http.StatusOK, out, nil, err)
		})
		r("POST /customers/{id}/verify-"+kind+"/confirm", customerRoute(func(ctx context.Context, id string, req SCACodeRequest) (any, error) {
			return s.ConfirmContactVerification(ctx, id, kind, req)
		}))
	}
}

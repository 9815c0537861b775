package sandbox

import (
	"context"
	"crypto/subtle"
	"errors"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/storage"
)

// SandboxSCACode is the strong-customer-authentication code every sandbox
// trust and untrust confirmation accepts.
const SandboxSCACode = "123456"

// scaTTL is how long a trust or untrust challenge can be confirmed.
const scaTTL = 5 * time.Minute

// Trust purposes.
const (
	purposeTrust   = "TRUST_BENEFICIARY"
	purposeUntrust = "UNTRUST_BENEFICIARY"
)

// scaChallenge is an outstanding trust or untrust of one account.
type scaChallenge struct {
	ID        string    `json:"id"`
	Purpose   string    `json:"purpose"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// TrustStart is the 200 body of POST .../trust and .../untrust.
type TrustStart struct {
	SCAChallenge *SCAChallenge `json:"scaChallenge,omitempty"`
}

// SCAChallenge asks the customer for a second factor.
type SCAChallenge struct {
	ID               string    `json:"id"`
	ExpiresAt        time.Time `json:"expiresAt"`
	Factor           string    `json:"factor"`
	AvailableFactors []string  `json:"availableFactors"`
	Purpose          string    `json:"purpose"`
}

// TrustConfirmRequest is the body of POST .../trust/confirm and
// .../untrust/confirm.
type TrustConfirmRequest struct {
	ChallengeID string `json:"challengeId,omitempty"`
	Code        string `json:"code"`
}

// TrustConfirm is the 200 body of a confirmation.
type TrustConfirm struct {
	Trusted bool `json:"trusted"`
}

// StartTrust starts making an external account a trusted beneficiary (trust
// true) or undoing it (trust false): the answer is an SCA challenge that
// [Simulator.ConfirmTrust] completes with [SandboxSCACode]. A new start
// supersedes an earlier one. Errors: 404 REFERENCE_NOT_FOUND, 409 CONFLICT
// (already trusted, or not trusted when untrusting, or the account's customer
// is not in an SCA region, see [InSCARegion]), 409 SCA_SESSION_REQUIRED (no
// live SCA login session of the customer, see [Simulator.StartSCALogin]).
func (s *Simulator) StartTrust(ctx context.Context, accountID string, trust bool) (*TrustStart, error) {
	if _, err := s.externalAccount(ctx, accountID); err != nil {
		return nil, err
	}
	id, err := s.newID("ScaChallenge")
	if err != nil {
		return nil, err
	}
	var out *TrustStart
	err = s.atomic(ctx, func(st *state) error {
		now := st.now
		if err := st.requireSCASession(accountID, now); err != nil {
			return err
		}
		m, err := st.meta(accountID)
		if err != nil {
			return err
		}
		if m.Trusted == trust {
			if trust {
				return apierror.New(apierror.Conflict, "external account %s is already a trusted beneficiary", accountID)
			}
			return apierror.New(apierror.Conflict, "external account %s is not a trusted beneficiary", accountID)
		}
		purpose := purposeUntrust
		if trust {
			purpose = purposeTrust
		}
		c, err := st.trustChallenge(accountID)
		if err != nil {
			return err
		}
		*c = scaChallenge{ID: id, Purpose: purpose, ExpiresAt: now.Add(scaTTL)}
		out = &TrustStart{SCAChallenge: &SCAChallenge{ID: id, ExpiresAt: c.ExpiresAt, Factor: "SMS_OTP",
			AvailableFactors: []string{"SMS_OTP", "TOTP"}, Purpose: purpose}}
		return nil
	})
	return out, err
}

// ConfirmTrust completes the outstanding trust (trust true) or untrust
// challenge of an account. Errors: 400 INVALID_INPUT (wrong or expired code,
// or a challengeId that is not the outstanding one), 404
// REFERENCE_NOT_FOUND, 409 CONFLICT (no such challenge outstanding, or not
// in an SCA region), 409 SCA_SESSION_REQUIRED.
func (s *Simulator) ConfirmTrust(ctx context.Context, accountID string, trust bool, req TrustConfirmRequest) (*TrustConfirm, error) {
	if _, err := s.externalAccount(ctx, accountID); err != nil {
		return nil, err
	}
	var out *TrustConfirm
	err := s.atomic(ctx, func(st *state) error {
		now := st.now
		want := purposeUntrust
		if trust {
			want = purposeTrust
		}
		if err := st.requireSCASession(accountID, now); err != nil {
			return err
		}
		c, err := st.trustChallenge(accountID)
		if err != nil {
			return err
		}
		if c.ID == "" || c.Purpose != want {
			return apierror.New(apierror.Conflict, "no %s challenge is outstanding for external account %s", want, accountID)
		}
		if req.ChallengeID != "" && req.ChallengeID != c.ID {
			return apierror.InvalidField("challengeId", nil, "is not the outstanding challenge")
		}
		if !now.Before(c.ExpiresAt) {
			*c = scaChallenge{}
			return committing(apierror.InvalidField("code", nil, "the challenge expired; start again"))
		}
		if subtle.ConstantTimeCompare([]byte(req.Code), []byte(SandboxSCACode)) != 1 {
			return apierror.InvalidField("code", nil, "invalid code (the sandbox code is "+SandboxSCACode+")")
		}
		*c = scaChallenge{}
		m, err := st.meta(accountID)
		if err != nil {
			return err
		}
		m.Trusted = trust
		out = &TrustConfirm{Trusted: trust}
		return nil
	})
	return out, err
}

// meta returns the simulator's record of an external account, a new
// empty one for an account made outside the simulator.
func (st *state) meta(id string) (*extMeta, error) {
	m, err := st.metaOf(id)
	if err != nil || m != nil {
		return m, err
	}
	m = &extMeta{}
	add(st, kindExternal, id, "", m)
	return m, nil
}

// metaOf returns the simulator's record of an external account, or nil
// when it has none.
func (st *state) metaOf(id string) (*extMeta, error) {
	m, err := load[extMeta](st, kindExternal, id)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil
	}
	return m, err
}

// trustChallenge returns the outstanding trust or untrust challenge of an
// external account (a zero one when none is).
func (st *state) trustChallenge(accountID string) (*scaChallenge, error) {
	c, err := load[scaChallenge](st, kindSCA, accountID)
	if errors.Is(err, storage.ErrNotFound) {
		c = &scaChallenge{}
		add(st, kindSCA, accountID, "", c)
		err = nil
	}
	return c, err
}

package sandbox

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/walletauth"
)

// Customer verification statuses (kycStatus, kybStatus): the outcome of the
// last POST /verifications (see the package doc's magic values), or
// UNVERIFIED for a customer no verification has run for yet.
const (
	StatusUnverified = "UNVERIFIED"
	StatusPending    = "PENDING"
	StatusRejected   = "REJECTED"
	StatusApproved   = "APPROVED"
)

// Customer is a customer record.
type Customer struct {
	ID                 string            `json:"id"`
	PlatformCustomerID string            `json:"platformCustomerId,omitempty"`
	CustomerType       string            `json:"customerType"`
	UMAAddress         string            `json:"umaAddress"`
	Email              string            `json:"email"`
	PhoneNumber        string            `json:"phoneNumber,omitempty"`
	FullName           string            `json:"fullName,omitempty"`
	BirthDate          string            `json:"birthDate,omitempty"`
	Nationality        string            `json:"nationality,omitempty"`
	Address            *Address          `json:"address,omitempty"`
	BusinessInfo       *BusinessInfo     `json:"businessInfo,omitempty"`
	BeneficialOwners   []BeneficialOwner `json:"beneficialOwners,omitempty"`
	EDD
	// KYCStatus is set for INDIVIDUAL customers, KYBStatus for businesses.
	KYCStatus string    `json:"kycStatus,omitempty"`
	KYBStatus string    `json:"kybStatus,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// customer is the stored customer with the id of its embedded wallet.
type customer struct {
	Rec      Customer `json:"rec"`
	WalletID string   `json:"walletId"`
}

// clone returns a copy sharing no memory with c.
func (c *Customer) clone() *Customer {
	out := *c
	if c.Address != nil {
		a := *c.Address
		out.Address = &a
	}
	if c.BusinessInfo != nil {
		b := *c.BusinessInfo
		out.BusinessInfo = &b
	}
	out.BeneficialOwners = slices.Clone(c.BeneficialOwners)
	out.SourceOfWealthCategories = slices.Clone(c.SourceOfWealthCategories)
	return &out
}

// CreateCustomer validates req as POST /customers does, then creates the
// customer and provisions its embedded wallet (an internal account with an
// EMAIL_OTP credential tied to the email).
//
// Errors: 400 INVALID_INPUT listing every invalid field; 409 CONFLICT when
// platformCustomerId belongs to an existing customer; 409 UMA_ADDRESS_EXISTS;
// 409 EMAIL_OTP_EMAIL_ALREADY_EXISTS when the email is tied to another
// wallet's EMAIL_OTP credential.
func (s *Simulator) CreateCustomer(ctx context.Context, req CustomerCreate) (*Customer, error) {
	body, err := marshalBody(req)
	if err != nil {
		return nil, err
	}
	if req, err = ParseCustomerCreate(body, s.now()); err != nil {
		return nil, err
	}
	return s.createCustomer(ctx, req)
}

func (s *Simulator) createCustomer(ctx context.Context, req CustomerCreate) (*Customer, error) {
	id, err := s.newID("Customer")
	if err != nil {
		return nil, err
	}
	uma := strings.ToLower(req.UMAAddress)
	if uma == "" {
		uma = "$customer." + strings.TrimPrefix(id, "Customer:")[:13] + "@" + s.cfg.UMADomain
	}
	now := s.now()
	c := Customer{ID: id, PlatformCustomerID: req.PlatformCustomerID, CustomerType: req.CustomerType, UMAAddress: uma,
		Email: req.Email, PhoneNumber: req.PhoneNumber, FullName: req.FullName, BirthDate: req.BirthDate,
		Nationality: req.Nationality, Address: req.Address, BusinessInfo: req.BusinessInfo,
		BeneficialOwners: req.BeneficialOwners, EDD: req.EDD, CreatedAt: now, UpdatedAt: now}
	if c.CustomerType == CustomerBusiness {
		c.KYBStatus = StatusUnverified
		for i := range c.BeneficialOwners {
			c.BeneficialOwners[i].KYCStatus = StatusUnverified
		}
	} else {
		c.KYCStatus = StatusUnverified
	}
	// The unique values are the store's (a record keyed by each, created
	// once), taken before the wallet: of two customers racing for one, one
	// gets it and the other provisions nothing.
	err = s.atomic(ctx, func(st *state) error {
		if c.PlatformCustomerID != "" {
			if err := st.reserve(kindPlatformID, c.PlatformCustomerID, id); errors.Is(err, storage.ErrDuplicate) {
				owner, _ := st.owner(kindPlatformID, c.PlatformCustomerID)
				return apierror.New(apierror.Conflict, "platformCustomerId %q belongs to customer %s", c.PlatformCustomerID, owner).
					WithDetail("field", "platformCustomerId")
			} else if err != nil {
				return err
			}
		}
		if err := st.reserve(kindUMA, uma, id); errors.Is(err, storage.ErrDuplicate) {
			return apierror.New(apierror.UMAAddressExists, "UMA address %s already exists", uma)
		} else if err != nil {
			return err
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// CreateWallet refuses an address tied to another customer's EMAIL_OTP
	// credential, holding the address from its check to the insert. A
	// customer whose wallet it refuses gives its unique values back.
	acct, _, err := s.auth.CreateWallet(ctx, walletauth.NewWallet{CustomerID: id, Email: req.Email, Phone: req.PhoneNumber})
	if err != nil {
		if rerr := s.release(ctx, id, c.PlatformCustomerID, uma); rerr != nil {
			return nil, rerr
		}
		return nil, err
	}
	err = s.atomic(ctx, func(st *state) error {
		add(st, kindCustomer, id, "", &customer{Rec: c, WalletID: acct.ID})
		_, err := st.wallet(acct.ID)
		return err
	})
	if err != nil {
		return nil, err
	}
	return c.clone(), nil
}

// release gives back the unique values customer id reserved.
func (s *Simulator) release(ctx context.Context, id, platformID, uma string) error {
	return s.atomic(ctx, func(st *state) error {
		for _, k := range []rowKey{{kindPlatformID, platformID}, {kindUMA, uma}} {
			if k.key == "" {
				continue
			}
			r, err := load[reservation](st, k.kind, k.key)
			if err != nil {
				return err
			}
			if r.Owner == id {
				r.Owner = ""
			}
		}
		return nil
	})
}

// GetCustomer returns a customer: 404 USER_NOT_FOUND when there is none.
func (s *Simulator) GetCustomer(ctx context.Context, id string) (*Customer, error) {
	var out *Customer
	err := s.read(ctx, func(st *state) error {
		c, err := st.customer(id)
		if err == nil {
			out = c.Rec.clone()
		}
		return err
	})
	return out, err
}

func (st *state) customer(id string) (*customer, error) {
	c, err := load[customer](st, kindCustomer, id)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, apierror.New(apierror.UserNotFound, "customer %q not found", id)
	}
	return c, err
}

// UpdateCustomer applies a PATCH /customers/{id}. A change of email goes
// through walletauth's signed retry when an EMAIL_OTP credential is tied to
// the customer's wallet: the first call binds the whole update into the
// payload, answers a challenge and changes nothing; the retry (same body,
// stamped by an active session of the wallet) changes the wallet, the
// credential and the customer as the payload says, the rest of the update
// included. Without an email change the update applies at once.
//
// call carries the request's method, path, raw body and signed-retry
// headers; a zero Method, Path or Body is filled from id and req, which is
// what a Go caller normally wants.
//
// Errors: 400 INVALID_INPUT (every invalid field; a changed customerType),
// 404 USER_NOT_FOUND, 409 EMAIL_OTP_EMAIL_ALREADY_EXISTS,
// 409 EMAIL_OTP_CREDENTIAL_SET_CHANGED, the 401s of signedretry.
func (s *Simulator) UpdateCustomer(ctx context.Context, id string, req CustomerUpdate, call signedretry.Request) (*Customer, *signedretry.Challenge, error) {
	body, err := marshalBody(req)
	if err != nil {
		return nil, nil, err
	}
	if req, err = ParseCustomerUpdate(body, s.now()); err != nil {
		return nil, nil, err
	}
	if call.Method == "" {
		call.Method = http.MethodPatch
	}
	if call.Path == "" {
		call.Path = s.cfg.BasePath + "/customers/" + id
	}
	if call.Body == nil {
		call.Body = body
	}
	return s.updateCustomer(ctx, id, req, call)
}

func (s *Simulator) updateCustomer(ctx context.Context, id string, req CustomerUpdate, call signedretry.Request) (*Customer, *signedretry.Challenge, error) {
	var current Customer
	err := s.read(ctx, func(st *state) error {
		c, err := st.customer(id)
		if err == nil {
			current = c.Rec
		}
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	var v apierror.Validation
	v.Check(req.CustomerType == "" || req.CustomerType == current.CustomerType, "customerType", apierror.OneOf(current.CustomerType),
		"a customer's type cannot change")
	v.Check(req.BusinessInfo == nil || current.CustomerType == CustomerBusiness, "businessInfo", nil, "only business customers have businessInfo")
	if err := v.Err(); err != nil {
		return nil, nil, err
	}
	email := ""
	retry := call.Signature != "" || call.RequestID != ""
	if req.Email != "" && req.Email != current.Email {
		// The whole update is bound into the payload, and a retry applies
		// the update as signed, not as its body reads again.
		change, challenge, err := s.auth.UpdateEmail(ctx, id, req.Email, req, call)
		if err != nil || challenge != nil {
			return nil, challenge, err
		}
		email = change.Email
		if retry {
			if req, err = ParseCustomerUpdate(change.Host, s.now()); err != nil {
				return nil, nil, apierror.Internal(err)
			}
		}
	} else if retry {
		return nil, nil, apierror.Unauthenticated("this update needs no signed retry")
	}
	var out *Customer
	err = s.atomic(ctx, func(st *state) error {
		now := st.now
		c, err := st.customer(id)
		if err != nil {
			return err
		}
		r := &c.Rec
		if email != "" {
			r.Email = email
		}
		set(&r.PhoneNumber, req.PhoneNumber)
		set(&r.FullName, req.FullName)
		set(&r.BirthDate, req.BirthDate)
		set(&r.Nationality, req.Nationality)
		set(&r.PurposeOfAccount, req.PurposeOfAccount)
		set(&r.AnnualIncomeRange, req.AnnualIncomeRange)
		if req.Address != nil {
			r.Address = req.Address
		}
		if req.BusinessInfo != nil {
			r.BusinessInfo = req.BusinessInfo
		}
		if req.SourceOfWealthCategories != nil {
			r.SourceOfWealthCategories = req.SourceOfWealthCategories
		}
		r.UpdatedAt = now
		out = r.clone()
		return nil
	})
	return out, nil, err
}

func set(dst *string, v string) {
	if v != "" {
		*dst = v
	}
}

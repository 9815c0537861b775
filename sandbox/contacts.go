package sandbox

import (
	"context"
	"time"

	"github.com/walletgate/walletgate/apierror"
)

// ContactVerificationSuffix marks a customer whose payment provider
// mandates contact verification: the magic suffix ([Suffix]) of the
// customer's email, that is the last three characters of its user part
// ("jane.901@example.com"). Every other customer's provider does not require
// it, and the verify-email and verify-phone endpoints answer 409 CONFLICT.
const ContactVerificationSuffix = "901"

// Contact kinds, as in the paths /customers/{id}/verify-email and
// /customers/{id}/verify-phone.
const (
	contactEmail = "email"
	contactPhone = "phone"
)

// contactCheck is a customer's contact verification of one kind.
type contactCheck struct {
	ExpiresAt time.Time `json:"expiresAt,omitzero"` // of the outstanding code; zero when none
	Verified  bool      `json:"verified,omitempty"`
}

// ContactVerificationStart is the 200 body of POST
// /customers/{id}/verify-email and /verify-phone.
type ContactVerificationStart struct {
	CustomerID string    `json:"customerId"`
	Contact    string    `json:"contact"`
	ExpiresAt  time.Time `json:"expiresAt"`
}

// ContactVerification is the 200 body of the /confirm steps.
type ContactVerification struct {
	CustomerID string `json:"customerId"`
	Contact    string `json:"contact"`
	Verified   bool   `json:"verified"`
}

// RequiresContactVerification reports whether a customer's payment
// provider mandates contact verification (see [ContactVerificationSuffix]).
func RequiresContactVerification(c *Customer) bool {
	return c != nil && Suffix(c.Email) == ContactVerificationSuffix
}

// checkContactKind refuses a contact kind other than email and phone: 400
// INVALID_INPUT.
func checkContactKind(kind string) error {
	if kind != contactEmail && kind != contactPhone {
		return apierror.InvalidField("contact", apierror.OneOf(contactEmail, contactPhone), "unknown contact kind")
	}
	return nil
}

// contactCustomer returns the customer's contact value of kind after the
// provider check: 404 USER_NOT_FOUND, 409 CONFLICT when the provider does
// not require verification or the contact is already verified, 400
// INVALID_INPUT when the customer has no phone number.
func (st *state) contactCustomer(customerID, kind string) (*contactCheck, string, error) {
	c, err := st.customer(customerID)
	if err != nil {
		return nil, "", err
	}
	if !RequiresContactVerification(&c.Rec) {
		return nil, "", apierror.New(apierror.Conflict, "the payment provider of customer %s does not require contact verification", customerID)
	}
	value := c.Rec.Email
	if kind == contactPhone {
		value = c.Rec.PhoneNumber
		if value == "" {
			return nil, "", apierror.InvalidField("phoneNumber", nil, "the customer has no phone number to verify")
		}
	}
	r, err := st.scaOf(customerID)
	if err != nil {
		return nil, "", err
	}
	chk := r.Contact[kind]
	if chk == nil {
		chk = &contactCheck{}
		r.Contact[kind] = chk
	}
	if chk.Verified {
		return nil, "", apierror.New(apierror.Conflict, "the %s of customer %s is already verified", kind, customerID)
	}
	return chk, value, nil
}

// StartContactVerification sends (in the sandbox: pretends to send) a
// one-time code to the customer's email (kind "email") or phone (kind
// "phone"); the code is always [SandboxSCACode] and valid 5 minutes.
// Errors: 400 INVALID_INPUT (no phone number), 404 USER_NOT_FOUND, 409
// CONFLICT (provider does not require it, or already verified).
func (s *Simulator) StartContactVerification(ctx context.Context, customerID, kind string) (*ContactVerificationStart, error) {
	if err := checkContactKind(kind); err != nil {
		return nil, err
	}
	var out *ContactVerificationStart
	err := s.atomic(ctx, func(st *state) error {
		now := st.now
		chk, value, err := st.contactCustomer(customerID, kind)
		if err != nil {
			return err
		}
		chk.ExpiresAt = now.Add(scaTTL)
		out = &ContactVerificationStart{CustomerID: customerID, Contact: value, ExpiresAt: chk.ExpiresAt}
		return nil
	})
	return out, err
}

// ConfirmContactVerification checks the one-time code. Errors: 400
// INVALID_INPUT (wrong or expired code), 404 USER_NOT_FOUND, 409 CONFLICT
// (provider does not require it, already verified, or no code
// outstanding).
func (s *Simulator) ConfirmContactVerification(ctx context.Context, customerID, kind string, req SCACodeRequest) (*ContactVerification, error) {
	if err := checkContactKind(kind); err != nil {
		return nil, err
	}
	var out *ContactVerification
	err := s.atomic(ctx, func(st *state) error {
		now := st.now
		chk, value, err := st.contactCustomer(customerID, kind)
		if err != nil {
			return err
		}
		if chk.ExpiresAt.IsZero() {
			return apierror.New(apierror.Conflict, "no %s verification code is outstanding for customer %s", kind, customerID)
		}
		if !now.Before(chk.ExpiresAt) {
			chk.ExpiresAt = time.Time{}
			return committing(apierror.InvalidField("code", nil, "the code expired; request a new one"))
		}
		if req.Code != SandboxSCACode {
			return apierror.InvalidField("code", nil, "invalid code (the sandbox code is "+SandboxSCACode+")")
		}
		chk.ExpiresAt, chk.Verified = time.Time{}, true
		out = &ContactVerification{CustomerID: customerID, Contact: value, Verified: true}
		return nil
	})
	return out, err
}

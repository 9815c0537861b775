package sandbox

import (
	"context"
	"time"

	"github.com/walletgate/walletgate/apierror"
)

// Verification statuses of POST /verifications; the customer's own status
// follows the magic suffix (see the package doc).
const (
	VerificationInProgress    = "IN_PROGRESS"
	VerificationRejected      = "REJECTED"
	VerificationResolveErrors = "RESOLVE_ERRORS"
)

// VerificationRequest is the body of POST /verifications.
type VerificationRequest struct {
	CustomerID string `json:"customerId"`
}

// Verification is the result of a KYC (individual) or KYB (business)
// verification.
type Verification struct {
	ID                 string `json:"id"`
	CustomerID         string `json:"customerId"`
	VerificationStatus string `json:"verificationStatus"`
	// KYCStatus is set for individuals, KYBStatus for businesses.
	KYCStatus string `json:"kycStatus,omitempty"`
	KYBStatus string `json:"kybStatus,omitempty"`
	// Errors lists what the customer must resolve (RESOLVE_ERRORS).
	Errors []VerificationError `json:"errors,omitempty"`
	// BeneficialOwners are the owners' KYC outcomes, in the customer's order.
	BeneficialOwners []OwnerVerification `json:"beneficialOwners,omitempty"`
	CreatedAt        time.Time           `json:"createdAt"`
}

// VerificationError is one thing a customer must resolve.
type VerificationError struct {
	ResourceID string `json:"resourceId"`
	Type       string `json:"type"`
	Field      string `json:"field"`
	Reason     string `json:"reason"`
}

// OwnerVerification is the KYC outcome of one beneficial owner.
type OwnerVerification struct {
	LastName  string `json:"lastName"`
	KYCStatus string `json:"kycStatus"`
}

// VerifyCustomer runs KYC or KYB for a customer with the sandbox's magic outcomes, chosen by the last three characters of:
//
//   - an individual's fullName: 001 IN_PROGRESS/PENDING, 002
//     REJECTED/REJECTED, 003 RESOLVE_ERRORS with a MISSING_FIELD error for
//     each enhanced due diligence field (edd.sourceOfWealthCategories,
//     edd.purposeOfAccount, edd.annualIncomeRange) the customer lacks (once
//     a PATCH supplied them all, the next call approves), anything else
//     IN_PROGRESS/APPROVED;
//   - a business's businessInfo.registrationNumber: 001 PENDING, 002
//     REJECTED, otherwise APPROVED (kybStatus);
//   - each beneficial owner's personalInfo.lastName: 001 PENDING, 002
//     REJECTED, otherwise APPROVED.
//
// The outcome is recorded on the customer. Errors: 400 INVALID_INPUT
// (customerId missing), 404 USER_NOT_FOUND.
func (s *Simulator) VerifyCustomer(ctx context.Context, req VerificationRequest) (*Verification, error) {
	if req.CustomerID == "" {
		return nil, apierror.InvalidField("customerId", nil, "is required")
	}
	id, err := s.newID("Verification")
	if err != nil {
		return nil, err
	}
	var out *Verification
	err = s.atomic(ctx, func(st *state) error {
		now := st.now
		c, err := st.customer(req.CustomerID)
		if err != nil {
			return err
		}
		r := &c.Rec
		v := &Verification{ID: id, CustomerID: r.ID, CreatedAt: now}
		if r.CustomerType == CustomerBusiness {
			reg := ""
			if r.BusinessInfo != nil {
				reg = r.BusinessInfo.RegistrationNumber
			}
			r.KYBStatus = kybStatusFor(reg)
			v.KYBStatus = r.KYBStatus
			v.VerificationStatus = VerificationInProgress
			if r.KYBStatus == StatusRejected {
				v.VerificationStatus = VerificationRejected
			}
			for i := range r.BeneficialOwners {
				o := &r.BeneficialOwners[i]
				o.KYCStatus = kybStatusFor(o.PersonalInfo.LastName)
				v.BeneficialOwners = append(v.BeneficialOwners, OwnerVerification{LastName: o.PersonalInfo.LastName, KYCStatus: o.KYCStatus})
			}
		} else {
			individual(r, v)
		}
		r.UpdatedAt = now
		out = v
		return nil
	})
	return out, err
}

// individual decides an individual's verification from the fullName suffix.
func individual(r *Customer, v *Verification) {
	switch Suffix(r.FullName) {
	case kycSuffixPending:
		v.VerificationStatus, r.KYCStatus = VerificationInProgress, StatusPending
	case kycSuffixReject:
		v.VerificationStatus, r.KYCStatus = VerificationRejected, StatusRejected
	case kycSuffixResolve:
		v.Errors = missingEDD(r)
		if len(v.Errors) > 0 {
			v.VerificationStatus, r.KYCStatus = VerificationResolveErrors, StatusPending
			break
		}
		v.VerificationStatus, r.KYCStatus = VerificationInProgress, StatusApproved
	default:
		v.VerificationStatus, r.KYCStatus = VerificationInProgress, StatusApproved
	}
	v.KYCStatus = r.KYCStatus
}

// missingEDD lists the enhanced due diligence fields the customer lacks.
func missingEDD(r *Customer) []VerificationError {
	var out []VerificationError
	add := func(field string, missing bool) {
		if missing {
			out = append(out, VerificationError{ResourceID: r.ID, Type: "MISSING_FIELD", Field: "edd." + field,
				Reason: field + " is required for enhanced due diligence; PATCH the customer, then verify again"})
		}
	}
	add("sourceOfWealthCategories", len(r.SourceOfWealthCategories) == 0)
	add("purposeOfAccount", r.PurposeOfAccount == "")
	add("annualIncomeRange", r.AnnualIncomeRange == "")
	return out
}

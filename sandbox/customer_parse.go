package sandbox

import (
	"encoding/json"
	"time"

	"github.com/walletgate/walletgate/apierror"
)

// Customer types.
const (
	CustomerIndividual = "INDIVIDUAL"
	CustomerBusiness   = "BUSINESS"
)

// Enhanced due diligence values accepted by sourceOfWealthCategories,
// purposeOfAccount and annualIncomeRange.
var (
	SourcesOfWealth = []string{"EMPLOYMENT", "BUSINESS_INCOME", "INVESTMENTS", "INHERITANCE", "SAVINGS",
		"PENSION", "GIFT", "SALE_OF_ASSETS", "OTHER"}
	PurposesOfAccount = []string{"PERSONAL_PAYMENTS", "SAVINGS", "INVESTMENT", "BUSINESS_PAYMENTS",
		"REMITTANCES", "OTHER"}
	AnnualIncomeRanges = []string{"UNDER_25K", "FROM_25K_TO_50K", "FROM_50K_TO_100K", "FROM_100K_TO_250K", "OVER_250K"}
)

// Limits of customer requests.
const (
	maxOwners  = 25
	maxSources = 16
)

// CustomerCreate is the body of POST /customers.
type CustomerCreate struct {
	CustomerType       string `json:"customerType"`
	PlatformCustomerID string `json:"platformCustomerId,omitempty"`
	// Email is required: the customer's embedded wallet gets an EMAIL_OTP
	// credential tied to it.
	Email       string   `json:"email"`
	PhoneNumber string   `json:"phoneNumber,omitempty"`
	UMAAddress  string   `json:"umaAddress,omitempty"`
	FullName    string   `json:"fullName,omitempty"`
	BirthDate   string   `json:"birthDate,omitempty"`
	Nationality string   `json:"nationality,omitempty"`
	Address     *Address `json:"address,omitempty"`
	// BusinessInfo is required for BUSINESS customers.
	BusinessInfo     *BusinessInfo     `json:"businessInfo,omitempty"`
	BeneficialOwners []BeneficialOwner `json:"beneficialOwners,omitempty"`
	EDD
}

// EDD are the enhanced due diligence fields of a customer.
type EDD struct {
	SourceOfWealthCategories []string `json:"sourceOfWealthCategories,omitempty"`
	PurposeOfAccount         string   `json:"purposeOfAccount,omitempty"`
	AnnualIncomeRange        string   `json:"annualIncomeRange,omitempty"`
}

// BusinessInfo describes a business customer.
type BusinessInfo struct {
	LegalName          string `json:"legalName"`
	RegistrationNumber string `json:"registrationNumber"`
	TaxID              string `json:"taxId,omitempty"`
}

// BeneficialOwner is an owner of a business customer; KYCStatus is set by
// POST /verifications.
type BeneficialOwner struct {
	PersonalInfo PersonalInfo `json:"personalInfo"`
	KYCStatus    string       `json:"kycStatus,omitempty"`
}

// PersonalInfo identifies a beneficial owner.
type PersonalInfo struct {
	FirstName   string `json:"firstName"`
	LastName    string `json:"lastName"`
	BirthDate   string `json:"birthDate,omitempty"`
	Nationality string `json:"nationality,omitempty"`
}

// ParseCustomerCreate decodes and validates a POST /customers body at the
// given time (which bounds birth dates). Malformed JSON is 400 INVALID_INPUT;
// otherwise every invalid field, whatever its kind of problem (missing, wrong
// JSON type, bad format, unknown enum value), is listed in details.errors of
// one 400 INVALID_INPUT. It never panics.
func ParseCustomerCreate(body []byte, now time.Time) (CustomerCreate, error) {
	var raw map[string]any
	if err := apierror.DecodeBytes(body, &raw); err != nil {
		return CustomerCreate{}, err
	}
	if raw == nil {
		return CustomerCreate{}, apierror.New(apierror.InvalidInput, "request body must be a JSON object")
	}
	var v apierror.Validation
	o := newObject(raw, "", &v)
	c := CustomerCreate{
		CustomerType:       o.enum("customerType", true, CustomerIndividual, CustomerBusiness),
		PlatformCustomerID: o.text("platformCustomerId", false, 255),
		Email:              o.email("email", true),
		PhoneNumber:        o.match("phoneNumber", false, phoneRe, apierror.Format("e.164"), "must be an E.164 phone number"),
		UMAAddress:         o.umaAddress("umaAddress"),
		EDD:                o.edd(),
	}
	switch c.CustomerType {
	case CustomerIndividual:
		c.FullName = o.text("fullName", true, 255)
		c.BirthDate = o.date("birthDate", false, now)
		c.Nationality = o.country("nationality", false)
		c.Address = o.address("address", false)
	case CustomerBusiness:
		c.FullName = o.text("fullName", false, 255)
		c.Address = o.address("address", false)
		c.BusinessInfo = o.businessInfo(true)
		c.BeneficialOwners = o.owners(now)
	}
	if err := v.Err(); err != nil {
		return CustomerCreate{}, err
	}
	return c, nil
}

func (o object) umaAddress(name string) string {
	s := o.str(name, false)
	if s == "" {
		return ""
	}
	if !umaRe.MatchString(s) {
		o.v.Add(o.field(name), apierror.Pattern(umaRe.String()), "must be a UMA address such as $alice@example.com")
		return ""
	}
	return s
}

func (o object) edd() EDD {
	var e EDD
	if a, ok := o.array("sourceOfWealthCategories", maxSources); ok {
		for i, el := range a {
			s, ok := el.(string)
			if !ok || !contains(SourcesOfWealth, s) {
				o.v.Add(apierror.Path(o.path, "sourceOfWealthCategories", i), apierror.OneOf(SourcesOfWealth...), "is not one of the allowed values")
				continue
			}
			e.SourceOfWealthCategories = append(e.SourceOfWealthCategories, s)
		}
	}
	e.PurposeOfAccount = o.enum("purposeOfAccount", false, PurposesOfAccount...)
	e.AnnualIncomeRange = o.enum("annualIncomeRange", false, AnnualIncomeRanges...)
	return e
}

func (o object) businessInfo(required bool) *BusinessInfo {
	b, ok := o.obj("businessInfo", required)
	if !ok {
		return nil
	}
	return &BusinessInfo{LegalName: b.text("legalName", true, 255), RegistrationNumber: b.text("registrationNumber", true, 64),
		TaxID: b.text("taxId", false, 64)}
}

func (o object) owners(now time.Time) []BeneficialOwner {
	a, ok := o.array("beneficialOwners", maxOwners)
	if !ok {
		return nil
	}
	var out []BeneficialOwner
	for i, el := range a {
		e, ok := o.elem("beneficialOwners", i, el)
		if !ok {
			continue
		}
		p, ok := e.obj("personalInfo", true)
		if !ok {
			continue
		}
		out = append(out, BeneficialOwner{PersonalInfo: PersonalInfo{
			FirstName: p.text("firstName", true, 100), LastName: p.text("lastName", true, 100),
			BirthDate: p.date("birthDate", false, now), Nationality: p.country("nationality", false)}})
	}
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// CustomerUpdate is the body of PATCH /customers/{id}: only the members
// present change. An Email that differs from the customer's goes through the
// signed retry when an EMAIL_OTP credential is tied to it.
type CustomerUpdate struct {
	CustomerType string        `json:"customerType,omitempty"`
	Email        string        `json:"email,omitempty"`
	PhoneNumber  string        `json:"phoneNumber,omitempty"`
	FullName     string        `json:"fullName,omitempty"`
	BirthDate    string        `json:"birthDate,omitempty"`
	Nationality  string        `json:"nationality,omitempty"`
	Address      *Address      `json:"address,omitempty"`
	BusinessInfo *BusinessInfo `json:"businessInfo,omitempty"`
	EDD
}

// ParseCustomerUpdate decodes and validates a PATCH /customers/{id} body,
// listing every invalid field as [ParseCustomerCreate] does. A body without
// any known member is 400 INVALID_INPUT.
func ParseCustomerUpdate(body []byte, now time.Time) (CustomerUpdate, error) {
	var raw map[string]any
	if err := apierror.DecodeBytes(body, &raw); err != nil {
		return CustomerUpdate{}, err
	}
	if raw == nil {
		return CustomerUpdate{}, apierror.New(apierror.InvalidInput, "request body must be a JSON object")
	}
	var v apierror.Validation
	o := newObject(raw, "", &v)
	u := CustomerUpdate{
		CustomerType: o.enum("customerType", false, CustomerIndividual, CustomerBusiness),
		Email:        o.email("email", false),
		PhoneNumber:  o.match("phoneNumber", false, phoneRe, apierror.Format("e.164"), "must be an E.164 phone number"),
		FullName:     o.text("fullName", false, 255),
		BirthDate:    o.date("birthDate", false, now),
		Nationality:  o.country("nationality", false),
		Address:      o.address("address", false),
		BusinessInfo: o.businessInfo(false),
		EDD:          o.edd(),
	}
	if o.has("email") && o.has("phoneNumber") {
		v.Add("phoneNumber", nil, "change email and phoneNumber in separate requests")
	}
	if err := v.Err(); err != nil {
		return CustomerUpdate{}, err
	}
	if u.isEmpty() {
		return CustomerUpdate{}, apierror.New(apierror.InvalidInput, "the request changes nothing: give at least one customer field")
	}
	return u, nil
}

func (u *CustomerUpdate) isEmpty() bool {
	return u.CustomerType == "" && u.Email == "" && u.PhoneNumber == "" && u.FullName == "" && u.BirthDate == "" &&
		u.Nationality == "" && u.Address == nil && u.BusinessInfo == nil && u.SourceOfWealthCategories == nil &&
		u.PurposeOfAccount == "" && u.AnnualIncomeRange == ""
}

// marshalBody encodes a Go API request for the parser the HTTP adapter uses,
// so both paths validate alike.
func marshalBody(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, apierror.Internal(err)
	}
	return b, nil
}

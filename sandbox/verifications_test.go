package sandbox_test

import (
	"slices"
	"testing"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/sandbox"
)

func TestVerificationKYCSuffixes(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name, status, kyc string
	}{
		{"Pat Pending001", "IN_PROGRESS", "PENDING"},
		{"Rita Reject002", "REJECTED", "REJECTED"},
		{"Olga Other", "IN_PROGRESS", "APPROVED"},
		{"Nine 999", "IN_PROGRESS", "APPROVED"},
	} {
		c, _ := e.customer(tc.name)
		var v sandbox.Verification
		e.do("POST", "/verifications", map[string]any{"customerId": c.ID}).ok(t, 200, &v)
		if v.VerificationStatus != tc.status || v.KYCStatus != tc.kyc || len(v.Errors) != 0 || v.KYBStatus != "" {
			t.Errorf("%s: %+v", tc.name, v)
		}
		var got sandbox.Customer
		e.do("GET", "/customers/"+c.ID, nil).ok(t, 200, &got)
		if got.KYCStatus != tc.kyc {
			t.Errorf("%s: customer kycStatus %s", tc.name, got.KYCStatus)
		}
	}
}

func TestVerificationResolveErrorsThenApproves(t *testing.T) {
	e := newEnv(t)
	c, _ := e.customer("Rex Resolve003")
	var v sandbox.Verification
	e.do("POST", "/verifications", map[string]any{"customerId": c.ID}).ok(t, 200, &v)
	var got []string
	for _, fe := range v.Errors {
		if fe.Type != "MISSING_FIELD" || fe.ResourceID != c.ID || fe.Reason == "" {
			t.Fatalf("error %+v", fe)
		}
		got = append(got, fe.Field)
	}
	want := []string{"edd.sourceOfWealthCategories", "edd.purposeOfAccount", "edd.annualIncomeRange"}
	if v.VerificationStatus != "RESOLVE_ERRORS" || !slices.Equal(got, want) {
		t.Fatalf("first verification %+v", v)
	}
	// A partial patch leaves the rest missing.
	e.do("PATCH", "/customers/"+c.ID, map[string]any{"purposeOfAccount": "SAVINGS"}).ok(t, 200, nil)
	v = sandbox.Verification{}
	e.do("POST", "/verifications", map[string]any{"customerId": c.ID}).ok(t, 200, &v)
	if v.VerificationStatus != "RESOLVE_ERRORS" || len(v.Errors) != 2 {
		t.Fatalf("second verification %+v", v)
	}
	e.do("PATCH", "/customers/"+c.ID, map[string]any{"sourceOfWealthCategories": []string{"EMPLOYMENT"},
		"annualIncomeRange": "UNDER_25K"}).ok(t, 200, nil)
	v = sandbox.Verification{}
	e.do("POST", "/verifications", map[string]any{"customerId": c.ID}).ok(t, 200, &v)
	if v.VerificationStatus != "IN_PROGRESS" || v.KYCStatus != "APPROVED" || len(v.Errors) != 0 {
		t.Fatalf("after patch %+v", v)
	}
}

func TestVerificationKYBAndOwners(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		reg, status, kyb string
	}{
		{"REG-001", "IN_PROGRESS", "PENDING"},
		{"REG-002", "REJECTED", "REJECTED"},
		{"REG-777", "IN_PROGRESS", "APPROVED"},
	} {
		var c sandbox.Customer
		e.do("POST", "/customers", map[string]any{"customerType": "BUSINESS", "email": tc.reg + "@biz.example",
			"businessInfo": map[string]any{"legalName": "Biz", "registrationNumber": tc.reg},
			"beneficialOwners": []any{
				map[string]any{"personalInfo": map[string]any{"firstName": "A", "lastName": "Owner001"}},
				map[string]any{"personalInfo": map[string]any{"firstName": "B", "lastName": "Owner002"}},
				map[string]any{"personalInfo": map[string]any{"firstName": "C", "lastName": "Owner"}},
			}}).ok(t, 201, &c)
		var v sandbox.Verification
		e.do("POST", "/verifications", map[string]any{"customerId": c.ID}).ok(t, 200, &v)
		if v.VerificationStatus != tc.status || v.KYBStatus != tc.kyb || v.KYCStatus != "" || len(v.BeneficialOwners) != 3 {
			t.Fatalf("%s: %+v", tc.reg, v)
		}
		var owners []string
		for _, o := range v.BeneficialOwners {
			owners = append(owners, o.KYCStatus)
		}
		if !slices.Equal(owners, []string{"PENDING", "REJECTED", "APPROVED"}) {
			t.Fatalf("%s owners %v", tc.reg, owners)
		}
		var got sandbox.Customer
		e.do("GET", "/customers/"+c.ID, nil).ok(t, 200, &got)
		if got.KYBStatus != tc.kyb || got.BeneficialOwners[1].KYCStatus != "REJECTED" {
			t.Fatalf("%s customer %+v", tc.reg, got)
		}
	}
}

func TestVerificationErrors(t *testing.T) {
	e := newEnv(t)
	e.do("POST", "/verifications", `{}`).fails(t, 400, apierror.InvalidInput)
	e.do("POST", "/verifications", `{"customerId":7}`).fails(t, 400, apierror.InvalidInput)
	e.do("POST", "/verifications", `{"customerId":"Customer:nobody"}`).fails(t, 404, apierror.UserNotFound)
}

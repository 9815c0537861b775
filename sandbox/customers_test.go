package sandbox_test

import (
	"slices"
	"testing"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/sandbox"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/signedretry/stamper"
	"github.com/walletgate/walletgate/walletauth"
	"github.com/walletgate/walletgate/walletauth/authclient"
)

func TestCreateCustomerProvisionsWallet(t *testing.T) {
	e := newEnv(t)
	var c sandbox.Customer
	e.do("POST", "/customers", map[string]any{
		"customerType": "INDIVIDUAL", "fullName": "Ada Lovelace", "email": " Ada@Example.com ", "platformCustomerId": "p-1",
		"birthDate": "1990-12-10", "nationality": "GB", "phoneNumber": "+447700900123",
		"address": map[string]any{"line1": "1 Main St", "city": "London", "postalCode": "N1 9GU", "country": "GB"},
	}).ok(t, 201, &c)
	if !slices.Contains([]string{c.ID[:9]}, "Customer:") || c.Email != "ada@example.com" || c.KYCStatus != sandbox.StatusUnverified ||
		c.UMAAddress == "" || c.Address == nil || c.Address.City != "London" {
		t.Fatalf("customer %+v", c)
	}
	var got sandbox.Customer
	e.do("GET", "/customers/"+c.ID, nil).ok(t, 200, &got)
	if got.ID != c.ID || got.PlatformCustomerID != "p-1" {
		t.Fatalf("get %+v", got)
	}
	walletID := e.wallet(c.ID)
	var creds struct{ Data []walletauth.AuthMethod }
	e.do("GET", "/auth/credentials?accountId="+walletID, nil).ok(t, 200, &creds)
	if len(creds.Data) != 1 || creds.Data[0].Type != "EMAIL_OTP" || creds.Data[0].Nickname != "ada@example.com" {
		t.Fatalf("credentials %+v", creds.Data)
	}
	// The wallet's OTP login works end to end.
	e.login(walletID)
}

func TestCreateBusinessCustomer(t *testing.T) {
	e := newEnv(t)
	var c sandbox.Customer
	e.do("POST", "/customers", map[string]any{
		"customerType": "BUSINESS", "email": "ops@acme.example",
		"businessInfo":     map[string]any{"legalName": "Acme Ltd", "registrationNumber": "REG-9"},
		"beneficialOwners": []any{map[string]any{"personalInfo": map[string]any{"firstName": "Wile", "lastName": "Coyote"}}},
	}).ok(t, 201, &c)
	if c.KYBStatus != sandbox.StatusUnverified || c.KYCStatus != "" || len(c.BeneficialOwners) != 1 {
		t.Fatalf("business %+v", c)
	}
}

func TestCreateCustomerListsEveryInvalidField(t *testing.T) {
	e := newEnv(t)
	r := e.do("POST", "/customers", map[string]any{
		"customerType": "INDIVIDUAL", "fullName": 42, "email": "not-an-email", "birthDate": "2999-01-01",
		"nationality": "gbr", "phoneNumber": "555", "umaAddress": "alice",
		"address":                  map[string]any{"line1": "", "country": "XX1"},
		"sourceOfWealthCategories": []any{"EMPLOYMENT", "LOTTERY"}, "purposeOfAccount": "FUN", "annualIncomeRange": 7,
	})
	err := r.fails(t, 400, apierror.InvalidInput)
	want := []string{"email", "phoneNumber", "umaAddress", "sourceOfWealthCategories[1]", "purposeOfAccount",
		"annualIncomeRange", "fullName", "birthDate", "nationality", "address.line1", "address.city", "address.postalCode",
		"address.country"}
	if got := fields(err); !slices.Equal(got, want) {
		t.Fatalf("fields\n got %v\nwant %v", got, want)
	}

	err = e.do("POST", "/customers", map[string]any{"customerType": "BUSINESS", "email": "a@b.co",
		"businessInfo": map[string]any{"legalName": "X"}, "beneficialOwners": []any{"x", map[string]any{}}}).fails(t, 400, apierror.InvalidInput)
	if got := fields(err); !slices.Equal(got, []string{"businessInfo.registrationNumber", "beneficialOwners[0]", "beneficialOwners[1].personalInfo"}) {
		t.Fatalf("business fields %v", got)
	}
	err = e.do("POST", "/customers", map[string]any{"customerType": "PARTNERSHIP"}).fails(t, 400, apierror.InvalidInput)
	if got := fields(err); !slices.Equal(got, []string{"customerType", "email"}) {
		t.Fatalf("type fields %v", got)
	}
	for _, body := range []string{"", "[]", "null", `{"customerType":`, `{} {}`} {
		e.do("POST", "/customers", body).fails(t, 400, apierror.InvalidInput)
	}
}

func TestCreateCustomerConflicts(t *testing.T) {
	e := newEnv(t)
	body := map[string]any{"customerType": "INDIVIDUAL", "fullName": "A B", "email": "a@example.com",
		"platformCustomerId": "dup", "umaAddress": "$ab@example.com"}
	e.do("POST", "/customers", body).ok(t, 201, nil)
	body["email"] = "other@example.com"
	err := e.do("POST", "/customers", body).fails(t, 409, apierror.Conflict)
	if err.Details["field"] != "platformCustomerId" {
		t.Fatalf("details %v", err.Details)
	}
	body["platformCustomerId"] = "fresh"
	e.do("POST", "/customers", body).fails(t, 409, apierror.UMAAddressExists)
	body["umaAddress"], body["email"] = "$other@example.com", "A@example.com"
	e.do("POST", "/customers", body).fails(t, 409, apierror.EmailOTPEmailAlreadyExists)
}

func TestGetCustomerNotFound(t *testing.T) {
	e := newEnv(t)
	e.do("GET", "/customers/Customer:nope", nil).fails(t, 404, apierror.UserNotFound)
	e.do("PATCH", "/customers/Customer:nope", `{"purposeOfAccount":"SAVINGS"}`).fails(t, 404, apierror.UserNotFound)
}

func TestPatchCustomerEDD(t *testing.T) {
	e := newEnv(t)
	c, _ := e.customer("Grace Hopper")
	var got sandbox.Customer
	e.do("PATCH", "/customers/"+c.ID, map[string]any{"sourceOfWealthCategories": []string{"EMPLOYMENT", "SAVINGS"},
		"purposeOfAccount": "SAVINGS", "annualIncomeRange": "FROM_50K_TO_100K", "customerType": "INDIVIDUAL"}).ok(t, 200, &got)
	if !slices.Equal(got.SourceOfWealthCategories, []string{"EMPLOYMENT", "SAVINGS"}) || got.PurposeOfAccount != "SAVINGS" ||
		got.AnnualIncomeRange != "FROM_50K_TO_100K" || got.FullName != "Grace Hopper" {
		t.Fatalf("patched %+v", got)
	}
	err := e.do("PATCH", "/customers/"+c.ID, map[string]any{"customerType": "BUSINESS", "businessInfo": map[string]any{
		"legalName": "X", "registrationNumber": "1"}}).fails(t, 400, apierror.InvalidInput)
	if !slices.Equal(fields(err), []string{"customerType", "businessInfo"}) {
		t.Fatalf("fields %v", fields(err))
	}
	e.do("PATCH", "/customers/"+c.ID, `{}`).fails(t, 400, apierror.InvalidInput)
	err = e.do("PATCH", "/customers/"+c.ID, map[string]any{"email": "x@example.com", "phoneNumber": "+15555550100"}).fails(t, 400, apierror.InvalidInput)
	apierrortest.WantFields(t, err, apierror.InvalidInput, "phoneNumber")
	// Signed-retry headers on an update that needs none.
	e.do("PATCH", "/customers/"+c.ID, `{"purposeOfAccount":"OTHER"}`, stamper.HeaderSignature, "x",
		stamper.HeaderRequestID, "Request:x").fails(t, 401, apierror.Unauthorized)
}

func TestPatchCustomerEmailThroughSignedRetry(t *testing.T) {
	e := newEnv(t)
	c, walletID := e.customer("Katherine Johnson")
	key := e.login(walletID)
	body := map[string]any{"email": "KJ@nasa.example", "purposeOfAccount": "SAVINGS"}
	ch := e.challenge("PATCH", "/customers/"+c.ID, body)
	// Nothing changed on the first leg.
	var got sandbox.Customer
	e.do("GET", "/customers/"+c.ID, nil).ok(t, 200, &got)
	if got.Email != c.Email || got.PurposeOfAccount != "" {
		t.Fatalf("first leg changed the customer: %+v", got)
	}
	// A different body on the retry is refused and does not burn the request.
	e.retry(key, ch, "PATCH", "/customers/"+c.ID, map[string]any{"email": "kj@nasa.example", "purposeOfAccount": "OTHER"}).
		fails(t, 401, apierror.WalletSignatureBodyMismatch)
	e.retry(key, ch, "PATCH", "/customers/"+c.ID, body).ok(t, 200, &got)
	if got.Email != "kj@nasa.example" || got.PurposeOfAccount != "SAVINGS" {
		t.Fatalf("after retry %+v", got)
	}
	var creds struct{ Data []walletauth.AuthMethod }
	e.do("GET", "/auth/credentials?accountId="+walletID, nil).ok(t, 200, &creds)
	if creds.Data[0].Nickname != "kj@nasa.example" {
		t.Fatalf("credential not synced: %+v", creds.Data[0])
	}
	// Replaying the retry: the request id is single use.
	e.retry(key, ch, "PATCH", "/customers/"+c.ID, body).fails(t, 401, apierror.Unauthorized)

	// An address tied to another customer's credential.
	other, _ := e.customer("Dorothy Vaughan")
	e.do("PATCH", "/customers/"+c.ID, map[string]any{"email": other.Email}).fails(t, 409, apierror.EmailOTPEmailAlreadyExists)
}

func TestCustomerGoAPI(t *testing.T) {
	ctx := t.Context()
	sim, err := sandbox.New(sandbox.Config{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := sim.CreateCustomer(ctx, sandbox.CustomerCreate{CustomerType: "INDIVIDUAL", FullName: "Go Pher", Email: "go@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = sim.CreateCustomer(ctx, sandbox.CustomerCreate{CustomerType: "INDIVIDUAL"})
	apierrortest.Want(t, err, apierror.InvalidInput, "")
	up, ch, err := sim.UpdateCustomer(ctx, c.ID, sandbox.CustomerUpdate{EDD: sandbox.EDD{PurposeOfAccount: "SAVINGS"}}, signedretry.Request{})
	if err != nil || ch != nil || up.PurposeOfAccount != "SAVINGS" {
		t.Fatalf("update: %v %v %+v", err, ch, up)
	}
	// An email change answers a challenge through the Go API too.
	_, ch, err = sim.UpdateCustomer(ctx, c.ID, sandbox.CustomerUpdate{Email: "new@example.com"}, signedretry.Request{})
	if err != nil || ch == nil {
		t.Fatalf("email change: %v %v", err, ch)
	}
	_, err = sim.GetCustomer(ctx, "Customer:x")
	apierrortest.Want(t, err, apierror.UserNotFound, "")
}

func TestPatchCustomerEmailCredentialSetChanged(t *testing.T) {
	e := newEnv(t)
	var c sandbox.Customer
	e.do("POST", "/customers", map[string]any{"customerType": "INDIVIDUAL", "fullName": "Set Changed",
		"email": "set@example.com", "phoneNumber": "+15555550123"}).ok(t, 201, &c)
	walletID := e.wallet(c.ID)
	emailKey := e.login(walletID)
	var creds struct{ Data []walletauth.AuthMethod }
	e.do("GET", "/auth/credentials?accountId="+walletID, nil).ok(t, 200, &creds)
	emailCred := creds.Data[0].ID

	// The email change is challenged while the EMAIL_OTP credential is tied.
	body := map[string]any{"email": "moved@example.com"}
	ch := e.challenge("PATCH", "/customers/"+c.ID, body)

	// Add SMS_OTP, log in with it, and revoke the EMAIL_OTP credential.
	var sms walletauth.AuthMethod
	e.signed(emailKey, "POST", "/auth/credentials", map[string]any{"type": "SMS_OTP", "accountId": walletID}).ok(t, 201, &sms)
	smsKey, _ := authclient.NewClientKey()
	bundle, err := smsKey.SealOTP(sms.OTPEncryptionTargetBundle, e.sim.Auth().SigningPublicKey(), walletauth.SandboxOTPCode, nil)
	if err != nil {
		t.Fatal(err)
	}
	e.signed(smsKey, "POST", "/auth/credentials/"+sms.ID+"/verify", map[string]string{"type": "SMS_OTP", "encryptedOtpBundle": bundle}).ok(t, 200, nil)
	e.signed(smsKey, "DELETE", "/auth/credentials/"+emailCred, nil).ok(t, 204, nil)

	e.retry(smsKey, ch, "PATCH", "/customers/"+c.ID, body).fails(t, 409, apierror.EmailOTPCredentialSetChanged)
	var got sandbox.Customer
	e.do("GET", "/customers/"+c.ID, nil).ok(t, 200, &got)
	if got.Email != "set@example.com" {
		t.Fatalf("email changed to %s", got.Email)
	}
}

package sandbox_test

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/sandbox"
)

// customerIn creates an individual customer with an address in country
// ("" for none) and the given email (a unique one when "").
func (e *env) customerIn(country, email string) sandbox.Customer {
	e.t.Helper()
	if email == "" {
		email = fmt.Sprintf("user%d@example.com", uniq())
	}
	body := map[string]any{"customerType": "INDIVIDUAL", "fullName": "Sca Customer", "email": email}
	if country != "" {
		body["address"] = map[string]any{"line1": "1 Hauptstr", "city": "Berlin", "postalCode": "10115", "country": country}
	}
	var c sandbox.Customer
	e.do("POST", "/customers", body).ok(e.t, 201, &c)
	return c
}

// scaLogin runs the SCA login of a customer in an SCA region.
func (e *env) scaLogin(customerID string) sandbox.SCASession {
	e.t.Helper()
	var start sandbox.SCAStart
	e.do("POST", "/customers/"+customerID+"/sca/login", nil).ok(e.t, 200, &start)
	var sess sandbox.SCASession
	e.do("POST", "/customers/"+customerID+"/sca/login/complete",
		map[string]string{"challengeId": start.SCAChallenge.ID, "code": sandbox.SandboxSCACode}).ok(e.t, 200, &sess)
	return sess
}

// scaCustomer creates a customer in an SCA region (address in DE) with a
// live SCA login session, and returns it with its wallet id.
func (e *env) scaCustomer(fullName string) (sandbox.Customer, string) {
	e.t.Helper()
	var c sandbox.Customer
	e.do("POST", "/customers", map[string]any{"customerType": "INDIVIDUAL", "fullName": fullName,
		"email":   fmt.Sprintf("user%d@example.com", uniq()),
		"address": map[string]any{"line1": "1 Hauptstr", "city": "Berlin", "postalCode": "10115", "country": "DE"}}).ok(e.t, 201, &c)
	e.scaLogin(c.ID)
	return c, e.wallet(c.ID)
}

func code(c string) map[string]string { return map[string]string{"code": c} }

func TestSCAEndpointsOutsideSCARegion(t *testing.T) {
	e := newEnv(t)
	for _, country := range []string{"", "US"} {
		c := e.customerIn(country, "")
		p := "/customers/" + c.ID
		e.do("POST", p+"/sca/login", nil).fails(t, 409, apierror.Conflict)
		e.do("POST", p+"/sca/login/complete", code(sandbox.SandboxSCACode)).fails(t, 409, apierror.Conflict)
		e.do("POST", p+"/sca/factors", map[string]string{"factor": "PASSKEY"}).fails(t, 409, apierror.Conflict)
		e.do("POST", p+"/sca/factors/confirm", code(sandbox.SandboxSCACode)).fails(t, 409, apierror.Conflict)
		e.do("DELETE", p+"/sca/factors/PASSKEY", nil).fails(t, 409, apierror.Conflict)

		a := e.external(c.ID, usdAccount(fmt.Sprintf("7710%05d", uniq())))
		ap := "/customers/external-accounts/" + a.ID
		for _, step := range []string{"/trust", "/untrust"} {
			e.do("POST", ap+step, nil).fails(t, 409, apierror.Conflict)
			e.do("POST", ap+step+"/confirm", code(sandbox.SandboxSCACode)).fails(t, 409, apierror.Conflict)
		}
		// Outside an SCA region a trusted-beneficiary delete is never refused.
		e.do("DELETE", ap, nil).ok(t, 204, nil)
	}
	p := "/customers/Customer:00000000-0000-4000-8000-000000000000"
	e.do("POST", p+"/sca/login", nil).fails(t, 404, apierror.UserNotFound)
	e.do("POST", p+"/sca/login/complete", code(sandbox.SandboxSCACode)).fails(t, 404, apierror.UserNotFound)
	e.do("POST", p+"/sca/factors", map[string]string{"factor": "PASSKEY"}).fails(t, 404, apierror.UserNotFound)
	e.do("POST", p+"/sca/factors/confirm", code(sandbox.SandboxSCACode)).fails(t, 404, apierror.UserNotFound)
	e.do("DELETE", p+"/sca/factors/PASSKEY", nil).fails(t, 404, apierror.UserNotFound)
}

func TestSCARegionIsTheAddressCountry(t *testing.T) {
	for country, want := range map[string]bool{"DE": true, "FR": true, "NO": true, "GB": true, "US": false, "BR": false, "": false} {
		c := &sandbox.Customer{}
		if country != "" {
			c.Address = &sandbox.Address{Country: country}
		}
		if got := sandbox.InSCARegion(c); got != want {
			t.Errorf("InSCARegion(%q) = %v", country, got)
		}
	}
	if sandbox.InSCARegion(nil) {
		t.Error("InSCARegion(nil)")
	}
}

func TestSCALoginAndSessionRequired(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newBubbleEnv(t, sandbox.Config{})
		c := e.customerIn("DE", "")
		p := "/customers/" + c.ID
		a := e.external(c.ID, usdAccount("772000001"))
		ap := "/customers/external-accounts/" + a.ID

		// No SCA session: trust and untrust (start and confirm) need one.
		for _, step := range []string{"/trust", "/untrust"} {
			e.do("POST", ap+step, nil).fails(t, 409, apierror.SCASessionRequired)
			e.do("POST", ap+step+"/confirm", code(sandbox.SandboxSCACode)).fails(t, 409, apierror.SCASessionRequired)
		}

		// The login: nothing outstanding, wrong code, another challenge, expired.
		e.do("POST", p+"/sca/login/complete", code(sandbox.SandboxSCACode)).fails(t, 409, apierror.Conflict)
		var start sandbox.SCAStart
		e.do("POST", p+"/sca/login", "").ok(t, 200, &start)
		if start.SCAChallenge == nil || start.SCAChallenge.Purpose != "SCA_LOGIN" || start.SCAChallenge.ID == "" {
			t.Fatalf("login start %+v", start)
		}
		e.do("POST", p+"/sca/login/complete", code("000000")).fails(t, 400, apierror.InvalidInput)
		e.do("POST", p+"/sca/login/complete", map[string]string{"code": sandbox.SandboxSCACode, "challengeId": "ScaChallenge:other"}).
			fails(t, 400, apierror.InvalidInput)
		time.Sleep(6 * time.Minute)
		e.do("POST", p+"/sca/login/complete", code(sandbox.SandboxSCACode)).fails(t, 400, apierror.InvalidInput)
		e.do("POST", p+"/sca/login/complete", code(sandbox.SandboxSCACode)).fails(t, 409, apierror.Conflict)
		e.do("POST", ap+"/trust", nil).fails(t, 409, apierror.SCASessionRequired)

		sess := e.scaLogin(c.ID)
		if sess.CustomerID != c.ID || !sess.ExpiresAt.Equal(time.Now().Add(sandbox.SCALoginTTL)) {
			t.Fatalf("session %+v", sess)
		}
		// With the session, trust works and still answers its own conflicts.
		e.do("POST", ap+"/untrust", nil).fails(t, 409, apierror.Conflict)
		var ts sandbox.TrustStart
		e.do("POST", ap+"/trust", nil).ok(t, 200, &ts)
		var conf sandbox.TrustConfirm
		e.do("POST", ap+"/trust/confirm", map[string]string{"code": sandbox.SandboxSCACode, "challengeId": ts.SCAChallenge.ID}).ok(t, 200, &conf)
		if !conf.Trusted {
			t.Fatal("not trusted")
		}

		// The session expires after SCALoginTTL: an untrust started just before
		// then needs a new login to be confirmed, after which the outstanding
		// challenge still completes.
		time.Sleep(sandbox.SCALoginTTL - 2*time.Minute)
		e.do("POST", ap+"/untrust", nil).ok(t, 200, nil)
		time.Sleep(3 * time.Minute)
		e.do("POST", ap+"/untrust/confirm", code(sandbox.SandboxSCACode)).fails(t, 409, apierror.SCASessionRequired)
		e.do("POST", ap+"/trust", nil).fails(t, 409, apierror.SCASessionRequired)
		e.scaLogin(c.ID)
		e.do("POST", ap+"/untrust/confirm", code(sandbox.SandboxSCACode)).ok(t, 200, &conf)
		if conf.Trusted {
			t.Fatal("still trusted")
		}
	})
}

func TestSCAPasskeyFactorOnePerCustomer(t *testing.T) {
	e := newEnv(t)
	c := e.customerIn("FR", "")
	other := e.customerIn("FR", "")
	p := "/customers/" + c.ID

	e.do("POST", p+"/sca/factors", map[string]string{"factor": "FACE"}).fails(t, 400, apierror.InvalidInput)
	e.do("POST", p+"/sca/factors/confirm", code(sandbox.SandboxSCACode)).fails(t, 409, apierror.Conflict)
	e.do("DELETE", p+"/sca/factors/PASSKEY", nil).fails(t, 404, apierror.ReferenceNotFound)

	enrol := func(customerID, factor string) sandbox.SCAFactor {
		t.Helper()
		var start sandbox.SCAStart
		e.do("POST", "/customers/"+customerID+"/sca/factors", map[string]string{"factor": factor}).ok(t, 200, &start)
		if start.SCAChallenge == nil || start.SCAChallenge.Factor != factor {
			t.Fatalf("enrolment start %+v", start)
		}
		var f sandbox.SCAFactor
		e.do("POST", "/customers/"+customerID+"/sca/factors/confirm",
			map[string]string{"challengeId": start.SCAChallenge.ID, "code": sandbox.SandboxSCACode}).ok(t, 200, &f)
		return f
	}
	// A wrong code leaves the enrolment outstanding.
	e.do("POST", p+"/sca/factors", map[string]string{"factor": "PASSKEY"}).ok(t, 200, nil)
	e.do("POST", p+"/sca/factors/confirm", code("000000")).fails(t, 400, apierror.InvalidInput)
	e.do("POST", p+"/sca/factors/confirm", code(sandbox.SandboxSCACode)).ok(t, 200, nil)

	e.do("POST", p+"/sca/factors", map[string]string{"factor": "PASSKEY"}).fails(t, 409, apierror.PasskeyAlreadyEnrolled)
	// Other factors and other customers are unaffected.
	if f := enrol(c.ID, "SMS_OTP"); !f.Enrolled || f.Factor != "SMS_OTP" {
		t.Fatalf("factor %+v", f)
	}
	enrol(other.ID, "PASSKEY")
	e.do("POST", p+"/sca/factors", map[string]string{"factor": "PASSKEY"}).fails(t, 409, apierror.PasskeyAlreadyEnrolled)

	// Deleting the passkey allows another enrolment.
	e.do("DELETE", p+"/sca/factors/PASSKEY", nil).ok(t, 204, nil)
	if f := enrol(c.ID, "PASSKEY"); !f.Enrolled || f.Factor != "PASSKEY" {
		t.Fatalf("factor %+v", f)
	}
	e.do("POST", p+"/sca/factors", map[string]string{"factor": "PASSKEY"}).fails(t, 409, apierror.PasskeyAlreadyEnrolled)
}

func TestContactVerification(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newBubbleEnv(t, sandbox.Config{})
		// A provider that does not require contact verification.
		plain := e.customerIn("", "")
		for _, kind := range []string{"email", "phone"} {
			p := "/customers/" + plain.ID + "/verify-" + kind
			e.do("POST", p, nil).fails(t, 409, apierror.Conflict)
			e.do("POST", p+"/confirm", code(sandbox.SandboxSCACode)).fails(t, 409, apierror.Conflict)
		}
		unknown := "/customers/Customer:00000000-0000-4000-8000-000000000000/verify-email"
		e.do("POST", unknown, nil).fails(t, 404, apierror.UserNotFound)
		e.do("POST", unknown+"/confirm", code(sandbox.SandboxSCACode)).fails(t, 404, apierror.UserNotFound)

		// A provider that requires it: the email's user part ends in 901.
		var c sandbox.Customer
		e.do("POST", "/customers", map[string]any{"customerType": "INDIVIDUAL", "fullName": "Con Tact",
			"email": fmt.Sprintf("cv%d.901@example.com", uniq()), "phoneNumber": fmt.Sprintf("+4477009%05d", uniq())}).ok(t, 201, &c)
		if !sandbox.RequiresContactVerification(&c) {
			t.Fatal("customer does not require contact verification")
		}
		for _, kind := range []string{"email", "phone"} {
			p := "/customers/" + c.ID + "/verify-" + kind
			e.do("POST", p+"/confirm", code(sandbox.SandboxSCACode)).fails(t, 409, apierror.Conflict)
			var start sandbox.ContactVerificationStart
			e.do("POST", p, nil).ok(t, 200, &start)
			want := c.Email
			if kind == "phone" {
				want = c.PhoneNumber
			}
			if start.Contact != want || start.CustomerID != c.ID {
				t.Fatalf("%s start %+v", kind, start)
			}
			e.do("POST", p+"/confirm", code("000000")).fails(t, 400, apierror.InvalidInput)
			// An expired code, then a fresh one.
			time.Sleep(6 * time.Minute)
			e.do("POST", p+"/confirm", code(sandbox.SandboxSCACode)).fails(t, 400, apierror.InvalidInput)
			e.do("POST", p+"/confirm", code(sandbox.SandboxSCACode)).fails(t, 409, apierror.Conflict)
			e.do("POST", p, nil).ok(t, 200, nil)
			var v sandbox.ContactVerification
			e.do("POST", p+"/confirm", code(sandbox.SandboxSCACode)).ok(t, 200, &v)
			if !v.Verified || v.Contact != want {
				t.Fatalf("%s verification %+v", kind, v)
			}
			// Already verified.
			e.do("POST", p, nil).fails(t, 409, apierror.Conflict)
			e.do("POST", p+"/confirm", code(sandbox.SandboxSCACode)).fails(t, 409, apierror.Conflict)
		}

		// No phone number on record.
		noPhone := e.customerIn("", fmt.Sprintf("np%d.901@example.com", uniq()))
		e.do("POST", "/customers/"+noPhone.ID+"/verify-phone", nil).fails(t, 400, apierror.InvalidInput)
		e.do("POST", "/customers/"+noPhone.ID+"/verify-email", nil).ok(t, 200, nil)
	})
}

func TestSCATrustWithoutCustomer(t *testing.T) {
	e := newEnv(t)
	var a sandbox.ExternalAccount
	r := e.do("POST", "/platform/external-accounts", usdAccount("773000001"))
	if r.status != 201 {
		t.Skipf("no platform external accounts here: %d %s", r.status, r.body)
	}
	r.ok(t, 201, &a)
	// An account without a customer is outside every SCA region.
	ap := "/customers/external-accounts/" + a.ID
	for _, step := range []string{"/trust", "/untrust"} {
		e.do("POST", ap+step, nil).fails(t, 409, apierror.Conflict)
		e.do("POST", ap+step+"/confirm", code(sandbox.SandboxSCACode)).fails(t, 409, apierror.Conflict)
	}
}

package sandbox_test

import (
	"crypto/ecdh"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/sandbox"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/walletauth"
	"github.com/walletgate/walletgate/walletauth/authclient"
	"github.com/walletgate/walletgate/walletauth/envelope"
)

// member is one object member: its name and its raw JSON value.
type member struct{ name, value string }

// object writes members as a JSON object, the names given raw (so they may
// carry escapes).
func object(ms ...member) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = `"` + m.name + `":` + m.value
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// respelled writes members as a different spelling of the same JSON value:
// reversed order, whitespace, and the first letter of every name escaped.
func respelled(ms ...member) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		name := fmt.Sprintf(`\u%04x`, m.name[0]) + m.name[1:]
		parts[len(ms)-1-i] = "\n  \"" + name + "\" : " + m.value
	}
	return "{" + strings.Join(parts, " ,") + "\n}"
}

// upperFirst is name with its first letter in upper case: a member that
// encoding/json would match to the same field.
func upperFirst(name string) string { return strings.ToUpper(name[:1]) + name[1:] }

// diffCase is one signed-retry route set up for the differential test: the
// user's body, the member an attacker targets and the attacker's value, and a
// check that the effect ran the payload's parameters.
type diffCase struct {
	key          *authclient.ClientKey
	method, path string
	members      []member
	target       string // name of the attacked member
	attacker     string // raw JSON value the attacker wants executed
	status       int    // status of the executed retry
	// verify checks the executed answer against the signed parameters.
	verify func(t *testing.T, r resp, params map[string]any)
}

// TestSignedRetryDifferential tries, on every signed-retry route whose body
// carries values, first legs and retries whose bodies a lenient reader would
// take as one body (one bodySha256 under case-insensitive or last-wins
// member matching) while reading different values from them. Each must be
// refused, or execute exactly the parameters of the payload the user signed.
func TestSignedRetryDifferential(t *testing.T) {
	routes := map[string]func(t *testing.T, e *env) diffCase{
		"refresh session":        refreshCase,
		"export wallet":          exportCase,
		"add OAUTH credential":   addOAuthCase,
		"wallet privacy":         privacyCase,
		"customer email change":  emailCase,
		"OTP verify second leg":  otpCase,
		"add credential by type": addTypeCase,
		"transfer out":           transferOutCase,
	}
	for name, setup := range routes {
		t.Run(name, func(t *testing.T) {
			// Bodies that must be refused on the first leg: they have no
			// single reading.
			collisions := map[string]func(c diffCase) string{
				"case variant after": func(c diffCase) string {
					return object(append(c.members, member{upperFirst(c.target), c.attacker})...)
				},
				"case variant before": func(c diffCase) string {
					return object(append([]member{{upperFirst(c.target), c.attacker}}, c.members...)...)
				},
				"escaped case variant": func(c diffCase) string {
					return object(append(c.members, member{fmt.Sprintf(`\u%04x`, upperFirst(c.target)[0]) + c.target[1:], c.attacker})...)
				},
				"duplicate": func(c diffCase) string {
					return object(append(c.members, member{c.target, c.attacker})...)
				},
				"escaped duplicate": func(c diffCase) string {
					return object(append(c.members, member{fmt.Sprintf(`\u%04x`, c.target[0]) + c.target[1:], c.attacker})...)
				},
				"case variant alone": func(c diffCase) string {
					ms := []member{}
					for _, m := range c.members {
						if m.name == c.target {
							m = member{upperFirst(m.name), c.attacker}
						}
						ms = append(ms, m)
					}
					return object(ms...)
				},
				"nested collision": func(c diffCase) string {
					return object(append(c.members, member{"meta", `{"note":"a","Note":"b"}`})...)
				},
			}
			for variant, body := range collisions {
				t.Run(variant, func(t *testing.T) {
					e := newEnv(t)
					c := setup(t, e)
					e.do(c.method, c.path, body(c)).fails(t, 400, apierror.InvalidInput)
				})
			}

			// A retry with the attacker's value is another body.
			e := newEnv(t)
			c := setup(t, e)
			first := object(append(c.members, member{"n", "1.0"})...)
			ch := e.challenge(c.method, c.path, first)
			attacked := []member{}
			for _, m := range c.members {
				if m.name == c.target {
					m.value = c.attacker
				}
				attacked = append(attacked, m)
			}
			e.retry(c.key, ch, c.method, c.path, object(append(attacked, member{"n", "1"})...)).
				fails(t, 401, apierror.WalletSignatureBodyMismatch)

			// The same body spelled otherwise (order, whitespace, escaped
			// names, 1.0 as 1e0) executes, and executes the parameters.
			r := e.retry(c.key, ch, c.method, c.path, respelled(append(c.members, member{"n", "1e0"})...))
			if r.status != c.status {
				t.Fatalf("respelled retry: status %d, want %d: %s", r.status, c.status, r.body)
			}
			var payload struct {
				Parameters map[string]any `json:"parameters"`
			}
			if err := json.Unmarshal([]byte(ch.PayloadToSign), &payload); err != nil {
				t.Fatal(err)
			}
			c.verify(t, r, payload.Parameters)
		})
	}
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

// sessionID returns the id of the wallet's only active session.
func (e *env) sessionID(walletID string) string {
	e.t.Helper()
	var l struct{ Data []walletauth.AuthSession }
	e.do("GET", "/auth/sessions?accountId="+walletID, nil).ok(e.t, 200, &l)
	if len(l.Data) != 1 {
		e.t.Fatalf("wallet has %d sessions", len(l.Data))
	}
	return l.Data[0].ID
}

func refreshCase(t *testing.T, e *env) diffCase {
	_, wallet := e.customer("Rita Refresh")
	key := e.login(wallet)
	user, _ := authclient.NewClientKey()
	attacker, _ := authclient.NewClientKey()
	return diffCase{key: key, method: "POST", path: "/auth/sessions/" + e.sessionID(wallet) + "/refresh",
		members: []member{{"clientPublicKey", quote(user.PublicKeyHex())}}, target: "clientPublicKey",
		attacker: quote(attacker.PublicKeyHex()), status: 201,
		verify: func(t *testing.T, r resp, params map[string]any) {
			var s walletauth.AuthSession
			r.ok(t, 201, &s)
			if params["clientPublicKey"] != user.PublicKeyHex() {
				t.Fatalf("payload parameters %v", params)
			}
			if _, err := user.OpenSessionKey(s.EncryptedSessionSigningKey); err != nil {
				t.Fatalf("the new session is not sealed to the signed key: %v", err)
			}
			if _, err := attacker.OpenSessionKey(s.EncryptedSessionSigningKey); err == nil {
				t.Fatal("the attacker opens the new session key")
			}
		}}
}

func exportCase(t *testing.T, e *env) diffCase {
	_, wallet := e.customer("Exa Differential")
	key := e.login(wallet)
	userPriv, userPub := exportKey(t)
	_, attackerPub := exportKey(t)
	return diffCase{key: key, method: "POST", path: "/internal-accounts/" + wallet + "/export",
		members: []member{{"clientPublicKey", quote(userPub)}}, target: "clientPublicKey", attacker: quote(attackerPub), status: 200,
		verify: func(t *testing.T, r resp, params map[string]any) {
			var out walletauth.WalletExport
			r.ok(t, 200, &out)
			if params["clientPublicKey"] != userPub {
				t.Fatalf("payload parameters %v", params)
			}
			if plain, err := openExport(t, e, userPriv, out); err != nil || string(plain) != sandbox.SandboxMnemonic {
				t.Fatalf("the export is not sealed to the signed key: %v", err)
			}
		}}
}

func addOAuthCase(t *testing.T, e *env) diffCase {
	_, wallet := e.customer("Olga OAuth")
	key := e.login(wallet)
	token := func(sub, email string) string {
		return dummyToken(map[string]any{"iss": "https://accounts.google.com", "aud": sandbox.DefaultOIDCAudience, "sub": sub,
			"email": email, "iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix()})
	}
	return diffCase{key: key, method: "POST", path: "/auth/credentials",
		members: []member{{"type", `"OAUTH"`}, {"accountId", quote(wallet)}, {"oidcToken", quote(token("user-sub", "olga@example.com"))}},
		target:  "oidcToken", attacker: quote(token("attacker-sub", "mallory@example.com")), status: 201,
		verify: func(t *testing.T, r resp, params map[string]any) {
			var m walletauth.AuthMethod
			r.ok(t, 201, &m)
			if params["subject"] != "user-sub" || params["issuer"] != "https://accounts.google.com" || params["oidcTokenSha256"] == "" {
				t.Fatalf("payload parameters %v", params)
			}
			if m.Type != "OAUTH" || m.Nickname != "olga@example.com" || m.Nickname != params["nickname"] {
				t.Fatalf("added %+v, signed %v", m, params)
			}
		}}
}

func addTypeCase(t *testing.T, e *env) diffCase {
	var c sandbox.Customer
	e.do("POST", "/customers", map[string]any{"customerType": "INDIVIDUAL", "fullName": "Tilly Type",
		"email": fmt.Sprintf("user%d@example.com", uniq()), "phoneNumber": "+15555550123"}).ok(t, 201, &c)
	wallet := e.wallet(c.ID)
	key := e.login(wallet)
	// The account holds an EMAIL_OTP credential: the attacker's EMAIL_OTP
	// add would fail, so the attacked value is the type alone.
	return diffCase{key: key, method: "POST", path: "/auth/credentials",
		members: []member{{"type", `"SMS_OTP"`}, {"accountId", quote(wallet)}}, target: "type", attacker: `"PASSKEY"`, status: 201,
		verify: func(t *testing.T, r resp, params map[string]any) {
			var m walletauth.AuthMethod
			r.ok(t, 201, &m)
			if params["type"] != "SMS_OTP" || params["phone"] != "+15555550123" || m.Type != "SMS_OTP" || m.Nickname != "+15555550123" {
				t.Fatalf("added %+v, signed %v", m, params)
			}
		}}
}

func privacyCase(t *testing.T, e *env) diffCase {
	_, wallet := e.customer("Pia Privacy")
	key := e.login(wallet)
	return diffCase{key: key, method: "PATCH", path: "/internal-accounts/" + wallet,
		members: []member{{"privateEnabled", "true"}}, target: "privateEnabled", attacker: "false", status: 200,
		verify: func(t *testing.T, r resp, params map[string]any) {
			var a sandbox.InternalAccount
			r.ok(t, 200, &a)
			if params["privateEnabled"] != true || !a.PrivateEnabled {
				t.Fatalf("wallet %+v, signed %v", a, params)
			}
		}}
}

func transferOutCase(t *testing.T, e *env) diffCase {
	c, wallet := e.customer("Tess Transfer")
	key := e.login(wallet)
	e.do("POST", "/sandbox/internal-accounts/"+wallet+"/fund", map[string]any{"amount": 10_000, "currency": "USD"}).ok(t, 200, nil)
	ext := e.external(c.ID, usdAccount(fmt.Sprintf("5%06d1", uniq()%1_000_000)))
	return diffCase{key: key, method: "POST", path: "/transfer-out",
		members: []member{{"source", `{"accountId":` + quote(wallet) + `}`}, {"destination", `{"accountId":` + quote(ext.ID) + `}`}, {"amount", "300"}},
		target:  "amount", attacker: "9000", status: 201,
		verify: func(t *testing.T, r resp, params map[string]any) {
			var tx sandbox.Transaction
			r.ok(t, 201, &tx)
			if params["amount"] != 300.0 || params["sourceAccountId"] != wallet || params["destinationAccountId"] != ext.ID || params["currency"] != "USD" {
				t.Fatalf("payload parameters %v", params)
			}
			if tx.SentAmount == nil || *tx.SentAmount != (sandbox.Money{Amount: 300, Currency: "USD"}) || e.balance(wallet, "USD") != 9_700 {
				t.Fatalf("transferred %+v, balance %d, signed 300", tx, e.balance(wallet, "USD"))
			}
		}}
}

func emailCase(t *testing.T, e *env) diffCase {
	c, wallet := e.customer("Emil Email")
	key := e.login(wallet)
	user := fmt.Sprintf("emil%d@example.com", uniq())
	return diffCase{key: key, method: "PATCH", path: "/customers/" + c.ID,
		members: []member{{"email", quote(user)}}, target: "email", attacker: quote(fmt.Sprintf("mallory%d@example.com", uniq())), status: 200,
		verify: func(t *testing.T, r resp, params map[string]any) {
			var got sandbox.Customer
			r.ok(t, 200, &got)
			if params["email"] != user || got.Email != user {
				t.Fatalf("customer %+v, signed %v", got, params)
			}
		}}
}

func otpCase(t *testing.T, e *env) diffCase {
	_, wallet := e.customer("Otto OTP")
	var creds struct{ Data []walletauth.AuthMethod }
	e.do("GET", "/auth/credentials?accountId="+wallet, nil).ok(t, 200, &creds)
	id := creds.Data[0].ID
	var m walletauth.AuthMethod
	e.do("POST", "/auth/credentials/"+id+"/challenge", "{}").ok(t, 200, &m)
	seal := func(k *authclient.ClientKey) string {
		b, err := k.SealOTP(m.OTPEncryptionTargetBundle, e.sim.Auth().SigningPublicKey(), walletauth.SandboxOTPCode, nil)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	user, _ := authclient.NewClientKey()
	attacker, _ := authclient.NewClientKey()
	return diffCase{key: user, method: "POST", path: "/auth/credentials/" + id + "/verify",
		members: []member{{"type", `"EMAIL_OTP"`}, {"encryptedOtpBundle", quote(seal(user))}},
		target:  "encryptedOtpBundle", attacker: quote(seal(attacker)), status: 200,
		verify: func(t *testing.T, r resp, params map[string]any) {
			r.ok(t, 200, nil)
			if params["publicKey"] != user.PublicKeyHex() {
				t.Fatalf("payload parameters %v", params)
			}
		}}
}

// TestGoAPIRetryRunsSignedParameters calls the simulator's signed-retry
// methods from Go with a retry whose request value differs from the signed
// body: the effect must run the payload's parameters and ignore the request.
func TestGoAPIRetryRunsSignedParameters(t *testing.T) {
	e := newEnv(t)
	_, wallet := e.customer("Gina Go")
	key := e.login(wallet)
	ctx := t.Context()
	stamp := func(call signedretry.Request, ch *signedretry.Challenge) signedretry.Request {
		sig, err := key.Stamp(ch.PayloadToSign)
		if err != nil {
			t.Fatal(err)
		}
		call.Signature, call.RequestID = sig, ch.RequestID
		return call
	}

	userPriv, userPub := exportKey(t)
	_, attackerPub := exportKey(t)
	first := signedretry.Request{Body: []byte(`{"clientPublicKey":"` + userPub + `"}`)}
	_, ch, err := e.sim.ExportWallet(ctx, wallet, walletauth.ExportRequest{ClientPublicKey: userPub}, first)
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := e.sim.ExportWallet(ctx, wallet, walletauth.ExportRequest{ClientPublicKey: attackerPub}, stamp(first, ch))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := openExport(t, e, userPriv, *out); err != nil {
		t.Fatalf("export not sealed to the signed key: %v", err)
	}

	// Transfer-out: the retry's request names another amount; the signed
	// one is transferred.
	c, w2 := e.customer("Gina Transfer")
	key2 := e.login(w2)
	e.do("POST", "/sandbox/internal-accounts/"+w2+"/fund", map[string]any{"amount": 1_000, "currency": "USD"}).ok(t, 200, nil)
	ext := e.external(c.ID, usdAccount("44440001"))
	treq := sandbox.TransferRequest{Source: sandbox.AccountRef{AccountID: w2}, Destination: sandbox.AccountRef{AccountID: ext.ID}, Amount: 100}
	tfirst := signedretry.Request{}
	_, tch, err := e.sim.TransferOut(ctx, treq, tfirst)
	if err != nil || tch == nil {
		t.Fatalf("first leg %+v %v", tch, err)
	}
	sig, err := key2.Stamp(tch.PayloadToSign)
	if err != nil {
		t.Fatal(err)
	}
	forged := treq
	forged.Amount = 900
	tretry := tfirst
	tretry.Body, _ = json.Marshal(treq) // the signed body, as the HTTP client sent it
	tretry.Signature, tretry.RequestID = sig, tch.RequestID
	tx, _, err := e.sim.TransferOut(ctx, forged, tretry)
	if err != nil || tx.SentAmount.Amount != 100 || e.balance(w2, "USD") != 900 {
		t.Fatalf("transfer %+v %v balance %d, signed 100", tx, err, e.balance(w2, "USD"))
	}

	on, off := true, false
	first = signedretry.Request{Body: []byte(`{"privateEnabled":true}`)}
	_, ch, err = e.sim.UpdateWallet(ctx, wallet, walletauth.PrivacyRequest{PrivateEnabled: &on}, first)
	if err != nil {
		t.Fatal(err)
	}
	a, _, err := e.sim.UpdateWallet(ctx, wallet, walletauth.PrivacyRequest{PrivateEnabled: &off}, stamp(first, ch))
	if err != nil || !a.PrivateEnabled {
		t.Fatalf("privacy %+v %v, signed true", a, err)
	}
}

// openExport checks an export envelope as @turnkey/crypto's
// decryptExportBundle does, pinning the simulator's signing key and
// SandboxOrganizationID, and opens it with the private key it was sealed to.
func openExport(t *testing.T, e *env, priv *ecdh.PrivateKey, out walletauth.WalletExport) ([]byte, error) {
	t.Helper()
	return envelope.OpenExportBundle(priv, out.EncryptedWalletCredentials, e.sim.Auth().SigningPublicKey(), sandbox.SandboxOrganizationID)
}

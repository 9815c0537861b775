package walletauth_test

import (
	"cmp"
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/ownership"
	"github.com/walletgate/walletgate/ownership/policy"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/memory"
	"github.com/walletgate/walletgate/walletauth"
	"github.com/walletgate/walletgate/walletauth/authclient"
	"github.com/walletgate/walletgate/walletauth/oidc"
	"github.com/walletgate/walletgate/walletauth/passkey"
)

// The attacker of the chaos test holds one EMAIL_OTP session of the victim
// wallet, phished from its owner, and tries every path from it to money or
// to the wallet itself:
//
//   - it enrolls credentials of its own with the stolen session (an OAUTH
//     identity, a passkey), and more with the sessions of those, and logs
//     in with them;
//   - it refreshes its sessions, the stolen one included;
//   - it signs payouts from the policy's step-up amount, which need a
//     passkey's assurance, with every session it holds;
//   - it signs payouts the policy holds for approval and approves them
//     with its other credentials, as a second credential of the wallet;
//   - it revokes the owner's credentials, all older than its own, with the
//     sessions of the credentials it enrolled.
//
// Everything it enrolls descends from the stolen EMAIL_OTP session within
// the security-change period, so it carries an EMAIL_OTP credential's
// assurance and answers to the stolen credential: each of these attempts
// but the enrolments, logins, refreshes and held payouts must be refused.
// It runs a fixed campaign first, so that every path is tried early in
// even the shortest run, then random attempts until the run ends.

// chaosAttackPrefix begins the names of the attacker's attempts in the
// run's figures.
const chaosAttackPrefix = "attack: "

const (
	chaosApproveOp        = "CHAOS_APPROVE_PAYOUT"
	chaosAttackMaxEach    = 2  // credentials of each type the attacker enrolls at most
	chaosAttackEnrolTries = 12 // enrolment attempts in a run
	chaosAttackPhaseTries = 4  // attempts of a campaign step that may or may not have happened
	chaosAttackMaxHeld    = 64 // held payouts it remembers
)

// chaosAttacker is the holder of the stolen session. Only its own
// goroutine calls its methods.
type chaosAttacker struct {
	w      *chaosWorld
	t      testing.TB
	victim *chaosWallet
	stolen chaosSession

	creds    []attackerCredential
	sessions []chaosSession // the stolen session first
	held     []heldPayout   // payouts it signed that the policy held
	subjects int
	enrols   int // enrolment attempts
	phase    int // the campaign step it is at
	tries    int // attempts of that step
	// refusals counts the codes of its refused attempts, by attempt, and
	// keeps the first reason of each.
	refusals map[string]map[string]int
	reasons  map[string]string
}

// attackerCredential is a credential the attacker enrolled.
type attackerCredential struct {
	chaosCredential
	key *authenticator // a PASSKEY's authenticator
}

// newChaosAttacker creates the victim wallet, its owner's credentials (the
// wallet's EMAIL_OTP credential and an SMS_OTP one its owner added) and a
// proven payout account, and the attacker holding the owner's EMAIL_OTP
// session.
func newChaosAttacker(t *testing.T, w *chaosWorld) *chaosAttacker {
	t.Helper()
	ctx := t.Context()
	svc := w.auth[0]
	acct, email, err := svc.CreateWallet(ctx, walletauth.NewWallet{CustomerID: "Customer:chaos-victim", Email: "victim@example.com",
		Phone: "+14155559999"})
	if err != nil {
		t.Fatal(err)
	}
	cw := &chaosWallet{ID: acct.ID, Customer: acct.CustomerID, creds: map[string]chaosCredential{email.ID: {ID: email.ID, Type: storage.EmailOTP}}}
	w.learnCredential(email.ID, storage.EmailOTP)

	// The owner logs in with a code; the attacker phishes that session.
	m, err := svc.Challenge(ctx, email.ID, walletauth.ChallengeRequest{})
	if err != nil {
		t.Fatal(err)
	}
	key, _ := authclient.NewClientKey()
	bundle, err := key.SealOTP(m.OTPEncryptionTargetBundle, svc.SigningPublicKey(), walletauth.SandboxOTPCode, nil)
	if err != nil {
		t.Fatal(err)
	}
	vreq := walletauth.VerifyRequest{Type: storage.EmailOTP, EncryptedOTPBundle: bundle}
	body, _ := json.Marshal(vreq)
	first := call("POST", "/auth/credentials/"+email.ID+"/verify", string(body))
	_, ch, err := svc.Verify(ctx, email.ID, vreq, first)
	if err != nil {
		t.Fatal(err)
	}
	retry, err := stamp(first, ch, key)
	if err != nil {
		t.Fatal(err)
	}
	sess, _, err := svc.Verify(ctx, email.ID, vreq, retry)
	if err != nil {
		t.Fatal(err)
	}
	stolen := chaosSession{ID: sess.ID, Credential: email.ID, Key: key}
	cw.sessions = []chaosSession{stolen}

	// The owner adds an SMS_OTP credential before the theft.
	areq := walletauth.AddCredentialRequest{AccountID: acct.ID, Type: storage.SMSOTP}
	body, _ = json.Marshal(areq)
	first = call("POST", "/auth/credentials", string(body))
	if _, ch, err = svc.AddCredential(ctx, areq, first); err != nil {
		t.Fatal(err)
	}
	if retry, err = stamp(first, ch, key); err != nil {
		t.Fatal(err)
	}
	sms, _, err := svc.AddCredential(ctx, areq, retry)
	if err != nil {
		t.Fatal(err)
	}
	cw.creds[sms.ID] = chaosCredential{ID: sms.ID, Type: storage.SMSOTP}
	w.learnCredential(sms.ID, storage.SMSOTP)

	// The payout account, a self-custody wallet proven at registration.
	x := &chaosExternal{keys: map[string]*ecdsa.PrivateKey{}}
	for k := range x.addrs {
		key, addr := evmKey(fmt.Sprintf("chaos-victim-%d", k))
		x.addrs[k], x.keys[addr] = addr, key
	}
	a, err := w.own[0].RegisterAccount(ctx, ownership.NewAccount{CustomerID: acct.CustomerID, Address: x.addrs[0], Currency: "USDC",
		AccountType: ownership.AccountEthereum, OwnershipType: ownership.FirstParty})
	if err != nil {
		t.Fatal(err)
	}
	x.ID = a.ID
	proof, err := w.own[0].StartChallenge(ctx, x.ID, ownership.MethodWalletSignature, ownership.CustomerTree)
	if err != nil {
		t.Fatal(err)
	}
	w.proofs[[2]string{x.ID, x.addrs[0]}]++
	proven, err := w.own[0].Verify(ctx, x.ID, ownership.VerifyRequest{Signature: evmSignText(x.keys[x.addrs[0]], proof.MessageToSign)},
		ownership.CustomerTree)
	if err != nil {
		t.Fatal(err)
	}
	if proven.Status != storage.StatusActive {
		t.Fatalf("the victim's payout account is %s after its proof", proven.Status)
	}
	cw.ext = []*chaosExternal{x}
	return &chaosAttacker{w: w, t: t, victim: cw, stolen: stolen, sessions: []chaosSession{stolen}}
}

// count records an attempt of the attacker: what it tried, signed by a
// session of a credential of type by ("" for none).
func (at *chaosAttacker) count(what string, by storage.CredentialType, err error) string {
	name := chaosAttackPrefix + what
	if by != "" {
		name += " (" + string(by) + ")"
	}
	o := at.w.count(name, err)
	if o == "refused" {
		e := apierror.As(err)
		code := fmt.Sprintf("%d %s", e.Status(), apierror.CodeOf(err))
		if at.refusals == nil {
			at.refusals, at.reasons = map[string]map[string]int{}, map[string]string{}
		}
		if at.refusals[name] == nil {
			at.refusals[name] = map[string]int{}
		}
		at.refusals[name][code]++
		if _, ok := at.reasons[name+code]; !ok {
			at.reasons[name+code] = e.Error()
		}
	}
	return o
}

// report writes the codes of the refused attempts, by attempt, with the
// first reason of each when verbose.
func (at *chaosAttacker) report(b *strings.Builder, verbose bool) {
	names := slices.Sorted(maps.Keys(at.refusals))
	for _, name := range names {
		codes := slices.Sorted(maps.Keys(at.refusals[name]))
		parts := make([]string, len(codes))
		for i, code := range codes {
			parts[i] = fmt.Sprintf("%s ×%d", code, at.refusals[name][code])
		}
		fmt.Fprintf(b, "  %-40s refused with %s\n", name, strings.Join(parts, ", "))
		if verbose {
			for _, code := range codes {
				fmt.Fprintf(b, "      %s\n", at.reasons[name+code])
			}
		}
	}
}

// typeOf is the type of the credential of session s.
func (at *chaosAttacker) typeOf(s chaosSession) storage.CredentialType {
	if s.Credential == at.stolen.Credential {
		return storage.EmailOTP
	}
	for _, c := range at.creds {
		if c.ID == s.Credential {
			return c.Type
		}
	}
	return ""
}

// session picks one of its sessions of a credential of type typ ("" for
// any); ok false when it has none.
func (at *chaosAttacker) session(rng *rand.Rand, typ storage.CredentialType) (chaosSession, bool) {
	var ok []chaosSession
	for _, s := range at.sessions {
		if typ == "" || at.typeOf(s) == typ {
			ok = append(ok, s)
		}
	}
	if len(ok) == 0 {
		return chaosSession{}, false
	}
	return ok[rng.IntN(len(ok))], true
}

// own picks one of its own credentials of type typ, without a session
// when fresh is set.
func (at *chaosAttacker) own(rng *rand.Rand, typ storage.CredentialType, fresh bool) (attackerCredential, bool) {
	var ok []attackerCredential
	for _, c := range at.creds {
		if c.Type == typ && (!fresh || !slices.ContainsFunc(at.sessions, func(s chaosSession) bool { return s.Credential == c.ID })) {
			ok = append(ok, c)
		}
	}
	if len(ok) == 0 {
		return attackerCredential{}, false
	}
	return ok[rng.IntN(len(ok))], true
}

func (at *chaosAttacker) owned(typ storage.CredentialType) int {
	n := 0
	for _, c := range at.creds {
		if c.Type == typ {
			n++
		}
	}
	return n
}

// The campaign: each step returns the outcome of its attempt, "skip" when
// what it needs is missing. A step that may or may not have happened is
// tried again, a few times.
var chaosCampaign = []func(at *chaosAttacker, c context.Context, rng *rand.Rand) string{
	func(at *chaosAttacker, c context.Context, rng *rand.Rand) string {
		return at.enrol(c, rng, storage.OAuth, at.stolen)
	},
	func(at *chaosAttacker, c context.Context, rng *rand.Rand) string {
		return at.loginNew(c, rng, storage.OAuth)
	},
	func(at *chaosAttacker, c context.Context, rng *rand.Rand) string {
		s, ok := at.session(rng, storage.OAuth)
		if !ok {
			s = at.stolen
		}
		return at.enrol(c, rng, storage.Passkey, s)
	},
	func(at *chaosAttacker, c context.Context, rng *rand.Rand) string {
		return at.loginNew(c, rng, storage.Passkey)
	},
	func(at *chaosAttacker, c context.Context, rng *rand.Rand) string {
		return at.withSession(rng, storage.Passkey, func(s chaosSession) string { return at.refresh(c, rng, s) })
	},
	func(at *chaosAttacker, c context.Context, rng *rand.Rand) string {
		return at.withSession(rng, storage.Passkey, func(s chaosSession) string { return at.payout(c, rng, s, chaosStepUp) })
	},
	func(at *chaosAttacker, c context.Context, rng *rand.Rand) string {
		return at.withSession(rng, storage.OAuth, func(s chaosSession) string { return at.payout(c, rng, s, chaosStepUp) })
	},
	func(at *chaosAttacker, c context.Context, rng *rand.Rand) string {
		return at.payout(c, rng, at.stolen, chaosApproval)
	},
	func(at *chaosAttacker, c context.Context, rng *rand.Rand) string {
		return at.withSession(rng, storage.Passkey, func(s chaosSession) string { return at.approveLatest(c, rng, s) })
	},
	func(at *chaosAttacker, c context.Context, rng *rand.Rand) string {
		return at.payout(c, rng, at.stolen, chaosApproval)
	},
	func(at *chaosAttacker, c context.Context, rng *rand.Rand) string {
		return at.withSession(rng, storage.OAuth, func(s chaosSession) string { return at.approveLatest(c, rng, s) })
	},
	func(at *chaosAttacker, c context.Context, rng *rand.Rand) string {
		return at.withSession(rng, storage.Passkey, func(s chaosSession) string { return at.revokeOwner(c, rng, storage.SMSOTP, s) })
	},
	func(at *chaosAttacker, c context.Context, rng *rand.Rand) string {
		return at.withSession(rng, storage.OAuth, func(s chaosSession) string { return at.revokeOwner(c, rng, storage.EmailOTP, s) })
	},
}

func (at *chaosAttacker) withSession(rng *rand.Rand, typ storage.CredentialType, f func(chaosSession) string) string {
	s, ok := at.session(rng, typ)
	if !ok {
		return "skip"
	}
	return f(s)
}

// step makes one attempt: the campaign's next step, then random ones.
func (at *chaosAttacker) step(rng *rand.Rand) {
	c, cancel := at.w.opCtx(rng)
	defer cancel()
	if at.phase < len(chaosCampaign) {
		at.tries++
		if o := chaosCampaign[at.phase](at, c, rng); o != "maybe" || at.tries >= chaosAttackPhaseTries {
			at.phase, at.tries = at.phase+1, 0
		}
		return
	}
	signed := func(f func(chaosSession) string) string { return at.withSession(rng, "", f) }
	switch n := rng.IntN(100); {
	case n < 10:
		typ := []storage.CredentialType{storage.OAuth, storage.Passkey}[rng.IntN(2)]
		if at.owned(typ) < chaosAttackMaxEach && at.enrols < chaosAttackEnrolTries {
			signed(func(s chaosSession) string { return at.enrol(c, rng, typ, s) })
		}
	case n < 20:
		typ := []storage.CredentialType{storage.OAuth, storage.Passkey}[rng.IntN(2)]
		if cred, ok := at.own(rng, typ, false); ok {
			at.login(c, rng, cred)
		}
	case n < 28:
		signed(func(s chaosSession) string { return at.refresh(c, rng, s) })
	case n < 48:
		signed(func(s chaosSession) string { return at.payout(c, rng, s, chaosStepUp) })
	case n < 63:
		signed(func(s chaosSession) string { return at.payout(c, rng, s, chaosApproval) })
	case n < 83:
		if len(at.held) > 0 {
			h := at.held[rng.IntN(len(at.held))]
			signed(func(s chaosSession) string { return at.approve(c, rng, h, s) })
		}
	default:
		// Only the sessions of what it enrolled: the stolen credential is
		// the owner's first, which may remove the others.
		s, ok := at.session(rng, []storage.CredentialType{storage.OAuth, storage.Passkey}[rng.IntN(2)])
		if ok {
			at.revokeOwner(c, rng, []storage.CredentialType{storage.EmailOTP, storage.SMSOTP}[rng.IntN(2)], s)
		}
	}
}

// enrol adds a credential of type typ of its own to the victim wallet,
// signed by s.
func (at *chaosAttacker) enrol(c context.Context, rng *rand.Rand, typ storage.CredentialType, s chaosSession) string {
	w, cw := at.w, at.victim
	at.enrols++
	what := "enrol " + string(typ)
	req := walletauth.AddCredentialRequest{AccountID: cw.ID, Type: typ}
	cred := attackerCredential{}
	switch typ {
	case storage.OAuth:
		at.subjects++
		cred.Subject = fmt.Sprintf("attacker-sub-%d", at.subjects)
		req.OIDCToken = chaosToken(cred.Subject, "")
	case storage.Passkey:
		cred.key = newAuthenticator(at.t)
		var rc *passkey.RegistrationChallenge
		err := w.do(c, rng, func(ctx context.Context, r chaosReplica) (err error) {
			rc, err = r.auth.PasskeyRegistrationChallenge(ctx, cw.ID)
			return err
		})
		if err != nil {
			return at.count(what, at.typeOf(s), err)
		}
		req.Nickname, req.Challenge, req.Attestation = "attacker key", rc.Challenge, cred.key.attest(at.t, rc.Challenge, cw.ID)
	}
	body, _ := json.Marshal(req)
	first := call("POST", "/auth/credentials", string(body))
	var m *walletauth.AuthMethod
	leg1, err := w.signed(c, rng, first, s.Key, func(ctx context.Context, r chaosReplica, rq signedretry.Request) (ch *signedretry.Challenge, err error) {
		m, ch, err = r.auth.AddCredential(ctx, req, rq)
		return ch, err
	})
	o := at.count(what, at.typeOf(s), cmp.Or(leg1, err))
	if o != "ok" {
		return o
	}
	cred.ID, cred.Type = m.ID, m.Type
	at.creds = append(at.creds, cred)
	w.learnCredential(m.ID, m.Type)
	w.expect(cw.ID, "AUTH_CREDENTIAL.ADDED of the attacker's "+m.ID+" signed by "+s.ID, func(r *replay) bool {
		x := r.Credentials[m.ID]
		return x != nil && r.Signers[x.Added] == s.ID
	})
	return o
}

// loginNew logs in with one of its credentials of type typ that has no
// session yet.
func (at *chaosAttacker) loginNew(c context.Context, rng *rand.Rand, typ storage.CredentialType) string {
	cred, ok := at.own(rng, typ, true)
	if !ok {
		return "skip"
	}
	return at.login(c, rng, cred)
}

// login opens a session of cred: an OAUTH sign-in or a passkey ceremony.
func (at *chaosAttacker) login(c context.Context, rng *rand.Rand, cred attackerCredential) string {
	w, cw := at.w, at.victim
	key, _ := authclient.NewClientKey()
	var sess *walletauth.AuthSession
	var err error
	switch cred.Type {
	case storage.OAuth:
		err = w.do(c, rng, func(ctx context.Context, r chaosReplica) (err error) {
			sess, _, err = r.auth.Verify(ctx, cred.ID, walletauth.VerifyRequest{Type: storage.OAuth,
				OIDCToken: chaosToken(cred.Subject, oidc.NonceFor(key.PublicKeyHex())), ClientPublicKey: key.PublicKeyHex()}, signedretry.Request{})
			return err
		})
	case storage.Passkey:
		var cr *walletauth.ChallengeResponse
		err = w.do(c, rng, func(ctx context.Context, r chaosReplica) (err error) {
			cr, err = r.auth.Challenge(ctx, cred.ID, walletauth.ChallengeRequest{ClientPublicKey: key.PublicKeyHex()})
			return err
		})
		if err == nil {
			assertion := cred.key.assert(at.t, cr.Challenge)
			err = w.do(c, rng, func(ctx context.Context, r chaosReplica) (err error) {
				sess, _, err = r.auth.Verify(ctx, cred.ID, walletauth.VerifyRequest{Type: storage.Passkey, Assertion: assertion},
					signedretry.Request{Method: "POST", Path: "/auth/credentials/" + cred.ID + "/verify", RequestID: cr.RequestID})
				return err
			})
		}
	}
	o := at.count("login "+string(cred.Type), "", err)
	if o != "ok" {
		return o
	}
	at.sessions = append(at.sessions, chaosSession{ID: sess.ID, Credential: cred.ID, Key: key})
	w.expect(cw.ID, "AUTH_SESSION.CREATED of the attacker's session "+sess.ID, func(r *replay) bool { return r.Sessions[sess.ID] != nil })
	return o
}

// refresh refreshes its session s: the new session keeps s's
// authentication time.
func (at *chaosAttacker) refresh(c context.Context, rng *rand.Rand, s chaosSession) string {
	w, cw := at.w, at.victim
	fresh, key, leg1, err := w.refresh(c, rng, s)
	err = cmp.Or(leg1, err)
	o := at.count("refresh", at.typeOf(s), err)
	if o != "ok" {
		return o
	}
	at.sessions = append(at.sessions, chaosSession{ID: fresh.ID, Credential: s.Credential, Key: key})
	w.expect(cw.ID, "AUTH_SESSION.REFRESHED of the attacker's "+s.ID+" into "+fresh.ID, func(r *replay) bool {
		x := r.Sessions[fresh.ID]
		return x != nil && x.Previous == s.ID && r.Signers[x.Refreshed] == s.ID
	})
	return o
}

// payout signs a host payout of amount USDC from the victim wallet to its
// account with s: from the step-up amount it needs a passkey's assurance,
// below it the policy holds it for approval.
func (at *chaosAttacker) payout(c context.Context, rng *rand.Rand, s chaosSession, amount int64) string {
	what := "held payout"
	if amount >= chaosStepUp {
		what = "step-up payout"
	}
	pay := &chaosPayParam{AccountID: at.victim.ext[0].ID, Amount: amount, Currency: "USDC"}
	var held *heldPayout
	_, _, err := at.w.hostOperationBy(c, rng, at.victim, s, pay, func(h heldPayout) { held = &h })
	o := at.count(what, at.typeOf(s), err)
	if o != "refused" && held != nil {
		// A held payout that may have committed: approving one that did
		// not is a 404.
		at.held = append(at.held, *held)
		if len(at.held) > chaosAttackMaxHeld {
			at.held = slices.Delete(at.held, 0, len(at.held)-chaosAttackMaxHeld)
		}
	}
	return o
}

// approveLatest approves the latest payout it had held with s.
func (at *chaosAttacker) approveLatest(c context.Context, rng *rand.Rand, s chaosSession) string {
	if len(at.held) == 0 {
		return "skip"
	}
	return at.approve(c, rng, at.held[len(at.held)-1], s)
}

// chaosApproveParams are the signed parameters of an approval of a held
// payout, a host operation of the wallet.
type chaosApproveParams struct {
	ApprovalID string `json:"approvalId"`
	OpID       string `json:"opId"`
}

// approve approves the held payout h as a second credential of the
// wallet: a host operation signed by s whose effect is the policy's
// Approve with that authorization, executing the payout through the gate
// when the approval is the last.
func (at *chaosAttacker) approve(c context.Context, rng *rand.Rand, h heldPayout, s chaosSession) string {
	w, cw := at.w, at.victim
	p := chaosApproveParams{ApprovalID: h.approval, OpID: h.opID}
	body, _ := json.Marshal(p)
	first := call("POST", "/chaos/payout-approvals/"+h.approval+"/approve", string(body))
	var ch *signedretry.Challenge
	err := w.do(c, rng, func(ctx context.Context, r chaosReplica) (err error) {
		_, _, ch, err = walletauth.Authorize(ctx, r.auth, walletauth.HostOperation[chaosApproveParams, struct{}]{Type: chaosApproveOp,
			AccountID: cw.ID, Parameters: p}, first)
		return err
	})
	if err == nil {
		retry, serr := stamp(first, ch, s.Key)
		if serr != nil {
			panic(serr)
		}
		err = w.do(c, rng, func(ctx context.Context, r chaosReplica) error {
			effect := func(ectx context.Context, tx storage.Tx, a *signedretry.Authorization, sp chaosApproveParams) (struct{}, error) {
				_, _, err := w.limits.Approve(ectx, tx, sp.ApprovalID, policy.Approver{Authorization: a},
					func(ctx context.Context, tx storage.Tx, _ *policy.Allowed) error {
						return payout(ctx, tx, r.own, h.opID, &h.pay, nil)
					})
				return struct{}{}, err
			}
			_, _, _, err := walletauth.Authorize(ctx, r.auth, walletauth.HostOperation[chaosApproveParams, struct{}]{Type: chaosApproveOp,
				AccountID: cw.ID, Effect: effect}, retry)
			return err
		})
	}
	return at.count("approve held payout", at.typeOf(s), err)
}

// revokeOwner revokes the owner's credential of type typ, older than any
// the attacker enrolled, signed by s.
func (at *chaosAttacker) revokeOwner(c context.Context, rng *rand.Rand, typ storage.CredentialType, s chaosSession) string {
	w, cw := at.w, at.victim
	target, ok := cw.credential(rng, func(x chaosCredential) bool { return x.Type == typ })
	if !ok {
		return "skip"
	}
	first := call("DELETE", "/auth/credentials/"+target.ID, "")
	leg1, err := w.signed(c, rng, first, s.Key, func(ctx context.Context, r chaosReplica, req signedretry.Request) (*signedretry.Challenge, error) {
		return r.auth.RevokeCredential(ctx, target.ID, req)
	})
	o := at.count("revoke owner's "+string(typ), at.typeOf(s), cmp.Or(leg1, err))
	if o != "ok" {
		return o
	}
	cw.dropCredential(target.ID)
	at.sessions = slices.DeleteFunc(at.sessions, func(x chaosSession) bool { return x.Credential == target.ID })
	w.expect(cw.ID, "AUTH_CREDENTIAL.REVOKED of the owner's "+target.ID+" signed by the attacker's "+s.ID, func(r *replay) bool {
		x := r.Credentials[target.ID]
		return x != nil && x.Revoked != 0 && r.Signers[x.Revoked] == s.ID
	})
	return o
}

// judgeAssurance judges, in the wallet's commit order, the payouts the
// policy allowed and the approvals it recorded against the enrolments the
// replay r derived, each at the time of its decision:
//
//   - a payout from stepUp decided without an approval, signed by a
//     session of a credential of type required, needs that credential to
//     carry required's assurance then (kindStepUpWeak; a signer of another
//     type is kindStepUp's);
//   - a wallet credential approving a held payout must carry its own
//     type's assurance then (kindApprovalWeak), and be independent of the
//     credential whose session signed the payout: another credential, not
//     answering to the same origin then, while the signer's credential
//     still exists (kindApprovalNotIndependent).
func judgeAssurance(r *replay, stepUp int64, required storage.CredentialType) []violation {
	var out []violation
	bad := func(kind string, seq int64, format string, args ...any) {
		out = append(out, violation{Kind: kind, Account: r.Account, Seq: seq, Detail: fmt.Sprintf(format, args...)})
	}
	signers := map[string]string{}         // approval -> the credential whose session signed its payout
	judged := map[string]map[string]bool{} // approval -> approvers judged
	for _, e := range r.Events {
		if e.Type != policy.EventDecided && e.Type != policy.EventApprovalRequested && e.Type != policy.EventApprovalRecorded {
			continue
		}
		var env struct {
			Timestamp time.Time `json:"timestamp"`
			Data      struct {
				PayoutID        string   `json:"payoutId"`
				ReferenceAmount int64    `json:"referenceAmount"`
				CredentialID    string   `json:"credentialId"`
				ApprovalID      string   `json:"approvalId"`
				Approvers       []string `json:"approvers"`
			} `json:"data"`
		}
		if err := json.Unmarshal(e.Payload, &env); err != nil {
			bad(kindEventData, e.Seq, "%s: %v", e.Type, err)
			continue
		}
		at, d := env.Timestamp, env.Data
		if e.Type == policy.EventApprovalRequested {
			signers[d.ApprovalID] = d.CredentialID
			continue
		}
		if e.Type == policy.EventDecided && d.ApprovalID == "" && d.ReferenceAmount >= stepUp {
			if c := r.Credentials[d.CredentialID]; c != nil && c.Type == required {
				if as := r.assuredAs(c, at); as != required {
					bad(kindStepUpWeak, e.Seq, "payout %s of %d signed by %s %s, enrolled by %s and carrying %s until %s",
						d.PayoutID, d.ReferenceAmount, c.Type, c.ID, c.Enroller, as, c.SettlesAt.Format(time.RFC3339))
				}
			}
		}
		if judged[d.ApprovalID] == nil {
			judged[d.ApprovalID] = map[string]bool{}
		}
		for _, p := range d.Approvers {
			id, ok := strings.CutPrefix(p, "credential:")
			if !ok || judged[d.ApprovalID][p] {
				continue
			}
			judged[d.ApprovalID][p] = true
			a, signer := r.Credentials[id], r.Credentials[signers[d.ApprovalID]]
			if a != nil {
				if as := r.assuredAs(a, at); as != a.Type {
					bad(kindApprovalWeak, e.Seq, "approval %s of payout %s by %s %s, enrolled by %s and carrying %s until %s",
						d.ApprovalID, d.PayoutID, a.Type, a.ID, a.Enroller, as, a.SettlesAt.Format(time.RFC3339))
				}
			}
			why := ""
			switch {
			case a == nil:
				why = fmt.Sprintf("the approver %q is no credential of the wallet", id)
			case signer == nil:
				why = fmt.Sprintf("no credential of the wallet signed the held payout (%q)", signers[d.ApprovalID])
			case a.ID == signer.ID:
				why = "the approver signed the payout"
			case signer.Revoked != 0 && signer.Revoked < e.Seq:
				why = fmt.Sprintf("the payout's signer %s was revoked by event %d", signer.ID, signer.Revoked)
			case r.originAt(a, at) == r.originAt(signer, at):
				why = fmt.Sprintf("both answer to %s: the approver enrolled by %s, the signer %s by %q", r.originAt(a, at), a.Enroller,
					signer.ID, signer.Enroller)
			}
			if why != "" {
				bad(kindApprovalNotIndependent, e.Seq, "approval %s of payout %s by %s: %s", d.ApprovalID, d.PayoutID, id, why)
			}
		}
	}
	return out
}

// TestChaosCheckerFindsAttacks feeds the checker's rules on enrolled
// credentials an outbox in which each attack passed, beside changes the
// rules allow, and a SECURITY_NOTICE that understates an enrolment.
func TestChaosCheckerFindsAttacks(t *testing.T) {
	ctx := t.Context()
	st := memory.New()
	acct := "InternalAccount:00000000-0000-4000-8000-000000000001"
	id := func(kind string, n int) string { return fmt.Sprintf("%s:00000000-0000-4000-8000-%012d", kind, n) }
	// E is the wallet's first credential; the owner enrolls S (SMS_OTP)
	// with E's session sE. The attacker, holding sE, enrolls O (OAUTH),
	// with O's session P (PASSKEY), and with P's session Y (OAUTH). M is
	// an SMS_OTP credential sE enrolled; Q a passkey sE enrolled whose
	// notice claims it carries its own type.
	E, S, O, P, Y, M, Q := id("AuthMethod", 1), id("AuthMethod", 2), id("AuthMethod", 3), id("AuthMethod", 4), id("AuthMethod", 5),
		id("AuthMethod", 6), id("AuthMethod", 7)
	sE, sO, sP, sP2 := id("Session", 1), id("Session", 3), id("Session", 4), id("Session", 5)
	t0 := time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)
	at := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Minute) }
	zero := 0
	type ev = outboxEvent
	var events []ev
	added := func(n int, c, typ, signer string) {
		events = append(events, ev{walletauth.EventCredentialAdded, at(n),
			walletauth.CredentialEventData{ID: c, AccountID: acct, Type: storage.CredentialType(typ), Nickname: c, CreatedAt: at(n), UpdatedAt: at(n),
				SignedBySessionID: signer}})
	}
	notice := func(n int, change, c, typ, session, by string, assurance storage.CredentialType) {
		d := walletauth.SecurityNoticeData{AccountID: acct, Change: change, ChangedAt: at(n),
			Credential: &walletauth.NoticeCredential{ID: c, Type: storage.CredentialType(typ)},
			SignedBy:   &walletauth.NoticeSigner{SessionID: session, AuthMethodID: by}, Assurance: assurance, Notify: []walletauth.NoticeChannel{}}
		if assurance != "" {
			settles := at(n).Add(chaosSecurityPeriod)
			d.SettlesAt = &settles
		}
		events = append(events, ev{walletauth.EventSecurityNotice, at(n), d})
	}
	enrolled := func(n int, c, typ, session, by string, assurance storage.CredentialType) {
		added(n, c, typ, session)
		notice(n, "CREDENTIAL_ADDED", c, typ, session, by, assurance)
	}
	session := func(n int, s, c string) {
		events = append(events, ev{walletauth.EventSessionCreated, at(n),
			walletauth.SessionEventData{ID: s, AccountID: acct, AuthMethodID: c, CreatedAt: at(n), AuthenticatedAt: at(n)}})
	}
	revoked := func(n int, c, typ, session, by string) {
		events = append(events, ev{walletauth.EventCredentialRevoked, at(n),
			walletauth.CredentialEventData{ID: c, AccountID: acct, Type: storage.CredentialType(typ), SignedBySessionID: session, RevokedSessionCount: &zero}})
		notice(n, "CREDENTIAL_REVOKED", c, typ, session, by, "")
	}
	policyEvent := func(n int, typ string, data map[string]any) {
		data["customerId"], data["sourceId"] = "Customer:victim", acct
		events = append(events, ev{typ, at(n), data})
	}
	added(0, E, "EMAIL_OTP", "")
	session(1, sE, E)
	enrolled(2, S, "SMS_OTP", sE, E, "")
	enrolled(3, M, "SMS_OTP", sE, E, "")
	enrolled(4, O, "OAUTH", sE, E, storage.EmailOTP)
	session(5, sO, O)
	enrolled(6, P, "PASSKEY", sO, O, storage.EmailOTP)
	session(7, sP, P)
	enrolled(8, Y, "OAUTH", sP, P, storage.EmailOTP)
	enrolled(9, Q, "PASSKEY", sE, E, "") // understated: Q carries EMAIL_OTP
	// Allowed: P removes Y, enrolled after it.
	revoked(10, Y, "OAUTH", sP, P)
	// Attack: P removes the owner's S, enrolled before it.
	revoked(11, S, "SMS_OTP", sP, P)
	// Attack: P signs a payout past the passkey step-up.
	policyEvent(12, policy.EventDecided, map[string]any{"payoutId": "p1", "referenceAmount": chaosStepUp, "rule": "step-up",
		"sessionId": sP, "credentialId": P})
	// Attack: O approves a payout sE signed (weak, and answering to E);
	// M approves another (answering to E); the risk desk a third.
	for i, approver := range []string{"credential:" + O, "credential:" + M, "operator:" + chaosRiskDesk} {
		a := fmt.Sprintf("PayoutApproval:%d", i)
		policyEvent(13+2*i, policy.EventApprovalRequested, map[string]any{"payoutId": a, "referenceAmount": chaosApproval, "rule": "approval",
			"sessionId": sE, "credentialId": E, "approvalId": a, "state": "WAITING"})
		policyEvent(14+2*i, policy.EventDecided, map[string]any{"payoutId": a, "referenceAmount": chaosApproval, "rule": "approval",
			"approvalId": a, "approvers": []string{approver}})
	}
	// Attack: a refresh of sP whose new session claims a new ceremony.
	events = append(events,
		ev{walletauth.EventSessionCreated, at(20), walletauth.SessionEventData{ID: sP2, AccountID: acct, AuthMethodID: P, CreatedAt: at(20), AuthenticatedAt: at(20)}},
		ev{walletauth.EventSessionRefreshed, at(20), walletauth.SessionEventData{ID: sP2, AccountID: acct, AuthMethodID: P, CreatedAt: at(20),
			AuthenticatedAt: at(20), PreviousSessionID: sP, SignedBySessionID: sP}})
	appendEvents(t, st, acct, events...)
	r, err := replayOutboxWith(ctx, st, acct, nil, &assuranceRules{Period: chaosSecurityPeriod})
	if err != nil {
		t.Fatal(err)
	}
	vs := append(slices.Clone(r.violations), judgeAssurance(r, chaosStepUp, storage.Passkey)...)
	got := map[string]int{}
	for _, v := range vs {
		got[v.Kind]++
	}
	want := map[string]int{kindRevokeWeak: 1, kindStepUpWeak: 1, kindApprovalWeak: 1, kindApprovalNotIndependent: 2,
		kindRefreshAuthenticated: 1, kindEventData: 1}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("violations %v, want %v:\n%v", got, want, vs)
	}
	if c := r.Credentials[Q]; c.Carries != storage.EmailOTP || c.Origin != E {
		t.Errorf("Q derived as carrying %q and answering to %s; want EMAIL_OTP and %s", c.Carries, c.Origin, E)
	}
	if c := r.Credentials[Y]; c.Carries != storage.EmailOTP || c.Origin != E {
		t.Errorf("Y derived as carrying %q and answering to %s; want EMAIL_OTP and %s", c.Carries, c.Origin, E)
	}
}

package walletauth_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/memory"
	"github.com/walletgate/walletgate/storage/storagetest"
	"github.com/walletgate/walletgate/walletauth"
)

// Kinds of the violations an outbox replay reports.
const (
	// A signed change committed after the revoke of its signing session, or
	// of that session's credential, had committed.
	kindAfterRevoke = "A: signed change committed after its signer's revoke"
	// Two revokes of credentials, each stamped by a session of the other's
	// credential, both committed.
	kindCrossSigned = "A: cross-signed revokes both committed"
	// An event about a credential or session that is gone (deleted or
	// revoked, or never created) when the event commits.
	kindGone = "C: event for a record that is gone"
	// A change left the account without a credential.
	kindNoCredential = "an account lost its last credential"
	// A signed change names a signer no event of the account created.
	kindUnknownSigner = "signer unknown to the account's events"
	// The event's data disagrees with the records the replay built.
	kindEventData = "event data disagrees with the replay"
	// The store's records differ from the records the replay built.
	kindStore = "store differs from the replayed outbox"
)

// violation is one broken rule found by a replay or a checker.
type violation struct {
	Kind    string
	Account string
	Seq     int64 // the event, 0 when not about one
	Detail  string
}

func (v violation) String() string {
	if v.Seq != 0 {
		return fmt.Sprintf("%s: %s event %d: %s", v.Kind, v.Account, v.Seq, v.Detail)
	}
	return fmt.Sprintf("%s: %s: %s", v.Kind, v.Account, v.Detail)
}

// replayedCredential is a credential as the events of its account tell it.
type replayedCredential struct {
	ID       string
	Type     storage.CredentialType
	Nickname string
	Added    int64 // Seq of AUTH_CREDENTIAL.ADDED
	Revoked  int64 // Seq of AUTH_CREDENTIAL.REVOKED, 0 while it lives
	// RevokedBy is the credential of the session that stamped the revoke.
	RevokedBy string
	// CreatedAt is when it was enrolled (the createdAt of its ADDED).
	CreatedAt time.Time

	// Under assurance rules (see assuranceRules) the replay derives the
	// credential's enrolment from its ADDED and the session that signed
	// it, never from what the service says of it: EnrolledBy is that
	// session and Enroller its credential (both empty for a credential
	// added without a signature); Carries is the weaker assurance it
	// carries until SettlesAt, empty when it carries its own type at once;
	// Origin is the credential it answers to until SettlesAt.
	EnrolledBy, Enroller string
	Carries              storage.CredentialType
	Origin               string
	SettlesAt            time.Time
	// noticed and revokeNoticed record the SECURITY_NOTICE of its
	// enrolment and of its revoke.
	noticed, revokeNoticed bool
}

// replayedSession is a session as the events of its account tell it.
type replayedSession struct {
	ID         string
	Credential string
	Created    int64 // Seq of AUTH_SESSION.CREATED
	Revoked    int64 // Seq of its revoke (its own, or its credential's)
	// Previous is the session it was refreshed from, Refreshed the Seq of
	// its AUTH_SESSION.REFRESHED (empty and 0 for a login).
	Previous  string
	Refreshed int64
	// AuthenticatedAt is the authenticatedAt of its CREATED: when the
	// ceremony behind it took place.
	AuthenticatedAt time.Time
}

// replay is the records of one internal account rebuilt from its outbox,
// event by event in Seq (commit) order.
type replay struct {
	Account     string
	Events      []storage.Event
	Credentials map[string]*replayedCredential
	Sessions    map[string]*replayedSession
	// Email is the account's address as the events tell it ("" until an
	// EMAIL_OTP credential or an email change names it); Emails is every
	// address it had.
	Email  string
	Emails []string
	// Signers maps the Seq of every signed change to its signing session.
	Signers map[int64]string
	// ByType lists the Seqs of each event type.
	ByType map[string][]int64

	rules      *assuranceRules // nil: enrolments are recorded, not judged
	violations []violation
}

// assuranceRules turns on the replay's judgement of what enrolled
// credentials may do. A credential enrolled by a signed retry is worth no
// more than the session that signed it: when that session's credential
// carried a weaker assurance than the new credential's type at the
// enrolment, the new one carries that weaker assurance until SettlesAt
// (the enrolment plus Period); either way it answers to its enroller's
// origin until then. Under the rules the replay
//
//   - derives each credential's enrolment from its ADDED and the session
//     that signed it, and reports a SECURITY_NOTICE that tells it
//     otherwise, or that is missing, as event data that disagrees;
//   - reports a revoke signed by a session of a credential that carries
//     less than its own type's assurance, of a credential not younger
//     than that one (kindRevokeWeak);
//   - reports a refresh whose new session is given another authentication
//     time than the session it replaces (kindRefreshAuthenticated);
//   - compares every stored credential's enrolment with the derived one.
//
// Period is the services' SecurityChangePeriod. Resolution is the store's
// time resolution (time.Microsecond on PostgreSQL, 0 for exact): times are
// compared as the store keeps them.
type assuranceRules struct {
	Period, Resolution time.Duration
}

// strengthOf orders credential types by the assurance of their proof:
// codes sent to a mailbox or phone, below an identity provider's
// sign-in, below a passkey; an unknown type is the weakest.
func strengthOf(t storage.CredentialType) int {
	switch t {
	case storage.Passkey:
		return 3
	case storage.OAuth:
		return 2
	case storage.EmailOTP, storage.SMSOTP:
		return 1
	}
	return 0
}

// stored is t as the store keeps it.
func (r *replay) stored(t time.Time) time.Time {
	if r.rules == nil || r.rules.Resolution <= 0 {
		return t
	}
	return t.Truncate(r.rules.Resolution)
}

// settling reports whether c is within its security-change period at t.
func (r *replay) settling(c *replayedCredential, t time.Time) bool {
	return c.EnrolledBy != "" && r.stored(t).Before(r.stored(c.SettlesAt))
}

// assuredAs is the credential type whose assurance c carries at t.
func (r *replay) assuredAs(c *replayedCredential, t time.Time) storage.CredentialType {
	if c.Carries == "" || !r.settling(c, t) {
		return c.Type
	}
	return c.Carries
}

// originAt is the credential c answers to at t: its enroller's origin
// within its period, itself after it.
func (r *replay) originAt(c *replayedCredential, t time.Time) string {
	if c.Origin == "" || !r.settling(c, t) {
		return c.ID
	}
	return c.Origin
}

// younger reports whether c was enrolled after than, as the store orders
// their enrolment times.
func (r *replay) younger(c, than *replayedCredential) bool {
	return r.stored(c.CreatedAt).After(r.stored(than.CreatedAt))
}

// foreignSigner tells, for an event the service does not write (a host's
// own record of an authorized operation), which session signed it; ok false
// leaves the event out of the replay.
type foreignSigner func(e *storage.Event) (signer string, ok bool)

type eventEnvelope struct {
	Type      string          `json:"type"`
	Timestamp time.Time       `json:"timestamp"`
	Data      json.RawMessage `json:"data"`
}

// committedEvents returns the committed events of accountID in Seq order,
// read back from store (which must have an Events method, as
// storage/memory and storage/postgres do).
func committedEvents(ctx context.Context, store storage.Store, accountID string) ([]storage.Event, error) {
	es, ok := store.(storagetest.EventStore)
	if !ok {
		return nil, fmt.Errorf("the store %T does not read events back (no Events method)", store)
	}
	return es.Events(ctx, accountID)
}

// outboxEvent is an event a test writes to the outbox, as a buggy or
// hostile writer of events could.
type outboxEvent struct {
	typ  string
	at   time.Time
	data any
}

// appendEvents appends evs, about subject, to st's outbox in one
// transaction.
func appendEvents(tb testing.TB, st storage.Store, subject string, evs ...outboxEvent) {
	tb.Helper()
	ctx := tb.Context()
	err := st.Atomic(ctx, func(tx storage.Tx) error {
		for _, x := range evs {
			e, err := storage.NewEvent(nil, x.typ, subject, x.data, x.at)
			if err != nil {
				return err
			}
			if err := tx.Outbox().Append(ctx, &e); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
}

// replayOutbox reads the outbox of accountID and rebuilds the account's
// credentials, sessions and email from it, checking at every event that
// events are written only for records that exist when the event commits and
// that every signed change is stamped by a session that is live then (not
// revoked, of a credential that is not revoked). foreign, when not nil,
// names the signers of events of other types.
func replayOutbox(ctx context.Context, store storage.Store, accountID string, foreign foreignSigner) (*replay, error) {
	return replayOutboxWith(ctx, store, accountID, foreign, nil)
}

// replayOutboxWith is replayOutbox that also judges, when rules is not
// nil, what enrolled credentials did (see assuranceRules).
func replayOutboxWith(ctx context.Context, store storage.Store, accountID string, foreign foreignSigner, rules *assuranceRules) (*replay, error) {
	events, err := committedEvents(ctx, store, accountID)
	if err != nil {
		return nil, err
	}
	r := &replay{Account: accountID, Events: events, Credentials: map[string]*replayedCredential{},
		Sessions: map[string]*replayedSession{}, Signers: map[int64]string{}, ByType: map[string][]int64{}, rules: rules}
	for i := range events {
		if err := r.apply(events, i, foreign); err != nil {
			return nil, fmt.Errorf("event %d (%s) of %s: %w", events[i].Seq, events[i].Type, accountID, err)
		}
	}
	if rules != nil {
		r.unnoticed()
	}
	return r, nil
}

// unnoticed reports every signed enrolment and revoke that no
// SECURITY_NOTICE followed in its transaction.
func (r *replay) unnoticed() {
	for _, c := range r.Credentials {
		if c.EnrolledBy != "" && !c.noticed {
			r.report(kindEventData, c.Added, "no SECURITY_NOTICE of the enrolment of %s by session %s", c.ID, c.EnrolledBy)
		}
		if c.Revoked != 0 && !c.revokeNoticed {
			r.report(kindEventData, c.Revoked, "no SECURITY_NOTICE of the revoke of %s", c.ID)
		}
	}
}

func (r *replay) report(kind string, seq int64, format string, args ...any) {
	r.violations = append(r.violations, violation{Kind: kind, Account: r.Account, Seq: seq, Detail: fmt.Sprintf(format, args...)})
}

// dead reports why the session cannot sign at this point of the replay, or
// "" when it can.
func (r *replay) dead(sessionID string) string {
	s := r.Sessions[sessionID]
	switch {
	case s == nil:
		return "unknown"
	case s.Revoked != 0:
		return fmt.Sprintf("revoked by event %d", s.Revoked)
	}
	if c := r.Credentials[s.Credential]; c == nil {
		return "of an unknown credential " + s.Credential
	} else if c.Revoked != 0 {
		return fmt.Sprintf("of credential %s revoked by event %d", c.ID, c.Revoked)
	}
	return ""
}

// checkSigner reports a signed change whose signer is not live.
func (r *replay) checkSigner(e *storage.Event, signer string) {
	if signer == "" {
		return
	}
	r.Signers[e.Seq] = signer
	if _, ok := r.Sessions[signer]; !ok {
		r.report(kindUnknownSigner, e.Seq, "%s signed by %s, which no AUTH_SESSION.CREATED of the account names", e.Type, signer)
		return
	}
	if why := r.dead(signer); why != "" {
		r.report(kindAfterRevoke, e.Seq, "%s signed by session %s, %s", e.Type, signer, why)
	}
}

func (r *replay) liveCredentials() int {
	n := 0
	for _, c := range r.Credentials {
		if c.Revoked == 0 {
			n++
		}
	}
	return n
}

func (r *replay) apply(events []storage.Event, i int, foreign foreignSigner) error {
	e := &events[i]
	r.ByType[e.Type] = append(r.ByType[e.Type], e.Seq)
	var env eventEnvelope
	if err := json.Unmarshal(e.Payload, &env); err != nil {
		return err
	}
	if env.Type != e.Type {
		r.report(kindEventData, e.Seq, "payload type %s, event type %s", env.Type, e.Type)
	}
	switch e.Type {
	case walletauth.EventCredentialAdded, walletauth.EventCredentialRevoked, walletauth.EventCredentialOTPLocked:
		var d walletauth.CredentialEventData
		if err := json.Unmarshal(env.Data, &d); err != nil {
			return err
		}
		r.credentialEvent(e, &d, env.Timestamp)
	case walletauth.EventSessionCreated, walletauth.EventSessionRevoked, walletauth.EventSessionRefreshed:
		var d walletauth.SessionEventData
		if err := json.Unmarshal(env.Data, &d); err != nil {
			return err
		}
		// The CREATED of a refresh is checked with its REFRESHED, which
		// follows it in the same transaction.
		refresh := e.Type == walletauth.EventSessionCreated && i+1 < len(events) &&
			events[i+1].Type == walletauth.EventSessionRefreshed
		r.sessionEvent(e, &d, refresh)
	case walletauth.EventEmailUpdated:
		var d walletauth.EmailEventData
		if err := json.Unmarshal(env.Data, &d); err != nil {
			return err
		}
		r.checkSigner(e, d.SignedBySessionID)
		for _, id := range d.AuthMethodIDs {
			c := r.Credentials[id]
			switch {
			case c == nil || c.Revoked != 0:
				r.report(kindGone, e.Seq, "%s ties %s to credential %s, which is gone", e.Type, d.Email, id)
			case c.Type != storage.EmailOTP:
				r.report(kindEventData, e.Seq, "%s names %s credential %s", e.Type, c.Type, id)
			default:
				c.Nickname = d.Email
			}
		}
		for _, c := range r.Credentials {
			if c.Revoked == 0 && c.Type == storage.EmailOTP && !slices.Contains(d.AuthMethodIDs, c.ID) {
				r.report(kindEventData, e.Seq, "%s leaves out the live EMAIL_OTP credential %s", e.Type, c.ID)
			}
		}
		r.setEmail(d.Email)
	case walletauth.EventSecurityNotice:
		var d walletauth.SecurityNoticeData
		if err := json.Unmarshal(env.Data, &d); err != nil {
			return err
		}
		if r.rules != nil {
			r.securityNotice(events, i, &d)
		}
	default:
		if foreign != nil {
			if signer, ok := foreign(e); ok {
				r.checkSigner(e, signer)
			}
		}
	}
	return nil
}

func (r *replay) setEmail(email string) {
	r.Email = email
	if !slices.Contains(r.Emails, email) {
		r.Emails = append(r.Emails, email)
	}
}

// credentialEvent applies an AUTH_CREDENTIAL event e with data d, whose
// change was made at at.
func (r *replay) credentialEvent(e *storage.Event, d *walletauth.CredentialEventData, at time.Time) {
	c := r.Credentials[d.ID]
	switch e.Type {
	case walletauth.EventCredentialAdded:
		r.checkSigner(e, d.SignedBySessionID)
		if c != nil {
			r.report(kindEventData, e.Seq, "credential %s added again (first by event %d)", d.ID, c.Added)
			return
		}
		c = &replayedCredential{ID: d.ID, Type: d.Type, Nickname: d.Nickname, Added: e.Seq, CreatedAt: d.CreatedAt}
		r.Credentials[d.ID] = c
		if r.rules != nil {
			r.enrol(c, d.SignedBySessionID)
		}
		if d.Type == storage.EmailOTP {
			if r.Email != "" && d.Nickname != r.Email {
				r.report(kindEventData, e.Seq, "EMAIL_OTP credential %s tied to %s while the account's address is %s", d.ID, d.Nickname, r.Email)
			}
			r.setEmail(d.Nickname)
		}
	case walletauth.EventCredentialRevoked:
		signerCred := ""
		if s := r.Sessions[d.SignedBySessionID]; s != nil {
			signerCred = s.Credential
		}
		// Two cross-signed revokes: this credential's session revoked the
		// signer's credential before.
		if sc := r.Credentials[signerCred]; sc != nil && sc.Revoked != 0 && sc.RevokedBy == d.ID {
			r.Signers[e.Seq] = d.SignedBySessionID
			r.report(kindCrossSigned, e.Seq, "revoke of %s signed by a session of %s, whose revoke (event %d) a session of %s signed",
				d.ID, signerCred, sc.Revoked, d.ID)
		} else {
			r.checkSigner(e, d.SignedBySessionID)
		}
		if signerCred == d.ID {
			r.report(kindEventData, e.Seq, "credential %s revoked by its own session %s", d.ID, d.SignedBySessionID)
		}
		if c == nil || c.Revoked != 0 {
			r.report(kindGone, e.Seq, "%s of credential %s, which is gone", e.Type, d.ID)
			return
		}
		// A credential that carries less than its own type's assurance
		// removes only credentials enrolled after it.
		if sc := r.Credentials[signerCred]; r.rules != nil && sc != nil && sc.ID != c.ID {
			if as := r.assuredAs(sc, at); as != sc.Type && !r.younger(c, sc) {
				r.report(kindRevokeWeak, e.Seq, "%s %s (enrolled %s) revoked by a session of %s %s (enrolled %s by %s, carrying %s until %s)",
					c.Type, c.ID, c.CreatedAt.Format(time.RFC3339Nano), sc.Type, sc.ID, sc.CreatedAt.Format(time.RFC3339Nano),
					sc.Enroller, as, sc.SettlesAt.Format(time.RFC3339))
			}
		}
		c.Revoked, c.RevokedBy = e.Seq, signerCred
		live := 0
		for _, s := range r.Sessions {
			if s.Credential == c.ID && s.Revoked == 0 {
				s.Revoked = e.Seq
				live++
			}
		}
		switch {
		case d.RevokedSessionCount == nil:
			r.report(kindEventData, e.Seq, "no revokedSessionCount; the replay revoked %d sessions of %s", live, c.ID)
		case *d.RevokedSessionCount != live:
			r.report(kindEventData, e.Seq, "revokedSessionCount %d, the replay revoked %d sessions of %s", *d.RevokedSessionCount, live, c.ID)
		}
		if r.liveCredentials() == 0 {
			r.report(kindNoCredential, e.Seq, "revoke of %s left no credential", c.ID)
		}
	case walletauth.EventCredentialOTPLocked:
		if c == nil || c.Revoked != 0 {
			r.report(kindGone, e.Seq, "%s of credential %s, which is gone%s", e.Type, d.ID, revokedAt(c))
		}
	}
}

// enrol derives the enrolment of c, just added by the signed retry of
// session signer ("" when none signed), from the replay as it stands:
// the signer's credential enrolled it at c.CreatedAt; c carries that
// credential's assurance then when it is weaker than c's own type, and
// answers to that credential's origin then, until the period ends.
func (r *replay) enrol(c *replayedCredential, signer string) {
	if signer == "" {
		return
	}
	s := r.Sessions[signer]
	if s == nil {
		return // reported by checkSigner
	}
	by := r.Credentials[s.Credential]
	if by == nil {
		return // reported by checkSigner
	}
	c.EnrolledBy, c.Enroller = signer, by.ID
	c.SettlesAt = c.CreatedAt.Add(r.rules.Period)
	c.Origin = r.originAt(by, c.CreatedAt)
	if carried := r.assuredAs(by, c.CreatedAt); strengthOf(carried) < strengthOf(c.Type) {
		c.Carries = carried
	}
}

// securityNotice checks the SECURITY_NOTICE events[i], d, against the
// change it follows in its transaction: the enrolment the replay derived
// for an added credential (signer, assurance, end of the period), the
// signer of a revoke.
func (r *replay) securityNotice(events []storage.Event, i int, d *walletauth.SecurityNoticeData) {
	e := &events[i]
	if d.Change != "CREDENTIAL_ADDED" && d.Change != "CREDENTIAL_REVOKED" {
		return
	}
	if d.Credential == nil {
		r.report(kindEventData, e.Seq, "%s notice names no credential", d.Change)
		return
	}
	c := r.Credentials[d.Credential.ID]
	want := walletauth.EventCredentialAdded
	if d.Change == "CREDENTIAL_REVOKED" {
		want = walletauth.EventCredentialRevoked
	}
	switch {
	case c == nil:
		r.report(kindEventData, e.Seq, "%s notice of %s, which no event added", d.Change, d.Credential.ID)
		return
	case i == 0 || events[i-1].Type != want || want == walletauth.EventCredentialAdded && events[i-1].Seq != c.Added ||
		want == walletauth.EventCredentialRevoked && events[i-1].Seq != c.Revoked:
		r.report(kindEventData, e.Seq, "%s notice of %s does not follow its %s", d.Change, c.ID, want)
	}
	signer := r.Signers[events[i-1].Seq]
	signerCred := ""
	if s := r.Sessions[signer]; s != nil {
		signerCred = s.Credential
	}
	if (d.SignedBy == nil) != (signer == "") || d.SignedBy != nil && (d.SignedBy.SessionID != signer || d.SignedBy.AuthMethodID != signerCred) {
		r.report(kindEventData, e.Seq, "%s notice of %s signed by %+v; its change was signed by session %s of %s",
			d.Change, c.ID, d.SignedBy, signer, signerCred)
	}
	if d.Change == "CREDENTIAL_REVOKED" {
		c.revokeNoticed = true
		return
	}
	c.noticed = true
	settles := d.SettlesAt != nil
	if d.Assurance != c.Carries || settles != (c.Carries != "") ||
		settles && !r.stored(*d.SettlesAt).Equal(r.stored(c.SettlesAt)) {
		r.report(kindEventData, e.Seq, "%s %s: the notice says it carries %q until %v; enrolled by %s (%s), it carries %q until %s",
			c.Type, c.ID, d.Assurance, d.SettlesAt, c.Enroller, r.Credentials[c.Enroller].Type, c.Carries, c.SettlesAt.Format(time.RFC3339Nano))
	}
}

func revokedAt(c *replayedCredential) string {
	if c == nil || c.Revoked == 0 {
		return ""
	}
	return fmt.Sprintf(" (revoked by event %d)", c.Revoked)
}

func (r *replay) sessionEvent(e *storage.Event, d *walletauth.SessionEventData, refresh bool) {
	s := r.Sessions[d.ID]
	switch e.Type {
	case walletauth.EventSessionCreated:
		if s != nil {
			r.report(kindEventData, e.Seq, "session %s created again (first by event %d)", d.ID, s.Created)
			return
		}
		r.Sessions[d.ID] = &replayedSession{ID: d.ID, Credential: d.AuthMethodID, Created: e.Seq, AuthenticatedAt: d.AuthenticatedAt}
		if c := r.Credentials[d.AuthMethodID]; !refresh && (c == nil || c.Revoked != 0) {
			r.report(kindGone, e.Seq, "session %s created for credential %s, which is gone%s", d.ID, d.AuthMethodID, revokedAt(c))
		}
	case walletauth.EventSessionRefreshed:
		if s == nil || !r.createdJustBefore(e, d.ID) {
			r.report(kindEventData, e.Seq, "%s of session %s without its AUTH_SESSION.CREATED just before", e.Type, d.ID)
		}
		if s != nil {
			s.Previous, s.Refreshed = d.PreviousSessionID, e.Seq
			// A refresh renews the key, not the authentication: the new
			// session keeps the time of the ceremony behind the old one.
			if p := r.Sessions[d.PreviousSessionID]; r.rules != nil && p != nil &&
				!r.stored(d.AuthenticatedAt).Equal(r.stored(p.AuthenticatedAt)) {
				r.report(kindRefreshAuthenticated, e.Seq, "session %s refreshed into %s authenticated at %s; it was authenticated at %s",
					p.ID, d.ID, d.AuthenticatedAt.Format(time.RFC3339Nano), p.AuthenticatedAt.Format(time.RFC3339Nano))
			}
		}
		if d.SignedBySessionID != "" && d.SignedBySessionID != d.PreviousSessionID {
			r.report(kindEventData, e.Seq, "refresh of %s signed by another session %s", d.PreviousSessionID, d.SignedBySessionID)
		}
		before := len(r.violations)
		r.checkSigner(e, d.SignedBySessionID)
		if len(r.violations) > before {
			return
		}
		if why := r.dead(d.PreviousSessionID); why != "" {
			r.report(kindGone, e.Seq, "refresh of session %s, %s", d.PreviousSessionID, why)
		} else if c := r.Credentials[d.AuthMethodID]; c == nil || c.Revoked != 0 {
			r.report(kindGone, e.Seq, "refreshed session %s of credential %s, which is gone%s", d.ID, d.AuthMethodID, revokedAt(c))
		}
	case walletauth.EventSessionRevoked:
		r.checkSigner(e, d.SignedBySessionID)
		if s == nil || s.Revoked != 0 {
			why := "unknown"
			if s != nil {
				why = fmt.Sprintf("revoked by event %d", s.Revoked)
			}
			r.report(kindGone, e.Seq, "%s of session %s, %s", e.Type, d.ID, why)
			return
		}
		s.Revoked = e.Seq
	}
}

// createdJustBefore reports whether the event before e (in Seq order among
// the account's events) is the AUTH_SESSION.CREATED of id.
func (r *replay) createdJustBefore(e *storage.Event, id string) bool {
	for i := range r.Events {
		if r.Events[i].Seq == e.Seq {
			return i > 0 && r.Events[i-1].Type == walletauth.EventSessionCreated && r.Sessions[id].Created == r.Events[i-1].Seq
		}
	}
	return false
}

// compareStore reports where the store's records of the account differ from
// the replay: the live credentials (ids, types, nicknames), every replayed
// session (present, revoked exactly when the replay revoked it), no active
// session the events never created, and the account's email.
func (r *replay) compareStore(ctx context.Context, store storage.Store, now time.Time) ([]violation, error) {
	var out []violation
	bad := func(format string, args ...any) {
		out = append(out, violation{Kind: kindStore, Account: r.Account, Detail: fmt.Sprintf(format, args...)})
	}
	err := store.Atomic(ctx, func(tx storage.Tx) error {
		out = nil
		creds, err := tx.Credentials().ListByAccount(ctx, r.Account)
		if err != nil {
			return err
		}
		stored := map[string]bool{}
		for _, c := range creds {
			stored[c.ID] = true
			m := r.Credentials[c.ID]
			switch {
			case m == nil:
				bad("credential %s (%s) is stored but no event added it", c.ID, c.Type)
			case m.Revoked != 0:
				bad("credential %s is stored but event %d revoked it", c.ID, m.Revoked)
			case m.Type != c.Type || m.Nickname != c.Nickname:
				bad("credential %s is %s %q, the events say %s %q", c.ID, c.Type, c.Nickname, m.Type, m.Nickname)
			case c.Type == storage.EmailOTP && c.Email != m.Nickname:
				bad("EMAIL_OTP credential %s is tied to %s, the events say %s", c.ID, c.Email, m.Nickname)
			case r.rules != nil:
				if want := r.enrolmentOf(m); !r.sameEnrolment(c.Enrolment, want) || !r.stored(c.CreatedAt).Equal(r.stored(m.CreatedAt)) {
					bad("credential %s was enrolled %s with %+v; the events say %s with %+v", c.ID,
						c.CreatedAt.Format(time.RFC3339Nano), c.Enrolment, m.CreatedAt.Format(time.RFC3339Nano), want)
				}
			}
		}
		for _, m := range r.Credentials {
			if m.Revoked == 0 && !stored[m.ID] {
				bad("credential %s is missing; no event revoked it", m.ID)
			}
		}
		for _, m := range r.Sessions {
			s, err := tx.Sessions().Get(ctx, m.ID)
			switch {
			case errors.Is(err, storage.ErrNotFound):
				bad("session %s is missing (created by event %d)", m.ID, m.Created)
			case err != nil:
				return err
			case s.RevokedAt.IsZero() != (m.Revoked == 0):
				bad("session %s revoked in the store: %v; revoked by the events: %v", m.ID, !s.RevokedAt.IsZero(), m.Revoked != 0)
			case s.CredentialID != m.Credential:
				bad("session %s is of credential %s, the events say %s", m.ID, s.CredentialID, m.Credential)
			}
		}
		active, err := tx.Sessions().ListActive(ctx, r.Account, now)
		if err != nil {
			return err
		}
		for _, s := range active {
			if r.Sessions[s.ID] == nil {
				bad("active session %s was never created by an event", s.ID)
			}
		}
		if r.Email != "" {
			a, err := tx.InternalAccounts().Get(ctx, r.Account)
			if err != nil {
				return err
			}
			if a.Email != r.Email {
				bad("the account's email is %s, the events say %s", a.Email, r.Email)
			}
		}
		return nil
	})
	return out, err
}

// enrolmentOf is the enrolment the store must hold for m, as the replay
// derived it.
func (r *replay) enrolmentOf(m *replayedCredential) storage.Enrolment {
	if m.EnrolledBy == "" {
		return storage.Enrolment{}
	}
	as := m.Carries
	if as == "" {
		as = m.Type
	}
	return storage.Enrolment{SessionID: m.EnrolledBy, CredentialID: m.Enroller, Origin: m.Origin, Assurance: as, SettlesAt: m.SettlesAt}
}

// sameEnrolment compares two enrolments, their times as the store keeps
// them.
func (r *replay) sameEnrolment(a, b storage.Enrolment) bool {
	ta, tb := r.stored(a.SettlesAt), r.stored(b.SettlesAt)
	a.SettlesAt, b.SettlesAt = time.Time{}, time.Time{}
	return a == b && ta.Equal(tb)
}

// checkOutbox replays the outbox of each account into records, compares
// them with the store and fails t for every violation: an event about a
// record that is gone when it commits, a signed change committed after its
// signer's revoke, a replay that differs from the store. Call it once the
// operations on the accounts have ended.
func checkOutbox(t testing.TB, store storage.Store, now time.Time, accountIDs ...string) {
	t.Helper()
	for _, id := range accountIDs {
		r, err := replayOutbox(context.Background(), store, id, nil)
		if err != nil {
			t.Fatal(err)
		}
		diff, err := r.compareStore(context.Background(), store, now)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range append(r.violations, diff...) {
			t.Error(v)
		}
	}
}

// TestReplayFindsViolations feeds the replay an outbox that breaks each rule
// it checks, and a store that disagrees with its outbox.
func TestReplayFindsViolations(t *testing.T) {
	ctx := t.Context()
	st := memory.New()
	acct := "InternalAccount:00000000-0000-4000-8000-000000000001"
	x, y, z := "AuthMethod:00000000-0000-4000-8000-00000000000a", "AuthMethod:00000000-0000-4000-8000-00000000000b",
		"AuthMethod:00000000-0000-4000-8000-00000000000c"
	sx, sy := "Session:00000000-0000-4000-8000-00000000000a", "Session:00000000-0000-4000-8000-00000000000b"
	now := time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)
	zero := 0
	one := 1
	events := []struct {
		typ  string
		data any
	}{
		{walletauth.EventCredentialAdded, walletauth.CredentialEventData{ID: x, AccountID: acct, Type: storage.EmailOTP, Nickname: "a@example.com"}},
		{walletauth.EventCredentialAdded, walletauth.CredentialEventData{ID: y, AccountID: acct, Type: storage.SMSOTP, Nickname: "+14155550123"}},
		{walletauth.EventCredentialAdded, walletauth.CredentialEventData{ID: z, AccountID: acct, Type: storage.OAuth, Nickname: "z"}},
		{walletauth.EventSessionCreated, walletauth.SessionEventData{ID: sx, AccountID: acct, AuthMethodID: x}},
		{walletauth.EventSessionCreated, walletauth.SessionEventData{ID: sy, AccountID: acct, AuthMethodID: y}},
		// x revoked by a session of y, then y by a session of x: the
		// second commits after its signer's credential was revoked.
		{walletauth.EventCredentialRevoked, walletauth.CredentialEventData{ID: x, AccountID: acct, SignedBySessionID: sy, RevokedSessionCount: &one}},
		{walletauth.EventCredentialRevoked, walletauth.CredentialEventData{ID: y, AccountID: acct, SignedBySessionID: sx, RevokedSessionCount: &one}},
		// Events about x after its revoke.
		{walletauth.EventCredentialOTPLocked, walletauth.CredentialEventData{ID: x, AccountID: acct, FailedAttempts: 5}},
		{walletauth.EventSessionCreated, walletauth.SessionEventData{ID: "Session:00000000-0000-4000-8000-0000000000ff", AccountID: acct, AuthMethodID: x}},
		// A host's record of an operation stamped by sx, after x's revoke.
		{"HOST.OPERATION", map[string]string{"signer": sx}},
		// z revoked, leaving no credential.
		{walletauth.EventCredentialRevoked, walletauth.CredentialEventData{ID: z, AccountID: acct, RevokedSessionCount: &zero}},
	}
	var evs []outboxEvent
	for _, ev := range events {
		evs = append(evs, outboxEvent{ev.typ, now, ev.data})
	}
	appendEvents(t, st, acct, evs...)
	r, err := replayOutbox(ctx, st, acct, func(e *storage.Event) (string, bool) {
		var env struct {
			Data map[string]string `json:"data"`
		}
		err := json.Unmarshal(e.Payload, &env)
		return env.Data["signer"], err == nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, v := range r.violations {
		got[v.Kind]++
	}
	want := map[string]int{kindCrossSigned: 1, kindGone: 2, kindAfterRevoke: 1, kindNoCredential: 1}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("violations %v, want %v:\n%v", got, want, r.violations)
	}

	// A store that lost a credential and a session revoke no event tells.
	e := newEnv(t, nil)
	sess, key := e.login(t, e.email.ID, storage.EmailOTP)
	sms := e.addSMS(t, key)
	err = e.store.Atomic(ctx, func(tx storage.Tx) error {
		return errors.Join(tx.Credentials().Delete(ctx, sms.ID), tx.Sessions().Revoke(ctx, sess.ID, e.clock.Now()))
	})
	if err != nil {
		t.Fatal(err)
	}
	r, err = replayOutbox(ctx, e.store, e.wallet.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	diff, err := r.compareStore(ctx, e.store, e.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(r.violations) != 0 || len(diff) != 2 || diff[0].Kind != kindStore || diff[1].Kind != kindStore {
		t.Fatalf("replay %v, store differences %v; want the missing credential and the revoked session", r.violations, diff)
	}
}

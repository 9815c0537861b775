package walletauth

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
)

// Event types. The service writes an event to the store's outbox
// ([storage.Outbox]) for every security-relevant change, in the transaction
// that makes the change: the change and its event commit together or not at
// all, and a relay (package storage/relay) delivers the event after commit.
//
// Every event's subject ([storage.Event].AccountID) is the internal account
// (InternalAccount:<uuid>) the change is about, so the events of one wallet
// are delivered one at a time, in commit order. Its payload is
//
//	{"id": "Webhook:<uuid>", "type": <type>, "timestamp": <time of the change>, "data": <data>}
//
// with these types and data members ([CredentialEventData],
// [SessionEventData], [EmailEventData]; a member in brackets is left out when
// empty):
//
//	Type                            Written in the transaction that            data members
//	------------------------------  -----------------------------------------  ---------------------------------
//	AUTH_CREDENTIAL.ADDED           creates a credential: CreateWallet (the    id, accountId, customerId, type,
//	                                first EMAIL_OTP), AddCredential on an      nickname, [credentialId] (the
//	                                account without credentials, or the        WebAuthn id of a PASSKEY),
//	                                signed retry of AddCredential              createdAt, updatedAt,
//	                                                                           [signedBySessionId]
//	AUTH_CREDENTIAL.REVOKED         deletes the credential and revokes its     as ADDED, with revokedSessionCount
//	                                sessions (signed retry of                  (the sessions revoked with it)
//	                                RevokeCredential)
//	AUTH_CREDENTIAL.OTP_LOCKED      records the failed OTP verification (a     as ADDED without
//	                                wrong code, or a bundle sealed to another  signedBySessionId, with
//	                                key) that uses up the attempts of the      failedAttempts
//	                                code; it commits, then the call answers
//	                                401 and a new code must be requested
//	AUTH_CREDENTIAL.OTP_THROTTLED   records the first OTP verification of      as ADDED without
//	                                the credential refused because its         signedBySessionId, with
//	                                budget of compared codes is spent          attemptBudget and throttledUntil
//	                                ([OTPConfig].AttemptBudget), once per      (when codes are compared again)
//	                                budget window; the call answers 429
//	AUTH_SESSION.CREATED            creates a session: OTP login (leg 2),      id (the session), accountId,
//	                                PASSKEY or OAUTH login, and the new        customerId, authMethodId (its
//	                                session of a refresh                       credential), type, nickname,
//	                                                                           createdAt, updatedAt,
//	                                                                           authenticatedAt, expiresAt
//	AUTH_SESSION.REVOKED            revokes the session (signed retry of       as CREATED, with
//	                                RevokeSession)                             [signedBySessionId]
//	AUTH_SESSION.REFRESHED          creates the new session of a refresh,      as CREATED, of the new session,
//	                                after its AUTH_SESSION.CREATED (signed     with previousSessionId and
//	                                retry of RefreshSession)                   [signedBySessionId]
//	INTERNAL_ACCOUNT.EMAIL_UPDATED  changes the email of the wallet or of its  accountId, customerId, email
//	                                EMAIL_OTP credentials (UpdateEmail): one   (the new one), authMethodIds
//	                                event per wallet of the customer that      (its EMAIL_OTP credentials),
//	                                changed, none for one already at the new   updatedAt, [signedBySessionId]
//	                                address
//	HOST_OPERATION.AUTHORIZED       runs the effect of a host's operation      requestId, type, accountId,
//	                                (the signed retry of [Authorize]), after   authorizedAt, [signedBySessionId],
//	                                the effect                                 [authMethodId]
//	INTERNAL_ACCOUNT.SECURITY_NOTICE  changes the wallet's means of            accountId, customerId, change,
//	                                authentication after its creation: the     changedAt, [credential], [signedBy],
//	                                signed retry of AddCredential, of          [assurance], [settlesAt], notify
//	                                RevokeCredential, and an UpdateEmail of
//	                                tied credentials; after the change's own
//	                                event
//
// signedBySessionId is the session that stamped the signed retry of the
// change; it is left out when the change took no signature or the sandbox
// literal stood in for one.
//
// INTERNAL_ACCOUNT.SECURITY_NOTICE is the message the host sends the
// wallet's owner ("a passkey was added to your wallet; if this was not
// you, ...") on the channels the wallet had before the change (notify: its
// EMAIL_OTP address and SMS_OTP number, the removed credential's
// included), so that whoever holds one phished session cannot change the
// wallet's credentials unheard. Its data is [SecurityNoticeData].
//
// The data members are ids and plain, non-secret fields only (see
// [CredentialEventData], [SessionEventData] and [EmailEventData]). No event
// carries a one-time code or its MAC, a key (private or public, session or
// passkey), a token, a bundle, a challenge, a signature or anything sealed:
// events leave the store for the platform's receivers and logs. Emails and
// nicknames (an address, a phone number, a passkey's name) are personal data
// but not secrets, and are included.
//
// An event is written only about records that exist when it commits: its
// transaction creates, changes or deletes the record, or holds it
// ([storage.Credentials.Lock]) from before it reads it, so a concurrent
// revoke either commits first (and the call answers 404) or waits, and no
// event about a credential follows its AUTH_CREDENTIAL.REVOKED.
//
// Sessions revoked because their credential was revoked are counted in the
// AUTH_CREDENTIAL.REVOKED event (revokedSessionCount); they get no
// AUTH_SESSION.REVOKED of their own. An operation of the host authorized
// through [Authorize] writes HOST_OPERATION.AUTHORIZED, the audit of who
// signed which request (the host reports its own effects and parameters);
// the wallet export and privacy update write no event.
const (
	EventCredentialAdded     = "AUTH_CREDENTIAL.ADDED"
	EventCredentialRevoked   = "AUTH_CREDENTIAL.REVOKED"
	EventCredentialOTPLocked = "AUTH_CREDENTIAL.OTP_LOCKED"
	// EventCredentialOTPThrottled reports a credential whose budget of
	// compared one-time codes is spent ([OTPConfig].AttemptBudget).
	EventCredentialOTPThrottled = "AUTH_CREDENTIAL.OTP_THROTTLED"
	EventSessionCreated         = "AUTH_SESSION.CREATED"
	EventSessionRevoked         = "AUTH_SESSION.REVOKED"
	EventSessionRefreshed       = "AUTH_SESSION.REFRESHED"
	EventEmailUpdated           = "INTERNAL_ACCOUNT.EMAIL_UPDATED"
	EventHostOperation          = "HOST_OPERATION.AUTHORIZED"
	// EventSecurityNotice asks the host to tell the wallet's owner, on the
	// wallet's existing channels, of a change of its credentials.
	EventSecurityNotice = "INTERNAL_ACCOUNT.SECURITY_NOTICE"
)

// EventTypes returns every event type the service writes, in the order of
// the table above (for a host that subscribes to them).
func EventTypes() []string {
	return []string{EventCredentialAdded, EventCredentialRevoked, EventCredentialOTPLocked, EventCredentialOTPThrottled,
		EventSessionCreated, EventSessionRevoked, EventSessionRefreshed, EventEmailUpdated, EventHostOperation,
		EventSecurityNotice}
}

// Changes a [SecurityNoticeData] reports.
const (
	noticeAdded   = "CREDENTIAL_ADDED"
	noticeRevoked = "CREDENTIAL_REVOKED"
	noticeEmail   = "EMAIL_UPDATED"
)

// SecurityNoticeData is the data of INTERNAL_ACCOUNT.SECURITY_NOTICE: what
// changed in the wallet's means of authentication, who signed it, and
// where to tell the owner. It carries no secret.
type SecurityNoticeData struct {
	AccountID  string `json:"accountId"`
	CustomerID string `json:"customerId"`
	// Change is CREDENTIAL_ADDED, CREDENTIAL_REVOKED or EMAIL_UPDATED.
	Change    string    `json:"change"`
	ChangedAt time.Time `json:"changedAt"`
	// Credential is the credential added or revoked; absent for an email
	// change.
	Credential *NoticeCredential `json:"credential,omitempty"`
	// SignedBy is the credential whose session signed the change (with
	// the session); absent when the change took no signature.
	SignedBy *NoticeSigner `json:"signedBy,omitempty"`
	// Assurance is the credential type whose assurance an added
	// credential carries until SettlesAt, when it carries its own
	// (CREDENTIAL_ADDED of a credential enrolled by a weaker session
	// only).
	Assurance storage.CredentialType `json:"assurance,omitempty"`
	SettlesAt *time.Time             `json:"settlesAt,omitempty"`
	// Notify are the wallet's contact channels before the change: where
	// the host sends the notice. An email change lists the old address.
	Notify []NoticeChannel `json:"notify"`
}

// NoticeCredential names a credential in a [SecurityNoticeData].
type NoticeCredential struct {
	ID       string                 `json:"id"`
	Type     storage.CredentialType `json:"type"`
	Nickname string                 `json:"nickname"`
}

// NoticeSigner is who signed a change in a [SecurityNoticeData].
type NoticeSigner struct {
	SessionID    string                 `json:"sessionId"`
	AuthMethodID string                 `json:"authMethodId"`
	Type         storage.CredentialType `json:"type,omitempty"`
}

// NoticeChannel is a channel of the wallet's owner: an EMAIL_OTP address
// or an SMS_OTP number.
type NoticeChannel struct {
	Type storage.CredentialType `json:"type"`
	To   string                 `json:"to"`
}

// channels returns the contact channels among creds, in their order, each
// once.
func channels(creds []storage.Credential) []NoticeChannel {
	out := []NoticeChannel{}
	for _, c := range creds {
		ch := NoticeChannel{Type: c.Type}
		switch c.Type {
		case storage.EmailOTP:
			ch.To = c.Email
		case storage.SMSOTP:
			ch.To = c.Phone
		default:
			continue
		}
		if ch.To != "" && !slices.Contains(out, ch) {
			out = append(out, ch)
		}
	}
	return out
}

// securityNotice writes INTERNAL_ACCOUNT.SECURITY_NOTICE for a change of
// acct made in tx at now by the signed retry a, whose session's
// credential is signer (nil with a): c the credential added or revoked
// (nil for an email change), before the wallet's credentials as they were
// before the change.
func (s *Service) securityNotice(ctx context.Context, tx storage.Tx, acct *storage.InternalAccount, change string,
	c *storage.Credential, a *signedretry.Authorization, signer *storage.Credential, before []storage.Credential, now time.Time) error {
	d := &SecurityNoticeData{AccountID: acct.ID, CustomerID: acct.CustomerID, Change: change, ChangedAt: now.UTC(),
		Notify: channels(before)}
	if c != nil {
		d.Credential = &NoticeCredential{ID: c.ID, Type: c.Type, Nickname: c.Nickname}
		if change == noticeAdded && c.AssuredAs(now) != c.Type {
			settles := c.Enrolment.SettlesAt.UTC()
			d.Assurance, d.SettlesAt = c.AssuredAs(now), &settles
		}
	}
	if a != nil && a.SessionID != "" {
		d.SignedBy = &NoticeSigner{SessionID: a.SessionID, AuthMethodID: a.CredentialID}
		if signer != nil {
			d.SignedBy.Type = signer.Type
		}
	}
	return s.emit(ctx, tx, EventSecurityNotice, acct.ID, d, now)
}

// CredentialEventData is the data of the AUTH_CREDENTIAL events: the
// credential as [AuthMethod] renders it (never with its
// otpEncryptionTargetBundle), its customer, and the members of the event
// type.
type CredentialEventData struct {
	// ID is the credential (AuthMethod:<uuid>).
	ID        string `json:"id"`
	AccountID string `json:"accountId"`
	// CustomerID is the customer the wallet belongs to.
	CustomerID string                 `json:"customerId,omitempty"`
	Type       storage.CredentialType `json:"type"`
	Nickname   string                 `json:"nickname"`
	// CredentialID is the base64url WebAuthn credential id (PASSKEY only),
	// as in [AuthMethod].
	CredentialID string    `json:"credentialId,omitempty"`
	CreatedAt    time.Time `json:"createdAt"`
	UpdatedAt    time.Time `json:"updatedAt"`
	// SignedBySessionID is the session that stamped the signed retry of the
	// change; empty when the change took no signature (the account's first
	// credential) or the sandbox literal stood in for one (ADDED,
	// REVOKED).
	SignedBySessionID string `json:"signedBySessionId,omitempty"`
	// RevokedSessionCount is how many sessions of the credential were
	// revoked with it (REVOKED only).
	RevokedSessionCount *int `json:"revokedSessionCount,omitempty"`
	// FailedAttempts is how many verification attempts the locked code
	// took (OTP_LOCKED only).
	FailedAttempts int `json:"failedAttempts,omitempty"`
	// AttemptBudget is the budget of compared codes per window that is
	// spent (OTP_THROTTLED only).
	AttemptBudget int `json:"attemptBudget,omitempty"`
	// ThrottledUntil is when the budget's window ends and codes of the
	// credential are compared again (OTP_THROTTLED only).
	ThrottledUntil *time.Time `json:"throttledUntil,omitempty"`
}

// SessionEventData is the data of the AUTH_SESSION events: the session as
// [AuthSession] renders it (never with its encryptedSessionSigningKey or any
// key), its customer and credential, and the members of the event type.
type SessionEventData struct {
	// ID is the session (Session:<uuid>).
	ID         string `json:"id"`
	AccountID  string `json:"accountId"`
	CustomerID string `json:"customerId,omitempty"`
	// AuthMethodID is the credential (AuthMethod:<uuid>) the session was
	// issued by; Type and Nickname are that credential's (empty when it
	// was deleted).
	AuthMethodID string                 `json:"authMethodId"`
	Type         storage.CredentialType `json:"type,omitempty"`
	Nickname     string                 `json:"nickname,omitempty"`
	CreatedAt    time.Time              `json:"createdAt"`
	UpdatedAt    time.Time              `json:"updatedAt"`
	// AuthenticatedAt is when the ceremony that authenticated the session
	// took place; a refreshed session keeps the one it replaced had.
	AuthenticatedAt time.Time `json:"authenticatedAt"`
	ExpiresAt       time.Time `json:"expiresAt"`
	// PreviousSessionID is the session that was refreshed (REFRESHED only).
	PreviousSessionID string `json:"previousSessionId,omitempty"`
	// SignedBySessionID is the session that stamped the signed retry
	// (REVOKED, REFRESHED); empty when the sandbox literal stood in.
	SignedBySessionID string `json:"signedBySessionId,omitempty"`
}

// EmailEventData is the data of INTERNAL_ACCOUNT.EMAIL_UPDATED.
type EmailEventData struct {
	AccountID  string `json:"accountId"`
	CustomerID string `json:"customerId"`
	// Email is the new address, lowercased (the old one is not included).
	Email string `json:"email"`
	// AuthMethodIDs are the account's EMAIL_OTP credentials now tied to the
	// address, in id order; empty when it has none.
	AuthMethodIDs []string  `json:"authMethodIds"`
	UpdatedAt     time.Time `json:"updatedAt"`
	// SignedBySessionID is the session that stamped the signed retry;
	// empty when the change took no signature (no tied credential) or the
	// sandbox literal stood in.
	SignedBySessionID string `json:"signedBySessionId,omitempty"`
}

// HostOperationEventData is the data of HOST_OPERATION.AUTHORIZED: who
// signed which request of which operation.
type HostOperationEventData struct {
	RequestID    string    `json:"requestId"`
	Type         string    `json:"type"`
	AccountID    string    `json:"accountId"`
	AuthorizedAt time.Time `json:"authorizedAt"`
	// SignedBySessionID and AuthMethodID are the signing session and its
	// credential; empty when the sandbox literal stood in for a signature.
	SignedBySessionID string `json:"signedBySessionId,omitempty"`
	AuthMethodID      string `json:"authMethodId,omitempty"`
}

// emit appends an event of type typ about accountID with data to the outbox
// of tx, the transaction of the change it reports (where the append comes in
// a transaction is the store's lock order, see [storage.Tx]).
func (s *Service) emit(ctx context.Context, tx storage.Tx, typ, accountID string, data any, now time.Time) error {
	e, err := storage.NewEvent(s.cfg.Rand, typ, accountID, data, now)
	if err != nil {
		return err
	}
	return tx.Outbox().Append(ctx, &e)
}

// customerOf returns the customer of the internal account, "" when the
// account is gone.
func customerOf(ctx context.Context, tx storage.Tx, accountID string) (string, error) {
	a, err := tx.InternalAccounts().Get(ctx, accountID)
	if errors.Is(err, storage.ErrNotFound) {
		return "", nil
	}
	return a.CustomerID, err
}

// credentialData renders c for an AUTH_CREDENTIAL event.
func credentialData(c *storage.Credential, customerID string) *CredentialEventData {
	m := authMethod(c)
	return &CredentialEventData{ID: m.ID, AccountID: m.AccountID, CustomerID: customerID, Type: m.Type,
		Nickname: m.Nickname, CredentialID: m.CredentialID, CreatedAt: m.CreatedAt, UpdatedAt: m.UpdatedAt}
}

// credentialAdded writes AUTH_CREDENTIAL.ADDED for c, created in tx on acct.
// signer is the session that stamped the retry, if any.
func (s *Service) credentialAdded(ctx context.Context, tx storage.Tx, acct *storage.InternalAccount, c *storage.Credential, signer string) error {
	d := credentialData(c, acct.CustomerID)
	d.SignedBySessionID = signer
	return s.emit(ctx, tx, EventCredentialAdded, c.AccountID, d, c.CreatedAt)
}

// credentialRevoked writes AUTH_CREDENTIAL.REVOKED for c, a credential of
// acct deleted in tx with its revoked sessions.
func (s *Service) credentialRevoked(ctx context.Context, tx storage.Tx, acct *storage.InternalAccount, c *storage.Credential, revoked int, signer string, now time.Time) error {
	d := credentialData(c, acct.CustomerID)
	d.SignedBySessionID, d.RevokedSessionCount = signer, &revoked
	return s.emit(ctx, tx, EventCredentialRevoked, c.AccountID, d, now)
}

// otpLocked writes AUTH_CREDENTIAL.OTP_LOCKED for c, whose live code the
// failed attempt recorded in tx exhausted.
func (s *Service) otpLocked(ctx context.Context, tx storage.Tx, c *storage.Credential, attempts int, now time.Time) error {
	noteLockout(ctx)
	customer, err := customerOf(ctx, tx, c.AccountID)
	if err != nil {
		return err
	}
	d := credentialData(c, customer)
	d.FailedAttempts = attempts
	return s.emit(ctx, tx, EventCredentialOTPLocked, c.AccountID, d, now)
}

// sessionData renders sess, issued by c (nil when the credential is gone),
// for an AUTH_SESSION event.
func sessionData(ctx context.Context, tx storage.Tx, sess *storage.Session, c *storage.Credential) (*SessionEventData, error) {
	customer, err := customerOf(ctx, tx, sess.AccountID)
	if err != nil {
		return nil, err
	}
	a := authSession(sess, c)
	return &SessionEventData{ID: a.ID, AccountID: a.AccountID, CustomerID: customer, AuthMethodID: sess.CredentialID,
		Type: a.Type, Nickname: a.Nickname, CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt, AuthenticatedAt: a.AuthenticatedAt,
		ExpiresAt: a.ExpiresAt}, nil
}

// sessionEvent writes an AUTH_SESSION event of type typ for sess.
// previous and signer fill PreviousSessionID and SignedBySessionID.
func (s *Service) sessionEvent(ctx context.Context, tx storage.Tx, typ string, sess *storage.Session, c *storage.Credential,
	previous, signer string, now time.Time) error {
	d, err := sessionData(ctx, tx, sess, c)
	if err != nil {
		return err
	}
	d.PreviousSessionID, d.SignedBySessionID = previous, signer
	return s.emit(ctx, tx, typ, sess.AccountID, d, now)
}

// emailUpdated writes INTERNAL_ACCOUNT.EMAIL_UPDATED for acct, whose email
// and EMAIL_OTP credentials (credIDs) were set to email in tx.
func (s *Service) emailUpdated(ctx context.Context, tx storage.Tx, acct *storage.InternalAccount, email string, credIDs []string,
	signer string, now time.Time) error {
	if credIDs == nil {
		credIDs = []string{}
	}
	d := &EmailEventData{AccountID: acct.ID, CustomerID: acct.CustomerID, Email: email, AuthMethodIDs: credIDs,
		UpdatedAt: now, SignedBySessionID: signer}
	return s.emit(ctx, tx, EventEmailUpdated, acct.ID, d, now)
}

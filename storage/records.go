package storage

import (
	"encoding/json"
	"time"
)

// AccountStatus is the status of an external account in its life cycle;
// the ownership package decides which statuses may be paid.
type AccountStatus string

// External account statuses.
const (
	StatusPending                      AccountStatus = "PENDING"
	StatusActive                       AccountStatus = "ACTIVE"
	StatusPendingOwnershipVerification AccountStatus = "PENDING_OWNERSHIP_VERIFICATION"
	StatusUnverified                   AccountStatus = "UNVERIFIED"
	StatusUnderReview                  AccountStatus = "UNDER_REVIEW"
	StatusInactive                     AccountStatus = "INACTIVE"
)

// ExternalAccount is an account outside the service that a customer pays to or
// from, for example a self-custody wallet.
type ExternalAccount struct {
	ID         string // ExternalAccount:<uuid>
	CustomerID string // Customer:<uuid>; empty for platform accounts
	// Tenant names the host's tenant (a platform) the account belongs to,
	// as the host gave it at registration; it never changes. A host's
	// guard compares it with the caller's principal.
	Tenant            string
	PlatformAccountID string
	Status            AccountStatus
	OwnershipType     string // FIRST_PARTY, THIRD_PARTY or empty
	Currency          string
	AccountType       string // the accountInfo.accountType, e.g. ETHEREUM_WALLET
	Address           string // wallet address or account identifier
	Network           string // chain network where the address type leaves it open
	VaspName          string // set for custodial wallets
	// Info is the accountInfo object as the host stores it, opaque here.
	Info      json.RawMessage
	CreatedAt time.Time
	UpdatedAt time.Time
	// Version increases by one with every update; [ExternalAccounts.Update]
	// uses it for compare-and-set.
	Version int64
}

// OwnershipChallenge is the outstanding ownership challenge of an external
// account. An account has at most one.
type OwnershipChallenge struct {
	ID               string // a unique id for compare-and-set consumption
	AccountID        string // ExternalAccount:<uuid>
	Method           string // WALLET_SIGNATURE or LIVENESS
	Message          string // messageToSign (WALLET_SIGNATURE)
	Nonce            string
	VerificationLink string // LIVENESS
	Token            string // LIVENESS
	IssuedAt         time.Time
	ExpiresAt        time.Time
}

// InternalAccount is an embedded wallet of a customer.
type InternalAccount struct {
	ID         string // InternalAccount:<uuid>
	CustomerID string // Customer:<uuid>
	// Tenant names the host's tenant (a platform, in a host serving
	// several) the wallet belongs to, as the host gave it when the wallet
	// was created; it never changes. The uniqueness rules of credentials
	// (an EMAIL_OTP address, a WebAuthn credential id) hold within one
	// tenant, so no answer to one tenant depends on another's wallets.
	// Empty is a tenant like any other: a host with one tenant leaves it
	// empty.
	Tenant    string
	Email     string
	Phone     string // E.164
	CreatedAt time.Time
	UpdatedAt time.Time
	// SecurityChangedAt is when the wallet's means of authentication last
	// changed after its creation: a credential added to a wallet that had
	// one, a credential revoked, the email its EMAIL_OTP credentials are
	// tied to changed. Zero when none did.
	SecurityChangedAt time.Time
	Version           int64 // compare-and-set, as ExternalAccount.Version
}

// CredentialType is the type of an embedded-wallet credential.
type CredentialType string

// Credential types.
const (
	EmailOTP CredentialType = "EMAIL_OTP"
	SMSOTP   CredentialType = "SMS_OTP"
	Passkey  CredentialType = "PASSKEY"
	OAuth    CredentialType = "OAUTH"
)

// Credential is an authentication method of an internal account (an
// AuthMethod on the wire). Exactly the fields of its type are set.
type Credential struct {
	ID        string // AuthMethod:<uuid>
	AccountID string // InternalAccount:<uuid>
	// Tenant is the tenant of the credential's wallet
	// ([InternalAccount].Tenant), copied when the credential is created:
	// the uniqueness rules of [Credentials.Create] hold within it.
	Tenant   string
	Type     CredentialType
	Nickname string
	Email    string // EMAIL_OTP
	Phone    string // SMS_OTP
	OAuth    *OAuthIdentity
	WebAuthn *WebAuthnCredential
	// Enrolment is how the credential was enrolled; CreatedAt is when.
	Enrolment Enrolment
	CreatedAt time.Time
	UpdatedAt time.Time
	Version   int64 // compare-and-set, as ExternalAccount.Version
}

// Enrolment is how a credential was enrolled: by which session, and so by
// which credential, and which assurance it carries until its
// security-change period ends. A credential is worth no more than the
// proof that enrolled it: one enrolled by the session of a weaker
// credential carries that credential's assurance until SettlesAt, and
// until then it answers to its enroller, not as a credential of its own.
// The zero Enrolment is a credential enrolled without a session (the
// wallet's first, which the host provisions), worth its own type at once.
type Enrolment struct {
	// SessionID is the session that signed the enrolment and CredentialID
	// the credential that session was opened with; both empty without a
	// session.
	SessionID    string
	CredentialID string
	// Origin is the credential the enrolment answers to during the
	// period: the enrolling credential, or, when that one was itself
	// within its own period at the enrolment, its Origin. Empty without a
	// session.
	Origin string
	// Assurance is the credential type whose assurance the credential
	// carries until SettlesAt: its own type when it was enrolled by a
	// session at least as strong, otherwise the weaker assurance that
	// session carried. Empty without a session.
	Assurance CredentialType
	// SettlesAt ends the credential's security-change period: from then on
	// it carries its own type's assurance and answers to itself. Zero
	// without a session.
	SettlesAt time.Time
}

// AssuredAs returns the credential type whose assurance c carries at t:
// its own type once its security-change period has ended (or when it had
// none), otherwise the assurance of the proof that enrolled it.
func (c *Credential) AssuredAs(t time.Time) CredentialType {
	if c.Enrolment.Assurance == "" || !t.Before(c.Enrolment.SettlesAt) {
		return c.Type
	}
	return c.Enrolment.Assurance
}

// OriginAt returns the credential c answers to at t: c itself once its
// security-change period has ended (or when it had none), otherwise the
// origin of its enrolment. Two credentials with the same origin at t are
// one holder's, not two independent credentials.
func (c *Credential) OriginAt(t time.Time) string {
	if c.Enrolment.Origin == "" || !t.Before(c.Enrolment.SettlesAt) {
		return c.ID
	}
	return c.Enrolment.Origin
}

// OAuthIdentity is the OpenID Connect identity an OAUTH credential was
// registered with.
type OAuthIdentity struct {
	Issuer   string
	Audience string
	Subject  string
}

// WebAuthnCredential is the stored state of a passkey.
type WebAuthnCredential struct {
	CredentialID    []byte // raw WebAuthn credential id; unique across the store
	PublicKey       []byte // COSE public key
	AttestationType string
	AAGUID          []byte
	SignCount       uint32
	Transports      []string
	UserPresent     bool
	UserVerified    bool
	BackupEligible  bool
	BackupState     bool
	CloneWarning    bool
}

// OTPIssuance is one issued one-time code. A credential has at most one live
// issuance: storing a new one supersedes the previous.
type OTPIssuance struct {
	ID           string
	CredentialID string
	AccountID    string
	// Code is a MAC of the issued code, never the code: walletauth writes
	// lowercase hex of an HMAC-SHA256 under a host key, bound to ID and
	// CredentialID. It is text (at most a few hundred bytes), opaque to the
	// store, kept and returned exactly. Do not log it: with the host key it
	// confirms a guessed code.
	Code string
	// TargetKey is the private half of this issuance's HPKE target key,
	// sealed (authenticated encryption under a host key, bound to ID and
	// CredentialID, see package walletauth/secret), never in plaintext. It is
	// opaque to the store, arbitrary bytes kept and returned exactly.
	TargetKey []byte
	IssuedAt  time.Time
	ExpiresAt time.Time
	// Attempts counts verification attempts: each code compared against
	// this issuance (see [Credentials.Lock]).
	Attempts int
	// ConsumedAt is set once the code was used successfully.
	ConsumedAt time.Time
}

// OTPAttempt is what [Credentials.Lock] charges for an attempt at the
// credential's one-time code: one of the issuance's Limit attempts, and
// one hit of the rate-limit window Key, which allows Budget hits per
// Window (a budget of compared codes across issuances).
type OTPAttempt struct {
	Limit  int
	Now    time.Time
	Key    string
	Window time.Duration
	Budget int
}

// LockedCredential is what [Credentials.Lock] found and did.
type LockedCredential struct {
	// Credential is the credential, held until the transaction ends.
	Credential Credential
	// Issuance is the credential's issuance as read once the lock was
	// granted, consumed or expired ones included; nil when it has none or
	// no attempt was asked for.
	Issuance *OTPIssuance
	// Reserved is the issuance with the attempt reserved (Attempts
	// counting it); nil when none was: no attempt was asked for, the
	// issuance was not live, the window refused the hit, or another
	// transaction superseded the issuance while this one waited for it.
	Reserved *OTPIssuance
	// Wait, when positive, is how long until the budget's window ends:
	// the window refused the hit, and nothing was reserved.
	Wait time.Duration
}

// PayoutUsage is one executed payout as a payout policy counts it in its
// windows ([PayoutUsages]).
type PayoutUsage struct {
	// ID identifies the payout (the signed request that made it, or the
	// host's payout id); a payout is counted once.
	ID            string
	CustomerID    string
	SourceID      string // the wallet or account paid from
	DestinationID string // the external account paid
	// Amount is the payout's value in the policy's reference currency, in
	// its minor units.
	Amount    int64
	CreatedAt time.Time
	// ExpiresAt is when no window can count the usage any more.
	ExpiresAt time.Time
}

// States of a [PayoutApproval].
const (
	ApprovalWaiting  = "WAITING"
	ApprovalApproved = "APPROVED"
	ApprovalRefused  = "REFUSED"
)

// PayoutApproval is a payout a payout policy holds until it is approved:
// the payout's parameters as the user signed them, the approvals so far,
// and its state. It expires at ExpiresAt while WAITING.
type PayoutApproval struct {
	ID            string // PayoutApproval:<uuid>
	CustomerID    string
	SourceID      string
	DestinationID string
	Amount        int64
	Currency      string
	// Rule names the rule that asked for approval.
	Rule string
	// RequestID is the signed request of the payout; RequestedBy the
	// credential whose session signed it.
	RequestID   string
	RequestedBy string
	// Required is how many approvals execute the payout.
	Required int
	// Approvers are who approved (or refused), in order: "credential:<id>"
	// or "operator:<name>".
	Approvers []string
	State     string // ApprovalWaiting, ApprovalApproved or ApprovalRefused
	CreatedAt time.Time
	UpdatedAt time.Time
	ExpiresAt time.Time
	Version   int64
}

// Session is an authenticated session of an internal account; its public key
// signs the account's signed retries.
type Session struct {
	ID           string // Session:<uuid>
	AccountID    string
	CredentialID string
	// PublicKey is the session's P-256 public key, compressed (33 bytes).
	PublicKey []byte
	CreatedAt time.Time
	// AuthenticatedAt is when the ceremony that authenticated the session
	// took place (a one-time code, a passkey assertion, an OpenID Connect
	// token verified); a refresh, signed by the old session alone, keeps
	// it. Every freshness rule judges it (through [Session.Authenticated]),
	// never CreatedAt.
	AuthenticatedAt time.Time
	ExpiresAt       time.Time
	// RevokedAt is set when the session was revoked.
	RevokedAt time.Time
}

// Authenticated returns when the session's authentication took place:
// AuthenticatedAt, or for a session stored without one (by a release that
// did not record it, whose sessions were authenticated when created)
// CreatedAt.
func (s *Session) Authenticated() time.Time {
	if s.AuthenticatedAt.IsZero() {
		return s.CreatedAt
	}
	return s.AuthenticatedAt
}

// Active reports whether the session can sign at now: not revoked and not
// expired.
func (s *Session) Active(now time.Time) bool {
	return s.RevokedAt.IsZero() && now.Before(s.ExpiresAt)
}

// PendingRequest is a single-use server-side record keyed by a Request:<uuid>
// id: a signed-retry challenge, a passkey challenge or any other operation that
// a later request completes exactly once.
type PendingRequest struct {
	ID        string // Request:<uuid>
	Kind      string // the operation, e.g. "REVOKE_CREDENTIAL"
	AccountID string
	Method    string
	Path      string
	// BodyDigest is the SHA-256 of the canonical first-call body.
	BodyDigest []byte
	// Payload is the exact payloadToSign (or challenge) bytes.
	Payload []byte
	// Signer names who may complete the request (a signer rule and its
	// subject, interpreted by the owning package).
	SignerRule string
	SignerRef  string
	// Data holds operation parameters, opaque to the store.
	Data       json.RawMessage
	CreatedAt  time.Time
	ExpiresAt  time.Time
	ConsumedAt time.Time
}

// Event is an outbox entry: a webhook to publish after its transaction
// commits. [NewEvent] builds one.
type Event struct {
	ID        string // Webhook:<uuid>
	Type      string // e.g. EXTERNAL_ACCOUNT.STATUS_UPDATED
	AccountID string // the resource the event is about; ordering is per account
	Payload   json.RawMessage
	CreatedAt time.Time
	// Seq is assigned by the store: among the events of one AccountID it
	// increases in commit order (across accounts it is only unique).
	Seq int64
	// DeliveredAt is set by MarkDelivered.
	DeliveredAt time.Time

	// The delivery state, kept by the store (see [Outbox]).

	// Attempts counts failed deliveries since the event was appended or
	// last re-driven.
	Attempts int
	// NextAttemptAt: the event is not due before it (zero: due at once).
	NextAttemptAt time.Time
	// LeaseOwner holds the event until LeasedUntil.
	LeaseOwner  string
	LeasedUntil time.Time
	// LastError is the reason of the last failed delivery.
	LastError string
	// ParkedAt is set when the event was parked: it is not delivered again
	// until re-driven.
	ParkedAt time.Time
}

// IdempotencyState is the state of an [IdempotencyRecord].
type IdempotencyState string

// Idempotency record states.
const (
	// IdempotencyInProgress: the first request with the key is executing;
	// the record is a reservation that only its Token may complete or
	// release.
	IdempotencyInProgress IdempotencyState = "IN_PROGRESS"
	// IdempotencyComplete: the record holds the response to replay.
	IdempotencyComplete IdempotencyState = "COMPLETE"
)

// IdempotencyRecord remembers the first request made with an Idempotency-Key
// and, once it completed, its response. (Scope, Key) identifies it: Scope
// separates callers (for example a platform or a customer), so two callers
// never share a key.
type IdempotencyRecord struct {
	Scope string
	Key   string
	// Token identifies one reservation: Complete and Release act only on the
	// reservation they were given, never on a later one that replaced it
	// after it expired.
	Token string
	// Fingerprint is opaque to the store (package storage/idempotency writes
	// the SHA-256 of the method, path and canonical body).
	Fingerprint []byte
	State       IdempotencyState
	// Status, Header and Body are the stored response (State COMPLETE).
	// Header holds the selected response headers, opaque to the store.
	Status    int
	Header    map[string][]string
	Body      []byte
	CreatedAt time.Time
	// ExpiresAt ends the record: from then on the key is free again and
	// Sweep may delete it.
	ExpiresAt time.Time
}

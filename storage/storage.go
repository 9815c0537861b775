// Package storage defines what walletgate persists and the contract every store
// keeps: the records, the repository interfaces the domain packages use, the
// transaction boundary and the sentinel errors.
//
// # The storage folder
//
// This package is the contract; each folder below it owns one slice:
//
//   - storage/memory: the in-memory store, the embedded default for a
//     single process;
//   - storage/postgres: the PostgreSQL store, for services that run several
//     replicas on one database (with its migrations);
//   - storage/storagetest: the conformance suite of the contract and its
//     benchmarks; both stores pass it, and a host that writes its own store
//     proves it keeps the contract by passing
//     [github.com/walletgate/walletgate/storage/storagetest.Run];
//   - storage/relay: delivers the events of the [Outbox] after their
//     transactions commit, through a Publisher it defines;
//   - storage/webhook: signs and sends events as webhooks (a Publisher for
//     the relay); a receiver verifies them with apierror/webhooksig, outside
//     this tree;
//   - storage/idempotency: runs a request at most once per Idempotency-Key,
//     on [IdempotencyKeys];
//   - storage/sweep: deletes expired records in the background through
//     [Store.Sweep].
//
// # Transactions
//
// Every read and write goes through [Store.Atomic]: the writes of one call
// commit together or not at all, and no other transaction observes a partial
// result. An error or a panic in the function rolls everything back (a panic is
// re-raised after the rollback).
//
// A store may also run Atomic inside a transaction of the host's, so that
// walletgate's writes and the host's own (a ledger debit, a customer row)
// commit together. storage/postgres does: the host begins a pgx transaction,
// binds it to the context with its Store.WithTx, and calls any walletgate
// operation with that context; Atomic then runs in a savepoint of the host's
// transaction, commits nothing and never reruns fn (a serialization failure
// is returned for the host to roll back and rerun), and an effect reaches
// the transaction with postgres.HostTx. The host commits or rolls back. The
// pattern is the same for every operation that accepts a host transaction.
// One that records what it refuses runs under a context marked by
// [Standalone], and a store refuses to run its Atomic in a host's
// transaction ([ErrStandalone]), so that no decision of the host's can
// erase the record. A store also refuses a host transaction at an
// isolation level its rules were not proven at (storage/postgres: any
// level but that of its own transactions). storage/memory has no host
// transaction: its Atomic is always its own.
//
// # Exactly once
//
// Pending requests, OTP issuances and ownership challenges are consumed at
// most once, also when several replicas race on one database: consumption is a
// single compare-and-set in the store, and the loser gets a sentinel error.
// Records that carry a Version (accounts, credentials) are updated by
// compare-and-set on that version.
//
// # Check, then act
//
// A rule that a caller checks by reading and then keeps by writing holds only
// when the store keeps the read true until the write commits. Every such
// rule is kept by the store, never by the caller's Go code alone:
//
//   - by a guarded statement that checks and writes in one step
//     ([Credentials.Lock] with an [OTPAttempt] counts a verification
//     attempt only while fewer than the limit were made, [RateLimits.Hit]
//     counts a hit only while the window has room, [PendingRequests.Consume]
//     consumes a request only once);
//   - by a uniqueness rule ([Credentials.Create]: one EMAIL_OTP and one
//     SMS_OTP per account; [IdempotencyKeys.Begin]: one live record per
//     scope and key);
//   - by a lock held until the transaction ends: [InternalAccounts.Lock]
//     orders every change of an account's credential set (at least one
//     credential is kept, a credential is added without a signature only to
//     an account that has none), [Credentials.Lock] keeps a credential from
//     being deleted while a session of it is created, and
//     [Credentials.LockEmail] orders changes that tie an email address to
//     EMAIL_OTP credentials, [Sessions.LockSigner] keeps the session that
//     signs an operation, and its credential, from being revoked until the
//     operation commits, and [PendingRequests.Create] counts the live
//     requests of an account (or a scope) and adds one under a lock of
//     them.
//
// Locks are taken in this order, so transactions never wait for each other
// in a cycle: internal accounts (several in ascending id order), then an
// email address, then credentials, then sessions, then external accounts
// (a payout signed by a session locks its signer before the external account
// it pays, [ExternalAccounts.Lock]), then the lock of an account's pending
// requests, then the lock of a scope of pending requests (both
// [PendingRequests.Create]), then a host's records ([Records.Lock]: a
// payout's debit holds the balance it takes from after everything the
// payout's rules held). [Outbox.Append] comes last: a
// store may order an account's events with a lock held until commit
// (storage/postgres takes a lock per account, storage/memory one for the
// whole outbox), so a transaction appends its events after every other lock
// and write, and never waits for another lock after its first append.
//
// # Deferred writes
//
// A method documented as deferrable returns nothing a caller decides on,
// only an error that ends the transaction. A store may defer it: send it
// with the transaction's next statement or with its commit, so it costs
// no round trip of its own (storage/postgres does). The rule every store
// keeps, and storagetest proves for every method that writes:
//
//   - a deferred write's failure surfaces at a later call of the same
//     transaction or from Atomic, never later: Atomic never returns nil
//     for a transaction one of whose writes failed;
//   - the transaction then rolls back whole, as it would had the method
//     returned the error at once;
//   - a later call of the same transaction sees the write (it is sent
//     before, or with, the statement that reads).
//
// Callers therefore return every error of a deferrable method unexamined,
// and decide on its failure from the error of Atomic (errors.As with the
// method's error type). Every other method reports its failure when it
// returns.
//
// # Time
//
// Stores never read a clock. Callers pass the time (their injected clock) to
// every method where expiry matters.
package storage

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Sentinel errors. Stores return them (possibly wrapped); domain packages map
// them to apierror codes. Test with errors.Is. An error left unmapped is
// 500 INTERNAL_ERROR, except ErrConflict and ErrDuplicate: they mean a
// concurrent writer won, and apierror.From writes them as 409 CONFLICT, so the
// client retries and the retry is decided against the winner's write.
var (
	// ErrNotFound: no record with that key (or it was superseded or deleted).
	ErrNotFound = errors.New("storage: not found")
	// ErrDuplicate: a record with that key, or violating a uniqueness rule,
	// already exists.
	ErrDuplicate error = &raceLost{"storage: duplicate"}
	// ErrConflict: a compare-and-set lost: the record changed since it was read.
	ErrConflict error = &raceLost{"storage: conflict"}
	// ErrExpired: the record exists but its expiry has passed.
	ErrExpired = errors.New("storage: expired")
	// ErrConsumed: the single-use record was already consumed.
	ErrConsumed = errors.New("storage: already consumed")
	// ErrExhausted: the record allows no more attempts.
	ErrExhausted = errors.New("storage: attempts exhausted")
	// ErrTxDone: a Tx was used after its Atomic call returned.
	ErrTxDone = errors.New("storage: transaction already finished")
)

// Store is a transactional store of walletgate records.
type Store interface {
	// Atomic runs fn in a transaction. When fn returns nil, its writes commit
	// together; when it returns an error or panics, none of them persist and
	// Atomic returns that error (or re-panics). fn may be run more than once
	// when the store retries a serialization failure, so it must not have
	// effects outside the Tx (inside a host's transaction, see the package
	// documentation, it runs once). fn must not call Atomic on the same
	// store, and must not keep tx after returning.
	Atomic(ctx context.Context, fn func(tx Tx) error) error

	// Sweep deletes at most limit records that expired before cutoff: pending
	// requests, OTP issuances, ownership challenges, sessions, rate-limit
	// windows, idempotency records (in progress or complete), payout
	// usages and payout approvals, consumed or not, and events delivered before cutoff (parked events stay until
	// they are re-driven and delivered). A host's [Records] have no expiry:
	// Sweep never deletes one. It returns how many it deleted; a result equal to limit means more may
	// remain. It does not scan live records. Choose cutoff with a margin
	// (for example now minus an hour) so that a client retrying just after
	// an expiry still hears "expired" rather than "unknown".
	Sweep(ctx context.Context, cutoff time.Time, limit int) (int, error)
}

// Tx gives the repositories of one transaction.
type Tx interface {
	ExternalAccounts() ExternalAccounts
	Challenges() OwnershipChallenges
	InternalAccounts() InternalAccounts
	Credentials() Credentials
	OTPIssuances() OTPIssuances
	Sessions() Sessions
	PendingRequests() PendingRequests
	Outbox() Outbox
	RateLimits() RateLimits
	Idempotency() IdempotencyKeys
	PayoutUsage() PayoutUsages
	PayoutApprovals() PayoutApprovals
	Records() Records
}

// ExternalAccounts stores external accounts.
type ExternalAccounts interface {
	// Create stores a new account with Version 1 (set on a). ErrDuplicate when
	// the id exists.
	Create(ctx context.Context, a *ExternalAccount) error
	// Get returns the account or ErrNotFound.
	Get(ctx context.Context, id string) (ExternalAccount, error)
	// Update replaces the account when the stored Version equals a.Version,
	// and sets a.Version to the new version. ErrNotFound, or ErrConflict when
	// the version differs. It keeps the stored Tenant and sets a.Tenant to
	// it.
	Update(ctx context.Context, a *ExternalAccount) error
	// ListByCustomer returns the customer's accounts in creation order.
	ListByCustomer(ctx context.Context, customerID string) ([]ExternalAccount, error)
	// Lock returns the account as Get does and holds it until the
	// transaction ends: another transaction's Lock or Update of the account
	// waits until then and sees what this one committed. A payout gate locks
	// the account before deciding on its status, so no status change commits
	// between the decision and the payout. ErrNotFound when the account does
	// not exist.
	Lock(ctx context.Context, id string) (ExternalAccount, error)
}

// OwnershipChallenges stores the outstanding ownership challenge of each
// external account.
type OwnershipChallenges interface {
	// Put stores c as the outstanding challenge of c.AccountID, superseding
	// any earlier one.
	Put(ctx context.Context, c *OwnershipChallenge) error
	// Get returns the account's outstanding challenge or ErrNotFound.
	Get(ctx context.Context, accountID string) (OwnershipChallenge, error)
	// Consume removes and returns the account's outstanding challenge if its
	// id is challengeID; ErrNotFound when there is none or it is another one.
	// Expiry is the caller's to judge.
	Consume(ctx context.Context, accountID, challengeID string) (OwnershipChallenge, error)
}

// InternalAccounts stores embedded wallets.
type InternalAccounts interface {
	// Create stores a new account with Version 1 (set on a). ErrDuplicate when
	// the id exists.
	Create(ctx context.Context, a *InternalAccount) error
	// Get returns the account or ErrNotFound.
	Get(ctx context.Context, id string) (InternalAccount, error)
	// Update is compare-and-set on Version, as [ExternalAccounts.Update].
	// It keeps the stored Tenant (a wallet's tenant never changes) and sets
	// a.Tenant to it.
	Update(ctx context.Context, a *InternalAccount) error
	// ListByCustomer returns the customer's accounts in creation order.
	ListByCustomer(ctx context.Context, customerID string) ([]InternalAccount, error)
	// OfCredential returns the account that holds credential credentialID,
	// as Get does, in one read: the owner a caller's authorization is
	// decided on. ErrNotFound when the credential or its account does not
	// exist.
	OfCredential(ctx context.Context, credentialID string) (InternalAccount, error)
	// OfSession is OfCredential for the account of session sessionID
	// (revoked and expired sessions included).
	OfSession(ctx context.Context, sessionID string) (InternalAccount, error)
	// Lock returns the account as Get does and holds it until the
	// transaction ends: another transaction's Lock or Update of the account
	// waits until then and sees what this one committed. Callers lock the
	// account before they read its credentials to decide a change of them,
	// so the decision still holds when the change commits. ErrNotFound when
	// the account does not exist.
	Lock(ctx context.Context, id string) (InternalAccount, error)
	// MarkSecurityChanged sets the SecurityChangedAt and UpdatedAt of
	// account id to at and increases its Version, for a change of its
	// credentials the transaction makes. The caller holds the account
	// (Lock). Deferrable: a failure, an error wrapping ErrNotFound for an
	// account that does not exist, may come from a later call or from
	// Atomic.
	MarkSecurityChanged(ctx context.Context, id string, at time.Time) error
}

// Credentials stores the authentication methods of internal accounts.
type Credentials interface {
	// Create stores a new credential with Version 1 (set on c). ErrDuplicate
	// when the id exists, when the account already has a credential of type
	// EMAIL_OTP (or SMS_OTP) and c is one, when c is a PASSKEY whose WebAuthn
	// credential id is stored already on an account of c.Tenant, or when c
	// is an OAUTH credential whose identity the account already has. A
	// WebAuthn credential id stored under another tenant is no clash: no
	// rule of one tenant depends on another's credentials.
	Create(ctx context.Context, c *Credential) error
	// Get returns the credential or ErrNotFound.
	Get(ctx context.Context, id string) (Credential, error)
	// Update is compare-and-set on Version, as [ExternalAccounts.Update]. The
	// uniqueness rules of Create apply. It keeps the stored Tenant and sets
	// c.Tenant to it.
	Update(ctx context.Context, c *Credential) error
	// Delete removes the credential; ErrNotFound when it does not exist.
	Delete(ctx context.Context, id string) error
	// ListByAccount returns the account's credentials in creation order (an
	// empty list for an unknown account).
	ListByAccount(ctx context.Context, accountID string) ([]Credential, error)
	// FindByWebAuthnID returns the PASSKEY credential of tenant with that
	// WebAuthn credential id, or ErrNotFound.
	FindByWebAuthnID(ctx context.Context, tenant string, credentialID []byte) (Credential, error)
	// ListEmailOTPByEmail returns the EMAIL_OTP credentials of tenant tied
	// to email, compared exactly (callers normalise addresses before
	// storing them), oldest first.
	ListEmailOTPByEmail(ctx context.Context, tenant, email string) ([]Credential, error)
	// Lock returns the credential as Get does and holds it until the
	// transaction ends: another transaction's Lock, Update or Delete of the
	// credential waits until then. A caller that creates a session of the
	// credential locks it first, so a concurrent Delete either commits
	// before (Lock answers ErrNotFound) or after (and then sees the
	// session). ErrNotFound when the credential does not exist.
	//
	// With attempt set, a verification of the credential's one-time code
	// also charges its attempt in the same step, before it compares a
	// code. Once the lock is granted, Lock reads the credential's live
	// issuance and, only when it is live for an attempt (unconsumed,
	// attempt.Now before ExpiresAt, fewer than attempt.Limit attempts
	// made), counts a hit of the rate-limit window attempt.Key as
	// [RateLimits.Hit] counts one (at most attempt.Budget hits per
	// attempt.Window) and, when the window has room, reserves the attempt
	// (increments Attempts). An issuance that is not live is returned
	// with nothing hit or reserved; a refused hit reserves nothing and
	// reports how long until the window ends. Whatever it counted commits
	// or rolls back with the transaction, so a caller that finds the
	// credential or the issuance unfit returns an error and nothing stays
	// counted. The hit and the attempt are each one guarded step, and the
	// credential, the window and the issuance stay held until the
	// transaction ends: of any number of concurrent attempts, on any
	// replica, at most attempt.Limit are reserved per issuance and at most
	// attempt.Budget hits per window in transactions that commit.
	Lock(ctx context.Context, id string, attempt *OTPAttempt) (LockedCredential, error)
	// LockEmail holds the address email of tenant until the transaction
	// ends: another transaction's LockEmail of the same tenant and address
	// waits until then; the same address of another tenant is another
	// lock. It needs no record to exist. Callers take it before they check
	// which EMAIL_OTP credentials of the tenant are tied to the address and
	// then tie it to others, so two such changes never both pass the
	// check.
	LockEmail(ctx context.Context, tenant, email string) error
}

// OTPIssuances stores issued one-time codes, one live issuance per
// credential. A verification reads and charges the live issuance through
// [Credentials.Lock].
type OTPIssuances interface {
	// Put stores o as the live issuance of o.CredentialID, superseding (and
	// deleting) the previous one. Deferrable.
	Put(ctx context.Context, o *OTPIssuance) error
	// Consume marks issuance id used at now. Of any number of concurrent
	// calls for one id, at most one commits. Deferrable: wherever it
	// surfaces, a failure is a [*ConsumeError] for id, which wraps
	// ErrNotFound (unknown or superseded), ErrExpired (now is not before
	// ExpiresAt) or ErrConsumed. One reported after the call returned
	// never wraps ErrNotFound, so that it is not taken for the answer of
	// the later call that carried it: an issuance gone by then is reported
	// as consumed. A caller reserves an attempt on the
	// issuance first ([Credentials.Lock], at the same now), which holds it,
	// so Consume then cannot fail.
	Consume(ctx context.Context, id string, now time.Time) error
}

// Sessions stores authenticated sessions.
type Sessions interface {
	// Create stores a new session; ErrDuplicate when the id exists.
	// Deferrable.
	Create(ctx context.Context, s *Session) error
	// Get returns the session (revoked and expired ones included) or
	// ErrNotFound.
	Get(ctx context.Context, id string) (Session, error)
	// ListActive returns the account's sessions active at now, in creation
	// order.
	ListActive(ctx context.Context, accountID string, now time.Time) ([]Session, error)
	// Revoke sets RevokedAt on a session that is not revoked: ErrNotFound, or
	// ErrConflict when it already was. Expiry is the caller's to judge.
	Revoke(ctx context.Context, id string, at time.Time) error
	// RevokeByCredential revokes every unrevoked session issued by the
	// credential and returns how many it revoked.
	RevokeByCredential(ctx context.Context, credentialID string, at time.Time) (int, error)
	// LockSigner holds the internal account accountID, then the credential
	// that issued session id, then the session (the lock order) until the
	// transaction ends, and returns the session as Get does, read after the
	// locks were granted. The account is held as [InternalAccounts.Lock]
	// holds it; the credential and the session at least shared: a Revoke or
	// RevokeByCredential of the session and a Delete of the credential wait
	// until the transaction ends, and one that committed before is seen. A
	// signed operation locks its signer this way before it checks that the
	// session is active, so the check still holds when the operation
	// commits. ErrNotFound when the session does not exist or is not of
	// accountID, or its credential does not exist. The account need not
	// exist.
	LockSigner(ctx context.Context, accountID, id string) (Session, error)
	// LockSignersByKey is LockSigner for every session of accountID whose
	// PublicKey is publicKey (compressed): it holds the account, then the
	// sessions' credentials, then the sessions, as LockSigner holds them,
	// and returns those of the sessions whose credential exists, read
	// after the locks were granted, in Seq order; revoked and expired
	// sessions are included, for the caller to judge. None is not an
	// error. A signed operation that any session of the account may sign
	// finds and locks its signer this way in one step.
	LockSignersByKey(ctx context.Context, accountID string, publicKey []byte) ([]Session, error)
}

// PendingRequests stores single-use requests keyed by their Request id.
type PendingRequests interface {
	// Create stores a new pending request within quota, the bound on the
	// live requests (unconsumed, ExpiresAt after p.CreatedAt) it joins:
	//
	//   - with quota.Scope empty, the live requests of p.AccountID created
	//     with an empty scope: while the account holds quota.Limit of them,
	//     Create stores nothing and fails with a [*LimitError] whose RetryAt
	//     is the earliest ExpiresAt among them (by then at the latest one
	//     stops counting);
	//   - with quota.Scope set, the requests of that scope, whoever may
	//     start them: Create never refuses p for the bound but makes room,
	//     deleting the scope's requests that are no longer live and, of the
	//     live ones, all but the quota.Limit-1 newest (by CreatedAt, then by
	//     id compared bytewise). A deleted request is superseded: Get and
	//     Consume then answer ErrNotFound, as for an unknown id. The scope
	//     never holds more than quota.Limit requests, live or not.
	//
	// The count and the insert are one step under a lock of the account's
	// (or the scope's) requests held until the transaction ends: of any
	// number of concurrent calls, on any replica, none commits beyond the
	// bound. ErrDuplicate when the id exists (nothing is deleted then).
	// quota.Limit must be positive: there is no unbounded Create.
	// Deferrable: the *LimitError or ErrDuplicate may come from a later
	// call or from Atomic, so a caller answers the limit from the error of
	// Atomic.
	Create(ctx context.Context, p *PendingRequest, quota Quota) error
	// Get returns the request (consumed and expired ones included, until
	// swept) or ErrNotFound.
	Get(ctx context.Context, id string) (PendingRequest, error)
	// Consume marks request id used at now. Of any number of concurrent
	// calls for one id, at most one commits. Deferrable: wherever it
	// surfaces, a failure is a [*ConsumeError] for id, which wraps
	// ErrNotFound, ErrExpired (now is not before ExpiresAt) or
	// ErrConsumed. One reported after the call returned never wraps
	// ErrNotFound, so that it is not taken for the answer of the later
	// call that carried it: a request gone by then is reported as
	// consumed. A caller reads the request first (Get) and consumes one
	// it found live, at the same now; a failure then means that another
	// transaction consumed or superseded it meanwhile.
	Consume(ctx context.Context, id string, now time.Time) error
}

// Quota is the bound a new pending request joins ([PendingRequests.Create]):
// at most Limit live requests of the request's account, or, when Scope is
// set, of that scope, whose oldest requests make room for new ones.
type Quota struct {
	Limit int
	Scope string
}

// LimitError reports that [PendingRequests.Create] found the
// account at its limit of live requests; RetryAt is the earliest expiry
// among them. It wraps ErrExhausted.
type LimitError struct{ RetryAt time.Time }

func (e *LimitError) Error() string {
	return "storage: the account holds its limit of live pending requests until " + e.RetryAt.Format(time.RFC3339Nano)
}

// Unwrap returns ErrExhausted.
func (e *LimitError) Unwrap() error { return ErrExhausted }

// ConsumeError reports a single-use record that [PendingRequests.Consume]
// or [OTPIssuances.Consume] could not consume. Err is ErrNotFound,
// ErrExpired or ErrConsumed.
type ConsumeError struct {
	ID  string
	Err error
}

func (e *ConsumeError) Error() string {
	return "storage: " + e.ID + " not consumed: " + e.Err.Error()
}

// Unwrap returns Err.
func (e *ConsumeError) Unwrap() error { return e.Err }

// Outbox stores events written in the transaction of the change they report,
// and leases them to relays (package storage/relay) that deliver them after
// commit.
//
// An event is due at now when it is neither delivered nor parked, its
// NextAttemptAt is not after now, no live lease holds it (LeasedUntil is not
// after now), and every earlier event (lower Seq) of its AccountID is
// delivered or parked. So the events of one account go out one at a time, in
// commit order; a parked event stops holding back the ones after it.
type Outbox interface {
	// Append adds an event and sets e.Seq: the events of one AccountID
	// get increasing Seq in the order their transactions commit, also
	// across replicas (a store may order all events so). The delivery state (Attempts,
	// NextAttemptAt, lease, LastError, ParkedAt) starts empty: the event is
	// due once its transaction commits. ErrDuplicate when the id exists.
	// It may hold a lock until the transaction ends: callers append after
	// every other lock and write of the transaction (see the lock order).
	// Deferrable: e.Seq is set at the latest when Atomic returns.
	Append(ctx context.Context, e *Event) error
	// Lease claims at most limit events due at now for owner until
	// now+lease, sets their LeaseOwner and LeasedUntil, and returns them in
	// Seq order. The claim is one step: of concurrent Lease calls, on any
	// replica, at most one returns an event until its lease ends, and
	// since an event is due only once the earlier events of its account
	// are delivered or parked, a batch never holds two events of one
	// account.
	Lease(ctx context.Context, owner string, now time.Time, lease time.Duration, limit int) ([]Event, error)
	// MarkDelivered records delivery of the events with the given ids and
	// ends their leases; unknown or already delivered ids are ignored (the
	// first delivery time is kept).
	MarkDelivered(ctx context.Context, ids []string, at time.Time) error
	// Retry records a failed delivery of event id leased by owner: it
	// increments Attempts, sets LastError to reason and NextAttemptAt to
	// next, and ends the lease. ErrNotFound when the event is unknown,
	// delivered or parked; ErrConflict when owner does not hold its lease
	// (it ended and another relay took the event).
	Retry(ctx context.Context, id, owner string, next time.Time, reason string) error
	// Park records a failed delivery of event id leased by owner as Retry
	// does, and parks the event at at: it is not leased again until
	// Redrive. Errors as Retry.
	Park(ctx context.Context, id, owner string, at time.Time, reason string) error
	// Parked returns at most limit parked events with Seq greater than
	// after, in Seq order.
	Parked(ctx context.Context, after int64, limit int) ([]Event, error)
	// Redrive makes parked event id due again at now, with Attempts reset
	// and LastError kept. ErrNotFound when no parked event has that id.
	Redrive(ctx context.Context, id string, now time.Time) error
}

// PayoutUsages records the payouts a payout policy counts in its rolling
// windows (an amount and a number of payouts per customer or per source
// over a period). The rule "a payout fits the window" is a check and an
// act: a policy holds the customer and reads the usages in the window,
// decides and records the payout, all in the payout's transaction, so
// concurrent payouts of one customer decide one at a time, on every
// replica, and a payout rolled back uses nothing of any window.
type PayoutUsages interface {
	// Hold holds the customer's payouts until the transaction ends and
	// returns the customer's usages created at or after since, oldest
	// first: every usage committed before the hold was granted, and this
	// transaction's own. Another transaction's Hold of the same customer
	// waits until this one ends and then sees what it recorded. Holding a
	// customer no usage names is allowed (it returns none).
	Hold(ctx context.Context, customerID string, since time.Time) ([]PayoutUsage, error)
	// Record stores u. ErrDuplicate when a usage with its ID exists. The
	// usage counts from u.CreatedAt and is swept after u.ExpiresAt.
	// Deferrable: the ErrDuplicate may come from a later call of the
	// transaction or from Atomic.
	Record(ctx context.Context, u *PayoutUsage) error
}

// PayoutApprovals stores the payouts a payout policy holds for approval.
// Approving is a check and an act (the approval is waiting, the approver
// has not approved yet, the last approval executes the payout): a policy
// locks the approval, decides and updates it by compare-and-set on
// Version in one transaction, so of concurrent approvals one decides at a
// time and the payout executes once.
type PayoutApprovals interface {
	// Create stores a new approval with Version 1 (set on a). ErrDuplicate
	// when the id exists.
	Create(ctx context.Context, a *PayoutApproval) error
	// Lock returns the approval and holds it until the transaction ends:
	// another transaction's Lock or Update of it waits until then and sees
	// what this one committed. ErrNotFound when it does not exist.
	Lock(ctx context.Context, id string) (PayoutApproval, error)
	// Update replaces the approval when the stored Version equals
	// a.Version, and sets a.Version to the new version. ErrNotFound, or
	// ErrConflict when the version differs.
	Update(ctx context.Context, a *PayoutApproval) error
}

// Records stores a host's own records in the store's transactions, so that
// a host with no database of its own (a simulator on the in-memory store,
// say) keeps its state where walletgate keeps its, and writes it in the
// transaction of the operation that decides it: a debit commits or rolls
// back with the payout that made it, on every store and replica. A record
// is an opaque value under a kind and a key; the store reads nothing in
// it. A rule of the host that is a check and an act holds the record
// (Lock) or is a uniqueness rule (Create under the unique value as the
// key).
type Records interface {
	// Create stores r with Version 1 (set on r). ErrDuplicate when a record
	// of r.Kind with r.Key exists: of concurrent Creates of one kind and
	// key, on any replica, one commits.
	Create(ctx context.Context, r *Record) error
	// Get returns the record of kind with key, or ErrNotFound.
	Get(ctx context.Context, kind, key string) (Record, error)
	// Lock returns the record as Get does and holds it until the
	// transaction ends: another transaction's Lock or Update of it waits
	// until then and sees what this one committed. ErrNotFound when it does
	// not exist.
	Lock(ctx context.Context, kind, key string) (Record, error)
	// Update replaces the Value of the record of r.Kind with r.Key when
	// the stored Version equals r.Version, and sets r.Version to the new
	// version; Group and CreatedAt never change. ErrNotFound, or
	// ErrConflict when the version differs.
	Update(ctx context.Context, r *Record) error
	// List returns the records of kind in group, in the order they were
	// created (an empty list when there are none).
	List(ctx context.Context, kind, group string) ([]Record, error)
}

// Bounds of a [Record], which every store keeps ([Record.Check]).
const (
	MaxRecordName  = 200     // bytes of Kind, Key and Group each
	MaxRecordValue = 1 << 20 // bytes of Value
)

// Check reports a record the contract does not allow: an empty Kind, a
// Kind, Key or Group longer than [MaxRecordName] bytes, or a Value longer
// than [MaxRecordValue]. A store refuses such a record with this error
// (none of the sentinels) and stores nothing.
func (r *Record) Check() error {
	switch {
	case r.Kind == "":
		return errors.New("storage: a record's Kind is empty")
	case len(r.Kind) > MaxRecordName, len(r.Key) > MaxRecordName, len(r.Group) > MaxRecordName:
		return fmt.Errorf("storage: a record's Kind, Key and Group are at most %d bytes each (%d, %d, %d)",
			MaxRecordName, len(r.Kind), len(r.Key), len(r.Group))
	}
	return r.CheckValue()
}

// CheckValue reports a Value longer than [MaxRecordValue], the one bound
// an Update checks (a record whose name is out of bounds is not stored, so
// its Update answers ErrNotFound).
func (r *Record) CheckValue() error {
	if len(r.Value) > MaxRecordValue {
		return fmt.Errorf("storage: a record's Value is at most %d bytes (%d)", MaxRecordValue, len(r.Value))
	}
	return nil
}

// Record is a host's record in [Records].
type Record struct {
	// Kind and Key name the record: at most one record of a kind has a key.
	// Both are at most 200 bytes, and Kind is not empty.
	Kind string
	Key  string
	// Group, when set, is what [Records.List] finds the record by (the
	// customer it belongs to, say); at most 200 bytes.
	Group string
	// Value is the host's; the store keeps it as bytes, at most 1 MiB.
	Value []byte
	// Version increases with every Update; Create sets 1.
	Version   int64
	CreatedAt time.Time
}

// RateLimits counts hits per key in fixed windows.
type RateLimits interface {
	// Hit counts one hit on key at now. A window opens at the first hit
	// and lasts window; at most limit hits are allowed in it. A hit that
	// is not allowed is not counted and fails the transaction with a
	// [*RateLimitError] saying when the window closes. The check and the
	// count are one step: of any number of concurrent hits on one key, on
	// any replica, at most limit commit per window. Deferrable: a caller
	// that goes on only when the hit is allowed answers the refusal from
	// the error of Atomic, and nothing of the transaction commits.
	Hit(ctx context.Context, key string, now time.Time, window time.Duration, limit int) error
}

// RateLimitError reports a hit that [RateLimits.Hit] did not allow; Wait
// is how long until its window closes, a positive duration. It wraps
// ErrExhausted.
type RateLimitError struct{ Wait time.Duration }

func (e *RateLimitError) Error() string {
	return "storage: rate limit reached; the window closes in " + e.Wait.String()
}

// Unwrap returns ErrExhausted.
func (e *RateLimitError) Unwrap() error { return ErrExhausted }

// IdempotencyKeys stores Idempotency-Key records (see package
// storage/idempotency). A (Scope, Key) pair has at most one live record: one
// whose ExpiresAt is after the time the caller passes.
type IdempotencyKeys interface {
	// Begin stores r (normally IN_PROGRESS) when (r.Scope, r.Key) has no
	// record live at now; a record that expired at or before now is
	// replaced. Otherwise it changes nothing and returns ErrDuplicate. The
	// check and the insert are one step: of any number of concurrent
	// Begins of one scope and key, on any replica, at most one succeeds
	// while its record is live.
	Begin(ctx context.Context, r *IdempotencyRecord, now time.Time) error
	// Get returns the record of (scope, key), expired or not until swept,
	// or ErrNotFound.
	Get(ctx context.Context, scope, key string) (IdempotencyRecord, error)
	// Complete stores the response of the reservation r.Token: when the
	// record of (r.Scope, r.Key) is IN_PROGRESS with that Token, it becomes
	// COMPLETE with r's Status, Header, Body and ExpiresAt. ErrNotFound when
	// there is no such record, ErrConflict when the record is another
	// reservation or already complete.
	Complete(ctx context.Context, r *IdempotencyRecord) error
	// Release deletes the reservation token of (scope, key) when it is
	// still IN_PROGRESS, so that the key may be used again. ErrNotFound when
	// there is no such reservation (released, completed or replaced).
	Release(ctx context.Context, scope, key, token string) error
}

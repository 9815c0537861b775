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
//     ([OTPIssuances.Attempt] counts a verification attempt only while
//     fewer than the limit were made);
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
//     operation commits, [PendingRequests.CreateLimited] counts an
//     account's live requests and adds one under a lock of them, and
//     [PendingRequests.CreateBounded] deletes the oldest requests of a
//     scope and adds one under a lock of the scope.
//
// Locks are taken in this order, so transactions never wait for each other
// in a cycle: internal accounts (several in ascending id order), then an
// email address, then credentials, then sessions, then external accounts
// (a payout signed by a session locks its signer before the external account
// it pays, [ExternalAccounts.Lock]), then the lock of an account's pending
// requests ([PendingRequests.CreateLimited]), then the lock of a scope of
// pending requests ([PendingRequests.CreateBounded]). [Outbox.Append] comes last: a
// store may order an account's events with a lock held until commit
// (storage/postgres takes a lock per account, storage/memory one for the
// whole outbox), so a transaction appends its events after every other lock
// and write, and never waits for another lock after its first append.
//
// # Deferrable writes
//
// A few writes return nothing a caller decides on but an error that ends
// the transaction: [Sessions.Create], [OTPIssuances.Put],
// [PendingRequests.CreateBounded] and [Outbox.Append]. A store may
// defer them, sending them with the transaction's next statement or with its
// commit, so they cost no round trip of their own (storage/postgres does).
// A deferred write that fails (a duplicate id) is then reported by that
// later call or by Atomic, and the whole transaction rolls back, as it
// would had the caller returned the error at once. Callers return every
// error of these writes unexamined, so either way they see the same
// outcome.
//
// # Time
//
// Stores never read a clock. Callers pass the time (their injected clock) to
// every method where expiry matters.
package storage

import (
	"context"
	"errors"
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
	// windows and idempotency records (in progress or complete), consumed or
	// not, and events delivered before cutoff (parked events stay until
	// they are re-driven and delivered). It
	// returns how many it deleted; a result equal to limit means more may
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
	// the version differs.
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
	Update(ctx context.Context, a *InternalAccount) error
	// ListByCustomer returns the customer's accounts in creation order.
	ListByCustomer(ctx context.Context, customerID string) ([]InternalAccount, error)
	// Lock returns the account as Get does and holds it until the
	// transaction ends: another transaction's Lock or Update of the account
	// waits until then and sees what this one committed. Callers lock the
	// account before they read its credentials to decide a change of them,
	// so the decision still holds when the change commits. ErrNotFound when
	// the account does not exist.
	Lock(ctx context.Context, id string) (InternalAccount, error)
}

// Credentials stores the authentication methods of internal accounts.
type Credentials interface {
	// Create stores a new credential with Version 1 (set on c). ErrDuplicate
	// when the id exists, when the account already has a credential of type
	// EMAIL_OTP (or SMS_OTP) and c is one, when c is a PASSKEY whose WebAuthn
	// credential id is stored already (on any account), or when c is an OAUTH
	// credential whose identity the account already has.
	Create(ctx context.Context, c *Credential) error
	// Get returns the credential or ErrNotFound.
	Get(ctx context.Context, id string) (Credential, error)
	// Update is compare-and-set on Version, as [ExternalAccounts.Update]. The
	// uniqueness rules of Create apply.
	Update(ctx context.Context, c *Credential) error
	// Delete removes the credential; ErrNotFound when it does not exist.
	Delete(ctx context.Context, id string) error
	// ListByAccount returns the account's credentials in creation order (an
	// empty list for an unknown account).
	ListByAccount(ctx context.Context, accountID string) ([]Credential, error)
	// FindByWebAuthnID returns the PASSKEY credential with that WebAuthn
	// credential id, or ErrNotFound.
	FindByWebAuthnID(ctx context.Context, credentialID []byte) (Credential, error)
	// ListEmailOTPByEmail returns the EMAIL_OTP credentials tied to email,
	// compared exactly (callers normalise addresses before storing them).
	ListEmailOTPByEmail(ctx context.Context, email string) ([]Credential, error)
	// Lock returns the credential as Get does and holds it until the
	// transaction ends: another transaction's Lock, Update or Delete of the
	// credential waits until then. A caller that creates a session of the
	// credential locks it first, so a concurrent Delete either commits
	// before (Lock answers ErrNotFound) or after (and then sees the
	// session). ErrNotFound when the credential does not exist.
	Lock(ctx context.Context, id string) (Credential, error)
	// LockForOTPAttempt is Lock, then one attempt at the credential's
	// one-time code charged to a budget, in one step. Once the lock is
	// granted it reads the credential's issuance (as
	// [OTPIssuances.GetByCredential]) and, only when that issuance is
	// live for an attempt (unconsumed, a.Now before ExpiresAt, fewer than
	// a.Limit attempts made), counts a hit of the rate-limit window a.Key
	// as [RateLimits.Allow] does (at most a.Budget hits per a.Window) and,
	// when the window allows the hit, reserves the attempt as
	// [OTPIssuances.Attempt] does. An issuance that is not live is
	// returned with nothing hit or reserved; a refused hit reserves
	// nothing and returns how long until the window ends. Whatever it
	// counted commits or rolls back with the transaction, so a caller
	// that finds the credential or the issuance unfit returns an error
	// and nothing stays counted. The hit and the attempt are guarded as
	// Allow's and Attempt's are, and the credential, the window and the
	// issuance stay held until the transaction ends. A verification of a
	// one-time code takes the credential this way before it compares a
	// code; a store may do it all in one round trip. ErrNotFound when the
	// credential does not exist.
	LockForOTPAttempt(ctx context.Context, id string, a OTPAttempt) (OTPAttemptResult, error)
	// LockEmail holds the address email until the transaction ends: another
	// transaction's LockEmail of the same address waits until then. It
	// needs no record to exist. Callers take it before they check which
	// EMAIL_OTP credentials are tied to the address and then tie it to
	// others, so two such changes never both pass the check.
	LockEmail(ctx context.Context, email string) error
}

// OTPIssuances stores issued one-time codes, one live issuance per credential.
type OTPIssuances interface {
	// Put stores o as the live issuance of o.CredentialID, superseding (and
	// deleting) the previous one. It is a deferrable write (see the package
	// documentation).
	Put(ctx context.Context, o *OTPIssuance) error
	// GetByCredential returns the live issuance of the credential (consumed or
	// expired ones included) or ErrNotFound.
	GetByCredential(ctx context.Context, credentialID string) (OTPIssuance, error)
	// Attempt reserves one verification attempt of issuance id before the
	// caller compares a code: when the issuance is unconsumed, now is
	// before ExpiresAt and fewer than limit attempts were made, it
	// increments Attempts and returns the issuance as updated. Otherwise
	// it changes nothing and returns ErrNotFound (unknown or superseded),
	// ErrConsumed, ErrExpired or ErrExhausted, checked in that order. The
	// check and the increment are one step, and the issuance stays held
	// until the transaction ends: of any number of concurrent calls, on any
	// replica, at most limit succeed per issuance in transactions that
	// commit, so at most limit codes are compared and answered.
	Attempt(ctx context.Context, id string, limit int, now time.Time) (OTPIssuance, error)
	// Consume marks issuance id used and returns it: ErrNotFound (unknown or
	// superseded), ErrExpired (now is not before ExpiresAt) or ErrConsumed.
	Consume(ctx context.Context, id string, now time.Time) (OTPIssuance, error)
	// Spend is Consume for a caller that needs nothing back, deferred and
	// reported as [PendingRequests.Spend] is: a failure is a [*SpendError]
	// for id, wherever it surfaces. The caller reserves an attempt on the
	// issuance first ([OTPIssuances.Attempt], at the same now), which holds
	// it, so Spend then cannot fail.
	Spend(ctx context.Context, id string, now time.Time) error
}

// Sessions stores authenticated sessions.
type Sessions interface {
	// Create stores a new session; ErrDuplicate when the id exists. It is
	// a deferrable write (see the package documentation).
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
	// Create stores a new pending request; ErrDuplicate when the id exists.
	Create(ctx context.Context, p *PendingRequest) error
	// CreateLimited is Create for a request that counts against its
	// account: it stores p only while p.AccountID has fewer than limit live
	// requests (unconsumed, ExpiresAt after p.CreatedAt, and not stored by
	// CreateBounded, whose requests count only in their scope). Otherwise it stores
	// nothing and returns ErrExhausted and retryAt, the earliest ExpiresAt
	// of those live requests (by then at the latest one stops counting).
	// The count and the insert are one step under a lock of the
	// account's requests held until the transaction ends: of any number of
	// concurrent CreateLimited calls for one account, on any replica, no
	// more commit than keep the account at limit live requests. ErrDuplicate
	// when the id exists. limit must be positive. The limit is reported as
	// a [*LimitError] (errors.As; it wraps ErrExhausted) whose RetryAt is
	// retryAt. A store may defer the insert, sending it with the
	// transaction's next statement or its commit: CreateLimited then
	// returns a zero retryAt and nil, and the *LimitError or ErrDuplicate
	// is returned, after the transaction rolled back, by the method call
	// or Atomic that carried it. A caller therefore answers the limit from
	// the error of Atomic.
	CreateLimited(ctx context.Context, p *PendingRequest, limit int) (retryAt time.Time, err error)
	// CreateBounded is Create for a request that anyone may start: instead
	// of counting against p.AccountID (CreateLimited does not count it),
	// it belongs to scope, which keeps at most limit requests. It never
	// refuses p for the bound but makes room by deleting the oldest: in
	// one step, under a lock of the scope held until the transaction ends,
	// it deletes the scope's requests that are no longer live at
	// p.CreatedAt (consumed, or ExpiresAt not after it) and, of the live
	// ones, all but the limit-1 newest (by CreatedAt, then by id compared
	// bytewise), and stores p in the scope. A deleted request is
	// superseded: Get and Consume then answer ErrNotFound for it, as for
	// an unknown id. Of any number of concurrent CreateBounded calls for
	// one scope, on any replica, none fails for the bound, and the scope
	// never holds more than limit requests, live or not. ErrDuplicate when
	// the id exists (nothing is deleted then). scope must not be empty and
	// limit must be positive. It is a deferrable write (see the package
	// documentation): ErrDuplicate may come from a later call or from
	// Atomic, the transaction rolled back.
	CreateBounded(ctx context.Context, p *PendingRequest, scope string, limit int) error
	// Get returns the request (consumed and expired ones included, until
	// swept) or ErrNotFound.
	Get(ctx context.Context, id string) (PendingRequest, error)
	// Consume marks the request used and returns it: ErrNotFound, ErrExpired
	// (now is not before ExpiresAt) or ErrConsumed. Of any number of
	// concurrent calls for one id, at most one succeeds.
	Consume(ctx context.Context, id string, now time.Time) (PendingRequest, error)
	// Spend is Consume for a caller that needs nothing back, with the same
	// single use: of any number of concurrent calls for one id, at most one
	// commits. A store may defer it, sending it with the transaction's next
	// statement or its commit; a request it cannot consume then aborts the
	// transaction, and the method call or Atomic that carried it returns
	// the failure. Wherever it is reported, the failure is a [*SpendError]
	// for id (errors.As), which wraps ErrNotFound, ErrExpired or
	// ErrConsumed; a deferred one always wraps ErrConsumed, so the caller
	// reads the request first and spends only one it found live, at the
	// same now.
	Spend(ctx context.Context, id string, now time.Time) error
}

// LimitError reports that [PendingRequests.CreateLimited] found the
// account at its limit of live requests; RetryAt is the earliest expiry
// among them. It wraps ErrExhausted.
type LimitError struct{ RetryAt time.Time }

func (e *LimitError) Error() string {
	return "storage: the account holds its limit of live pending requests until " + e.RetryAt.Format(time.RFC3339Nano)
}

// Unwrap returns ErrExhausted.
func (e *LimitError) Unwrap() error { return ErrExhausted }

// SpendError reports a single-use record that [PendingRequests.Spend] or
// [OTPIssuances.Spend] could not consume. Err is ErrNotFound, ErrExpired or
// ErrConsumed.
type SpendError struct {
	ID  string
	Err error
}

func (e *SpendError) Error() string {
	return "storage: " + e.ID + " not consumed: " + e.Err.Error()
}

// Unwrap returns Err.
func (e *SpendError) Unwrap() error { return e.Err }

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
	// It is a deferrable write (see the package documentation): a store
	// may send it with the transaction's next statement or its commit, so
	// e.Seq is set at the latest when Atomic returns, and ErrDuplicate may
	// come from a later call or from Atomic, the transaction rolled back.
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
	// ListByAccount returns the account's events in Seq order.
	ListByAccount(ctx context.Context, accountID string) ([]Event, error)
}

// RateLimits counts hits per key in fixed windows.
type RateLimits interface {
	// Allow counts one hit on key at now. A window opens at the first hit
	// and lasts window; at most limit hits are allowed in it. When the hit is
	// allowed it returns 0; otherwise it returns how long until the window
	// closes (a positive duration) and does not count the hit.
	Allow(ctx context.Context, key string, now time.Time, window time.Duration, limit int) (time.Duration, error)
	// Hit counts one hit on key at now as Allow does, for a transaction
	// that goes on only when the hit is allowed. A hit that is not
	// allowed fails the transaction with a *RateLimitError: Hit returns
	// it, or a later call of the transaction or its commit does (a store
	// may send the hit with the commit), and nothing of the transaction
	// commits.
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

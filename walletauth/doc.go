// Package walletauth authenticates the users of embedded wallets and issues
// the sessions whose P-256 keys authorize every wallet action other than
// receiving funds.
//
// An embedded wallet (an internal account) holds credentials of four types:
// EMAIL_OTP and SMS_OTP (one-time codes sent to the customer's email or
// phone), PASSKEY (WebAuthn) and OAUTH (OpenID Connect). Verifying a
// credential produces a session; every later sensitive operation on the
// account (adding or revoking a credential, revoking or refreshing a session,
// changing the tied email) is authorized by a session key through the signed
// retry of package signedretry.
//
// One-time codes never travel in plaintext. The server answers a challenge
// with a signed HPKE target bundle; the client seals {otp_code, public_key}
// to it; the server opens it, compares the code in constant time and answers
// 202 with a payload bound to public_key; the client stamps it with that key,
// which becomes the session key. See package envelope for the wire formats.
//
// A client links package walletauth/authclient, not this one: the key it
// holds (authclient.ClientKey), the bodies it sends and reads, and the
// operation types and parameters of the payloads it checks before stamping
// with signedretry/stamper. The wire types here ([AuthSession],
// [AddCredentialRequest], ...) are aliases of authclient's, so the service
// and its clients share one definition; authclient's import graph holds
// none of the service's dependencies (its test pins it).
//
// Nor do they rest in plaintext: the store keeps an HMAC-SHA256 of each code
// (under [Keys].CodeMACKey, bound to its issuance) and each target private
// key sealed by [Keys].Sealer (AES-256-GCM with key rotation, see package
// secret), so a read of the database does not let anyone complete a login.
//
// Each signed operation is written as its two legs
// ([signedretry.Run]): what the first call binds into the challenge,
// and what the signed retry does with the bound parameters alone.
//
// # Assurance
//
// A credential is worth no more than the proof that enrolled it. The
// wallet's first credential is the host's to vouch for; every other is
// enrolled by the session that signed its AddCredential, and records it
// ([storage.Credential].Enrolment). For [Config].SecurityChangePeriod (24
// hours by default) a credential enrolled by a session of a weaker type
// (EMAIL_OTP and SMS_OTP below OAUTH below PASSKEY) carries that
// session's credential's assurance, and every credential enrolled by a
// session answers to its enroller: it meets no step-up naming its own
// stronger type, is no second credential for an approval, and cannot
// revoke a credential not younger than itself (403 FORBIDDEN). Each
// enrolment and removal, and each change of the tied email, marks the
// wallet ([storage.InternalAccount].SecurityChangedAt) and writes
// [EventSecurityNotice] for the host to tell the owner on the channels the
// wallet had. A session keeps the time of the ceremony that authenticated
// it across refreshes ([AuthSession].AuthenticatedAt), and every
// freshness rule judges that time.
//
// # Live challenges
//
// The first leg of a signed operation stores a challenge until it is used
// or expires; a wallet holds at most [Config].MaxPendingChallenges of them,
// and a first leg beyond that is 429 RATE_LIMITED with Retry-After. The
// challenge of a one-time code's verification, which only a caller who
// proved the code creates, is kept apart: the wallet's newest
// MaxPendingChallenges of them are kept, a new one superseding the oldest,
// so first legs of other operations never lock the owner out of a login. A passkey login
// challenge needs no session and no code: whoever knows a PASSKEY
// credential's id may ask for one. So passkey login challenges do not count
// toward that cap, and asking for them cannot keep the owner from a
// one-time code login or a signed operation. Each PASSKEY credential keeps
// at most [Config].MaxPasskeyChallenges live login challenges instead: a
// new one is never refused but supersedes the credential's oldest, whose
// verification then answers 401 UNAUTHORIZED with reason "unknown request
// id". The store therefore holds a bounded number of them per credential,
// and the owner's passkey login fails only when at least
// MaxPasskeyChallenges other challenges of the credential are issued from
// the instant of its challenge to its verification. A host that admits
// fewer challenge requests per credential than that in the time a
// ceremony takes (a rate limit at its ingress) makes that impossible.
//
// [Service] has transport-agnostic methods; [Service.Handler] serves them over
// net/http. All state lives in the storage.Store; the service itself holds
// none and is safe for concurrent use.
//
// # The tenant guard
//
// The ids an operation is given (a wallet, a credential, a session) come
// from a client, and only the host knows which of them belong to the
// calling principal (a platform, in a host serving several). [Config].Guard,
// a [WalletGuard], is that knowledge: every operation that acts on a wallet
// asks it whether the principal the host put in the context may act on
// that wallet, typically by comparing it with the wallet's Tenant
// ([NewWallet].Tenant). It is the service's, so every transport gets it:
// [Service.Handler], a host's gRPC server or own HTTP stack calling the
// methods, a background job. The operation asks it once per call (once per
// leg of a signed operation) inside its own transaction, on the wallet as
// that transaction reads or locks it, before any answer that depends on the
// wallet and before anything is written; the refusal is an error returned
// in that transaction, so a refused call writes nothing: no code is sent, no
// attempt or budget spent, no challenge or pending request stored, no event.
// It answers as an unknown id does, unless the guard returns an
// *apierror.Error of its own; an id that names nothing is 404 before the
// guard is asked. A wallet's customer and tenant never change and the
// library never moves a credential or session to another wallet, so the
// answer holds for the rest of the call. The wallet is read for the guard
// from what the operation locks or reads anyway: on PostgreSQL a guard
// costs no round trip where the operation reads the wallet, locks one of
// its credentials or the signer of its retry. Without a guard (a host with
// one tenant, or whose every caller is trusted) the methods trust their
// caller with the ids they are given and read nothing for it; the handler
// does not trust its clients and refuses to be built without one.
//
// # The host's transaction
//
// Every write of the service (CreateWallet, the signed retry of every
// operation, Authorize for the host's own, UpdateEmail) runs in one
// transaction of the store. On PostgreSQL the host may make it part of its
// own: it begins a pgx transaction, binds it to the context with the
// store's WithTx, calls the operation with that context and commits or
// rolls back itself. Its customer row and the wallet CreateWallet makes
// then commit together, and an effect writes the host's rows in the same
// transaction through postgres.HostTx. Inside a host's transaction nothing
// is rerun: a serialization failure or deadlock is returned (wrapping
// postgres.ErrRerun) for the host to roll back and run again; the host's
// own statements fail with such errors too, and postgres.Rerunnable
// reports both. The memory
// store has no host transaction. The storage/postgres documentation shows
// the pattern, the same for every operation that accepts a host
// transaction.
//
// Logins do not: Challenge and Verify, of every credential type, record
// what they refuse (a wrong code's attempt, the budget it spent, the
// lockout) or act outside the store (a code mailed), so they commit in
// transactions of their own before they answer. Called with a context that
// carries a host transaction they send nothing and answer 500
// INTERNAL_ERROR wrapping [storage.ErrStandalone]; a host that rolled back
// on their error would otherwise give a guesser attempts without end.
//
// # Events
//
// Every security-relevant change (a credential added or revoked, a one-time
// code locked by failed attempts, a session created, revoked or refreshed,
// an email changed) writes an event to the store's outbox in the transaction
// of the change, with the internal account as its subject, so one wallet's
// events are delivered in commit order. The table in the documentation of
// the event type constants ([EventCredentialAdded] and the others, listed by
// [EventTypes]) gives each type, when it is written and its data; no event
// carries a code, key, token, bundle or challenge.
package walletauth

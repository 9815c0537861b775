// Package walletgate is the wallet-security core of a payments service, as a
// library: it holds no server of its own and embeds into the host's transport
// and database.
//
// It does four jobs, each in its own package:
//
//   - [github.com/walletgate/walletgate/ownership] proves that a customer
//     controls a self-custody wallet registered as an external account: the
//     service issues a message, the wallet signs it, and a per-chain verifier
//     (EVM, Bitcoin, Solana, TRON, Spark) checks the signature before the
//     account becomes ACTIVE.
//   - [github.com/walletgate/walletgate/walletauth] authenticates the users of
//     embedded wallets with email and SMS one-time codes, passkeys and OpenID
//     Connect, and issues sessions whose P-256 keys authorize every wallet
//     action other than receiving funds.
//   - [github.com/walletgate/walletgate/signedretry] is the two-leg protocol
//     that authorizes a sensitive request with a session key: the first call
//     answers 202 with a payload to sign, the retry carries the signature in
//     the Service-Wallet-Signature header and is accepted exactly once.
//   - [github.com/walletgate/walletgate/sandbox] is the service's sandbox in
//     process: its magic values, a simulator and an http.Handler that other
//     teams' test suites run against.
//
// Two packages carry the rest:
//
//   - [github.com/walletgate/walletgate/apierror] is the error model: every
//     failure a client can act on is an *apierror.Error whose code fixes the
//     HTTP status, written as {"status","code","message","details"}.
//   - [github.com/walletgate/walletgate/storage] defines the records and the
//     transactional store the domain packages persist through.
//     storage/memory is the embedded default; storage/postgres serves
//     services that run several replicas; storage/storagetest is the
//     conformance suite every store passes.
//
// Imports point down only: apierror <- storage <- signedretry <- walletauth,
// storage <- ownership, and sandbox composes them all. No package keeps
// global state; time comes from an injected clock and randomness from an
// injected reader, so every flow is deterministic under test. Each domain
// package has transport-agnostic methods (plain Go values in and out) and a
// thin net/http adapter in its http.go; hosts with another transport skip the
// adapter.
//
// Every service's Config takes one
// [github.com/walletgate/walletgate/apierror/operation.Telemetry]: an
// optional *slog.Logger and OpenTelemetry TracerProvider and MeterProvider.
// Its zero value is silent and costs nothing, and the global providers are
// never used. The services record operation names,
// outcomes, API error codes and durations, and log refusals of
// authentication at Warn; [github.com/walletgate/walletgate/apierror.Observe]
// around an adapter logs each 5xx's cause once with the request id. Nothing
// secret (codes, keys, bundles, tokens, stamps, request bodies) and no
// identifier of a customer, wallet or credential is ever recorded as a
// metric attribute, and no secret at all in a span or log record.
//
// # Threat model
//
// The attacker walletgate is built against controls the platform backend
// that relays the end user's requests: it can send any body, any header and
// any order of calls, replay and race them, and read what the service
// answers. It cannot make the user's session key sign something the user's
// wallet did not show. A second attacker holds one phished session (an
// email code is enough): whatever it signs is signed, but it must not grow
// into the strongest credential of the wallet.
//
// What the library guarantees:
//
//   - Signed is executed. A signed retry runs exactly the parameters of the
//     payload the user stamped, read from the server's own record of the
//     first call, never decoded again from the retry. Request bodies have one
//     reading ([github.com/walletgate/walletgate/apierror.DecodeBytes]):
//     member names are case-sensitive, duplicate and case-colliding names
//     are refused, and the value is decoded from the same canonical form
//     whose SHA-256 the payload binds.
//   - Single use. A Request-Id, a one-time code, a passkey registration
//     challenge and an ownership challenge are consumed at most once, on any
//     number of replicas, and only together with the effect they authorize.
//   - Invariants under concurrency. Every rule of the form "check, then act"
//     (an account keeps one credential, one EMAIL_OTP and one SMS_OTP per
//     account, at most the configured number of code comparisons per issued
//     code, the tied credential set of an email change) is held by the store
//     itself, with a guarded statement, a row lock or a constraint;
//     storage/storagetest proves each on every store.
//   - Secrets at rest. One-time codes are stored as HMACs and HPKE target
//     private keys sealed with AES-256-GCM under host keys, so a read of the
//     database does not complete a live login.
//   - A credential is worth no more than the proof that enrolled it. A
//     credential added by a session of a weaker credential carries that
//     credential's assurance for a security-change period (24 hours by
//     default), and every credential added by a session answers to its
//     enroller for that period: it meets no step-up naming its own stronger
//     type, does not count as a second credential for an approval, and
//     cannot revoke a credential older than itself. Each enrolment and
//     removal notifies the wallet's existing channels, and a payout policy
//     may hold or block payouts after one. Freshness is judged on the time
//     of the ceremony that authenticated a session, which a refresh keeps.
//   - Held is not paid. A payout policy makes a payout only through the
//     host's Execute it calls for an allowed payout; a held payout and a
//     refused one are other outcomes, which a host that checks only the
//     error cannot pay.
//   - No choice of the host's undoes a rule. A refusal's record (a counted
//     attempt, a lockout, a spent budget, an UNVERIFIED account, a consumed
//     challenge) commits in the store's own transaction, so no rollback of a
//     host's transaction erases it (storage.Standalone); a host transaction
//     at an isolation level the rules were not proven at is refused, and a
//     PostgreSQL schema records its level, so a store configured otherwise
//     is refused at start; the uniqueness rules of credentials hold per
//     tenant, so no tenant's answer depends on another's wallets; and the
//     services act on a wallet or an account only after the host's guard
//     agrees, inside the operation's transaction.
//
// What it assumes of the host: TLS in front of every route; authentication of
// the platform (the adapters do not check HTTP Basic credentials, the sandbox
// does); custody of its keys (the bundle signing key, the code MAC key, the
// sealing keys, wallet secrets) and of the database; a clock that is roughly
// right; and that it mounts the adapters as documented or calls the methods
// with the request's raw body.
//
// What it assumes of the user's wallet (the client holding the session key):
// that it shows and checks a payload before stamping it, and stamps only the
// operation it started ([github.com/walletgate/walletgate/signedretry/stamper.Expectation]:
// the route's operation type, the account, the digest of the body it sent,
// every parameter, an expiry ahead), and that it pins the bundle signing key
// when it seals a code to a target bundle or opens an export. A client that
// stamps whatever payload it is handed signs what the relay chooses, for
// example the export of the wallet to the relay's key; examples/client shows
// the safe pattern.
//
// What sandbox mode gives up: the one-time code is always 000000 and is not
// delivered, the literals sandbox-valid-signature and
// sandbox-valid-passkey-signature stand in for a session signature and a
// passkey assertion, OpenID Connect token signatures are not checked (every
// claim still is), and the sandbox generates its own keys. Never run it with
// real users.
package walletgate

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
package walletgate

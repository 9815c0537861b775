// Package ownership proves that a customer controls a self-custody wallet
// registered as an external account, as travel-rule regimes require before a
// wallet is used without limits.
//
// # The proof
//
// [Service.StartChallenge] issues a WALLET_SIGNATURE challenge: a
// messageToSign in plain ASCII that names the service, the address, the
// chain and network, the account, a fresh nonce and the validity window, so
// a signature cannot be replayed for another account, chain or service. The
// user signs it in their wallet; [Service.Verify] checks the signature with
// the account type's [Verifier] and moves the account to ACTIVE, or to
// UNVERIFIED (answering 400) when the signature is invalid or late. A
// challenge is consumed once. LIVENESS challenges go through a host-supplied
// [Liveness] provider and complete with [Service.CompleteLiveness].
//
// Only first-party, self-custody (no vaspName) wallet accounts in
// PENDING_OWNERSHIP_VERIFICATION or UNVERIFIED can be challenged; anything
// else answers 409 CONFLICT with a reason.
//
// # Verifiers
//
// One small [Verifier] per signature family, selected by account type in
// [Verifiers]: EIP-191 personal_sign for the EVM chains, BIP-137, Electrum
// and BIP-322 for Bitcoin, Ed25519 for Solana, TIP-191 for TRON, the identity
// key for Spark, and (not registered by default) the node key of Lightning's
// signmessage. A host adds its own, for example a contract-wallet check, and
// composes them with [AnyOf]. Every rejection is 400 INVALID_INPUT whose
// details.reason names the failed check; no input panics.
//
// # Events
//
// Every status change writes an EXTERNAL_ACCOUNT.STATUS_UPDATED event to the
// store's outbox in the same transaction as the change;
// storage.DeliverEvents hands them to a publisher in order.
package ownership

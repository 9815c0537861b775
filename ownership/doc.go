// Package ownership proves that a customer controls a self-custody wallet
// registered as an external account, as travel-rule regimes require before a
// wallet is used without limits.
//
// # Registration
//
// [Service.RegisterAccount] (or [Service.RegisterAccountIn], inside the
// host's transaction) creates an external account: the address is checked
// by the account type's verifier ([AddressValidator], the same parser that
// later verifies signatures, for the service's network), and the account
// starts PENDING_OWNERSHIP_VERIFICATION when it is a FIRST_PARTY
// self-custody wallet whose type has a verifier, ACTIVE otherwise
// ([Verifiers.StartingStatus]). Registration fails closed: an account type
// it does not know (not a fiat type, not Lightning, no verifier; spelled
// exactly, so "ethereum_wallet" is refused) is 400, and so is a currency
// that is not a currency code. A vaspName makes a wallet custodial, which
// exempts it from the ownership rule, so it must name a VASP of the
// host's [VASPDirectory] (Config.VASPs), whose name for it is stored; any
// other vaspName is 400, and without a directory every one is.
// Host-driven changes, such as a deletion to INACTIVE, go through
// [Service.SetStatus].
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
// signmessage. A host adds its own and composes them with [AnyOf]. Every
// rejection is 400 INVALID_INPUT whose details.reason names the failed
// check; no input panics.
//
// # HTTP
//
// [Service.Handler] serves challenge and verify over net/http for both path
// trees, and refuses to be built without a tenant guard.
//
// # The tenant guard
//
// The account ids an operation is given come from a client, and only the
// host knows which accounts belong to the calling principal (a platform,
// in a host serving several). [Config].Guard, an [AccountGuard], is that
// knowledge: every operation on an account a caller names (StartChallenge,
// Verify, CompleteLiveness, SetStatus, Account, Accounts, RegisterAccount
// on the new account, CheckPayout and CheckPayoutIn on the destination)
// asks it whether the principal the host put in the context may act on
// the account. It is the service's, so every transport gets it:
// [Service.Handler], a host's gRPC server or own HTTP stack, a provider's
// callback. The operation asks it once, inside its own transaction, on
// the account as that transaction reads or holds it, before any answer that
// depends on the account and before anything is written: a refused call
// writes nothing (no challenge stored or consumed, no LIVENESS session
// started, no status changed, no event, no payout allowed) and answers as
// an unknown account does (a registration, with no id to be unknown: 403
// FORBIDDEN), unless the guard returns an *apierror.Error of its own; an
// id that names nothing is 404 before the guard is asked. Without a guard
// the methods trust their caller with the ids they are given.
//
// # Contract accounts
//
// An EVM wallet registered with accountInfo.contractAccount is a contract
// account (a Safe, a passkey smart wallet, an ERC-6492 account not
// deployed yet): its code, not a key, decides which signatures are its
// own. The same address can hold code of another owner on another chain,
// so the chain is not the customer's choice: each EVM account type has one
// chain per network, stated in one table ([ContractChains]; on mainnet
// BASE_WALLET is Base 8453, ETHEREUM_WALLET Ethereum 1, POLYGON_WALLET
// Polygon 137, PLASMA_WALLET Plasma 9745; a testnet service uses their
// test chains; signet and regtest have none). A type missing from the
// table has no contract accounts.
//
// Registration requires accountInfo.contractAccount.chainId to name the
// type's chain and answers 400 INVALID_INPUT on that field otherwise, and
// on accountInfo.contractAccount for a type without contract accounts. The
// challenge message names the chain id, and [Service.Verify] asks the
// [ContractVerifier] registered for the account type about the table's
// chain only, never a chain read from the stored account; an account
// stored with another chain id (registered before this rule) can be
// neither challenged nor verified (409 CONFLICT with a reason; register it
// again). Verifiers are mapped to account types explicitly, in
// [Config].Verifiers: [New] refuses a ContractVerifier under a type that
// has no chain on the service's network or whose chain it does not serve,
// and a type whose verifier is not a ContractVerifier has no contract
// accounts. ownership/evmcontract implements ContractVerifier on the
// host's nodes and keeps go-ethereum's node packages out of this package.
// When the node fails or is too slow, Verify answers 500 with a reason and
// the challenge stays outstanding: the signature was not judged.
//
// # Events
//
// Every status change, including the starting status of a registration and
// host-driven changes, writes an EXTERNAL_ACCOUNT.STATUS_UPDATED event to the
// store's outbox in the same transaction as the change; storage/relay hands
// them to a publisher (storage/webhook signs and sends them), the events of
// an account in order. The envelope is {"id", "type", "timestamp", "data"},
// data the rendered account ([Config.Render]). The ACTIVE event of a valid
// signature ([Service.Verify]) also has, as the last member of data, a
// "proof", {"method": "WALLET_SIGNATURE", "address": ...}: the address the
// signature proved, which is the account's address when the change commits
// (Verify applies the change by compare-and-set on the version it checked,
// and answers 409 otherwise). The UNVERIFIED event of a failed check has
// no proof: nothing was proved.
//
// # The payout gate
//
// A host asks [Service.CheckPayout] (or [Service.CheckPayoutIn], inside its
// own transaction) before it pays an external account: a [Payout] names the
// account, an amount in minor units, its currency and optionally a corridor.
// The limits are host configuration ([Config.Payouts], a [PayoutPolicy]):
// verification thresholds and single-transaction maxima per currency and
// per corridor ("USD:MXN", sending then receiving currency), exact integers
// in minor units. Where both a currency and a corridor limit exist, the
// lower one applies. [PayoutPolicy.Decide] is the same rule on an account
// already read.
//
// Currencies fail closed. Codes are checked when the policy is built
// ([PayoutPolicy.Validate], from [New]) and on every call, spelled exactly
// (3 to 12 uppercase letters and digits): "usdc" is not USDC, it is 400
// INVALID_INPUT. An account is paid in its own currency only, and a
// corridor must receive that currency. A currency without a configured
// single-transaction maximum is refused, never unlimited.
//
// The ownership rule applies to gated accounts ([Gated]): wallets (every
// account type but the service's fiat types, [IsFiat]; LIGHTNING_ACCOUNT
// and unknown types count as wallets)
// in self custody (no vaspName) that are not THIRD_PARTY (an empty
// ownershipType counts as first party). Ownership verification applies to
// first-party self-custody wallets only: a fiat account's holder is checked by
// the rail (beneficiary verification), a third party's wallet cannot be
// proven by the customer, and a custodial wallet is covered by its VASP.
// Checks run top to bottom; the first that refuses answers:
//
//	account                 status                          refusal (else allowed)
//	any                     (unknown id)                    404 REFERENCE_NOT_FOUND
//	any                     any                             400 INVALID_AMOUNT if amount <= 0
//	any                     any                             400 INVALID_INPUT (details.field currency
//	                                                        or corridor) if not a code or a corridor
//	any                     any                             400 INVALID_CURRENCY if the currency is
//	                                                        not the account's
//	any                     any                             400 INVALID_INPUT (corridor) if the
//	                                                        corridor receives another currency
//	any                     PENDING, UNDER_REVIEW,          409 CONFLICT, every amount
//	                        INACTIVE, any other value
//	any                     ACTIVE, PENDING_OWNERSHIP_      400 INVALID_CURRENCY if the currency has
//	                        VERIFICATION, UNVERIFIED        no configured maximum
//	any                     ACTIVE, PENDING_OWNERSHIP_      400 TRANSACTION_SIZE_LIMIT_EXCEEDED
//	                        VERIFICATION, UNVERIFIED        if amount > maximum
//	not gated               ACTIVE, PENDING_OWNERSHIP_      allowed (RuleNotGated)
//	                        VERIFICATION, UNVERIFIED
//	gated wallet            ACTIVE                          allowed (RuleVerified)
//	gated wallet            UNVERIFIED                      400 EXTERNAL_ACCOUNT_VERIFICATION_REQUIRED,
//	                                                        every amount
//	gated wallet            PENDING_OWNERSHIP_VERIFICATION  400 EXTERNAL_ACCOUNT_VERIFICATION_REQUIRED
//	                                                        if amount >= threshold, else allowed
//	                                                        (RuleBelowThreshold)
//
// Why:
//
//   - PENDING_OWNERSHIP_VERIFICATION: the service allows transfers below
//     regulatory thresholds, so an amount strictly below the threshold
//     passes and one that reaches it does not. A currency (and corridor)
//     without a configured threshold has threshold 0: fail closed.
//   - UNVERIFIED: a proof was attempted and failed, which is evidence that
//     the customer may not control the address; the below-threshold
//     allowance belongs to PENDING_OWNERSHIP_VERIFICATION only. The
//     remedy is cheap: starting a new challenge moves the account back to
//     PENDING_OWNERSHIP_VERIFICATION, which re-opens small payouts.
//   - EXTERNAL_ACCOUNT_VERIFICATION_REQUIRED is answered exactly where a
//     challenge can clear it (the states [Service.StartChallenge] accepts);
//     PENDING (not set up yet), UNDER_REVIEW (held by a review) and INACTIVE
//     (closed or deleted) are states verification cannot change, so they
//     answer 409 CONFLICT, the generic resource-state conflict, for
//     every account kind; so does any status the gate does not know.
//   - The maximum binds every account, and is checked before the
//     threshold: verifying ownership would not lift it.
//   - Status values PENDING_OWNERSHIP_VERIFICATION and UNVERIFIED on an
//     account that is not gated do not restrict it: the library never sets
//     them there (challenges refuse such accounts) and ownership does not
//     apply to it.
//
// Every refusal is an *apierror.Error with details.reason (a sentence that
// names the rule and, where one applied, the limit with its scope and key
// and the amount), details.accountId, details.status, details.amount,
// details.currency, details.corridor (when set) and details.limit (a
// [Limit]: scope "currency", "corridor" or "default", key, amount).
//
// RegisterAccount, SetStatus, StartChallenge and the gate may run inside
// the host's own database transaction: on PostgreSQL the host binds its
// pgx transaction to the context with the store's WithTx and commits or
// rolls back itself (see the storage/postgres documentation; the memory
// store has no host transaction). Verify and CompleteLiveness do not: an
// invalid or late proof makes the account UNVERIFIED and consumes its
// challenge, and that record must survive whatever the host does with its
// transaction, so they commit on their own and refuse a host transaction
// with a 500 INTERNAL_ERROR wrapping [storage.ErrStandalone].
//
// CheckPayoutIn holds the account until the host's transaction ends, so a
// status change either commits before the gate reads the account or after
// the payout commits; see [Service.CheckPayoutIn] for the exact guarantee and
// what it costs. The service's own status changes (StartChallenge, Verify,
// CompleteLiveness) hold the account the same way before they touch its
// challenge, so they queue with payouts on equal terms instead of losing
// every compare-and-set to a stream of them.
package ownership

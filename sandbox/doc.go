// Package sandbox is the payments service's sandbox as an embeddable
// simulator: a Go API and an [http.Handler] (for httptest.NewServer) that
// behave as the service's sandbox does, so a platform's test suite runs
// against it in process.
//
// A [Simulator] holds customers, verifications, embedded-wallet balances,
// quotes, transactions, cards and trusted beneficiaries, and shares one
// storage.Store with the real walletauth service (in sandbox mode: the
// one-time code is 000000, real HPKE and stamps still run, the legacy
// signature literal is accepted) and its signed-retry manager. External
// accounts are stored as storage.ExternalAccount so that the ownership
// package verifies them on the same store.
//
// # Magic values
//
// The scenario is chosen by the last three characters of a field ([Suffix];
// an identifier with a domain part counts its user part):
//
//	POST /verifications, individual fullName   001 IN_PROGRESS/PENDING, 002 REJECTED/REJECTED,
//	                                           003 RESOLVE_ERRORS (MISSING_FIELD on edd.*; PATCH, then retry approves),
//	                                           other IN_PROGRESS/APPROVED
//	business registrationNumber                001 PENDING, 002 REJECTED, other APPROVED (kybStatus)
//	beneficial owner lastName                  001 PENDING, 002 REJECTED, other APPROVED (kycStatus)
//	fiat account identifier, name verification 102 NOT_MATCHED, 103 PARTIAL_MATCH, 104 PENDING,
//	                                           105 400 INVALID_BANK_ACCOUNT, 106 UNSUPPORTED,
//	                                           107 CHECKED_BY_RECEIVING_FI, other MATCHED
//	transfer-in / transfer-out account         002 insufficient funds, 003 account closed, 004 bank rejected
//	                                           (FAILED at once), 005 PENDING 30 s then FAILED, other COMPLETED
//	quote destination account                  002 execution failed, 003 completes after 6 min,
//	                                           004 counterparty delivery failed, 005 completed then returned
//	                                           after 1 min, 006 user cancellation, 007 payout and refund failed
//	                                           (no refund), other COMPLETED
//
// # SCA and contact verification
//
// A customer is in an SCA-regulated region exactly when its
// address.country is in [SCACountries] (the EU, IS, LI, NO and GB); a
// customer without an address, and an external account without a customer,
// is outside. Outside, the SCA endpoints (/customers/{id}/sca/...) and
// trust/untrust with their confirm steps answer 409 CONFLICT. Inside,
// trust/untrust and their confirm steps answer 409 SCA_SESSION_REQUIRED
// until POST /customers/{id}/sca/login and /sca/login/complete (code
// [SandboxSCACode]) open a session of [SCALoginTTL]. SCA factors are
// enrolled with /sca/factors and /sca/factors/confirm; a customer has one
// PASSKEY factor at most (a second enrolment answers 409
// PASSKEY_ALREADY_ENROLLED until DELETE /sca/factors/PASSKEY).
//
// A customer's payment provider requires contact verification exactly when
// the customer's email has the magic suffix [ContactVerificationSuffix]
// (901, as in "jane.901@example.com"). Otherwise
// /customers/{id}/verify-email and /verify-phone (and their /confirm steps)
// answer 409 CONFLICT. The one-time code is [SandboxSCACode], valid 5
// minutes; nothing is sent.
//
// The sandbox UMA addresses are [UMASuccessUSD], [UMASuccessEUR],
// [UMASuccessMXN] (success), [UMALongPendingUSD] (pending for a day) and
// [UMAComplianceFailUSD] (compliance failure), as quote destinations and as
// senders of POST /sandbox/uma/receive.
//
// # Lists
//
// GET /customers, GET /internal-accounts?customerId= and GET
// /customers/external-accounts?customerId= answer {data, hasMore,
// nextCursor, totalCount}, oldest first. limit is 1 to [MaxListLimit]
// ([DefaultListLimit] when absent); cursor is the nextCursor of the previous
// page (present only when hasMore), an opaque encoding of the last item's id
// and creation time, not an offset, so items created while a client pages
// are neither read twice nor make it skip any. A bad limit or cursor is 400
// INVALID_INPUT on that field. A customerId filter naming no customer
// answers 200 with an empty list (not 404 USER_NOT_FOUND): a filter narrows
// a list and an unknown id matches nothing; a customerId that is not a
// Customer id is 400 INVALID_INPUT. Deleted external accounts are left out.
// The Go methods [Simulator.ListCustomers], [Simulator.ListExternalAccounts]
// and [Simulator.ListInternalAccounts] are the same implementation: they
// take the limit and cursor as [ListOptions] and return the [Page] the
// route answers, so a cursor read in Go works over HTTP and back.
//
// # Idempotency-Key
//
// POST /transfer-in, /transfer-out, /quotes and /quotes/{id}/execute take
// an Idempotency-Key header (in Go, the IdempotencyKey of the request, or
// the key argument of [Simulator.ExecuteQuote]), all with one rule, the
// library's storage/idempotency on the simulator's store:
//
//   - the key is a UUID, given once (in any letter case); anything else is
//     400 INVALID_INPUT with details.field "Idempotency-Key", and nothing
//     runs;
//   - keys belong to the platform (the client id), not to a route: a
//     request is its method, path and canonical body (member order and
//     whitespace do not count);
//   - the first request with a key runs; its final answer (201, the 200
//     of an execution, or the 202 [PayoutApproval] of a transfer-out the
//     payout policy holds) is kept 24 hours from completion, and a repeat
//     of the same request in that time gets it again with the header
//     Idempotent-Replayed: true, without running and without a signature
//     check (a held transfer-out replays its approval as it was held, and
//     never holds a second payout);
//   - another request under a kept key, or the same request while the
//     first still runs, is 409 CONFLICT;
//   - an error, and the 202 challenge of a signed retry, are not kept: the
//     key is free again, so the signed retry (or a repeat after a failure)
//     carries the same key.
//
// Without the header a request simply runs.
//
// # Time
//
// Nothing sleeps. A timed outcome is a timeline of steps; every call first
// applies the steps whose time has come on the simulator's clock (balances
// included, each step exactly once), so a test advances the clock and reads
// the record again.
//
// The simulator's clock is Config.Clock plus an offset that only grows:
// [Simulator.AdvanceClock] (POST /sandbox/clock/advance, body {"seconds":
// n}) moves it forward by at most [MaxClockAdvance] (30 days) per call and
// [MaxClockOffset] in all, and [Simulator.Now] (GET /sandbox/clock,
// {"now"}) reads it. It is the one source of time of the simulator and of
// every service it builds, so an advance moves every expiry, period, window,
// timed outcome and session lifetime at once: quotes, OTP codes, sessions,
// signed-retry and ownership challenges, payout approvals, the payout
// policy's windows, Idempotency-Key records, rate limits, transfer and
// payment timelines, and the waiting periods of walletauth. A step that is
// not forward, or too long, is 400 INVALID_INPUT naming the field (seconds
// over HTTP, d in Go), and the clock does not move. The clock exists in the
// sandbox only, for tests. OIDC tokens a test mints are checked against it
// (iat at most a minute before the simulator's now), so mint them around
// the now GET /sandbox/clock answers. The offset lives in the Store:
// simulators sharing one (servers on one database) share one clock, which
// each brings up to date as a request starts.
//
// # Webhooks
//
// With [Config].WebhookURL the simulator runs a storage/relay relay that
// delivers the events of its store (EXTERNAL_ACCOUNT.STATUS_UPDATED on every
// external-account registration and status change, LIVENESS outcomes
// included, and walletauth's events) to that URL as webhooks signed by
// storage/webhook (X-Grid-Signature), within about [WebhookPoll] of their
// commit; without it the events stay in the store's outbox. The signing key
// is [Config].WebhookKey, or one generated per process;
// [Simulator.WebhookPublicKeyPEM] gives the SPKI PEM a receiver verifies
// with. POST /sandbox/webhooks/test ([Simulator.TestWebhook]) sends one
// signed [EventTest] event at once, outside the outbox, and answers 200
// {url, response_status, response_body?} whatever the receiver answered;
// 400 WEBHOOK_ENDPOINT_NOT_SET without a URL and 400 WEBHOOK_DELIVERY_ERROR
// when no answer comes.
//
// # Signed retries
//
// Wallet export, wallet privacy, quote execution, transfer-out from an
// embedded wallet and a change of a tied email are signed retries, run by
// the walletauth service (Authorize, ExportWallet, UpdateWalletPrivacy),
// which hands back the parameters the user signed: the first call answers
// 202 with a payloadToSign, the same request stamped by an active session
// of the wallet (Service-Wallet-Signature and Request-Id) completes it
// exactly once, executing the signed parameters. The Go methods take a
// signedretry.Request describing the request; its zero Method, Path and Body
// are filled in from the arguments.
//
// # Payouts
//
// Transfer-out, quote execution and the payment of a real-time funded quote
// go through the library's payout gate (ownership.Service.CheckPayoutIn),
// decided on the destination account as held in the store transaction that
// consumes the signed request: an account that became UNVERIFIED or
// INACTIVE after the challenge or the quote is refused, and the request
// stays usable. The EXECUTE_QUOTE parameters bind every value the
// execution uses (quote, source wallet, sending amount and currency,
// destination, receiving amount and currency, exchange rate, fees). Quotes
// and transfers pay only the source customer's own external accounts.
//
// The verification threshold is one value in every currency:
// Config.VerificationThreshold US dollars (default 1000) at the sandbox's
// fixed rates, rounded down, so a pending wallet receives less than 1000
// USDC, 920 EUR, 17500 MXN or 0.01 BTC. The single-transaction maximum is
// likewise [TransactionMaximumUSD] (50000) US dollars in every currency
// (50000 USDC, 46000 EUR, 0.5 BTC): a payout above it is 400
// TRANSACTION_SIZE_LIMIT_EXCEEDED. [Simulator.Currencies] lists every
// currency with its smallest unit and both amounts.
//
// After the gate, a transfer-out or a quote execution (to an external
// account or a UMA address) is decided by the payout policy of Config.PayoutRules (package
// ownership/policy, default [DefaultPayoutRules]) on the signed retry, in
// the transaction that consumes the request, which counts the payout in
// the policy's windows when it commits. The default rules refuse the
// payout that would bring a customer's payouts of the last 24 hours above
// [DailyPayoutLimitUSD] (100,000) US dollars with 403 PAYOUT_BLOCKED
// (details.rule daily-limit, details.window, details.availableAt), a
// payout worth exactly [NewDestinationPayoutUSDCents] (555.55 USD) to a
// destination registered within 24 hours with 403 PAYOUT_BLOCKED
// (new-destination), and one worth exactly [StepUpPayoutUSDCents] (777.77
// USD) signed by anything but a PASSKEY session of at most five minutes
// with 403 STEP_UP_REQUIRED (step-up-amount). A refused retry leaves its
// request usable and debits nothing. A transfer-out worth exactly
// [ApprovalPayoutUSDCents] (888.88 USD) is held for approval
// (approval-amount): the retry answers 202 with a [PayoutApproval] and
// debits nothing; one approval within [ApprovalTTL], signed by a session
// of another credential of the wallet (POST
// /payout-approvals/{id}/approve, [Simulator.ApprovePayout]) or given by
// the operator [SandboxRiskOperator] (POST
// /sandbox/payout-approvals/{id}/approve), makes the payout in the
// transaction that records it.
//
// A vaspName makes a wallet custodial only when it names a VASP of the
// sandbox's directory, [SandboxVASPs], exactly as sent (no trimming); any
// other is 400 INVALID_INPUT on accountInfo.vaspName. An external account
// registers only in a currency of that table: any other currency is 400
// INVALID_INPUT on currency at registration.
package sandbox

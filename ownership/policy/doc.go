// Package policy is the payout policy a risk team runs beside the payout
// gate of package ownership: limits on amounts and counts over rolling
// windows, a stronger signer above an amount (step-up), a cool-off for new
// destinations, and rules that block kinds of payouts, all configured as
// data and every decision naming the rule that made it.
//
// # Rules as data
//
// A policy is a [Rules] value, usually read from JSON with [Parse]:
//
//	{"referenceCurrency": "USD",
//	 "windows": [{"name": "day", "scope": "CUSTOMER", "period": "24h", "maxAmount": 100000, "maxCount": 10}],
//	 "rules": [
//	   {"name": "daily-limit", "match": {"exceedsWindows": ["day"]}, "action": "BLOCK"},
//	   {"name": "cool-off", "match": {"newDestinationWithin": "24h", "minAmount": 10000}, "action": "BLOCK"},
//	   {"name": "large-needs-passkey", "match": {"minAmount": 50000}, "action": "ALLOW",
//	    "require": {"credentialTypes": ["PASSKEY"], "maxSessionAge": "15m"}},
//	   {"name": "default", "match": {}, "action": "ALLOW"}]}
//
// [New] validates it and fails closed: an unknown member, action, scope,
// credential type or account type, a rule naming a window that does not
// exist, and a policy whose last rule is not a catch-all are errors, so
// no payout is ever left undecided and no misspelled limit is silently
// "no limit". Rules are tried in order and the first whose match holds
// decides: BLOCK refuses, ALLOW pays once its step-up requirement is met,
// REQUIRE_APPROVAL holds the payout for approval.
//
// # Three outcomes
//
// The host's payout (its ledger debit, its record) is the [Execute] it
// hands [Policy.Decide]; the policy calls it in the payout's transaction
// for an allowed payout, and for no other. A payout the policy holds is
// [Outcome].Held (the approval is stored; execute does not run) and a
// refused one an error naming its rule. So a host that checks only the
// error cannot pay what the policy held or refused: there is no value it
// could pay from.
//
// # Windows
//
// A window counts every payout the policy allowed in its scope (the
// customer, or one source wallet of the customer) over its period,
// whichever rule allowed it, in amount (in the reference currency, through
// the host's [Rates], rounded up: a payout worth less than a minor unit
// counts as one) and in number. [Policy.Decide] runs in the
// transaction that makes the payout: it holds the customer
// ([storage.PayoutUsages.Hold]) so that concurrent payouts of one customer
// decide one at a time on every store and replica, reads the windows,
// decides, and records an allowed payout, which then commits or rolls back
// with the payout. A payout the host rolls back (its debit failed) uses
// nothing. A refusal by a window says when the window will have room for
// the payout (details.availableAt).
//
// # Step-up and cool-off
//
// The signer is the signed retry's: [Payout].Authorization names the
// session and credential that signed, already locked by the retry's
// transaction, and a step-up reads them there: the assurance the
// credential carries now (a credential enrolled by a session of a weaker
// one carries that one's for its security-change period, see
// [storage.Credential].AssuredAs) and when the session's ceremony took
// place, which a refresh keeps ([storage.Session].Authenticated). A payout
// not signed by a session's key (the sandbox literal) never meets a
// step-up. A destination is new for the rule's newDestinationWithin after
// it was changed (registered, or proven, which changes its status),
// whatever it was paid meanwhile, and newDestinationMaxAmount bounds what
// it receives in that time. securityChangeWithin matches payouts from a
// wallet whose credentials or tied email changed recently, so a policy
// can hold or block them while the owner hears of the change.
//
// # Approvals
//
// A REQUIRE_APPROVAL rule holds the payout instead of paying it: Decide
// stores a [storage.PayoutApproval] with the payout as signed (WAITING) and
// returns it in [Decision].Approval, and the host commits without
// executing. Approving is a signed operation of its own, by a session of
// another credential of the same wallet ([Approver].Authorization, when the
// rule allows a second credential, and only from a credential independent
// of the payout's signer: see [Approver]), or the act of an operator the
// rule names and the host authenticated. [Policy.Approve] locks the approval,
// records the approval and, with the last one, tries the rules again on
// the payout as it is then (a window may have filled meanwhile) and
// calls the host's Execute in the same transaction: the payout executes
// exactly once, when its last approval commits.
// [Policy.Refuse] ends it; a payout waiting past its TTL is EXPIRED
// ([StateOf]) and can no longer be approved.
//
// # Audit
//
// Every allowed payout writes a [EventDecided] event in its transaction,
// naming the payout, the rule, the amounts and the signing session and
// credential or the approvers (ids only); a held payout writes
// [EventApprovalRequested], each approval short of the last
// [EventApprovalRecorded], a refusal [EventApprovalRefused]. A refusal is an error the host answers with; the
// transaction it ran in rolls back and records nothing.
package policy

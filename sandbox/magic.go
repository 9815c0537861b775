package sandbox

import (
	"strings"
	"time"
)

// Suffix returns the magic suffix of a sandbox subject: the last three
// characters of the identifier, where an identifier with a domain part (an
// email-style payment key or a UMA address) counts only its user part, so
// "testuser.002@pix.com.br" has suffix "002". Surrounding space is ignored.
// Identifiers shorter than three characters have no suffix ("").
func Suffix(identifier string) string {
	s := strings.TrimSpace(identifier)
	if i := strings.LastIndexByte(s, '@'); i >= 0 {
		s = s[:i]
	}
	if len(s) < 3 {
		return ""
	}
	return s[len(s)-3:]
}

// Sandbox timings of the timed magic outcomes. Nothing sleeps: a record
// read after the injected clock passed the time shows the later status.
const (
	// DelayedFailureAfter is how long a transfer to or from an account
	// ending in 005 stays PENDING before it fails.
	DelayedFailureAfter = 30 * time.Second
	// LongPaymentAfter is how long a quote paid to an account ending in 003
	// stays PROCESSING before it completes.
	LongPaymentAfter = 6 * time.Minute
	// ReturnedAfter is how long a payment to an account ending in 005 stays
	// COMPLETED before the receiving bank returns it (FAILED, refunded).
	ReturnedAfter = time.Minute
	// LongPendingUMAAfter is how long a payment from or to the long-pending
	// UMA address stays PENDING before it completes.
	LongPendingUMAAfter = 24 * time.Hour
)

// Sandbox UMA addresses. Payments to them (as a quote destination) or from
// them (as the sender of POST /sandbox/uma/receive) have a fixed outcome.
const (
	UMASuccessUSD        = "$success.usd@sandbox.uma.money"
	UMASuccessEUR        = "$success.eur@sandbox.uma.money"
	UMASuccessMXN        = "$success.mxn@sandbox.uma.money"
	UMALongPendingUSD    = "$pending.long.usd@sandbox.uma.money"
	UMAComplianceFailUSD = "$fail.compliance.usd@sandbox.uma.money"
	// SandboxUMADomain is the domain of the sandbox counterparties; any
	// other address at it is unknown (404 UMA_NOT_FOUND).
	SandboxUMADomain = "sandbox.uma.money"
)

// umaScenario is what a sandbox UMA counterparty does.
type umaScenario struct {
	currency string
	outcome  string // "success", "pending", "compliance"
}

var umaScenarios = map[string]umaScenario{
	UMASuccessUSD:        {"USD", "success"},
	UMASuccessEUR:        {"EUR", "success"},
	UMASuccessMXN:        {"MXN", "success"},
	UMALongPendingUSD:    {"USD", "pending"},
	UMAComplianceFailUSD: {"USD", "compliance"},
}

// Individual KYC outcomes by the suffix of fullName on POST /verifications.
const (
	kycSuffixPending = "001"
	kycSuffixReject  = "002"
	kycSuffixResolve = "003"
)

// kybStatusFor returns the KYB (business) or beneficial-owner KYC status for
// a registration number or last name: 001 PENDING, 002 REJECTED, otherwise
// APPROVED.
func kybStatusFor(subject string) string {
	switch Suffix(subject) {
	case "001":
		return StatusPending
	case "002":
		return StatusRejected
	default:
		return StatusApproved
	}
}

// Beneficiary name verification outcomes by the suffix of the account
// identifier (the 1xx range is reserved for it).
const (
	BeneficiaryMatched              = "MATCHED"
	BeneficiaryPartialMatch         = "PARTIAL_MATCH"
	BeneficiaryNotMatched           = "NOT_MATCHED"
	BeneficiaryUnsupported          = "UNSUPPORTED"
	BeneficiaryCheckedByReceivingFI = "CHECKED_BY_RECEIVING_FI"
	BeneficiaryPending              = "PENDING"
)

// nameVerification returns the beneficiaryVerificationStatus for an account
// identifier, and false for suffix 105 (an invalid account).
func nameVerification(identifier string) (string, bool) {
	switch Suffix(identifier) {
	case "102":
		return BeneficiaryNotMatched, true
	case "103":
		return BeneficiaryPartialMatch, true
	case "104":
		return BeneficiaryPending, true
	case "105":
		return "", false
	case "106":
		return BeneficiaryUnsupported, true
	case "107":
		return BeneficiaryCheckedByReceivingFI, true
	default:
		return BeneficiaryMatched, true
	}
}

// Failure reasons of transactions.
const (
	ReasonInsufficientFunds    = "INSUFFICIENT_FUNDS"
	ReasonAccountClosed        = "ACCOUNT_CLOSED"
	ReasonBankRejected         = "BANK_REJECTED"
	ReasonTimeout              = "TIMEOUT"
	ReasonQuoteExecutionFailed = "QUOTE_EXECUTION_FAILED"
	ReasonCounterpartyDelivery = "COUNTERPARTY_DELIVERY_FAILED"
	ReasonPaymentReturned      = "PAYMENT_RETURNED"
	ReasonUserCancelled        = "USER_CANCELLED"
	ReasonPayoutRefundFailed   = "PAYOUT_AND_REFUND_FAILED"
	ReasonComplianceFailed     = "COMPLIANCE_CHECK_FAILED"
)

// transferSteps is the timeline of a transfer-in or transfer-out by the
// external account's suffix: hold is applied when the transfer starts (a
// transfer-out debits at once), release when it fails (giving the hold
// back) and credit when it succeeds (a transfer-in credits on completion).
func transferSteps(identifier string, now time.Time, hold, release, credit []move) []step {
	fail := func(reason string) []step {
		return []step{{At: now, Status: TxPending, Moves: hold}, {At: now, Status: TxFailed, Reason: reason, Moves: release}}
	}
	switch Suffix(identifier) {
	case "002":
		return fail(ReasonInsufficientFunds)
	case "003":
		return fail(ReasonAccountClosed)
	case "004":
		return fail(ReasonBankRejected)
	case "005":
		return []step{{At: now, Status: TxPending, Moves: hold},
			{At: now.Add(DelayedFailureAfter), Status: TxFailed, Reason: ReasonTimeout, Moves: release}}
	default:
		return []step{{At: now, Status: TxPending, Moves: hold}, {At: now, Status: TxCompleted, Moves: credit}}
	}
}

// payoutSteps is the timeline of an executed quote by the destination
// account's suffix. debit takes the money from the source (nil for real-time
// funding), refund gives it back.
func payoutSteps(identifier string, now time.Time, debit, refund []move) []step {
	first := step{At: now, Status: TxProcessing, Moves: debit}
	failed := func(reason string, moves []move) []step {
		return []step{first, {At: now, Status: TxFailed, Reason: reason, Moves: moves}}
	}
	switch Suffix(identifier) {
	case "002":
		return failed(ReasonQuoteExecutionFailed, refund)
	case "003":
		return []step{first, {At: now.Add(LongPaymentAfter), Status: TxCompleted}}
	case "004":
		return failed(ReasonCounterpartyDelivery, refund)
	case "005":
		return []step{first, {At: now, Status: TxCompleted},
			{At: now.Add(ReturnedAfter), Status: TxFailed, Reason: ReasonPaymentReturned, Moves: refund}}
	case "006":
		return failed(ReasonUserCancelled, refund)
	case "007":
		return failed(ReasonPayoutRefundFailed, nil)
	default:
		return []step{first, {At: now, Status: TxCompleted}}
	}
}

// umaSteps is the timeline of a payment to or from a sandbox UMA address.
// apply are the moves of a success (credit for an incoming payment), refund
// the moves of a failure after a debit.
func umaSteps(sc umaScenario, now time.Time, debit, credit, refund []move) []step {
	first := step{At: now, Status: TxPending, Moves: debit}
	switch sc.outcome {
	case "pending":
		return []step{first, {At: now.Add(LongPendingUMAAfter), Status: TxCompleted, Moves: credit}}
	case "compliance":
		return []step{first, {At: now, Status: TxFailed, Reason: ReasonComplianceFailed, Moves: refund}}
	default:
		return []step{first, {At: now, Status: TxCompleted, Moves: credit}}
	}
}

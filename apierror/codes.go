package apierror

import (
	"fmt"
	"net/http"
	"sync"
)

// Code is an error code: one of the service's (the variables below) or one a
// host defined with [Define]. Each code belongs to exactly one HTTP
// status, which the code carries: an Error built from a Code always reports the
// status that code is defined for. The zero Code is not a valid code; an Error
// with it is written as 500 INTERNAL_ERROR.
//
// Codes are comparable values: compare with ==, or use [CodeOf] on any error.
type Code struct {
	name   string
	status int
}

// String returns the code as it appears on the wire, for example "INVALID_INPUT".
func (c Code) String() string { return c.name }

// Status returns the HTTP status the code is defined for.
func (c Code) Status() int { return c.status }

// IsZero reports whether c is the zero Code (no code).
func (c Code) IsZero() bool { return c.name == "" }

// LookupCode returns the code with the given wire name: a code of the
// service or one a host defined with [Define].
func LookupCode(name string) (Code, bool) {
	if c, ok := byName[name]; ok {
		return c, true
	}
	hostCodes.RLock()
	defer hostCodes.RUnlock()
	c, ok := hostCodes.byName[name]
	return c, ok
}

// Codes returns every code of the service, in a stable order (by status,
// then as the service's tables list them). Codes a host defined with
// [Define] are not among them.
func Codes() []Code {
	out := make([]Code, len(all))
	copy(out, all)
	return out
}

// Define returns a code of the host's own, answered with status, for
// refusals the service has no code for (a host's INSUFFICIENT_FUNDS, for
// example). Errors built from it are written, logged and decoded like the
// service's, and [LookupCode] finds it.
//
// The name must be 1 to 64 uppercase ASCII letters, digits and
// underscores, beginning with a letter, and status a client or server
// error (400 to 599). A name the service uses is refused whatever the
// status, so a host code can never be read as one of the service's (and a
// later walletgate that adds a code of that name fails the host's start,
// not its clients). Defining a name the host already defined returns that
// code when the status is the same and an error otherwise. Define is safe
// for concurrent use; a host defines its codes once, when it starts.
func Define(status int, name string) (Code, error) {
	if !validCodeName(name) {
		return Code{}, fmt.Errorf("apierror: code name %q is not 1 to 64 uppercase ASCII letters, digits and underscores beginning with a letter", name)
	}
	if status < 400 || status > 599 {
		return Code{}, fmt.Errorf("apierror: code %s: status %d is not a client or server error (400 to 599)", name, status)
	}
	if c, ok := byName[name]; ok {
		return Code{}, fmt.Errorf("apierror: code %s is the service's (status %d); a host code needs a name of its own", name, c.status)
	}
	hostCodes.Lock()
	defer hostCodes.Unlock()
	if c, ok := hostCodes.byName[name]; ok {
		if c.status != status {
			return Code{}, fmt.Errorf("apierror: code %s is already defined with status %d, not %d", name, c.status, status)
		}
		return c, nil
	}
	c := Code{name: name, status: status}
	if hostCodes.byName == nil {
		hostCodes.byName = map[string]Code{}
	}
	hostCodes.byName[name] = c
	return c, nil
}

// validCodeName reports whether name is spelled as codes are: 1 to 64
// uppercase ASCII letters, digits and underscores, the first a letter.
func validCodeName(name string) bool {
	if len(name) == 0 || len(name) > 64 || name[0] < 'A' || name[0] > 'Z' {
		return false
	}
	for i := 1; i < len(name); i++ {
		if c := name[i]; (c < 'A' || c > 'Z') && (c < '0' || c > '9') && c != '_' {
			return false
		}
	}
	return true
}

var (
	// all and byName are the service's codes, written by def during
	// package initialization only and read-only after it.
	all    []Code
	byName = map[string]Code{}
	// hostCodes are the codes hosts defined with Define.
	hostCodes struct {
		sync.RWMutex
		byName map[string]Code
	}
)

func def(status int, name string) Code {
	c := Code{name: name, status: status}
	if _, dup := byName[name]; dup {
		panic("apierror: duplicate code " + name)
	}
	byName[name] = c
	all = append(all, c)
	return c
}

// 400 Bad Request.
var (
	InvalidInput                               = def(http.StatusBadRequest, "INVALID_INPUT")
	EndUserTermsVersionNotFound                = def(http.StatusBadRequest, "END_USER_TERMS_VERSION_NOT_FOUND")
	MissingMandatoryUserInfo                   = def(http.StatusBadRequest, "MISSING_MANDATORY_USER_INFO")
	InvitationAlreadyClaimed                   = def(http.StatusBadRequest, "INVITATION_ALREADY_CLAIMED")
	InvitationsNotConfigured                   = def(http.StatusBadRequest, "INVITATIONS_NOT_CONFIGURED")
	InvalidUMAAddress                          = def(http.StatusBadRequest, "INVALID_UMA_ADDRESS")
	InvitationCancelled                        = def(http.StatusBadRequest, "INVITATION_CANCELLED")
	QuoteRequestFailed                         = def(http.StatusBadRequest, "QUOTE_REQUEST_FAILED")
	InvalidPayreqResponse                      = def(http.StatusBadRequest, "INVALID_PAYREQ_RESPONSE")
	InvalidReceiver                            = def(http.StatusBadRequest, "INVALID_RECEIVER")
	ParsePayreqResponseError                   = def(http.StatusBadRequest, "PARSE_PAYREQ_RESPONSE_ERROR")
	CertChainInvalid                           = def(http.StatusBadRequest, "CERT_CHAIN_INVALID")
	CertChainExpired                           = def(http.StatusBadRequest, "CERT_CHAIN_EXPIRED")
	InvalidPubkeyFormat                        = def(http.StatusBadRequest, "INVALID_PUBKEY_FORMAT")
	MissingRequiredUMAParameters               = def(http.StatusBadRequest, "MISSING_REQUIRED_UMA_PARAMETERS")
	SenderNotAccepted                          = def(http.StatusBadRequest, "SENDER_NOT_ACCEPTED")
	AmountOutOfRange                           = def(http.StatusBadRequest, "AMOUNT_OUT_OF_RANGE")
	InvalidCurrency                            = def(http.StatusBadRequest, "INVALID_CURRENCY")
	InvalidTimestamp                           = def(http.StatusBadRequest, "INVALID_TIMESTAMP")
	InvalidNonce                               = def(http.StatusBadRequest, "INVALID_NONCE")
	InvalidRequestFormat                       = def(http.StatusBadRequest, "INVALID_REQUEST_FORMAT")
	InvalidBankAccount                         = def(http.StatusBadRequest, "INVALID_BANK_ACCOUNT")
	SelfPayment                                = def(http.StatusBadRequest, "SELF_PAYMENT")
	LookupRequestFailed                        = def(http.StatusBadRequest, "LOOKUP_REQUEST_FAILED")
	ParseLNURLPResponseError                   = def(http.StatusBadRequest, "PARSE_LNURLP_RESPONSE_ERROR")
	InvalidAmount                              = def(http.StatusBadRequest, "INVALID_AMOUNT")
	WebhookEndpointNotSet                      = def(http.StatusBadRequest, "WEBHOOK_ENDPOINT_NOT_SET")
	WebhookDeliveryError                       = def(http.StatusBadRequest, "WEBHOOK_DELIVERY_ERROR")
	LowQuality                                 = def(http.StatusBadRequest, "LOW_QUALITY")
	DataMismatch                               = def(http.StatusBadRequest, "DATA_MISMATCH")
	Expired                                    = def(http.StatusBadRequest, "EXPIRED")
	SuspectedFraud                             = def(http.StatusBadRequest, "SUSPECTED_FRAUD")
	UnsuitableDocument                         = def(http.StatusBadRequest, "UNSUITABLE_DOCUMENT")
	Incomplete                                 = def(http.StatusBadRequest, "INCOMPLETE")
	EmailOTPCredentialAlreadyExists            = def(http.StatusBadRequest, "EMAIL_OTP_CREDENTIAL_ALREADY_EXISTS")
	SMSOTPCredentialAlreadyExists              = def(http.StatusBadRequest, "SMS_OTP_CREDENTIAL_ALREADY_EXISTS")
	PasskeyCredentialAlreadyExists             = def(http.StatusBadRequest, "PASSKEY_CREDENTIAL_ALREADY_EXISTS")
	StablecoinProviderAccountInvalid           = def(http.StatusBadRequest, "STABLECOIN_PROVIDER_ACCOUNT_INVALID")
	StablecoinProviderAccountRevoked           = def(http.StatusBadRequest, "STABLECOIN_PROVIDER_ACCOUNT_REVOKED")
	StablecoinProviderAccountSelectionRequired = def(http.StatusBadRequest, "STABLECOIN_PROVIDER_ACCOUNT_SELECTION_REQUIRED")
	CardholderKYCNotApproved                   = def(http.StatusBadRequest, "CARDHOLDER_KYC_NOT_APPROVED")
	TransactionSizeLimitExceeded               = def(http.StatusBadRequest, "TRANSACTION_SIZE_LIMIT_EXCEEDED")
	ExternalAccountVerificationRequired        = def(http.StatusBadRequest, "EXTERNAL_ACCOUNT_VERIFICATION_REQUIRED")
)

// 401 Unauthorized.
var (
	// Unauthorized is the generic authentication failure. Use [Unauthenticated]
	// with a reason naming the failed check.
	Unauthorized                = def(http.StatusUnauthorized, "UNAUTHORIZED")
	InvalidSignature            = def(http.StatusUnauthorized, "INVALID_SIGNATURE")
	WalletSignatureMissing      = def(http.StatusUnauthorized, "WALLET_SIGNATURE_MISSING")
	WalletSignatureMalformed    = def(http.StatusUnauthorized, "WALLET_SIGNATURE_MALFORMED")
	WalletSignatureBodyMismatch = def(http.StatusUnauthorized, "WALLET_SIGNATURE_BODY_MISMATCH")
	WalletSignatureInvalid      = def(http.StatusUnauthorized, "WALLET_SIGNATURE_INVALID")
	RequestIDMissing            = def(http.StatusUnauthorized, "REQUEST_ID_MISSING")
)

// 403 Forbidden. FORBIDDEN is a host's guard refusing a caller; the payout
// policy's refusals (ownership/policy) name the rule that decided:
// PAYOUT_BLOCKED when a rule blocks the payout (a window without room, a
// destination in its cool-off, a blocked kind of payout), STEP_UP_REQUIRED
// when the rule that would allow it wants a stronger signer.
var (
	Forbidden      = def(http.StatusForbidden, "FORBIDDEN")
	PayoutBlocked  = def(http.StatusForbidden, "PAYOUT_BLOCKED")
	StepUpRequired = def(http.StatusForbidden, "STEP_UP_REQUIRED")
)

// 404 Not Found.
var (
	TransactionNotFound               = def(http.StatusNotFound, "TRANSACTION_NOT_FOUND")
	InvitationNotFound                = def(http.StatusNotFound, "INVITATION_NOT_FOUND")
	UserNotFound                      = def(http.StatusNotFound, "USER_NOT_FOUND")
	QuoteNotFound                     = def(http.StatusNotFound, "QUOTE_NOT_FOUND")
	LookupRequestNotFound             = def(http.StatusNotFound, "LOOKUP_REQUEST_NOT_FOUND")
	TokenNotFound                     = def(http.StatusNotFound, "TOKEN_NOT_FOUND")
	BulkUploadJobNotFound             = def(http.StatusNotFound, "BULK_UPLOAD_JOB_NOT_FOUND")
	ReferenceNotFound                 = def(http.StatusNotFound, "REFERENCE_NOT_FOUND")
	UMANotFound                       = def(http.StatusNotFound, "UMA_NOT_FOUND")
	StablecoinProviderAccountNotFound = def(http.StatusNotFound, "STABLECOIN_PROVIDER_ACCOUNT_NOT_FOUND")
)

// 405 Method Not Allowed.
var MethodNotAllowed = def(http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED")

// 409 Conflict.
var (
	TransactionNotPendingPlatformApproval = def(http.StatusConflict, "TRANSACTION_NOT_PENDING_PLATFORM_APPROVAL")
	TransactionNotCancellable             = def(http.StatusConflict, "TRANSACTION_NOT_CANCELLABLE")
	UMAAddressExists                      = def(http.StatusConflict, "UMA_ADDRESS_EXISTS")
	EmailOTPEmailAlreadyExists            = def(http.StatusConflict, "EMAIL_OTP_EMAIL_ALREADY_EXISTS")
	EmailOTPCredentialSetChanged          = def(http.StatusConflict, "EMAIL_OTP_CREDENTIAL_SET_CHANGED")
	PasskeyAlreadyEnrolled                = def(http.StatusConflict, "PASSKEY_ALREADY_ENROLLED")
	SCASessionRequired                    = def(http.StatusConflict, "SCA_SESSION_REQUIRED")
	BeneficiaryTrusted                    = def(http.StatusConflict, "BENEFICIARY_TRUSTED")
	InvalidStateTransition                = def(http.StatusConflict, "INVALID_STATE_TRANSITION")
	CardAlreadyClosed                     = def(http.StatusConflict, "CARD_ALREADY_CLOSED")
	CardNotMutable                        = def(http.StatusConflict, "CARD_NOT_MUTABLE")
	Conflict                              = def(http.StatusConflict, "CONFLICT")
)

// 429 Too Many Requests.
var RateLimited = def(http.StatusTooManyRequests, "RATE_LIMITED")

// 500 Internal Server Error.
var (
	ServiceSwitchError = def(http.StatusInternalServerError, "SERVICE_SWITCH_ERROR")
	InternalError      = def(http.StatusInternalServerError, "INTERNAL_ERROR")
)

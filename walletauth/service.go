package walletauth

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/operation"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/walletauth/authclient"
	"github.com/walletgate/walletgate/walletauth/oidc"
	"github.com/walletgate/walletgate/walletauth/passkey"
)

// Defaults of [Config].
const (
	DefaultSessionTTL       = 15 * time.Minute
	DefaultOTPLength        = 6
	DefaultOTPTTL           = 5 * time.Minute
	DefaultOTPMaxAttempts   = 5
	DefaultOTPReissueLimit  = 5
	DefaultOTPReissueWindow = 10 * time.Minute
	// DefaultOTPAttemptBudget codes of a credential may be compared per
	// DefaultOTPAttemptBudgetWindow, across its issuances (see
	// [OTPConfig].AttemptBudget for the bound this gives).
	DefaultOTPAttemptBudget       = 24
	DefaultOTPAttemptBudgetWindow = 24 * time.Hour
	// DefaultMaxPasskeyChallenges live login challenges are kept per
	// PASSKEY credential (see [Config].MaxPasskeyChallenges).
	DefaultMaxPasskeyChallenges = 64
	// DefaultSecurityChangePeriod is how long a credential enrolled by a
	// session answers to the credential that enrolled it (see
	// [Config].SecurityChangePeriod), as exchanges lock withdrawals for a
	// day after a change of factors.
	DefaultSecurityChangePeriod = 24 * time.Hour
	// MinSecurityChangePeriod and MaxSecurityChangePeriod bound
	// [Config].SecurityChangePeriod.
	MinSecurityChangePeriod = time.Hour
	MaxSecurityChangePeriod = 30 * 24 * time.Hour
	// SandboxOTPCode is the code every one-time code is in sandbox mode.
	SandboxOTPCode = "000000"
)

// Operation types written into signed-retry payloads, the ones clients
// check payloads against ([authclient.OpAddCredential] and the others).
const (
	OpAddCredential    = authclient.OpAddCredential
	OpRevokeCredential = authclient.OpRevokeCredential
	OpVerifyOTP        = authclient.OpVerifyOTP
	OpRevokeSession    = authclient.OpRevokeSession
	OpRefreshSession   = authclient.OpRefreshSession
	OpUpdateEmail      = authclient.OpUpdateEmail
	OpExportWallet     = authclient.OpExportWallet
	OpWalletPrivacy    = authclient.OpWalletPrivacy
)

// Message is a one-time code to deliver.
type Message struct {
	// Channel is EMAIL_OTP or SMS_OTP.
	Channel storage.CredentialType
	// To is the email address or E.164 phone number.
	To           string
	Code         string
	AccountID    string
	CredentialID string
	ExpiresAt    time.Time
}

// Sender delivers one-time codes; the host implements it (an email or SMS
// provider). Send is called after the code is stored, outside any
// transaction. An error answers the challenge with 500; the code stays valid
// and the client may ask for a new one (within the rate limit).
type Sender interface {
	Send(ctx context.Context, m Message) error
}

// OTPConfig is the one-time code policy.
type OTPConfig struct {
	// Length is the number of characters; zero means DefaultOTPLength.
	// Values outside 4..12 are raised or lowered into that range.
	Length int
	// Alphabet is the set of characters codes are drawn from; empty means
	// the digits 0-9.
	Alphabet string
	// TTL is how long a code is valid; zero means DefaultOTPTTL.
	TTL time.Duration
	// MaxAttempts is how many wrong codes kill an issuance; zero means
	// DefaultOTPMaxAttempts.
	MaxAttempts int
	// ReissueLimit codes may be issued per credential in ReissueWindow;
	// zeros mean DefaultOTPReissueLimit and DefaultOTPReissueWindow.
	ReissueLimit  int
	ReissueWindow time.Duration
	// AttemptBudget codes of one credential may be compared in
	// AttemptBudgetWindow, across all its issuances: a verification spends
	// one before it compares a code, the right one included, so a user
	// spends one per login and one per mistyped code. A verification past
	// the budget compares nothing and answers 429 RATE_LIMITED with
	// Retry-After (the time until the window ends); the first of a window
	// writes AUTH_CREDENTIAL.OTP_THROTTLED. The count is kept by the store
	// ([storage.RateLimits]), so it holds across replicas. Zeros mean
	// DefaultOTPAttemptBudget and DefaultOTPAttemptBudgetWindow.
	//
	// The bound: a window opens at the first compared code and lasts
	// AttemptBudgetWindow, so any span of that length meets at most two
	// windows, and at most 2 × AttemptBudget codes of a credential are
	// compared in it. A code is drawn uniformly from A = len(Alphabet)^Length
	// values and an issuance takes at most MaxAttempts guesses, so each
	// compared guess is right with probability at most
	// 1/(A − MaxAttempts + 1). An account has at most two OTP credentials
	// (one EMAIL_OTP, one SMS_OTP), so guessing logs in to a given account
	// within one AttemptBudgetWindow with probability at most
	//
	//	4 × AttemptBudget / (A − MaxAttempts + 1)
	//
	// With the defaults (6 digits, MaxAttempts 5, 24 codes per 24 hours):
	// 96 / 999,996 ≈ 9.6 × 10⁻⁵ per account per day, below 10⁻⁴. Accounts
	// attacked in parallel each have that bound; raising AttemptBudget or
	// shortening the window or the code raises it in proportion.
	AttemptBudget       int
	AttemptBudgetWindow time.Duration
}

// Config configures a [Service].
type Config struct {
	// Store holds all state. Required.
	Store storage.Store
	// Sender delivers one-time codes. Required unless Sandbox is set.
	Sender Sender
	// Clock returns the current time; nil means time.Now.
	Clock func() time.Time
	// Rand supplies ids, codes and keys; nil means crypto/rand.
	Rand io.Reader
	// Keys are the host's keys: the bundle signing key, the sealer and the
	// code MAC key. Required: New fails when one is missing. Replicas of
	// one service share them; [EphemeralKeys] makes keys for a single
	// process.
	Keys Keys
	// Guard decides whether the caller may act on a wallet (see
	// [WalletGuard]); nil means no guard, for a host with one tenant or
	// whose every caller is trusted. Every operation that acts on a wallet
	// asks it once per call, once per leg of a signed operation, inside
	// the transaction that first reads the wallet, before any answer that
	// depends on the wallet's data and before anything is written; an id
	// that names nothing is 404 REFERENCE_NOT_FOUND before it is asked. It
	// is asked by every transport alike: [Service.Handler] (which refuses
	// to serve without a guard), a host's gRPC or HTTP stack calling the
	// methods, a background job. Where each operation asks:
	//
	//   - CreateWallet: on the new wallet, before it is stored (a plain
	//     refusal is 403 FORBIDDEN: there is no id to be unknown);
	//   - AddCredential, PasskeyRegistrationChallenge, ExportWallet,
	//     UpdateWalletPrivacy and [Authorize]: on the wallet the call names;
	//   - RevokeCredential, Challenge and Verify: on the wallet of the
	//     credential the call names, once the credential is read (Verify of
	//     a one-time code: with the attempt's lock on leg 1 and the session's
	//     on leg 2, both rolled back by a refusal);
	//   - RevokeSession and RefreshSession: on the wallet of the session;
	//   - UpdateEmail: on every wallet of the customer, once they are
	//     locked; one refused wallet refuses the change;
	//   - ListCredentials and ListSessions: on the wallet the call names,
	//     read for the guard (so with a guard an unknown wallet is 404
	//     REFERENCE_NOT_FOUND, not an empty list);
	//   - Wallet: on the wallet read (404 REFERENCE_NOT_FOUND on a plain
	//     refusal); Wallets: on each wallet of the customer, a wallet
	//     refused plainly left out of the list.
	//
	// On the retry of a signed operation the guard is asked in the
	// transaction that consumes the request, on the wallet the request is
	// bound to, after the request and its stamp were found valid (those
	// 401s come first); a refusal leaves the request unconsumed. The wallet
	// is read for the guard from what the operation locks or reads anyway,
	// so on PostgreSQL a guard costs no round trip where the operation
	// reads the wallet, its credential or the signer of its retry; without
	// a guard nothing is read for it.
	Guard WalletGuard
	// OrganizationID is written into target bundles.
	OrganizationID string
	// SessionTTL is the lifetime of a session; zero means DefaultSessionTTL.
	SessionTTL time.Duration
	// RetryTTL is the lifetime of signed-retry challenges; zero means
	// signedretry.DefaultTTL.
	RetryTTL time.Duration
	// MaxPendingChallenges caps the live signed-retry challenges of one
	// wallet (first legs issued, neither used nor expired); a first leg
	// beyond it is 429 RATE_LIMITED with Retry-After. Passkey login
	// challenges do not count (MaxPasskeyChallenges bounds them, per
	// credential), nor do the challenges of one-time code verifications,
	// of which the wallet keeps this many newest apart, never refusing one. Zero means signedretry.DefaultMaxPending; negative is
	// refused.
	MaxPendingChallenges int
	// MaxPasskeyChallenges bounds the live login challenges of one PASSKEY
	// credential (issued, neither used nor expired). Anyone who knows the
	// credential's id may ask for one, so a new challenge is never
	// refused: when the credential holds this many, the new one supersedes
	// the oldest, whose verification then answers 401 UNAUTHORIZED with
	// reason "unknown request id", as an unknown one does. So the store
	// holds at most this many challenges per passkey, and passkey login
	// challenges, whoever asks for them, neither take from the wallet's
	// MaxPendingChallenges (on which signed operations depend) nor are ever refused to the owner. An owner's
	// passkey login fails this way only when at least MaxPasskeyChallenges
	// other challenges of the same credential are issued between its
	// challenge and its verification; a host whose ingress admits fewer
	// challenge requests per credential than that in the time a ceremony
	// takes makes that impossible. Zero means DefaultMaxPasskeyChallenges;
	// negative is refused.
	MaxPasskeyChallenges int
	// OTP is the one-time code policy.
	OTP OTPConfig
	// SecurityChangePeriod is how long a credential enrolled by a session
	// (added through a signed retry) is worth no more than the proof that
	// enrolled it; zero means DefaultSecurityChangePeriod, and a value
	// outside MinSecurityChangePeriod..MaxSecurityChangePeriod is refused.
	// During the period the credential carries the assurance of the
	// enrolling session's credential when that is weaker than its own type
	// ([storage.Credential].AssuredAs): it meets no step-up naming its own
	// type and cannot revoke a credential older than itself; and whatever
	// enrolled it, it answers to the credential that enrolled it
	// ([storage.Credential].OriginAt), so it does not count as another
	// credential beside it for an approval. A credential enrolled by a
	// session of its own type or a stronger one carries its own type's
	// assurance at once. Every enrolment and removal writes
	// [EventSecurityNotice] for the host to send to the wallet's contact
	// channels, so that the owner hears of a change while it can still be
	// undone. The period of a credential is fixed when it is enrolled.
	SecurityChangePeriod time.Duration
	// ClientHeldKeys makes a compressed clientPublicKey itself the session
	// key (no encryptedSessionSigningKey is returned), as the real service's
	// client-held mode does. By default the server generates the session key
	// and seals it to clientPublicKey.
	ClientHeldKeys bool
	// Passkeys verifies PASSKEY registrations and assertions; nil disables
	// the PASSKEY type (400 INVALID_INPUT). Its own passkey.Config.Sandbox decides
	// whether the legacy assertion literal is accepted.
	Passkeys *passkey.Verifier
	// OIDC verifies OpenID Connect ID tokens; nil disables the OAUTH type.
	// Its own oidc.Config.Sandbox decides whether dummy signatures are accepted.
	OIDC *oidc.Verifier
	// Sandbox switches on the sandbox rules: every code is SandboxOTPCode and
	// nothing is delivered (HPKE and signatures still run), and the legacy
	// wallet signature literal is accepted. Never set it in production. It
	// does not make keys: Keys is required in sandbox mode too.
	Sandbox bool
	// WalletSecrets supplies the secret [Service.ExportWallet] seals to the
	// client (key custody is the host's); nil makes an export 500
	// INTERNAL_ERROR.
	WalletSecrets WalletSecrets
	// Telemetry receives the service's records, spans and metrics, and
	// its signed-retry manager's; the zero value reports nothing. Refusals
	// of authentication (wrong, expired or locked-out codes, bad
	// signatures, revoked signers) are logged at slog.LevelWarn with the
	// code and reason. Each operation is a span ("walletauth.otp.start",
	// "walletauth.otp.verify", "walletauth.passkey.verify",
	// "walletauth.oidc.verify", "walletauth.session.refresh",
	// "walletauth.wallet.export"; the signed-retry step of one of these is
	// an event on its span, and the other signed operations have the
	// signed-retry manager's spans) and is counted and timed by the outcome
	// counters and duration histograms (apierror/operation/README.md lists
	// them). Records, spans and metric attributes carry operation names,
	// outcomes, error codes and reasons only: nothing secret (codes, keys,
	// bundles, tokens, stamps, bodies) and no identifier of a customer,
	// wallet or credential.
	Telemetry operation.Telemetry
}

// Service is the embedded-wallet authentication service.
type Service struct {
	cfg   Config // normalized by New: defaults filled in, CodeMACKey copied
	retry *signedretry.Manager
	tel   *instruments
}

// New returns a service for cfg. It fails, returning a plain error, when
// Store is missing, when Sender is missing outside sandbox mode, when
// MaxPendingChallenges or MaxPasskeyChallenges is negative, and when
// cfg.Keys does not hold working keys (see [Keys]; a missing key is
// [ErrKeysRequired]).
func New(cfg Config) (*Service, error) {
	if cfg.Store == nil {
		return nil, errors.New("walletauth: Config.Store is required")
	}
	if cfg.Sender == nil && !cfg.Sandbox {
		return nil, errors.New("walletauth: Config.Sender is required outside sandbox mode")
	}
	if cfg.MaxPendingChallenges < 0 {
		return nil, errors.New("walletauth: Config.MaxPendingChallenges is negative")
	}
	if cfg.MaxPasskeyChallenges < 0 {
		return nil, errors.New("walletauth: Config.MaxPasskeyChallenges is negative")
	}
	if cfg.SecurityChangePeriod == 0 {
		cfg.SecurityChangePeriod = DefaultSecurityChangePeriod
	}
	if cfg.SecurityChangePeriod < MinSecurityChangePeriod || cfg.SecurityChangePeriod > MaxSecurityChangePeriod {
		return nil, fmt.Errorf("walletauth: Config.SecurityChangePeriod %v is not between %v and %v",
			cfg.SecurityChangePeriod, MinSecurityChangePeriod, MaxSecurityChangePeriod)
	}
	if err := cfg.Keys.check(); err != nil {
		return nil, err
	}
	cfg.Keys.CodeMACKey = bytes.Clone(cfg.Keys.CodeMACKey)
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Reader
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = DefaultSessionTTL
	}
	if cfg.RetryTTL <= 0 {
		cfg.RetryTTL = signedretry.DefaultTTL
	}
	if cfg.MaxPendingChallenges == 0 {
		cfg.MaxPendingChallenges = signedretry.DefaultMaxPending
	}
	if cfg.MaxPasskeyChallenges == 0 {
		cfg.MaxPasskeyChallenges = DefaultMaxPasskeyChallenges
	}
	cfg.OTP = cfg.OTP.withDefaults()
	retry, err := signedretry.New(signedretry.Config{Store: cfg.Store, Clock: cfg.Clock, Rand: cfg.Rand,
		TTL: cfg.RetryTTL, MaxPending: cfg.MaxPendingChallenges, Sandbox: cfg.Sandbox,
		Telemetry: cfg.Telemetry})
	if err != nil {
		return nil, err
	}
	tel, err := newInstruments(&cfg)
	if err != nil {
		return nil, err
	}
	return &Service{cfg: cfg, retry: retry, tel: tel}, nil
}

func (c OTPConfig) withDefaults() OTPConfig {
	if c.Length == 0 {
		c.Length = DefaultOTPLength
	}
	c.Length = min(max(c.Length, 4), 12)
	if c.Alphabet == "" {
		c.Alphabet = "0123456789"
	}
	if c.TTL <= 0 {
		c.TTL = DefaultOTPTTL
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = DefaultOTPMaxAttempts
	}
	if c.ReissueLimit <= 0 {
		c.ReissueLimit = DefaultOTPReissueLimit
	}
	if c.ReissueWindow <= 0 {
		c.ReissueWindow = DefaultOTPReissueWindow
	}
	if c.AttemptBudget <= 0 {
		c.AttemptBudget = DefaultOTPAttemptBudget
	}
	if c.AttemptBudgetWindow <= 0 {
		c.AttemptBudgetWindow = DefaultOTPAttemptBudgetWindow
	}
	return c
}

// SigningPublicKey returns the key that signs OTP target bundles, which
// clients may pin (envelope.ParseTargetBundle).
func (s *Service) SigningPublicKey() *ecdsa.PublicKey { return &s.cfg.Keys.SigningKey.PublicKey }

// AuthMethod is a credential as clients see it ([authclient.AuthMethod]).
type AuthMethod = authclient.AuthMethod

// AuthSession is a session as clients see it ([authclient.AuthSession]).
type AuthSession = authclient.AuthSession

func authMethod(c *storage.Credential) *AuthMethod {
	m := &AuthMethod{ID: c.ID, AccountID: c.AccountID, Type: c.Type, Nickname: c.Nickname,
		CreatedAt: c.CreatedAt.UTC(), UpdatedAt: c.UpdatedAt.UTC()}
	if c.WebAuthn != nil {
		m.CredentialID = base64URL(c.WebAuthn.CredentialID)
	}
	return m
}

func notFound(what, id string) *apierror.Error {
	return apierror.New(apierror.ReferenceNotFound, "%s %s not found", what, id)
}

// atomic runs fn in a transaction of the service's store.
func (s *Service) atomic(ctx context.Context, fn func(tx storage.Tx) error) error {
	return s.cfg.Store.Atomic(ctx, fn)
}

// run runs the leg of op that call is ([signedretry.Run]) with the
// service's manager, with the errors of the store mapped by apierror.From.
func run[P, L, R any](ctx context.Context, s *Service, call signedretry.Request, op signedretry.Steps[P, L, R]) (R, *signedretry.Challenge, error) {
	res, _, c, err := signedretry.Run(ctx, s.retry, call, op)
	if err != nil {
		return res, nil, apierror.From(err)
	}
	return res, c, nil
}

// newID returns a fresh "<prefix>:<uuid>".
func (s *Service) newID(prefix string) (string, error) {
	id, err := storage.NewID(s.cfg.Rand, prefix)
	if err != nil {
		return "", apierror.Internal(err)
	}
	return id, nil
}

// credentialOfType reads a credential for a verification of type typ: 404
// REFERENCE_NOT_FOUND when it does not exist, 400 INVALID_INPUT on the type
// field when it is of another type (or lacks the record of its type).
func credentialOfType(ctx context.Context, tx storage.Tx, id string, typ storage.CredentialType) (storage.Credential, error) {
	c, err := tx.Credentials().Get(ctx, id)
	if errors.Is(err, storage.ErrNotFound) {
		return c, notFound("credential", id)
	}
	if err != nil {
		return c, err
	}
	return c, checkOfType(&c, typ)
}

// lockOTPAttempt is credentialOfType holding the credential until the
// transaction ends, for a verification of a one-time code, which writes
// its attempts and events about it: a concurrent revoke either deleted it
// before (404) or waits until this transaction commits. In the same step
// the store reads the credential's issuance and, when it is live, charges
// the attempt a ([storage.Credentials.Lock]); an error returned here, a
// refusal of the guard (asked about the credential's wallet before the
// type is checked, its answer recorded in asked) or a credential of
// another type included, rolls that back.
func (s *Service) lockOTPAttempt(ctx context.Context, tx storage.Tx, id string, typ storage.CredentialType, a storage.OTPAttempt, asked *admission) (storage.LockedCredential, error) {
	unknown := unknownAs("credential", id)
	r, err := tx.Credentials().Lock(ctx, id, &a)
	if errors.Is(err, storage.ErrNotFound) {
		return r, unknown()
	}
	if err != nil {
		return r, err
	}
	if err := s.admitOnce(ctx, tx, r.Credential.AccountID, unknown, asked); err != nil {
		return r, err
	}
	return r, checkOfType(&r.Credential, typ)
}

// checkOfType is the type check of credentialOfType.
func checkOfType(c *storage.Credential, typ storage.CredentialType) error {
	if c.Type != typ || typ == storage.OAuth && c.OAuth == nil || typ == storage.Passkey && c.WebAuthn == nil {
		return typeMismatch(typ, c.Type)
	}
	return nil
}

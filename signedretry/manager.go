package signedretry

import (
	"crypto/ecdsa"
	"crypto/rand"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/walletgate/walletgate/apierror/operation"
	"github.com/walletgate/walletgate/storage"
)

// DefaultTTL is how long a signed-retry challenge stays valid by default.
const DefaultTTL = 5 * time.Minute

// DefaultMaxPending is how many live challenges (issued, neither used nor
// expired) one account may hold by default.
const DefaultMaxPending = 64

// boundKeyScope, followed by the account id, is the scope of the
// challenges bound to a key ([storage.PendingRequests.Create] with a scope's [storage.Quota]).
const boundKeyScope = "bound-key:"

// SandboxSignature is the legacy header value that sandbox managers accept in
// place of a real signature.
const SandboxSignature = "sandbox-valid-signature"

// Rule says who may sign the retry of an operation. The signer is checked
// against storage when the retry arrives, not when the challenge is issued, so
// a session revoked or expired in between no longer signs; and it is held
// locked from the check until the operation commits, so a revoke cannot
// commit in between.
type Rule string

// Signer rules.
const (
	// AnySession: an active session of the account (add credential, export
	// wallet, wallet privacy, customer email change, quote execution, and
	// revoke session, where the session being revoked may sign itself).
	AnySession Rule = "ANY_SESSION"
	// OtherCredentialSession: an active session of the account issued by a
	// credential other than Signer.Ref (revoke credential).
	OtherCredentialSession Rule = "OTHER_CREDENTIAL_SESSION"
	// Session: the session Signer.Ref itself, still active (refresh session).
	Session Rule = "SESSION"
	// BoundKey: the P-256 key Signer.Ref (compressed hex), bound when the
	// challenge was issued (OTP verify, second leg).
	BoundKey Rule = "BOUND_KEY"
)

// Signer is a signer rule and its subject: a credential id for
// OtherCredentialSession, a session id for Session, a compressed hex public
// key for BoundKey, nothing for AnySession.
type Signer struct {
	Rule Rule
	Ref  string
}

// Config configures a [Manager]. Its zero values are the defaults, except
// Store, which is required.
type Config struct {
	// Store persists pending requests and holds the sessions signers are
	// checked against. Required.
	Store storage.Store
	// Clock returns the current time; nil means time.Now.
	Clock func() time.Time
	// Rand supplies request ids; nil means crypto/rand.
	Rand io.Reader
	// TTL is the lifetime of a challenge; zero or negative means DefaultTTL.
	TTL time.Duration
	// MaxPending caps the live challenges of one account (issued, neither
	// used nor expired), so first legs cannot pile up records without
	// bound; zero means DefaultMaxPending. Negative is refused by [New].
	// Challenges bound to a key ([BoundKey]: the second leg of a login by
	// one-time code) are bounded apart, at MaxPending per account too, a
	// new one superseding the oldest: only a caller who proved the code
	// creates one, so they are never refused, and first legs of other
	// operations cannot fill the place a login needs.
	MaxPending int
	// Sandbox makes the literal SandboxSignature pass the signature check.
	// The request is still single use and the Request-Id still required.
	// Never set it in production.
	Sandbox bool
	// Telemetry receives the manager's records, spans and metrics; the
	// zero value reports nothing. Each refused retry
	// (WALLET_SIGNATURE_INVALID, a missing header, an unknown, used or
	// expired Request-Id, a signer the rule does not allow) is logged at
	// slog.LevelWarn with the code and reason. Each issued challenge is a
	// span "signedretry.issue" and each completed retry a span
	// "signedretry.complete" (inside the span of another walletgate
	// operation, a code verification running its signed retry, each is an
	// event of that name on that span instead); both are counted and timed
	// by the outcome counters and duration histograms
	// (apierror/operation/README.md lists them). Records, spans and metric
	// attributes carry operation names, outcomes, error codes and reasons
	// only: nothing secret (stamps, payloads, keys, bodies) and no
	// identifier.
	Telemetry operation.Telemetry
}

// Manager issues signed-retry challenges and completes their retries. It is
// safe for concurrent use; all state lives in the store.
type Manager struct {
	keys keyCache
	cfg  Config // normalized by New
	tel  *instruments
}

// New returns a manager for cfg. It fails when cfg.Store is nil or
// cfg.MaxPending is negative.
func New(cfg Config) (*Manager, error) {
	if cfg.Store == nil {
		return nil, errors.New("signedretry: Config.Store is required")
	}
	if cfg.MaxPending < 0 {
		return nil, errors.New("signedretry: Config.MaxPending is negative")
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Reader
	}
	if cfg.TTL <= 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.MaxPending == 0 {
		cfg.MaxPending = DefaultMaxPending
	}
	tel, err := newInstruments(&cfg)
	if err != nil {
		return nil, err
	}
	return &Manager{cfg: cfg, tel: tel}, nil
}

// keyCacheSize bounds the parsed public keys a manager remembers.
const keyCacheSize = 4096

// keyCache remembers parsed session public keys by their hex form, since the
// same session signs many retries and decompressing a point is a large part
// of parsing a stamp. Only keys that parsed are cached; a full cache is
// emptied rather than managed, which keeps it simple and bounded.
type keyCache struct {
	mu   sync.Mutex
	keys map[string]*ecdsa.PublicKey
}

func (c *keyCache) parse(hexKey string) (*ecdsa.PublicKey, string) {
	c.mu.Lock()
	pub, ok := c.keys[hexKey]
	c.mu.Unlock()
	if ok {
		return pub, ""
	}
	pub, problem := parsePublicKey(hexKey)
	if problem != "" {
		return nil, problem
	}
	c.mu.Lock()
	if c.keys == nil || len(c.keys) >= keyCacheSize {
		c.keys = make(map[string]*ecdsa.PublicKey)
	}
	c.keys[hexKey] = pub
	c.mu.Unlock()
	return pub, ""
}

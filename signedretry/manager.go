package signedretry

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/storage"
)

// DefaultTTL is how long a signed-retry challenge stays valid by default.
const DefaultTTL = 5 * time.Minute

// DefaultMaxPending is how many live challenges (issued, neither used nor
// expired) one account may hold by default.
const DefaultMaxPending = 64

// boundKeyScope, followed by the account id, is the scope of the
// challenges bound to a key ([storage.PendingRequests.CreateBounded]).
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
	// Logger receives the manager's records: each refused retry
	// (WALLET_SIGNATURE_INVALID, a missing header, an unknown, used or
	// expired Request-Id, a signer the rule does not allow) at
	// slog.LevelWarn with the code and reason. Nothing secret (stamps,
	// payloads, keys, bodies) and no identifier is logged. Nil discards.
	Logger *slog.Logger
	// TracerProvider receives a span per issued challenge
	// ("signedretry.issue") and per completed retry
	// ("signedretry.complete"), carrying the outcome and error code only;
	// inside the span of another walletgate operation (a code
	// verification running its signed retry) each is an event of that
	// name on that span instead. Nil means no tracing; the global provider
	// is never used.
	TracerProvider trace.TracerProvider
	// MeterProvider receives the outcome counters and duration histograms
	// (the "Operating walletgate" section of the README lists them), whose
	// attributes are operation names, outcomes and error codes only. Nil
	// means no metrics; the global provider is never used.
	MeterProvider metric.MeterProvider
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

// Operation is what the first leg of a sensitive request binds into its
// challenge. The method, path and body it is bound to are the [Request]'s.
type Operation struct {
	// Type names the operation in the payload, e.g. "REVOKE_CREDENTIAL".
	// [Manager.Run] sets it to [Steps].Type.
	Type string
	// AccountID is the internal account the operation acts on.
	AccountID string
	// Signer says who may sign the retry.
	Signer Signer
	// Parameters, when not nil, must marshal to a JSON object; it is written
	// into the payload and handed back on completion. It must hold every
	// value the operation's effect uses (keys, identities, types, amounts,
	// flags; a long token by its SHA-256 and what it asserts), since the
	// effect reads them from here and not from the retry.
	Parameters any
	// CredentialType, when set, is echoed as "type" in the 202 body (auth
	// operations carry the credential type concerned).
	CredentialType string
}

// Challenge is the 202 body of a first call.
type Challenge struct {
	// PayloadToSign is stamped byte for byte by the client.
	PayloadToSign string `json:"payloadToSign"`
	// RequestID is "Request:<uuid>", sent back in the Request-Id header.
	RequestID string `json:"requestId"`
	// ExpiresAt is when the challenge stops being accepted.
	ExpiresAt time.Time `json:"expiresAt"`
	// Type is the credential type on auth operations.
	Type string `json:"type,omitempty"`
}

// payload is the signed document, its fields in the fixed wire order.
type payload struct {
	Type        string          `json:"type"`
	RequestID   string          `json:"requestId"`
	AccountID   string          `json:"accountId"`
	Parameters  json.RawMessage `json:"parameters"`
	BodySHA256  string          `json:"bodySha256"`
	TimestampMs string          `json:"timestampMs"`
	ExpiresAt   string          `json:"expiresAt"`
}

// Issue stores a pending request for op, bound to the method, path and body
// of the first call r, and returns its challenge. The payload binds the
// operation, the account, the parameters and the SHA-256 of the canonical
// body; the server keeps it byte for byte. A body that is not JSON (or empty)
// answers 400 INVALID_INPUT. An account that already holds
// [Config].MaxPending live challenges gets 429 RATE_LIMITED, with
// Retry-After until the first of them expires; the count and the insert are
// one step in the store, so concurrent first legs, on any replica, never
// exceed the cap. A challenge bound to a key ([BoundKey]) is never
// refused: it is kept among the account's MaxPending newest of its kind,
// apart from the cap (see [Config].MaxPending). A first leg with effects of its own that must commit
// together with the challenge uses [Manager.Run].
func (m *Manager) Issue(ctx context.Context, r Request, op Operation) (_ *Challenge, err error) {
	ctx, o := m.tel.Begin(ctx, opIssue, m.tel.outcomes)
	defer func() { o.End(ctx, err) }()
	var c *Challenge
	err = m.cfg.Store.Atomic(ctx, func(tx storage.Tx) error {
		var err error
		c, err = m.issueIn(ctx, tx, r, &op)
		return err
	})
	if e := m.limitReached(err); e != nil {
		return nil, e
	}
	if err != nil {
		return nil, err
	}
	return c, nil
}

// issueIn is [Manager.Issue] inside the caller's transaction.
func (m *Manager) issueIn(ctx context.Context, tx storage.Tx, r Request, op *Operation) (*Challenge, error) {
	digest, err := BodyDigest(r.Body)
	if err != nil {
		return nil, err
	}
	params := json.RawMessage(`{}`)
	if op.Parameters != nil {
		b, err := json.Marshal(op.Parameters)
		if err != nil || len(b) == 0 || b[0] != '{' {
			return nil, apierror.Internal(errors.New("signedretry: operation parameters must marshal to a JSON object"))
		}
		params = b
	}
	switch op.Signer.Rule {
	case AnySession, OtherCredentialSession, Session, BoundKey:
	default:
		return nil, apierror.Internal(errors.New("signedretry: unknown signer rule " + strconv.Quote(string(op.Signer.Rule))))
	}
	id, err := storage.NewID(m.cfg.Rand, "Request")
	if err != nil {
		return nil, apierror.Internal(err)
	}
	now := m.cfg.Clock().UTC()
	expires := now.Add(m.cfg.TTL)
	p, err := marshalCompact(payload{
		Type: op.Type, RequestID: id, AccountID: op.AccountID, Parameters: params,
		BodySHA256: hex.EncodeToString(digest[:]), TimestampMs: strconv.FormatInt(now.UnixMilli(), 10),
		ExpiresAt: expires.Format(time.RFC3339Nano),
	})
	if err != nil {
		return nil, apierror.Internal(err)
	}
	rec := storage.PendingRequest{
		ID: id, Kind: op.Type, AccountID: op.AccountID, Method: r.Method, Path: r.Path,
		BodyDigest: digest[:], Payload: p, SignerRule: string(op.Signer.Rule), SignerRef: op.Signer.Ref,
		Data: params, CreatedAt: now, ExpiresAt: expires,
	}
	if op.Signer.Rule == BoundKey {
		// A login's challenge: bounded apart (see Config.MaxPending).
		if err := tx.PendingRequests().CreateBounded(ctx, &rec, boundKeyScope+op.AccountID, m.cfg.MaxPending); err != nil {
			return nil, apierror.Internal(err)
		}
		return &Challenge{PayloadToSign: string(p), RequestID: id, ExpiresAt: expires, Type: op.CredentialType}, nil
	}
	// The store may report the limit here or, having deferred the insert,
	// from Atomic: limitReached answers it either way.
	if _, err := tx.PendingRequests().CreateLimited(ctx, &rec, m.cfg.MaxPending); err != nil {
		if e := m.limitReached(err); e != nil {
			return nil, e
		}
		return nil, apierror.Internal(err)
	}
	return &Challenge{PayloadToSign: string(p), RequestID: id, ExpiresAt: expires, Type: op.CredentialType}, nil
}

// limitReached is the 429 of an account at its cap of live challenges, when
// err reports it (a *storage.LimitError), or nil.
func (m *Manager) limitReached(err error) *apierror.Error {
	var limit *storage.LimitError
	if !errors.As(err, &limit) {
		return nil
	}
	e := apierror.TooManyRequests(max(limit.RetryAt.Sub(m.cfg.Clock()), time.Second))
	e.Message = "the account holds too many live signed-retry challenges; complete one or wait until one expires"
	return e
}

func marshalCompact(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// Request is a call of an operation as it arrived, on either leg: the first
// call carries neither signed-retry header, the retry carries them.
type Request struct {
	// Method, Path and Body are the call's; the retry must repeat the first
	// call's (the body compared after canonicalization).
	Method string
	Path   string
	Body   []byte
	// Signature is the Service-Wallet-Signature header value.
	Signature string
	// RequestID is the Request-Id header value.
	RequestID string
}

// IsRetry reports whether r carries either signed-retry header. A request
// with neither is a first call; a request with one of them is a retry, and
// [Manager.Complete] names the header that is missing.
func (r Request) IsRetry() bool { return r.Signature != "" || r.RequestID != "" }

// Authorization says who authorized a completed operation.
type Authorization struct {
	// RequestID is the consumed request.
	RequestID string
	// Type and AccountID are the operation's.
	Type      string
	AccountID string
	// Parameters are the operation's parameters as issued.
	Parameters json.RawMessage
	// SessionID and CredentialID identify the signing session for the
	// session rules; they are empty for BoundKey.
	SessionID    string
	CredentialID string
	// PublicKey is the key that signed; nil when the sandbox literal was
	// accepted.
	PublicKey *ecdsa.PublicKey
	// Sandbox reports that the sandbox literal stood in for a signature.
	Sandbox bool
	// Now is the time, in UTC, at which the request was found unexpired and
	// the signer allowed: read from the manager's clock in the consuming
	// transaction, after the request's consumption, the lock step's locks
	// and the signer's locks were granted, and read again on every run of
	// that transaction. An effect that stamps its writes or judges an
	// expiry uses it, so that it acts on the time the retry was decided
	// on. It is zero in the lock step of [Manager.CompleteLocking], which
	// runs before the decision.
	Now time.Time
}

// DecodeParameters decodes the operation's parameters, as the first call
// stored them, into dst. An effect reads every input from here, never from the
// retry's own body: the parameters are what the payload showed the signer.
// The stored bytes are the library's own, so a failure is 500 INTERNAL_ERROR.
func (a *Authorization) DecodeParameters(dst any) error {
	if err := apierror.DecodeBytes(a.Parameters, dst); err != nil {
		return apierror.Internal(fmt.Errorf("signedretry: decoding stored parameters of %s: %w", a.RequestID, err))
	}
	return nil
}

// Effect is the work a signed retry authorizes. It runs inside the
// transaction that consumes the request: when it returns an error, nothing it
// wrote persists and the request stays unconsumed, so the client may retry.
// It takes its inputs from [Authorization.DecodeParameters], never from the
// retry's body: the body was only compared with the first call's. The store
// may run it more than once (see [storage.Store.Atomic]), except inside a
// host's transaction (storage/postgres's Store.WithTx), where it runs once
// and reaches the host's transaction with postgres.HostTx, so the host's own
// writes commit with the consumption.
//
// It runs with the signer's locks held (see [Manager.Complete]), so it takes
// only locks that come later in the store's lock order: the operation's
// internal account again, credentials and sessions of that account, and
// records outside the order. An effect that locks other internal accounts
// or an email address takes them in the lock step of
// [Manager.CompleteLocking].
type Effect func(ctx context.Context, tx storage.Tx, a *Authorization) error

// Complete checks the retry r of the operation opType (the type the route
// expects) and, when it is authorized, consumes the request and runs effect
// in one transaction. Failures are 401s:
//
//   - WALLET_SIGNATURE_MISSING: no signature header;
//   - REQUEST_ID_MISSING: a signature without Request-Id;
//   - WALLET_SIGNATURE_MALFORMED: the header does not parse;
//   - UNAUTHORIZED with details.reason: the Request-Id is unknown, expired,
//     already used, or bound to another operation (method, path or type);
//   - WALLET_SIGNATURE_BODY_MISMATCH: the body differs from the first call's;
//   - WALLET_SIGNATURE_INVALID: the signature does not verify over the
//     payload, or its key is not allowed to sign under the operation's rule.
//
// Errors from effect are returned unchanged. A failed retry never consumes the
// request.
//
// Expiry is decided on a time read after the locks: the consuming
// transaction reads the clock once the request's consumption and the
// signer's locks are granted, and refuses a request expired by then
// (UNAUTHORIZED, "request id expired") or a signing session expired by then
// (WALLET_SIGNATURE_INVALID), however long it waited for those locks. A
// transaction the store runs again reads the clock again. The effect gets
// that time as [Authorization.Now].
//
// The signer check and the effect are one serializable unit. Under the
// session rules the consuming transaction locks the operation's internal
// account, then the signing session's credential, then the session
// ([storage.Sessions.LockSigner]), checks the session on what it locked
// (not revoked, not expired, of the account, issued by a credential that
// still exists, of another credential for OtherCredentialSession) and runs
// effect with the locks held. A revoke of the session or of its credential
// takes the conflicting lock: it either commits first, and the retry
// answers 401 WALLET_SIGNATURE_INVALID, or waits until the operation has
// committed. BoundKey needs no lock: the key was bound when the challenge
// was issued.
func (m *Manager) Complete(ctx context.Context, r Request, opType string, effect Effect) (*Authorization, error) {
	return m.CompleteLocking(ctx, r, opType, nil, effect)
}

// CompleteLocking is [Manager.Complete] for an operation whose effect locks
// internal accounts other than the operation's own, or an email address. lock
// runs in the consuming transaction right after the request is consumed and
// before the signer is checked; it takes those locks in the store's lock
// order (internal accounts in ascending id order, the operation's among
// them, then the address), so that the signer's credential and session are
// locked after them and no two transactions wait for each other in a cycle.
// lock only locks and reads: a decision it makes is taken before the signer
// is known to be allowed. A nil lock is Complete.
func (m *Manager) CompleteLocking(ctx context.Context, r Request, opType string, lock, effect Effect) (_ *Authorization, err error) {
	ctx, o := m.tel.Begin(ctx, opComplete, m.tel.outcomes)
	defer func() { o.End(ctx, err) }()
	if r.Signature == "" {
		return nil, apierror.New(apierror.WalletSignatureMissing, "the Service-Wallet-Signature header is required on a signed retry")
	}
	if r.RequestID == "" {
		return nil, apierror.New(apierror.RequestIDMissing, "the Request-Id header is required on a signed retry")
	}
	sandbox := m.cfg.Sandbox && r.Signature == SandboxSignature
	var stamp *Stamp
	if !sandbox {
		var err error
		if stamp, err = parseStamp(r.Signature, m.keys.parse); err != nil {
			return nil, err
		}
	}
	if !storage.ValidID(r.RequestID, "Request") {
		return nil, apierror.Unauthenticated("unknown request id")
	}

	// Read and check without holding a write transaction: the signature
	// check is the expensive part and needs no lock.
	var p storage.PendingRequest
	err = m.cfg.Store.Atomic(ctx, func(tx storage.Tx) error {
		var err error
		p, err = tx.PendingRequests().Get(ctx, r.RequestID)
		return err
	})
	if err != nil {
		return nil, requestError(err)
	}
	now := m.cfg.Clock()
	switch {
	case !p.ConsumedAt.IsZero():
		return nil, requestError(storage.ErrConsumed)
	case !now.Before(p.ExpiresAt):
		return nil, requestError(storage.ErrExpired)
	case p.Kind != opType || p.Method != r.Method || p.Path != r.Path:
		return nil, apierror.Unauthenticated("request id is bound to another operation")
	}
	digest, err := BodyDigest(r.Body)
	if err != nil || subtle.ConstantTimeCompare(digest[:], p.BodyDigest) != 1 {
		return nil, apierror.New(apierror.WalletSignatureBodyMismatch, "the retry body differs from the body the challenge was issued for")
	}
	if stamp != nil {
		if err := stamp.Verify(p.Payload); err != nil {
			return nil, err
		}
	}

	a := &Authorization{RequestID: p.ID, Type: p.Kind, AccountID: p.AccountID, Parameters: p.Data, Sandbox: sandbox}
	if stamp != nil {
		a.PublicKey = stamp.PublicKey()
	}
	err = m.cfg.Store.Atomic(ctx, func(tx storage.Tx) error {
		// The time read above only spared a doomed request the signature
		// check. Each run of this transaction reads the clock anew: a
		// rerun may start long after the first. authorize decides on a
		// later reading still, taken once every lock is granted.
		a.Now, a.SessionID, a.CredentialID = time.Time{}, "", ""
		now := m.cfg.Clock()
		if !now.Before(p.ExpiresAt) {
			return requestError(storage.ErrExpired)
		}
		if err := m.consume(ctx, tx, &p, now); err != nil {
			return err
		}
		if lock != nil {
			if err := lock(ctx, tx, a); err != nil {
				return err
			}
		}
		if err := m.authorize(ctx, tx, &p, stamp, a); err != nil {
			return err
		}
		if effect != nil {
			return effect(ctx, tx, a)
		}
		return nil
	})
	var spent *storage.SpendError
	if errors.As(err, &spent) && spent.ID == p.ID {
		return nil, requestError(spent)
	}
	if err != nil {
		return nil, err
	}
	return a, nil
}

// Steps is one operation of the protocol, as its two legs: what the first
// call binds and what the signed retry does.
type Steps struct {
	// Type names the operation in the payload, e.g. "REVOKE_CREDENTIAL";
	// the retry must be of the same type.
	Type string
	// Bind runs on the first call, inside the transaction that stores the
	// challenge, and returns what the challenge binds (the account, the
	// signer rule and the parameters; Run sets its Type). Its own writes
	// commit with the challenge, for example the consumption of a one-time
	// code. A nil Operation with a nil error issues no challenge and
	// commits Bind's writes: an operation that completes at once, or a
	// first call that must keep what it wrote (a counted wrong code) and
	// answers its own error. The store may run Bind more than once (see
	// [storage.Store.Atomic]), so it resets what it keeps in Go variables.
	Bind func(ctx context.Context, tx storage.Tx) (*Operation, error)
	// Lock, when not nil, is the lock step of [Manager.CompleteLocking]: it
	// runs on the retry, before the signer is checked, and takes the locks
	// that come before the signer's in the store's lock order.
	Lock Effect
	// Effect, when not nil, is what the retry does, inside the transaction
	// that consumes the request, with the signer's locks held (see
	// [Effect]).
	Effect Effect
}

// Run runs the leg of op that r is. A first call (neither signed-retry
// header) runs op.Bind and issues the challenge it binds, in one
// transaction, and returns the challenge (nil when Bind bound nothing). A
// retry is [Manager.CompleteLocking] with op.Lock and op.Effect, and returns
// the authorization. The errors are those of Bind, [Manager.Issue] and
// [Manager.CompleteLocking].
func (m *Manager) Run(ctx context.Context, r Request, op Steps) (*Authorization, *Challenge, error) {
	if r.IsRetry() {
		a, err := m.CompleteLocking(ctx, r, op.Type, op.Lock, op.Effect)
		if err != nil {
			return nil, nil, err
		}
		return a, nil, nil
	}
	return m.runFirst(ctx, r, op)
}

// runFirst is the first leg of [Manager.Run].
func (m *Manager) runFirst(ctx context.Context, r Request, op Steps) (_ *Authorization, _ *Challenge, err error) {
	ctx, o := m.tel.Begin(ctx, opIssue, m.tel.outcomes)
	o.Quiet = true // Bind's refusals are the caller's to report
	defer func() { o.End(ctx, err) }()
	var c *Challenge
	err = m.cfg.Store.Atomic(ctx, func(tx storage.Tx) error {
		c = nil
		bound, err := op.Bind(ctx, tx)
		if err != nil || bound == nil {
			return err
		}
		bound.Type = op.Type
		c, err = m.issueIn(ctx, tx, r, bound)
		return err
	})
	if e := m.limitReached(err); e != nil {
		return nil, nil, e
	}
	if err != nil {
		return nil, nil, err
	}
	return nil, c, nil
}

// consume marks the request p used in tx at now, a time at which it was found
// unexpired. Under the session rules the store may send the consumption with
// its next statement, the signer's lock, whose answer comes only once both
// are granted. A BoundKey request has no signer to lock: it is consumed by a
// statement of its own, so that its lock too is granted before the time is
// read that the request is decided on.
func (m *Manager) consume(ctx context.Context, tx storage.Tx, p *storage.PendingRequest, now time.Time) error {
	var err error
	if Rule(p.SignerRule) == BoundKey {
		_, err = tx.PendingRequests().Consume(ctx, p.ID, now)
	} else {
		// The store reports a lost race wherever it surfaces.
		err = tx.PendingRequests().Spend(ctx, p.ID, now)
	}
	if err != nil {
		return requestError(err)
	}
	return nil
}

// authorize checks the signer rule against the sessions in storage and records
// the signing session in a. stamp is nil for the sandbox literal, which stands
// in for the key match but not for the rule: a session rule still needs a
// qualifying active session. Every session rule decides on a session locked
// with [storage.Sessions.LockSigner], so a revoke of the session or its
// credential cannot commit between the check and the end of the transaction.
// The request's expiry and the session's are decided on a.Now, which decide
// reads once the signer's locks are granted.
func (m *Manager) authorize(ctx context.Context, tx storage.Tx, p *storage.PendingRequest, stamp *Stamp, a *Authorization) error {
	denied := apierror.New(apierror.WalletSignatureInvalid, "the signing key is not allowed to authorize this request")
	rule := Rule(p.SignerRule)
	// decide reads the time of the decision into a.Now, after every lock
	// it rests on was granted (a lock wait moves it on), and refuses a
	// request expired by then.
	decide := func() error {
		now := m.cfg.Clock().UTC()
		if !now.Before(p.ExpiresAt) {
			return requestError(storage.ErrExpired)
		}
		a.Now = now
		return nil
	}
	// qualifies reports whether s, read under its lock, may sign at a.Now.
	qualifies := func(s *storage.Session) bool {
		return s.Active(a.Now) && s.AccountID == p.AccountID &&
			(rule != OtherCredentialSession || s.CredentialID != p.SignerRef) &&
			(stamp == nil || sessionKey(stamp, s))
	}
	// signer locks session id, decides, and reports whether it qualifies.
	signer := func(id string) (bool, error) {
		s, lockErr := tx.Sessions().LockSigner(ctx, p.AccountID, id)
		if lockErr != nil && !errors.Is(lockErr, storage.ErrNotFound) {
			return false, apierror.Internal(lockErr)
		}
		if err := decide(); err != nil {
			return false, err
		}
		if lockErr != nil || !qualifies(&s) {
			return false, nil
		}
		a.SessionID, a.CredentialID = s.ID, s.CredentialID
		return true, nil
	}
	switch rule {
	case BoundKey:
		if err := decide(); err != nil {
			return err
		}
		if stamp == nil {
			return nil
		}
		want, err := ParsePublicKey(p.SignerRef)
		if err != nil || !stamp.SignedBy(want) {
			return denied
		}
		return nil
	case Session:
		s, lockErr := tx.Sessions().LockSigner(ctx, p.AccountID, p.SignerRef)
		if lockErr != nil && !errors.Is(lockErr, storage.ErrNotFound) {
			return apierror.Internal(lockErr)
		}
		if err := decide(); err != nil {
			return err
		}
		if lockErr != nil || !s.Active(a.Now) {
			return apierror.New(apierror.WalletSignatureInvalid, "the session allowed to sign is no longer active")
		}
		if stamp != nil && !sessionKey(stamp, &s) {
			return denied
		}
		a.SessionID, a.CredentialID = s.ID, s.CredentialID
		return nil
	case AnySession, OtherCredentialSession:
		if stamp != nil {
			// Only a session of the stamp's key can sign: lock those and
			// decide on what the locks read, in one step.
			pub := stamp.PublicKey()
			sessions, err := tx.Sessions().LockSignersByKey(ctx, p.AccountID, elliptic.MarshalCompressed(pub.Curve, pub.X, pub.Y))
			if err != nil {
				return apierror.Internal(err)
			}
			if err := decide(); err != nil {
				return err
			}
			for i := range sessions {
				if qualifies(&sessions[i]) {
					a.SessionID, a.CredentialID = sessions[i].ID, sessions[i].CredentialID
					return nil
				}
			}
		} else {
			// The list only names candidates; each is decided on under
			// its lock, since a revoke may commit between the list and
			// the lock, and a session may expire while the lock is
			// waited for.
			sessions, err := tx.Sessions().ListActive(ctx, p.AccountID, m.cfg.Clock())
			if err != nil {
				return apierror.Internal(err)
			}
			for i := range sessions {
				if rule == OtherCredentialSession && sessions[i].CredentialID == p.SignerRef {
					continue
				}
				ok, err := signer(sessions[i].ID)
				if err != nil || ok {
					return err
				}
			}
			// No session qualified, or none was listed: the refusal
			// still names a request expired by now as such.
			if err := decide(); err != nil {
				return err
			}
		}
		if rule == OtherCredentialSession {
			return apierror.New(apierror.WalletSignatureInvalid, "the signing key is not an active session of another credential of the account")
		}
		return apierror.New(apierror.WalletSignatureInvalid, "the signing key is not an active session of the account")
	default:
		return apierror.Internal(errors.New("signedretry: stored request has unknown signer rule " + strconv.Quote(p.SignerRule)))
	}
}

// sessionKey reports whether the stamp was made by the session's key. Both are
// compared in compressed form, which is unique per curve point, so this is a
// comparison of points, whatever encoding the client sent.
func sessionKey(stamp *Stamp, s *storage.Session) bool {
	pub := stamp.PublicKey()
	return subtle.ConstantTimeCompare(elliptic.MarshalCompressed(pub.Curve, pub.X, pub.Y), s.PublicKey) == 1
}

// requestError maps a store error about the pending request to the 401 the
// client sees.
func requestError(err error) error {
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return apierror.Unauthenticated("unknown request id")
	case errors.Is(err, storage.ErrExpired):
		return apierror.Unauthenticated("request id expired")
	case errors.Is(err, storage.ErrConsumed):
		return apierror.Unauthenticated("request id already used")
	default:
		return apierror.Internal(err)
	}
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

package signedretry

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/signedretry/stamper"
	"github.com/walletgate/walletgate/storage"
)

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
// [Run] names the header that is missing.
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
	// on. It is zero in the lock step ([Steps].Lock), which
	// runs before the decision.
	Now time.Time
}

// step is a part of the retry's transaction, the lock step or the effect,
// as [Run] hands its typed steps to complete.
type step func(ctx context.Context, tx storage.Tx, a *Authorization) error

// complete checks the retry r of the operation opType (the type the route
// expects) and, when it is authorized, consumes the request and runs lock
// and effect in one transaction. Failures are 401s:
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
// Errors from lock and effect are returned unchanged. A failed retry never consumes the
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
//
// lock, when not nil, runs right after the request is consumed and before
// the signer is checked: it takes the locks that come before the signer's in
// the store's lock order (see [Steps].Lock). effect, when not nil, runs once
// the signer is allowed, with the signer's locks held.
func (m *Manager) complete(ctx context.Context, r Request, opType string, lock, effect step) (_ *Authorization, err error) {
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
	digest, err := stamper.BodyDigest(r.Body)
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
	var spent *storage.ConsumeError
	if errors.As(err, &spent) && spent.ID == p.ID {
		return nil, requestError(spent)
	}
	if err != nil {
		return nil, err
	}
	return a, nil
}

// consume marks the request p used in tx at now, a time at which it was found
// unexpired. Under the session rules the store may send the consumption with
// its next statement, the signer's lock, whose answer comes only once both
// are granted. A BoundKey request has no signer to lock: it is consumed
// with [storage.ConsumeNow], so that the consumption's lock too is granted
// before the time is read that the request is decided on.
func (m *Manager) consume(ctx context.Context, tx storage.Tx, p *storage.PendingRequest, now time.Time) error {
	var err error
	if Rule(p.SignerRule) == BoundKey {
		_, err = storage.ConsumeNow(ctx, tx, p.ID, now)
	} else {
		// The store reports a lost race wherever it surfaces (Complete
		// answers a *storage.ConsumeError from Atomic too).
		err = tx.PendingRequests().Consume(ctx, p.ID, now)
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

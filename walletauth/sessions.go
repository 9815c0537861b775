package walletauth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"io"
	"math/big"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/walletauth/authclient"
	"github.com/walletgate/walletgate/walletauth/envelope"
)

func randInt(r io.Reader, n *big.Int) (int, error) {
	k, err := rand.Int(r, n)
	if err != nil {
		return 0, err
	}
	return int(k.Int64()), nil
}

// createSession stores a session of the credential whose key is pub,
// authenticated now by the ceremony the caller verified, and writes its
// AUTH_SESSION.CREATED event. The credential is locked first, so a
// concurrent revoke either deleted it before (404 REFERENCE_NOT_FOUND) or
// waits and then revokes this session too.
func (s *Service) createSession(ctx context.Context, tx storage.Tx, c *storage.Credential, pub *ecdsa.PublicKey) (*AuthSession, error) {
	a, _, err := s.newSession(ctx, tx, c, pub, time.Time{})
	return a, err
}

// newSession is createSession that also returns the stored session, whose
// authentication took place at authenticated (zero: now, the ceremony
// just verified; a refresh passes the time of the refreshed session's).
func (s *Service) newSession(ctx context.Context, tx storage.Tx, c *storage.Credential, pub *ecdsa.PublicKey, authenticated time.Time) (*AuthSession, *storage.Session, error) {
	if _, err := tx.Credentials().Lock(ctx, c.ID, nil); errors.Is(err, storage.ErrNotFound) {
		return nil, nil, notFound("credential", c.ID)
	} else if err != nil {
		return nil, nil, err
	}
	return s.newSessionLocked(ctx, tx, c, pub, authenticated)
}

// newSessionLocked is newSession of a credential tx already holds
// (Credentials.Lock).
func (s *Service) newSessionLocked(ctx context.Context, tx storage.Tx, c *storage.Credential, pub *ecdsa.PublicKey, authenticated time.Time) (*AuthSession, *storage.Session, error) {
	id, err := s.newID("Session")
	if err != nil {
		return nil, nil, err
	}
	now := s.cfg.Clock().UTC()
	if authenticated.IsZero() {
		authenticated = now
	}
	sess := storage.Session{ID: id, AccountID: c.AccountID, CredentialID: c.ID,
		PublicKey: elliptic.MarshalCompressed(elliptic.P256(), pub.X, pub.Y), CreatedAt: now, AuthenticatedAt: authenticated.UTC(),
		ExpiresAt: now.Add(s.cfg.SessionTTL)}
	if err := tx.Sessions().Create(ctx, &sess); err != nil {
		return nil, nil, err
	}
	if err := s.sessionEvent(ctx, tx, EventSessionCreated, &sess, c, "", "", now); err != nil {
		return nil, nil, err
	}
	return authSession(&sess, c), &sess, nil
}

// sessionKey returns the public key of a new session for a client that sent
// clientPublicKey, and the encryptedSessionSigningKey to return (empty in
// client-held mode, where the client's compressed key is the session key).
func (s *Service) sessionKey(clientPublicKey string) (*ecdsa.PublicKey, string, error) {
	pub, err := signedretry.ParsePublicKey(clientPublicKey)
	if err != nil {
		return nil, "", apierror.InvalidField("clientPublicKey", apierror.Pattern(`^(0[23][0-9a-fA-F]{64}|04[0-9a-fA-F]{128})$`), apierror.As(err).Message)
	}
	if s.cfg.ClientHeldKeys && len(clientPublicKey) == 66 {
		return pub, "", nil
	}
	essk, sessionPub, err := envelope.SealSessionKey(clientPublicKey, s.cfg.Rand)
	if err != nil {
		return nil, "", err
	}
	return sessionPub, essk, nil
}

func authSession(sess *storage.Session, c *storage.Credential) *AuthSession {
	a := &AuthSession{ID: sess.ID, AccountID: sess.AccountID, CreatedAt: sess.CreatedAt.UTC(), UpdatedAt: sess.CreatedAt.UTC(),
		AuthenticatedAt: sess.Authenticated().UTC(), ExpiresAt: sess.ExpiresAt.UTC()}
	if c != nil {
		a.Type, a.Nickname = c.Type, c.Nickname
	}
	return a
}

// ListSessions returns the active sessions of an account, oldest first,
// without key material. Without a [Config].Guard an unknown account has
// none; with one the account is read for the guard, and an unknown account
// is 404 REFERENCE_NOT_FOUND, as a refused one is.
func (s *Service) ListSessions(ctx context.Context, accountID string) ([]AuthSession, error) {
	if !storage.ValidID(accountID, "InternalAccount") {
		return nil, apierror.InvalidField("accountId", apierror.Pattern(`^InternalAccount:[0-9a-fA-F-]{36}$`), "must be an InternalAccount id")
	}
	var out []AuthSession
	err := s.atomic(ctx, func(tx storage.Tx) error {
		out = nil
		if err := s.admitID(ctx, tx, accountID, unknownAs("internal account", accountID)); err != nil {
			return err
		}
		sessions, err := tx.Sessions().ListActive(ctx, accountID, s.cfg.Clock())
		if err != nil {
			return err
		}
		creds := map[string]*storage.Credential{}
		for i := range sessions {
			c, ok := creds[sessions[i].CredentialID]
			if !ok {
				got, err := tx.Credentials().Get(ctx, sessions[i].CredentialID)
				if err == nil {
					c = &got
				} else if !errors.Is(err, storage.ErrNotFound) {
					return err
				}
				creds[sessions[i].CredentialID] = c
			}
			out = append(out, *authSession(&sessions[i], c))
		}
		return nil
	})
	if err != nil {
		return nil, apierror.From(err)
	}
	return out, nil
}

// activeSession returns the session and its credential, or 404
// REFERENCE_NOT_FOUND when the session is unknown, revoked or expired. It
// asks the guard about the session's wallet once the session is read, so
// a refusal (answered as an unknown session) comes before any answer about
// the session's state.
func (s *Service) activeSession(ctx context.Context, tx storage.Tx, id string) (*storage.Session, *storage.Credential, error) {
	unknown := unknownAs("active session", id)
	sess, err := tx.Sessions().Get(ctx, id)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil, unknown()
	}
	if err != nil {
		return nil, nil, err
	}
	if err := s.admitID(ctx, tx, sess.AccountID, unknown); err != nil {
		return nil, nil, err
	}
	if !sess.Active(s.cfg.Clock()) {
		return nil, nil, unknown()
	}
	c, err := tx.Credentials().Get(ctx, sess.CredentialID)
	if errors.Is(err, storage.ErrNotFound) {
		return &sess, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	return &sess, &c, nil
}

func credType(c *storage.Credential) string {
	if c == nil {
		return ""
	}
	return string(c.Type)
}

// RevokeSession revokes a session through a signed retry that any active
// session of the account may stamp, the session itself included. A session
// that is not active (unknown, revoked or expired) is 404
// REFERENCE_NOT_FOUND, on either leg, as is a plain refusal of the
// [Config].Guard, asked about the session's wallet on each leg. On success
// both results are nil.
func (s *Service) RevokeSession(ctx context.Context, sessionID string, call signedretry.Request) (*signedretry.Challenge, error) {
	_, ch, err := run(ctx, s, call, signedretry.Steps[sessionParams, struct{}, struct{}]{
		Type: OpRevokeSession,
		Bind: func(ctx context.Context, tx storage.Tx) (*signedretry.Operation[sessionParams], struct{}, error) {
			sess, c, err := s.activeSession(ctx, tx, sessionID)
			if err != nil {
				return nil, struct{}{}, err
			}
			return &signedretry.Operation[sessionParams]{AccountID: sess.AccountID, Signer: signedretry.Signer{Rule: signedretry.AnySession},
				Parameters: sessionParams{SessionID: sess.ID}, CredentialType: credType(c)}, struct{}{}, nil
		},
		Effect: func(ctx context.Context, tx storage.Tx, a *signedretry.Authorization, p sessionParams, _ struct{}) (struct{}, error) {
			return struct{}{}, s.revokeSession(ctx, tx, a, p)
		},
	})
	return ch, err
}

// revokeSession is the effect of a signed REVOKE_SESSION: it revokes the
// session the parameters p name, still active and of the authorized
// account.
func (s *Service) revokeSession(ctx context.Context, tx storage.Tx, a *signedretry.Authorization, p sessionParams) error {
	sess, c, err := s.activeSession(ctx, tx, p.SessionID)
	if err != nil {
		return err
	}
	if sess.AccountID != a.AccountID {
		return apierror.Unauthenticated("request id is bound to another account")
	}
	now := s.cfg.Clock().UTC()
	err = tx.Sessions().Revoke(ctx, sess.ID, now)
	if errors.Is(err, storage.ErrConflict) {
		return notFound("active session", p.SessionID)
	}
	if err != nil {
		return err
	}
	return s.sessionEvent(ctx, tx, EventSessionRevoked, sess, c, "", a.SessionID, now)
}

// sessionParams are the parameters of REVOKE_SESSION and REFRESH_SESSION
// payloads: the session, and for a refresh the key the new session is sealed
// to (or, in client-held mode, becomes).
type sessionParams struct {
	SessionID       string `json:"sessionId"`
	ClientPublicKey string `json:"clientPublicKey,omitempty"`
}

// RefreshRequest is the body of POST /auth/sessions/{id}/refresh, the same on both legs ([authclient.RefreshRequest]).
type RefreshRequest = authclient.RefreshRequest

// RefreshSession issues a new session in place of an active one. The first
// call binds the session and clientPublicKey into the payload and answers a
// challenge only the session itself may stamp; the retry returns the new
// session (201), its key sealed to the clientPublicKey of the payload as
// encryptedSessionSigningKey, or in client-held mode that key itself. The
// retry's body is compared with the first call's but not read: the key comes
// from the payload. The old session stays valid until it expires or is
// revoked. The new session keeps the old one's authenticatedAt: a refresh
// proves possession of a session key, not a new ceremony, so every
// freshness rule (a step-up's maxSessionAge) still judges the time of the
// ceremony that authenticated the first session of the chain.
//
// The [Config].Guard is asked about the session's wallet on each leg.
//
// Errors: 400 INVALID_INPUT (clientPublicKey), 404 REFERENCE_NOT_FOUND (the
// session is not active, or a plain refusal of the guard), the 401s of
// signedretry (a different clientPublicKey on the retry is
// WALLET_SIGNATURE_BODY_MISMATCH).
func (s *Service) RefreshSession(ctx context.Context, sessionID string, req RefreshRequest, call signedretry.Request) (_ *AuthSession, _ *signedretry.Challenge, err error) {
	ctx, o := s.tel.Begin(ctx, opRefresh, s.tel.outcomes)
	o.Quiet = call.IsRetry() // signedretry.complete logs the retry's refusals
	defer func() { o.End(ctx, err) }()
	out, ch, err := run(ctx, s, call, signedretry.Steps[sessionParams, struct{}, *AuthSession]{
		Type: OpRefreshSession,
		Bind: func(ctx context.Context, tx storage.Tx) (*signedretry.Operation[sessionParams], *AuthSession, error) {
			if _, err := signedretry.ParsePublicKey(req.ClientPublicKey); err != nil {
				return nil, nil, apierror.InvalidField("clientPublicKey", apierror.Pattern(clientKeyPattern), apierror.As(err).Message)
			}
			sess, _, err := s.activeSession(ctx, tx, sessionID)
			if err != nil {
				return nil, nil, err
			}
			return &signedretry.Operation[sessionParams]{AccountID: sess.AccountID, Signer: signedretry.Signer{Rule: signedretry.Session, Ref: sess.ID},
				Parameters: sessionParams{SessionID: sess.ID, ClientPublicKey: req.ClientPublicKey}}, nil, nil
		},
		Effect: func(ctx context.Context, tx storage.Tx, a *signedretry.Authorization, p sessionParams, _ struct{}) (*AuthSession, error) {
			return s.refreshSession(ctx, tx, a, p)
		},
	})
	if err != nil || ch != nil {
		return nil, ch, err
	}
	return out, nil, nil
}

// refreshSession is the effect of a signed REFRESH_SESSION: the new session
// in place of the one the parameters p name, its key sealed to (or, in
// client-held mode, being) their clientPublicKey.
func (s *Service) refreshSession(ctx context.Context, tx storage.Tx, a *signedretry.Authorization, p sessionParams) (*AuthSession, error) {
	if a.SessionID != p.SessionID && !a.Sandbox {
		return nil, apierror.Unauthenticated("request id is bound to another session")
	}
	sess, c, err := s.activeSession(ctx, tx, p.SessionID)
	if err != nil {
		return nil, err
	}
	if c == nil {
		return nil, notFound("credential", sess.CredentialID)
	}
	pub, sealed, err := s.sessionKey(p.ClientPublicKey)
	if err != nil {
		return nil, err
	}
	// The new session was authenticated when the refreshed one was: a
	// refresh proves the old session's key, not a ceremony, so it resets
	// no freshness.
	out, fresh, err := s.newSession(ctx, tx, c, pub, sess.Authenticated())
	if err != nil {
		return nil, err
	}
	if err := s.sessionEvent(ctx, tx, EventSessionRefreshed, fresh, c, sess.ID, a.SessionID, fresh.CreatedAt); err != nil {
		return nil, err
	}
	out.EncryptedSessionSigningKey = sealed
	return out, nil
}

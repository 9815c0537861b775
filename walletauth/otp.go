package walletauth

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/operation"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/walletauth/authclient"
	"github.com/walletgate/walletgate/walletauth/envelope"
)

// ChallengeRequest is the body of POST /auth/credentials/{id}/challenge ([authclient.ChallengeRequest]).
type ChallengeRequest = authclient.ChallengeRequest

// Challenge starts the verification of a credential. For EMAIL_OTP and
// SMS_OTP it issues a fresh code (superseding the previous one), delivers it
// through the Sender and returns the credential with the
// otpEncryptionTargetBundle the client seals the code to. Issuing is
// rate-limited per credential: 429 RATE_LIMITED with Retry-After. For PASSKEY
// it binds req.ClientPublicKey into a WebAuthn challenge and returns it with
// the Request-Id the verify call must carry. OAUTH takes no challenge.
//
// The credential is read, the [Config].Guard asked about its wallet and
// the code's issuance (or the passkey challenge) stored in one
// transaction; a refusal (answered as an unknown credential when plain)
// stores nothing, spends none of the rate limit and sends nothing. With a
// guard the credential is locked for that transaction, so that on
// PostgreSQL its wallet is read in the same round trip.
//
// Challenge commits in a transaction of its own and refuses to run inside a
// host's (see [storage.Standalone]): the code is delivered once the
// issuance and its rate-limit hit committed, so no host rollback can
// undo the count of a code that was sent. Called with a context bound to
// a host transaction it sends nothing and answers 500 INTERNAL_ERROR whose
// cause wraps [storage.ErrStandalone].
//
// Errors: 404 REFERENCE_NOT_FOUND, 400 INVALID_INPUT (OAUTH, a bad
// clientPublicKey), 429 RATE_LIMITED.
func (s *Service) Challenge(ctx context.Context, credentialID string, req ChallengeRequest) (_ *ChallengeResponse, err error) {
	ctx = storage.Standalone(ctx, "walletauth.Challenge")
	// The start of a one-time code is an operation of its own, begun once
	// the credential is found to take a code.
	var start *operation.Op
	octx := ctx
	defer func() {
		if start != nil {
			start.End(octx, err, otpReason(err, false))
		}
	}()
	var (
		c    storage.Credential
		code *otpCode // the code the issuance stores, sent after the commit
		out  *ChallengeResponse
	)
	err = s.atomic(ctx, func(tx storage.Tx) error {
		out = nil
		var err error
		if c, err = s.challenged(ctx, tx, credentialID); err != nil {
			return err
		}
		switch c.Type {
		case storage.EmailOTP, storage.SMSOTP:
		case storage.Passkey:
			out, err = s.passkeyChallenge(ctx, tx, &c, req)
			return err
		default:
			return apierror.New(apierror.InvalidInput, "%s credentials take no challenge: verify them directly", c.Type)
		}
		if start == nil {
			var o operation.Op
			octx, o = s.tel.Begin(ctx, opOTPStart, s.tel.otp)
			start = &o
		}
		// A rerun of the transaction stores the code drawn by the first.
		if code == nil {
			if code, err = s.newOTPCode(&c); err != nil {
				return err
			}
		}
		return s.putCode(octx, tx, code, true)
	})
	if err != nil {
		return nil, issueError(err)
	}
	if out != nil {
		return out, nil
	}
	if err := s.sendCode(octx, &c, code); err != nil {
		return nil, err
	}
	m := authMethod(&c)
	m.OTPEncryptionTargetBundle = code.bundle
	return &ChallengeResponse{AuthMethod: *m}, nil
}

// challenged reads the credential a challenge names (404
// REFERENCE_NOT_FOUND when there is none) and asks the guard about its
// wallet, a plain refusal answered as an unknown credential. With a guard
// it locks the credential, so that on PostgreSQL the wallet is read with
// the lock, in its round trip (see [storage.Credentials.Lock]); without
// one it only reads it.
func (s *Service) challenged(ctx context.Context, tx storage.Tx, id string) (storage.Credential, error) {
	unknown := unknownAs("credential", id)
	if s.cfg.Guard == nil {
		c, err := tx.Credentials().Get(ctx, id)
		if errors.Is(err, storage.ErrNotFound) {
			return c, unknown()
		}
		return c, err
	}
	r, err := tx.Credentials().Lock(ctx, id, nil)
	if errors.Is(err, storage.ErrNotFound) {
		return r.Credential, unknown()
	}
	if err != nil {
		return r.Credential, err
	}
	return r.Credential, s.admitID(ctx, tx, r.Credential.AccountID, unknown)
}

// ChallengeResponse is the answer to a challenge ([authclient.ChallengeResponse]).
type ChallengeResponse = authclient.ChallengeResponse

// otpCode is a one-time code about to be issued for a credential: the code
// to send, the target bundle to answer and the issuance to store, which
// holds the code's MAC and the sealed target key, never either in
// plaintext.
type otpCode struct {
	code   string
	bundle string
	iss    storage.OTPIssuance
}

// newOTPCode draws a code for c and makes its target bundle and issuance.
func (s *Service) newOTPCode(c *storage.Credential) (*otpCode, error) {
	code := SandboxOTPCode
	if !s.cfg.Sandbox {
		var err error
		if code, err = s.newCode(); err != nil {
			return nil, err
		}
	}
	bundle, target, err := envelope.NewTargetBundle(s.cfg.Keys.SigningKey, s.cfg.OrganizationID, c.ID, s.cfg.Rand)
	if err != nil {
		return nil, err
	}
	id, err := s.newID("OTP")
	if err != nil {
		return nil, err
	}
	scalar := target.Bytes()
	sealed, err := s.sealTargetKey(id, c.ID, scalar)
	clear(scalar)
	if err != nil {
		return nil, err
	}
	now := s.cfg.Clock().UTC()
	return &otpCode{code: code, bundle: bundle, iss: storage.OTPIssuance{ID: id, CredentialID: c.ID, AccountID: c.AccountID,
		Code: s.codeMAC(id, c.ID, code), TargetKey: sealed, IssuedAt: now, ExpiresAt: now.Add(s.cfg.OTP.TTL)}}, nil
}

// putCode stores code's issuance in tx, superseding the credential's
// previous one; limited applies the re-issue rate limit first. A denied
// hit fails the transaction, the issuance with it; the store may send the
// hit and the issuance with the commit ([issueError] answers the denial).
func (s *Service) putCode(ctx context.Context, tx storage.Tx, code *otpCode, limited bool) error {
	if limited {
		if err := tx.RateLimits().Hit(ctx, "otp-challenge:"+code.iss.CredentialID, code.iss.IssuedAt,
			s.cfg.OTP.ReissueWindow, s.cfg.OTP.ReissueLimit); err != nil {
			return err
		}
	}
	iss := code.iss
	return tx.OTPIssuances().Put(ctx, &iss)
}

// issueError answers the error of a transaction that stored a code: 429
// RATE_LIMITED for a denied re-issue, the others through apierror.From.
func issueError(err error) error {
	var limitedErr *storage.RateLimitError
	if errors.As(err, &limitedErr) {
		return apierror.TooManyRequests(limitedErr.Wait)
	}
	return apierror.From(err)
}

// sendCode delivers the code stored for c, outside any transaction (nothing
// in sandbox mode).
func (s *Service) sendCode(ctx context.Context, c *storage.Credential, code *otpCode) error {
	if s.cfg.Sandbox {
		return nil
	}
	to := c.Email
	if c.Type == storage.SMSOTP {
		to = c.Phone
	}
	if err := s.cfg.Sender.Send(ctx, Message{Channel: c.Type, To: to, Code: code.code, AccountID: c.AccountID,
		CredentialID: c.ID, ExpiresAt: code.iss.ExpiresAt}); err != nil {
		return apierror.Internal(err)
	}
	return nil
}

// issueCode stores a new code for the credential in a transaction of its
// own, sends it and returns the target bundle. limited applies the
// re-issue rate limit.
func (s *Service) issueCode(ctx context.Context, c *storage.Credential, limited bool) (bundle string, err error) {
	ctx, o := s.tel.Begin(ctx, opOTPStart, s.tel.otp)
	defer func() { o.End(ctx, err, otpReason(err, false)) }()
	code, err := s.newOTPCode(c)
	if err != nil {
		return "", err
	}
	if err := s.atomic(ctx, func(tx storage.Tx) error { return s.putCode(ctx, tx, code, limited) }); err != nil {
		return "", issueError(err)
	}
	if err := s.sendCode(ctx, c, code); err != nil {
		return "", err
	}
	return code.bundle, nil
}

// newCode draws a code uniformly from the configured alphabet.
func (s *Service) newCode() (string, error) {
	alphabet := []rune(s.cfg.OTP.Alphabet)
	n := big.NewInt(int64(len(alphabet)))
	code := make([]rune, s.cfg.OTP.Length)
	for i := range code {
		k, err := randInt(s.cfg.Rand, n)
		if err != nil {
			return "", apierror.Internal(err)
		}
		code[i] = alphabet[k]
	}
	return string(code), nil
}

// VerifyRequest is the body of POST /auth/credentials/{id}/verify ([authclient.VerifyRequest]).
type VerifyRequest = authclient.VerifyRequest

// Verify verifies a credential and, on success, returns a new session.
//
// For EMAIL_OTP and SMS_OTP it is two legs. Leg 1 (no signed-retry headers)
// opens encryptedOtpBundle with the issuance's target key, compares the code
// in constant time, consumes the issuance and answers a challenge bound to
// the bundle's public_key. A wrong code counts a failed attempt; after the
// configured maximum the code is dead and a new one must be requested. Every
// compared code also spends one of the credential's budget across issuances
// ([OTPConfig].AttemptBudget). Leg 2
// repeats the body stamped by that key and returns the session, whose key is
// that key (no encryptedSessionSigningKey).
//
// An unknown credential is 404 REFERENCE_NOT_FOUND and every mismatch of
// req.Type and the credential's type, whatever the two types, the same 400
// INVALID_INPUT on field "type" naming both; these come before any other
// error of the call, the signed retry's 401s included.
//
// The [Config].Guard is asked about the credential's wallet once per leg
// and before the type is compared: for a one-time code under the lock of
// each leg (the attempt's on the first, which a refusal rolls back), for
// the other types when the credential is first read. A plain refusal
// answers as an unknown credential.
//
// Errors: 404 REFERENCE_NOT_FOUND, 400 INVALID_INPUT (body, type mismatch,
// malformed bundle), 401 UNAUTHORIZED with details.reason ("Invalid OTP
// code", "no pending OTP for this credential", "OTP expired", "OTP already
// used", "too many failed attempts; request a new code"), 429 RATE_LIMITED
// with Retry-After when the credential's budget of compared codes is spent
// ([OTPConfig].AttemptBudget; nothing is compared), on leg 2 the 401s of
// signedretry, and 500 INTERNAL_ERROR when the issuance's stored
// target key does not open (sealed under a key the Sealer no longer holds,
// or altered in the store); that charges no attempt.
//
// Verify commits in transactions of its own and refuses to run inside a
// host's (see [storage.Standalone]): a wrong code's counted attempt, the
// budget it spent and the lockout it may cause commit before the 401
// answers, so that no host decision can give a guesser more attempts.
// Called with a context bound to a host transaction it sends nothing and
// answers 500 INTERNAL_ERROR whose cause wraps [storage.ErrStandalone].
func (s *Service) Verify(ctx context.Context, credentialID string, req VerifyRequest, call signedretry.Request) (sess *AuthSession, ch *signedretry.Challenge, err error) {
	ctx = storage.Standalone(ctx, "walletauth.Verify")
	ctx, o, note := s.beginVerify(ctx, req.Type)
	defer func() { s.endVerify(ctx, &o, note, call, err) }()
	// A one-time code needs no read before its legs: the first leg locks
	// the credential and answers the same 404 and type mismatch from that
	// lock; the retry's session is created under the same lock and
	// checks, and a retry that fails reads the credential then, so that
	// its 404 and type mismatch still come before the retry's own errors.
	//
	// The guard is asked once per leg: by the check for the other types,
	// under the lock of each leg of a one-time code, and by the check of a
	// failed retry only when the retry failed before it was asked.
	var asked admission
	otp := req.Type == storage.EmailOTP || req.Type == storage.SMSOTP
	if !otp {
		if err := s.checkVerifyType(ctx, credentialID, req.Type, &asked); err != nil {
			return nil, nil, err
		}
	}
	switch req.Type {
	case storage.EmailOTP, storage.SMSOTP:
		sess, ch, err := s.verifyOTP(ctx, credentialID, req, call, &asked)
		if err != nil && call.IsRetry() && !asked.refused {
			// Only the check's own answers take the place of the
			// retry's error, not a failure of its read: its 404 and
			// type mismatch, and the guard's refusal when the retry
			// failed before the guard was asked.
			terr := s.checkVerifyType(ctx, credentialID, req.Type, &asked)
			if code := apierror.CodeOf(terr); asked.refused || code == apierror.ReferenceNotFound || code == apierror.InvalidInput {
				return nil, nil, terr
			}
		}
		return sess, ch, err
	case storage.OAuth:
		sess, err := s.verifyOAuth(ctx, credentialID, req)
		return sess, nil, err
	case storage.Passkey:
		sess, err := s.verifyPasskey(ctx, credentialID, req, call)
		return sess, nil, err
	default:
		return nil, nil, apierror.InvalidField("type", apierror.OneOf(credentialTypes...), "unknown credential type")
	}
}

// checkVerifyType answers the errors of a verify body that does not fit the
// credential, before any type-specific check: 400 INVALID_INPUT for a type
// outside the enum, 404 REFERENCE_NOT_FOUND for an unknown credential, the
// guard's refusal of its wallet (unless asked admitted it already in this
// call; the answer is recorded in asked) and one 400 INVALID_INPUT on
// "type" for any mismatch of req.Type and the credential's type.
func (s *Service) checkVerifyType(ctx context.Context, credentialID string, typ storage.CredentialType, asked *admission) error {
	if !slices.Contains(credentialTypes, string(typ)) {
		return apierror.InvalidField("type", apierror.OneOf(credentialTypes...), "unknown credential type")
	}
	var c storage.Credential
	err := s.atomic(ctx, func(tx storage.Tx) error {
		unknown := unknownAs("credential", credentialID)
		var err error
		c, err = tx.Credentials().Get(ctx, credentialID)
		if errors.Is(err, storage.ErrNotFound) {
			return unknown()
		}
		if err != nil {
			return err
		}
		return s.admitOnce(ctx, tx, c.AccountID, unknown, asked)
	})
	if err != nil {
		return apierror.From(err)
	}
	if c.Type != typ {
		return typeMismatch(typ, c.Type)
	}
	return nil
}

// typeMismatch is the one error of a verify body whose type is not the
// credential's.
func typeMismatch(sent, actual storage.CredentialType) error {
	return apierror.InvalidField("type", apierror.OneOf(string(actual)),
		fmt.Sprintf("type %s does not match the credential's type %s", sent, actual))
}

type otpParams struct {
	CredentialID string `json:"credentialId"`
	PublicKey    string `json:"publicKey"`
}

// verifyOTP is an OTP verification: the first leg compares the code and
// binds the key it was sealed with, the retry, stamped by that key, creates
// the session.
func (s *Service) verifyOTP(ctx context.Context, credentialID string, req VerifyRequest, call signedretry.Request, asked *admission) (*AuthSession, *signedretry.Challenge, error) {
	out, ch, err := run(ctx, s, call, signedretry.Steps[otpParams, struct{}, otpOutcome]{
		Type: OpVerifyOTP,
		Bind: func(ctx context.Context, tx storage.Tx) (*signedretry.Operation[otpParams], otpOutcome, error) {
			resetLockout(ctx)
			op, failure, err := s.bindOTP(ctx, tx, credentialID, req, asked)
			return op, otpOutcome{failure: failure}, err
		},
		Effect: func(ctx context.Context, tx storage.Tx, a *signedretry.Authorization, p otpParams, _ struct{}) (otpOutcome, error) {
			sess, err := s.otpSession(ctx, tx, credentialID, req.Type, p, asked)
			return otpOutcome{session: sess}, err
		},
	})
	switch {
	case err != nil:
		return nil, nil, otpSpent(err)
	case out.failure != nil:
		return nil, nil, out.failure
	}
	return out.session, ch, nil
}

// otpOutcome is what a leg of an OTP verification ends with: on the first
// leg a wrong code's failure, whose counted attempt commits; on the retry
// the session.
type otpOutcome struct {
	failure error
	session *AuthSession
}

// otpSpent answers an issuance that could not be consumed (a
// *storage.ConsumeError, from the Consume call or from the commit that
// carried it) as a code already used, and a throttle already reported (a
// *storage.RateLimitError of otpThrottled's window) as the throttle; other
// errors pass unchanged.
func otpSpent(err error) error {
	var spent *storage.ConsumeError
	var throttled *storage.RateLimitError
	switch {
	case errors.As(err, &spent):
		return apierror.Unauthenticated("OTP already used")
	case errors.As(err, &throttled):
		return apierror.TooManyRequests(throttled.Wait)
	}
	return err
}

// bindOTP is the first leg of an OTP verification, in its transaction: it
// spends an attempt, compares the code and, when it matches, consumes the
// issuance and returns the operation binding the key the code was sealed
// with. A wrong code returns no operation and the failure to answer, with
// a nil error: the counted attempt commits.
func (s *Service) bindOTP(ctx context.Context, tx storage.Tx, credentialID string, req VerifyRequest, asked *admission) (op *signedretry.Operation[otpParams], failure, err error) {
	// Hold the credential to the end of the transaction: a revoke of it
	// either committed before (404) or waits for this attempt, so the
	// AUTH_CREDENTIAL.OTP_LOCKED event below never follows the
	// credential's AUTH_CREDENTIAL.REVOKED. It also orders the attempts
	// of one credential.
	//
	// With the lock, spend one of the credential's budget of compared
	// codes, across issuances, and reserve the attempt, in one step,
	// before any code is compared. The store does both only for an
	// issuance live for an attempt, counts the budget's hit only within
	// the budget (and only if this transaction commits, so every check
	// below that fails returns it; past the budget nothing is reserved or
	// compared), and reserves the attempt only while fewer than
	// MaxAttempts were made, so no burst of concurrent guesses gets more
	// codes compared than that. The guard decides on the credential's
	// wallet right after, before anything depends on the credential: its
	// refusal rolls the hit and the attempt back.
	now := s.cfg.Clock()
	r, err := s.lockOTPAttempt(ctx, tx, credentialID, req.Type, storage.OTPAttempt{Limit: s.cfg.OTP.MaxAttempts, Now: now,
		Key: otpBudgetKey + credentialID, Window: s.cfg.OTP.AttemptBudgetWindow, Budget: s.cfg.OTP.AttemptBudget}, asked)
	if err != nil {
		return nil, nil, err
	}
	c := r.Credential
	if r.Issuance == nil {
		return nil, nil, apierror.Unauthenticated("no pending OTP for this credential")
	}
	iss := *r.Issuance
	// The code's expiry is decided on a time read once the credential's
	// lock was granted (and again on a rerun of the transaction), not on
	// the one the store was given before it waited: a verification that
	// waited past the expiry is refused, its reservation rolled back.
	now = s.cfg.Clock()
	switch {
	case !iss.ConsumedAt.IsZero():
		return nil, nil, apierror.Unauthenticated("OTP already used")
	case !now.Before(iss.ExpiresAt):
		return nil, nil, apierror.Unauthenticated("OTP expired")
	case iss.Attempts >= s.cfg.OTP.MaxAttempts:
		return nil, nil, apierror.Unauthenticated("too many failed attempts; request a new code")
	case r.Wait > 0:
		return nil, apierror.TooManyRequests(r.Wait), s.otpThrottled(ctx, tx, &c, now, r.Wait)
	case r.Reserved == nil:
		// Superseded by a new code (another transaction's) between the
		// store's read of the issuance and its reservation.
		return nil, nil, apierror.Unauthenticated("no pending OTP for this credential")
	}
	reserved := *r.Reserved
	attempt, err := s.openOTP(&iss, req.EncryptedOTPBundle)
	if apierror.CodeOf(err) == apierror.Unauthorized {
		// Sealed to another key: a failed attempt like a wrong code.
		failure = err
	} else if err != nil {
		return nil, nil, err
	} else if !s.codeMatches(&iss, attempt.Code) {
		failure = apierror.Unauthenticated("Invalid OTP code")
	}
	if failure != nil {
		if reserved.Attempts >= s.cfg.OTP.MaxAttempts {
			// The attempt that uses up the code: its
			// AUTH_CREDENTIAL.OTP_LOCKED event commits with it.
			return nil, failure, s.otpLocked(ctx, tx, &c, reserved.Attempts, now)
		}
		return nil, failure, nil // commits the reserved attempt
	}
	// The reserved attempt holds the issuance, so this cannot fail; the
	// store may send it with the commit (verifyOTP answers a failure).
	if err := tx.OTPIssuances().Consume(ctx, iss.ID, now); err != nil {
		return nil, nil, otpSpent(err)
	}
	// The key was validated as a point when the bundle was opened; its
	// compressed hex is the one stamper.CompressedHex would give.
	key := attempt.PublicKeyCompressedHex
	return &signedretry.Operation[otpParams]{AccountID: c.AccountID, Signer: signedretry.Signer{Rule: signedretry.BoundKey, Ref: key},
		Parameters: otpParams{CredentialID: c.ID, PublicKey: key}, CredentialType: string(c.Type)}, nil, nil
}

// Rate-limit keys of one-time codes, followed by the credential id: the
// budget of compared codes, and the window in which its exhaustion was
// reported.
const (
	otpBudgetKey    = "otp-compare:"
	otpThrottledKey = "otp-throttled:"
)

// otpThrottled records, in tx, that a verification of c found the budget
// of compared codes spent until now+wait: the first such verification of a
// window writes AUTH_CREDENTIAL.OTP_THROTTLED, the others nothing (a window
// of otpThrottledKey that ends with the budget's marks it written).
func (s *Service) otpThrottled(ctx context.Context, tx storage.Tx, c *storage.Credential, now time.Time, wait time.Duration) error {
	// The report's own window ends with the budget's. A refused hit (the
	// throttle was reported already) fails this transaction, which the
	// budget's refusal left with nothing else to commit, and verifyOTP
	// answers it as the throttle it is: the report's window ends when the
	// budget's does.
	if err := tx.RateLimits().Hit(ctx, otpThrottledKey+c.ID, now, wait, 1); err != nil {
		return err
	}
	customer, err := customerOf(ctx, tx, c.AccountID)
	if err != nil {
		return err
	}
	d := credentialData(c, customer)
	until := now.Add(wait).UTC()
	d.AttemptBudget, d.ThrottledUntil = s.cfg.OTP.AttemptBudget, &until
	return s.emit(ctx, tx, EventCredentialOTPThrottled, c.AccountID, d, now)
}

// otpSession is the effect of an OTP verification's retry: the session of
// the credential the first leg bound, under the key it bound (the stored
// parameters p). The credential, read under its lock, must still be of
// type typ.
func (s *Service) otpSession(ctx context.Context, tx storage.Tx, credentialID string, typ storage.CredentialType, p otpParams, asked *admission) (*AuthSession, error) {
	if p.CredentialID != credentialID {
		return nil, apierror.Unauthenticated("request id is bound to another credential")
	}
	// The credential is read under the lock that keeps it from being
	// deleted while its session is created, and its wallet, read with
	// the lock, is the guard's to decide on.
	unknown := unknownAs("credential", credentialID)
	locked, err := tx.Credentials().Lock(ctx, credentialID, nil)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, unknown()
	}
	if err != nil {
		return nil, err
	}
	c := locked.Credential
	if err := s.admitOnce(ctx, tx, c.AccountID, unknown, asked); err != nil {
		return nil, err
	}
	if err := checkOfType(&c, typ); err != nil {
		return nil, err
	}
	pub, err := signedretry.ParsePublicKey(p.PublicKey)
	if err != nil {
		return nil, apierror.Internal(err)
	}
	sess, _, err := s.newSessionLocked(ctx, tx, &c, pub, time.Time{})
	return sess, err
}

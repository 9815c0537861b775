package walletauth

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/walletauth/envelope"
	"github.com/walletgate/walletgate/walletauth/passkey"
)

// ChallengeRequest is the body of POST /auth/credentials/{id}/challenge.
type ChallengeRequest struct {
	// ClientPublicKey is the hex P-256 key a passkey session binds
	// (PASSKEY only; ignored for one-time codes).
	ClientPublicKey string `json:"clientPublicKey,omitempty"`
}

// Challenge starts the verification of a credential. For EMAIL_OTP and
// SMS_OTP it issues a fresh code (superseding the previous one), delivers it
// through the Sender and returns the credential with the
// otpEncryptionTargetBundle the client seals the code to. Issuing is
// rate-limited per credential: 429 RATE_LIMITED with Retry-After. For PASSKEY
// it binds req.ClientPublicKey into a WebAuthn challenge and returns it with
// the Request-Id the verify call must carry. OAUTH takes no challenge.
//
// Challenge commits in transactions of its own and refuses to run inside a
// host's (see [storage.Standalone]): the code is delivered once the
// issuance and its rate-limit hit committed, so no host rollback can
// undo the count of a code that was sent. Called with a context bound to
// a host transaction it sends nothing and answers 500 INTERNAL_ERROR whose
// cause wraps [storage.ErrStandalone].
//
// Errors: 404 REFERENCE_NOT_FOUND, 400 INVALID_INPUT (OAUTH, a bad
// clientPublicKey), 429 RATE_LIMITED.
func (s *Service) Challenge(ctx context.Context, credentialID string, req ChallengeRequest) (*ChallengeResponse, error) {
	ctx = storage.Standalone(ctx, "walletauth.Challenge")
	var c storage.Credential
	err := s.atomic(ctx, func(tx storage.Tx) error {
		var err error
		c, err = tx.Credentials().Get(ctx, credentialID)
		if errors.Is(err, storage.ErrNotFound) {
			return notFound("credential", credentialID)
		}
		return err
	})
	if err != nil {
		return nil, apierror.From(err)
	}
	switch c.Type {
	case storage.EmailOTP, storage.SMSOTP:
	case storage.Passkey:
		return s.passkeyChallenge(ctx, &c, req)
	default:
		return nil, apierror.New(apierror.InvalidInput, "%s credentials take no challenge: verify them directly", c.Type)
	}
	bundle, err := s.issueCode(ctx, &c, true)
	if err != nil {
		return nil, err
	}
	m := authMethod(&c)
	m.OTPEncryptionTargetBundle = bundle
	return &ChallengeResponse{AuthMethod: *m}, nil
}

// ChallengeResponse is the answer to a challenge: the credential, with the
// OTP target bundle for one-time codes, or with the WebAuthn challenge, its
// Request-Id and expiry for passkeys.
type ChallengeResponse struct {
	AuthMethod
	// Challenge is the lowercase hex challenge of a passkey; the browser
	// signs its UTF-8 bytes.
	Challenge string     `json:"challenge,omitempty"`
	RequestID string     `json:"requestId,omitempty"`
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
}

// issueCode stores a new code for the credential, sends it and returns the
// target bundle. limited applies the re-issue rate limit. The store gets the
// code's MAC and the sealed target key, never either in plaintext.
func (s *Service) issueCode(ctx context.Context, c *storage.Credential, limited bool) (bundle string, err error) {
	ctx, o := s.tel.Begin(ctx, opOTPStart, s.tel.otp)
	defer func() { o.End(ctx, err, otpReason(err, false)) }()
	code := SandboxOTPCode
	if !s.cfg.Sandbox {
		var err error
		if code, err = s.newCode(); err != nil {
			return "", err
		}
	}
	bundle, target, err := envelope.NewTargetBundle(s.cfg.Keys.SigningKey, s.cfg.OrganizationID, c.ID, s.cfg.Rand)
	if err != nil {
		return "", err
	}
	id, err := s.newID("OTP")
	if err != nil {
		return "", err
	}
	scalar := target.Bytes()
	sealed, err := s.sealTargetKey(id, c.ID, scalar)
	clear(scalar)
	if err != nil {
		return "", err
	}
	now := s.cfg.Clock().UTC()
	iss := storage.OTPIssuance{ID: id, CredentialID: c.ID, AccountID: c.AccountID, Code: s.codeMAC(id, c.ID, code),
		TargetKey: sealed, IssuedAt: now, ExpiresAt: now.Add(s.cfg.OTP.TTL)}
	err = s.atomic(ctx, func(tx storage.Tx) error {
		if limited {
			// A denied hit fails the transaction, the issuance with it;
			// the store may send the hit with the commit.
			if err := tx.RateLimits().Hit(ctx, "otp-challenge:"+c.ID, now, s.cfg.OTP.ReissueWindow, s.cfg.OTP.ReissueLimit); err != nil {
				return err
			}
		}
		return tx.OTPIssuances().Put(ctx, &iss)
	})
	var limitedErr *storage.RateLimitError
	if errors.As(err, &limitedErr) {
		return "", apierror.TooManyRequests(limitedErr.Wait)
	}
	if err != nil {
		return "", apierror.From(err)
	}
	if !s.cfg.Sandbox {
		to := c.Email
		if c.Type == storage.SMSOTP {
			to = c.Phone
		}
		if err := s.cfg.Sender.Send(ctx, Message{Channel: c.Type, To: to, Code: code, AccountID: c.AccountID,
			CredentialID: c.ID, ExpiresAt: iss.ExpiresAt}); err != nil {
			return "", apierror.Internal(err)
		}
	}
	return bundle, nil
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

// VerifyRequest is the body of POST /auth/credentials/{id}/verify.
type VerifyRequest struct {
	Type storage.CredentialType `json:"type"`
	// EncryptedOTPBundle answers a one-time code (EMAIL_OTP, SMS_OTP).
	EncryptedOTPBundle string `json:"encryptedOtpBundle,omitempty"`
	// OIDCToken and ClientPublicKey verify an OAUTH credential.
	OIDCToken       string `json:"oidcToken,omitempty"`
	ClientPublicKey string `json:"clientPublicKey,omitempty"`
	// Assertion verifies a passkey; the Request-Id of its challenge travels
	// in the call's RequestID.
	Assertion *passkey.Assertion `json:"assertion,omitempty"`
}

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
	otp := req.Type == storage.EmailOTP || req.Type == storage.SMSOTP
	if !otp {
		if err := s.checkVerifyType(ctx, credentialID, req.Type); err != nil {
			return nil, nil, err
		}
	}
	switch req.Type {
	case storage.EmailOTP, storage.SMSOTP:
		sess, ch, err := s.verifyOTP(ctx, credentialID, req, call)
		if err != nil && call.IsRetry() {
			// Only the check's own answers take the place of the
			// retry's error, not a failure of its read.
			terr := s.checkVerifyType(ctx, credentialID, req.Type)
			if code := apierror.CodeOf(terr); code == apierror.ReferenceNotFound || code == apierror.InvalidInput {
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
// outside the enum, 404 REFERENCE_NOT_FOUND for an unknown credential and one
// 400 INVALID_INPUT on "type" for any mismatch of req.Type and the
// credential's type.
func (s *Service) checkVerifyType(ctx context.Context, credentialID string, typ storage.CredentialType) error {
	if !slices.Contains(credentialTypes, string(typ)) {
		return apierror.InvalidField("type", apierror.OneOf(credentialTypes...), "unknown credential type")
	}
	var c storage.Credential
	err := s.atomic(ctx, func(tx storage.Tx) error {
		var err error
		c, err = tx.Credentials().Get(ctx, credentialID)
		if errors.Is(err, storage.ErrNotFound) {
			return notFound("credential", credentialID)
		}
		return err
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
func (s *Service) verifyOTP(ctx context.Context, credentialID string, req VerifyRequest, call signedretry.Request) (*AuthSession, *signedretry.Challenge, error) {
	out, ch, err := run(ctx, s, call, signedretry.Steps[otpParams, struct{}, otpOutcome]{
		Type: OpVerifyOTP,
		Bind: func(ctx context.Context, tx storage.Tx) (*signedretry.Operation[otpParams], otpOutcome, error) {
			resetLockout(ctx)
			op, failure, err := s.bindOTP(ctx, tx, credentialID, req)
			return op, otpOutcome{failure: failure}, err
		},
		Effect: func(ctx context.Context, tx storage.Tx, a *signedretry.Authorization, p otpParams, _ struct{}) (otpOutcome, error) {
			sess, err := s.otpSession(ctx, tx, credentialID, req.Type, p)
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
func (s *Service) bindOTP(ctx context.Context, tx storage.Tx, credentialID string, req VerifyRequest) (op *signedretry.Operation[otpParams], failure, err error) {
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
	// codes compared than that.
	now := s.cfg.Clock()
	r, err := lockOTPAttempt(ctx, tx, credentialID, req.Type, storage.OTPAttempt{Limit: s.cfg.OTP.MaxAttempts, Now: now,
		Key: otpBudgetKey + credentialID, Window: s.cfg.OTP.AttemptBudgetWindow, Budget: s.cfg.OTP.AttemptBudget})
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
	// compressed hex is the one signedretry.CompressedHex would give.
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
func (s *Service) otpSession(ctx context.Context, tx storage.Tx, credentialID string, typ storage.CredentialType, p otpParams) (*AuthSession, error) {
	if p.CredentialID != credentialID {
		return nil, apierror.Unauthenticated("request id is bound to another credential")
	}
	// The credential is read under the lock that keeps it from being
	// deleted while its session is created.
	locked, err := tx.Credentials().Lock(ctx, credentialID, nil)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, notFound("credential", credentialID)
	}
	if err != nil {
		return nil, err
	}
	c := locked.Credential
	if err := checkOfType(&c, typ); err != nil {
		return nil, err
	}
	pub, err := signedretry.ParsePublicKey(p.PublicKey)
	if err != nil {
		return nil, apierror.Internal(err)
	}
	sess, _, err := s.newSessionLocked(ctx, tx, &c, pub)
	return sess, err
}

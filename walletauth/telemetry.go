package walletauth

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/operation"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
)

// scope is the instrumentation scope of the package's tracer and meter.
const scope = "github.com/walletgate/walletgate/walletauth"

// Operation names of walletauth: span names and walletgate.operation
// values.
const (
	opOTPStart      = "walletauth.otp.start"
	opOTPVerify     = "walletauth.otp.verify"
	opPasskeyVerify = "walletauth.passkey.verify"
	opOIDCVerify    = "walletauth.oidc.verify"
	opRefresh       = "walletauth.session.refresh"
	opExport        = "walletauth.wallet.export"
)

// instruments are the Recorder of walletauth's operations and its
// counters.
type instruments struct {
	*operation.Recorder
	// log is the Recorder's logger, for the HTTP adapter.
	log *slog.Logger
	// otp counts one-time code operations (start and verify) by outcome,
	// code and walletgate.reason.
	otp metric.Int64Counter
	// outcomes counts the other operations by outcome and code.
	outcomes metric.Int64Counter
}

func newInstruments(cfg *Config) (*instruments, error) {
	r, err := operation.New(operation.Config{
		Scope: scope, Telemetry: cfg.Telemetry,
		Duration:            "walletgate.walletauth.operation.duration",
		DurationDescription: "Duration of walletauth operations, by walletgate.operation and walletgate.outcome.",
	})
	if err != nil {
		return nil, err
	}
	in := &instruments{Recorder: r, log: r.Logger()}
	meter := r.Meter()
	if in.otp, err = meter.Int64Counter("walletgate.walletauth.otp.outcomes",
		metric.WithDescription("One-time code starts and verifications, by walletgate.operation, walletgate.outcome, walletgate.code and walletgate.reason (invalid_code, expired, used, no_pending, locked, lockout, throttled).")); err != nil {
		return nil, err
	}
	if in.outcomes, err = meter.Int64Counter("walletgate.walletauth.outcomes",
		metric.WithDescription("Passkey and OIDC verifications, session refreshes and exports, by walletgate.operation, walletgate.outcome and walletgate.code.")); err != nil {
		return nil, err
	}
	return in, nil
}

// otpReasons maps the reasons of one-time code refusals to the
// walletgate.reason attribute.
var otpReasons = map[string]string{
	"Invalid OTP code":                             "invalid_code",
	"no pending OTP for this credential":           "no_pending",
	"OTP expired":                                  "expired",
	"OTP already used":                             "used",
	"too many failed attempts; request a new code": "locked",
}

// otpReason is the walletgate.reason of an OTP operation's error: lockout
// for the attempt that used up a code, throttled when the credential's
// budget of compared codes is spent.
func otpReason(err error, lockout bool) attribute.KeyValue {
	var r string
	switch {
	case err == nil:
	case lockout:
		r = "lockout"
	case apierror.CodeOf(err) == apierror.RateLimited:
		r = "throttled"
	default:
		if e := apierror.As(err); e != nil {
			r = otpReasons[e.Reason()]
		}
	}
	return attribute.String("walletgate.reason", r)
}

// lockoutNote is where otpLocked notes, for the verification in progress,
// that its attempt used up the code.
type lockoutNote struct{ locked bool }

type lockoutKey struct{}

func withLockoutNote(ctx context.Context) (context.Context, *lockoutNote) {
	n := &lockoutNote{}
	return context.WithValue(ctx, lockoutKey{}, n), n
}

func noteLockout(ctx context.Context) { setLockout(ctx, true) }

// resetLockout forgets a lockout noted by an earlier run of a transaction
// that the store retried.
func resetLockout(ctx context.Context) { setLockout(ctx, false) }

func setLockout(ctx context.Context, locked bool) {
	if n, ok := ctx.Value(lockoutKey{}).(*lockoutNote); ok {
		n.locked = locked
	}
}

// beginVerify starts the span of a verification of type typ.
func (s *Service) beginVerify(ctx context.Context, typ storage.CredentialType) (context.Context, operation.Op, *lockoutNote) {
	switch typ {
	case storage.Passkey:
		ctx, o := s.tel.Begin(ctx, opPasskeyVerify, s.tel.outcomes)
		return ctx, o, nil
	case storage.OAuth:
		ctx, o := s.tel.Begin(ctx, opOIDCVerify, s.tel.outcomes)
		return ctx, o, nil
	}
	ctx, o := s.tel.Begin(ctx, opOTPVerify, s.tel.otp)
	if !s.tel.Records() && !s.tel.log.Enabled(ctx, slog.LevelWarn) {
		return ctx, o, nil // nothing to report a lockout to
	}
	ctx, note := withLockoutNote(ctx)
	return ctx, o, note
}

// endVerify records the outcome of a verification: for one-time codes
// with walletgate.reason and the leg (walletgate.leg 1 compares the code, 2
// is the signed retry that creates the session).
func (s *Service) endVerify(ctx context.Context, o *operation.Op, note *lockoutNote, call signedretry.Request, err error) {
	if note == nil { // passkeys and OIDC: no signed retry
		o.End(ctx, err)
		return
	}
	leg := int64(1)
	if call.IsRetry() {
		// Every refusal of a retry passes through signedretry.complete,
		// which logs it.
		leg, o.Quiet = 2, true
	}
	if note.locked {
		// The attempt that used up the code: an alert-worthy lockout.
		o.Reason = "lockout"
	}
	o.End(ctx, err, otpReason(err, note.locked), attribute.Int64("walletgate.leg", leg))
}

package walletauth

import (
	"context"
	"fmt"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
)

// Assurance of credentials.
//
// A credential type's assurance is what its proof shows of the person who
// gives it. From the weakest to the strongest:
//
//   - EMAIL_OTP and SMS_OTP: a code sent to a mailbox or a phone number.
//     Whoever reads the mailbox or receives the number's messages (a
//     phished code, a mailbox taken over, a SIM swapped) passes it.
//   - OAUTH: an identity provider's sign-in, with whatever second factor
//     and risk checks the provider runs; still a password-and-redirect
//     ceremony a proxy can phish.
//   - PASSKEY: a WebAuthn assertion by a key held in the user's
//     authenticator, bound to the relying party's origin: it cannot be
//     phished or replayed.
//
// A credential added through a signed retry is worth no more than the
// proof that enrolled it. It records its enrolment
// ([storage.Credential].Enrolment): the session that signed, that
// session's credential, and, for [Config].SecurityChangePeriod, the
// assurance it carries and the credential it answers to. Enrolled by a
// session of a weaker credential, it carries that credential's assurance
// until the period ends; enrolled by a session of its own type or a
// stronger one, it carries its own at once. Either way it answers to its
// enroller for the period, so it is never a second credential beside the
// one that made it. This is how exchanges treat a change of factors
// (withdrawals locked for a day, a notice to the old channels) and what
// Turnkey's model leaves to the policy engine; see the README's security
// model for the table.

// strength orders credential types by the assurance of their proof; an
// unknown type is the weakest.
func strength(t storage.CredentialType) int {
	switch t {
	case storage.Passkey:
		return 3
	case storage.OAuth:
		return 2
	case storage.EmailOTP, storage.SMSOTP:
		return 1
	}
	return 0
}

// enrolment is how a credential of type typ is enrolled at now by the
// signed retry a, whose session's credential by is, read under the
// signer's lock. It carries by's assurance at now when that is weaker than
// typ, and answers to by's origin at now, for the service's period.
func (s *Service) enrolment(typ storage.CredentialType, a *signedretry.Authorization, by *storage.Credential, now time.Time) storage.Enrolment {
	e := storage.Enrolment{SessionID: a.SessionID, CredentialID: by.ID, Origin: by.OriginAt(now), Assurance: typ,
		SettlesAt: now.Add(s.cfg.SecurityChangePeriod)}
	if carried := by.AssuredAs(now); strength(carried) < strength(typ) {
		e.Assurance = carried
	}
	return e
}

// signerCredential returns the credential of the session that signed a,
// which the retry's transaction holds (the signer's lock): 401
// WALLET_SIGNATURE_INVALID when the retry was signed by no session's
// credential.
func signerCredential(ctx context.Context, tx storage.Tx, a *signedretry.Authorization) (*storage.Credential, error) {
	if a.CredentialID == "" {
		return nil, apierror.New(apierror.WalletSignatureInvalid, "the retry was not signed by a session of a credential")
	}
	c, err := tx.Credentials().Get(ctx, a.CredentialID)
	if err != nil {
		return nil, apierror.From(err)
	}
	return &c, nil
}

// mayRevoke refuses the revoke of target by a session of signer at now
// when signer carries less than its own type's assurance (it was enrolled
// by a session of a weaker credential and its period has not ended) and
// target is not younger than signer (enrolled at the same time or
// before): such a credential may remove only credentials enrolled after
// it, so that one phished session cannot enroll a "second factor" and
// remove the owner's credentials with it.
// The refusal is 403 FORBIDDEN naming the assurance the signer carries
// and when it carries its own (details.availableAt).
func mayRevoke(signer, target *storage.Credential, now time.Time) error {
	carried := signer.AssuredAs(now)
	if carried == signer.Type || target.CreatedAt.After(signer.CreatedAt) {
		return nil
	}
	reason := fmt.Sprintf("the signing %s credential was enrolled by a session of %s and carries %s assurance until %s; until then it may revoke only credentials enrolled after it",
		signer.Type, carried, carried, signer.Enrolment.SettlesAt.UTC().Format(time.RFC3339))
	return apierror.New(apierror.Forbidden, "%s", reason).WithDetail("reason", reason).
		WithDetail("assurance", string(carried)).
		WithDetail("availableAt", signer.Enrolment.SettlesAt.UTC().Format(time.RFC3339))
}

// securityChanged records on the wallet acct, locked by tx, that its
// means of authentication changed at now (see
// [storage.InternalAccount].SecurityChangedAt); a payout policy may hold
// or block payouts for a while after it. The store may send it with the
// transaction's next statement: callers make it after their reads of the
// wallet and before the change's events.
func securityChanged(ctx context.Context, tx storage.Tx, acct *storage.InternalAccount, now time.Time) error {
	acct.SecurityChangedAt, acct.UpdatedAt = now, now
	return tx.InternalAccounts().MarkSecurityChanged(ctx, acct.ID, now)
}

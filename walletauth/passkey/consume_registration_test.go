package passkey_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/walletauth/passkey"
)

// readings returns a clock that answers the times in turn, then the last
// one, and the count of its readings.
func readings(times ...time.Time) (func() time.Time, *int) {
	n := new(int)
	return func() time.Time {
		i := min(*n, len(times)-1)
		*n++
		return times[i]
	}, n
}

// pendingRegistration reads the pending request of a registration
// challenge.
func pendingRegistration(t *testing.T, s storage.Store, challenge string) storage.PendingRequest {
	t.Helper()
	sum := sha256.Sum256([]byte(challenge))
	var p storage.PendingRequest
	if err := atomic(t, s, func(tx storage.Tx) error {
		var err error
		p, err = tx.PendingRequests().Get(context.Background(), "PasskeyRegistration:"+hex.EncodeToString(sum[:]))
		return err
	}); err != nil {
		t.Fatalf("reading the registration challenge: %v", err)
	}
	return p
}

// consumeRegistration runs ConsumeRegistration in a transaction of s.
func consumeRegistration(t *testing.T, v *passkey.Verifier, s storage.Store, challenge, accountID string, clock func() time.Time) error {
	t.Helper()
	return atomic(t, s, func(tx storage.Tx) error {
		return v.ConsumeRegistration(context.Background(), tx, challenge, accountID, clock)
	})
}

// TestConsumeRegistrationExpiryAfterLock: ConsumeRegistration decides the
// challenge's expiry on a reading of the clock taken after the store granted
// the consumption (its lock held): a consumption that began before the
// expiry and waited past it for the lock (the second reading is past
// ExpiresAt) answers 401 registration challenge expired, and its rollback
// leaves the challenge unconsumed. One whose readings are both before the
// expiry consumes it, once.
func TestConsumeRegistrationExpiryAfterLock(t *testing.T) {
	v, s := newVerifier(t, nil, func(c *passkey.Config) { c.RegistrationTTL = 2 * time.Minute }), newStore()

	t.Run("expired while waiting for the lock", func(t *testing.T) {
		rc := issue(t, v, s, account1, t0)
		if _, err := checkRegistration(t, v, s, rc, t0.Add(time.Minute)); err != nil {
			t.Fatalf("CheckRegistration: %v", err)
		}
		clock, n := readings(rc.ExpiresAt.Add(-time.Second), rc.ExpiresAt)
		err := consumeRegistration(t, v, s, rc.Challenge, account1, clock)
		apierrortest.Want(t, err, apierror.Unauthorized, passkey.ReasonRegistrationChallengeExpired)
		if *n != 2 {
			t.Fatalf("the clock was read %d times, want 2 (before the consumption and after its lock)", *n)
		}
		if p := pendingRegistration(t, s, rc.Challenge); !p.ConsumedAt.IsZero() {
			t.Fatalf("the refused consumption left the challenge consumed at %v", p.ConsumedAt)
		}
	})

	t.Run("within its lifetime", func(t *testing.T) {
		rc := issue(t, v, s, account1, t0)
		clock, n := readings(t0.Add(time.Minute), rc.ExpiresAt.Add(-time.Nanosecond))
		if err := consumeRegistration(t, v, s, rc.Challenge, account1, clock); err != nil {
			t.Fatalf("ConsumeRegistration: %v", err)
		}
		if *n != 2 {
			t.Fatalf("the clock was read %d times, want 2", *n)
		}
		if p := pendingRegistration(t, s, rc.Challenge); !p.ConsumedAt.Equal(t0.Add(time.Minute)) {
			t.Fatalf("challenge consumed at %v, want %v (the first reading)", p.ConsumedAt, t0.Add(time.Minute))
		}
		clock, _ = readings(t0.Add(time.Minute))
		err := consumeRegistration(t, v, s, rc.Challenge, account1, clock)
		apierrortest.Want(t, err, apierror.Unauthorized, passkey.ReasonRegistrationChallengeUsed)
	})

	t.Run("expired before the consumption", func(t *testing.T) {
		rc := issue(t, v, s, account1, t0)
		clock, _ := readings(rc.ExpiresAt)
		err := consumeRegistration(t, v, s, rc.Challenge, account1, clock)
		apierrortest.Want(t, err, apierror.Unauthorized, passkey.ReasonRegistrationChallengeExpired)
		if p := pendingRegistration(t, s, rc.Challenge); !p.ConsumedAt.IsZero() {
			t.Fatalf("the refused consumption left the challenge consumed at %v", p.ConsumedAt)
		}
	})

	t.Run("no clock", func(t *testing.T) {
		rc := issue(t, v, s, account1, t0)
		err := consumeRegistration(t, v, s, rc.Challenge, account1, nil)
		apierrortest.Want(t, err, apierror.InternalError, "")
		if p := pendingRegistration(t, s, rc.Challenge); !p.ConsumedAt.IsZero() {
			t.Fatalf("ConsumeRegistration without a clock consumed the challenge at %v", p.ConsumedAt)
		}
	})
}

// checkRegistration runs CheckRegistration of an Ed25519 attestation of rc
// in a transaction of s, as the first leg of a signed registration does.
func checkRegistration(t *testing.T, v *passkey.Verifier, s storage.Store, rc *passkey.RegistrationChallenge, now time.Time) (*passkey.Registration, error) {
	t.Helper()
	a := newEdAuthenticator(t)
	var reg *passkey.Registration
	err := atomic(t, s, func(tx storage.Tx) error {
		var err error
		reg, err = v.CheckRegistration(context.Background(), tx, passkey.RegistrationRequest{AccountID: rc.AccountID, Nickname: "Key",
			Challenge: rc.Challenge, Attestation: a.attest(rc.Challenge)}, now)
		return err
	})
	return reg, err
}

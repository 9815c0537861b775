package walletauth_test

import (
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/memory"
	"github.com/walletgate/walletgate/walletauth"
	"github.com/walletgate/walletgate/walletauth/authclient"
	"github.com/walletgate/walletgate/walletauth/passkey"
)

// Passkey login challenges need no session: whoever knows a PASSKEY
// credential's id may ask for them. They are bounded per credential
// (Config.MaxPasskeyChallenges, a new one superseding the oldest) and take
// nothing from the wallet's cap of signed first legs.

// passkeyEnvOn is newEnvOn with the PASSKEY type enabled.
func passkeyEnvOn(t *testing.T, store storage.Store, mod func(*walletauth.Config)) *env {
	t.Helper()
	return newEnvOn(t, store, func(c *walletauth.Config) {
		pk, err := passkey.New(passkey.Config{RelyingParty: passkey.RelyingParty{ID: rpID, Name: "Wallet", Origins: []string{origin}}})
		if err != nil {
			t.Fatal(err)
		}
		c.Passkeys = pk
		if mod != nil {
			mod(c)
		}
	})
}

// addPasskey registers a virtual passkey on the wallet, signed by key.
func (e *env) addPasskey(t *testing.T, key *authclient.ClientKey) (*walletauth.AuthMethod, *authenticator) {
	t.Helper()
	ctx := t.Context()
	a := newAuthenticator(t)
	rc, err := e.svc.PasskeyRegistrationChallenge(ctx, e.wallet.ID)
	if err != nil {
		t.Fatal(err)
	}
	req := walletauth.AddCredentialRequest{Type: storage.Passkey, AccountID: e.wallet.ID, Nickname: "laptop",
		Challenge: rc.Challenge, Attestation: a.attest(t, rc.Challenge, e.wallet.ID)}
	c := call("POST", "/auth/credentials", `{"passkey":1}`)
	_, ch, err := e.svc.AddCredential(ctx, req, c)
	if err != nil {
		t.Fatalf("add passkey leg 1: %v", err)
	}
	pk, _, err := e.svc.AddCredential(ctx, req, signed(t, c, ch, key))
	if err != nil {
		t.Fatalf("add passkey leg 2: %v", err)
	}
	return pk, a
}

// passkeyChallenge asks for a login challenge of credential pk.
func (e *env) passkeyChallenge(t *testing.T, pk *walletauth.AuthMethod) (*walletauth.ChallengeResponse, error) {
	return e.svc.Challenge(t.Context(), pk.ID, walletauth.ChallengeRequest{ClientPublicKey: newKey(t).PublicKeyHex()})
}

// passkeyLogin completes the ceremony of cr with the authenticator a.
func (e *env) passkeyLogin(t *testing.T, pk *walletauth.AuthMethod, a *authenticator, cr *walletauth.ChallengeResponse) (*walletauth.AuthSession, error) {
	s, _, err := e.svc.Verify(t.Context(), pk.ID, walletauth.VerifyRequest{Type: storage.Passkey, Assertion: a.assert(t, cr.Challenge)},
		signedretry.Request{Method: "POST", Path: "/auth/credentials/" + pk.ID + "/verify", RequestID: cr.RequestID})
	return s, err
}

// stranger asks for login challenges of one passkey, as anyone may, and
// records what was refused.
type stranger struct {
	e       *env
	t       *testing.T
	pk      *walletauth.AuthMethod
	key     string
	asked   atomic.Int64
	refused atomic.Int64
	mu      sync.Mutex
	first   error
}

func (s *stranger) ask() {
	s.asked.Add(1)
	if _, err := s.e.svc.Challenge(s.t.Context(), s.pk.ID, walletauth.ChallengeRequest{ClientPublicKey: s.key}); err != nil {
		s.refused.Add(1)
		s.mu.Lock()
		if s.first == nil {
			s.first = err
		}
		s.mu.Unlock()
	}
}

// askMany asks n times.
func (s *stranger) askMany(n int) {
	for range n {
		s.ask()
	}
}

// keepAsking asks at full rate from workers goroutines, each at most limit
// times, until the returned function is called; that function waits for
// the goroutines.
func (s *stranger) keepAsking(workers, limit int) (stop func()) {
	quit := make(chan struct{})
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range limit {
				select {
				case <-quit:
					return
				default:
					s.ask()
				}
			}
		})
	}
	return sync.OnceFunc(func() { close(quit); wg.Wait() })
}

// neverRefused fails the test when the stranger was refused a challenge.
func (s *stranger) neverRefused() {
	s.t.Helper()
	if n := s.refused.Load(); n > 0 {
		s.t.Fatalf("%d of %d passkey challenges were refused, the first with %v; a challenge past the bound must supersede the oldest",
			n, s.asked.Load(), s.first)
	}
}

// TestStrangerPasskeyChallengesLeaveOwnerIn: a stranger asks for far more
// passkey login challenges of the owner's credential than either cap holds,
// and keeps asking at full rate from four goroutines while the owner logs
// in with a one-time code and signs an operation; then it asks for fewer
// than MaxPasskeyChallenges during the owner's passkey ceremony. Every one
// of the owner's steps succeeds, and the stranger is never refused either.
// Before passkey challenges were bounded apart, they filled the wallet's
// cap of live challenges and the owner's one-time code login answered 429.
func TestStrangerPasskeyChallengesLeaveOwnerIn(t *testing.T) {
	eachStore(t, func(t *testing.T, newStore func(t *testing.T) storage.Store) {
		ctx := t.Context()
		e := passkeyEnvOn(t, newStore(t), nil)
		_, key := e.login(t, e.email.ID, storage.EmailOTP)
		pk, a := e.addPasskey(t, key)
		s := &stranger{e: e, t: t, pk: pk, key: newKey(t).PublicKeyHex()}

		s.askMany(3 * max(walletauth.DefaultMaxPasskeyChallenges, signedretry.DefaultMaxPending))
		stop := s.keepAsking(4, 2000)
		defer stop()
		// The owner starts once the stranger has filled the bound twice
		// more from its goroutines, which keep asking meanwhile.
		for target := s.asked.Load() + 2*walletauth.DefaultMaxPasskeyChallenges; s.asked.Load() < target; {
			runtime.Gosched()
		}
		sess, sessKey := e.login(t, e.email.ID, storage.EmailOTP)
		rc := call(http.MethodDelete, "/auth/sessions/"+sess.ID, "")
		ch, err := e.svc.RevokeSession(ctx, sess.ID, rc)
		if err != nil {
			t.Fatalf("the owner's signed operation, first leg: %v", err)
		}
		if _, err := e.svc.RevokeSession(ctx, sess.ID, signed(t, rc, ch, sessKey)); err != nil {
			t.Fatalf("the owner's signed operation, retry: %v", err)
		}
		stop()

		// The owner's passkey ceremony, with the stranger's challenges
		// issued during it at the same instant and later. (One issued
		// before it at the same instant may count as later: the order of
		// challenges of one instant is their ids'.)
		e.clock.Add(time.Millisecond)
		cr, err := e.passkeyChallenge(t, pk)
		if err != nil {
			t.Fatalf("the owner's passkey challenge: %v", err)
		}
		s.askMany(walletauth.DefaultMaxPasskeyChallenges/2 - 1)
		e.clock.Add(time.Millisecond)
		s.askMany(walletauth.DefaultMaxPasskeyChallenges / 2)
		if _, err := e.passkeyLogin(t, pk, a, cr); err != nil {
			t.Fatalf("the owner's passkey login after %d other challenges: %v", walletauth.DefaultMaxPasskeyChallenges-1, err)
		}
		s.neverRefused()
		t.Logf("the stranger asked for %d passkey challenges", s.asked.Load())
	})
}

// TestPasskeyChallengeSuperseded: a credential keeps its
// DefaultMaxPasskeyChallenges newest login challenges. The oldest survives
// MaxPasskeyChallenges-1 later ones and logs in; a challenge followed by
// MaxPasskeyChallenges later ones is superseded and answers 401
// UNAUTHORIZED "unknown request id", as an unknown one does, while the
// next oldest still logs in. A configured bound is kept the same way.
func TestPasskeyChallengeSuperseded(t *testing.T) {
	eachStore(t, func(t *testing.T, newStore func(t *testing.T) storage.Store) {
		for _, bound := range []int{0, 2} {
			e := passkeyEnvOn(t, newStore(t), func(c *walletauth.Config) { c.MaxPasskeyChallenges = bound })
			if bound == 0 {
				bound = walletauth.DefaultMaxPasskeyChallenges
			}
			_, key := e.login(t, e.email.ID, storage.EmailOTP)
			pk, a := e.addPasskey(t, key)
			// issue asks for n challenges, each a millisecond after the last.
			issue := func(n int) []*walletauth.ChallengeResponse {
				out := make([]*walletauth.ChallengeResponse, n)
				for i := range out {
					e.clock.Add(time.Millisecond)
					cr, err := e.passkeyChallenge(t, pk)
					if err != nil {
						t.Fatalf("bound %d: challenge %d: %v", bound, i, err)
					}
					out[i] = cr
				}
				return out
			}
			kept := issue(bound)
			if _, err := e.passkeyLogin(t, pk, a, kept[0]); err != nil {
				t.Fatalf("bound %d: the oldest of %d challenges: %v", bound, bound, err)
			}
			crs := issue(bound + 2)
			_, err := e.passkeyLogin(t, pk, a, crs[1])
			apierrortest.Want(t, err, apierror.Unauthorized, "unknown request id")
			_, err = e.passkeyLogin(t, pk, a, crs[0])
			apierrortest.Want(t, err, apierror.Unauthorized, "unknown request id")
			if _, err := e.passkeyLogin(t, pk, a, crs[2]); err != nil {
				t.Fatalf("bound %d: the oldest challenge kept: %v", bound, err)
			}
		}
	})
}

// TestMaxPasskeyChallengesConfig: a negative MaxPasskeyChallenges is
// refused by New with an error that names the field.
func TestMaxPasskeyChallengesConfig(t *testing.T) {
	_, err := walletauth.New(walletauth.Config{Store: memory.New(), Sandbox: true, Keys: ephemeralKeys(t), MaxPasskeyChallenges: -1})
	if err == nil || !strings.Contains(err.Error(), "MaxPasskeyChallenges is negative") {
		t.Fatalf("New with MaxPasskeyChallenges -1: %v, want an error naming MaxPasskeyChallenges", err)
	}
	if _, err := walletauth.New(walletauth.Config{Store: memory.New(), Sandbox: true, Keys: ephemeralKeys(t), MaxPasskeyChallenges: 1}); err != nil {
		t.Fatalf("New with MaxPasskeyChallenges 1: %v", err)
	}
}

// TestFirstLegsLeaveOTPLoginIn: first legs of signed operations fill the
// wallet's cap of live challenges (the next one is 429), and a login by
// one-time code still completes: its challenge, which only a caller who
// proved the code creates, is kept apart from that cap.
func TestFirstLegsLeaveOTPLoginIn(t *testing.T) {
	eachStore(t, func(t *testing.T, newStore func(t *testing.T) storage.Store) {
		ctx := t.Context()
		e := passkeyEnvOn(t, newStore(t), nil)
		sess, _ := e.login(t, e.email.ID, storage.EmailOTP)
		rc := call(http.MethodDelete, "/auth/sessions/"+sess.ID, "")
		for i := range signedretry.DefaultMaxPending {
			if _, err := e.svc.RevokeSession(ctx, sess.ID, rc); err != nil {
				t.Fatalf("first leg %d: %v", i, err)
			}
		}
		_, err := e.svc.RevokeSession(ctx, sess.ID, rc)
		apierrortest.Want(t, err, apierror.RateLimited, "")
		if s, _ := e.login(t, e.email.ID, storage.EmailOTP); s == nil || s.ID == "" {
			t.Fatal("no session from the OTP login")
		}
	})
}

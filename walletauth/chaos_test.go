package walletauth_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	crand "crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/accounts"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/ownership"
	"github.com/walletgate/walletgate/ownership/policy"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/memory"
	"github.com/walletgate/walletgate/storage/postgres"
	"github.com/walletgate/walletgate/storage/postgres/pgtest"
	"github.com/walletgate/walletgate/walletauth"
	"github.com/walletgate/walletgate/walletauth/authclient"
	"github.com/walletgate/walletgate/walletauth/oidc"
	"github.com/walletgate/walletgate/walletauth/passkey"
)

// The chaos test runs random signed operations, ownership proofs, address
// changes and payouts on a few wallets at once through several services
// sharing one store, with faults (on PostgreSQL: connections of the test's
// own application_name terminated at random; on every store: short deadlines
// and cancellations). A checker then replays every account's outbox into
// records and compares them with the store and with every answer the clients
// got: an error is "maybe happened", a success must have happened.
//
// Beside the clients runs an attacker (chaos_attacker_test.go) holding one
// stolen EMAIL_OTP session of a wallet of its own victim. With it the
// attacker enrolls an OAUTH identity and a passkey of its own, logs in with
// them, refreshes its sessions, and with those sessions signs payouts past
// the policy's passkey step-up, approves payouts the policy holds that the
// stolen session signed, and revokes the owner's older credentials. A
// credential enrolled by a session of a weaker credential carries that
// credential's assurance, and answers to it, for the security-change
// period, so every one of these attempts must be refused; the checker
// judges from what committed that none passed (the J kinds): the payouts
// past a step-up and their signers' enrolments, the approvals and the
// independence of the approver from the payout's signer, and the revokes
// and what their signers could remove when they signed.
//
// Run it longer for figures:
//
//	go test -run TestChaos ./walletauth -chaos.duration=1m
//
// (or WALLETGATE_CHAOS_DURATION=1m).
var chaosDuration = flag.Duration("chaos.duration", 0,
	"how long TestChaosPostgres runs (0: WALLETGATE_CHAOS_DURATION, else 20s); TestChaosMemory runs a tenth of it")

func chaosRunTime(t *testing.T, memoryStore bool) time.Duration {
	d := *chaosDuration
	if d == 0 {
		if s := os.Getenv("WALLETGATE_CHAOS_DURATION"); s != "" {
			var err error
			if d, err = time.ParseDuration(s); err != nil {
				t.Fatalf("WALLETGATE_CHAOS_DURATION: %v", err)
			}
		}
	}
	if d == 0 {
		d = 20 * time.Second
		if testing.Short() {
			d = 5 * time.Second
		}
	}
	if memoryStore {
		d /= 10
	}
	return d
}

// Limits of the run: every loop is bounded in count as well as in time.
const (
	chaosWallets          = 3
	chaosServices         = 4
	chaosWorkersPerSvc    = 4
	chaosConnsPerPool     = 8 // 4 pools of 8, plus 4 for the checker: 36 connections
	chaosMaxOpsPerWorker  = 200_000
	chaosMaxSessions      = 12
	chaosMaxOAuth         = 3
	chaosThreshold        = 100_000 // USDC verification threshold, minor units
	chaosMaximum          = 500_000 // USDC single-payout maximum
	chaosDailyGuessBudget = 100     // wrong 6-digit codes a day that keep a day's success at 1e-4
	chaosHostOp           = "CHAOS_OPERATION"
	eventHostOp           = "CHAOS.HOST_OPERATION"
	eventPayout           = "CHAOS.PAYOUT"
	eventAddressChanged   = "CHAOS.ADDRESS_CHANGED"
)

// chaosMaxPending caps a wallet's live signed-retry challenges. A refused
// retry leaves its challenge live until it expires, and the attacker's
// retries are refused by design: at the default cap its wallet would soon
// answer every first leg 429 and no attempt would reach the rules it
// tests. The clients' wallets stay far below the default.
const chaosMaxPending = 100_000

// Kinds of violations only the chaos checker finds (see also replay_test.go).
const (
	kindCrossSignedAnswers = "A: cross-signed revokes both answered 200"
	kindTwoCustomers       = "B: one email address on EMAIL_OTP credentials of two customers"
	kindProofOther         = "D: ownership proof of one address activated another"
	kindGate               = "E: payout committed while the account's status refuses it"
	kindStalePayout        = "E: payout committed to an address the account no longer had"
	kindCurrency           = "F: payout committed in a currency other than the account's"
	kindMaximum            = "F: payout above the maximum committed"
	kindUnproven           = "F: wallet of an unknown type or custodian paid without a proof"
	kindGuessBudget        = "G: wrong OTP codes compared for one credential beyond a day's budget"
	kindIssuanceAttempts   = "G: wrong OTP codes compared for one issuance beyond its attempt limit"
	kindPaidTwice          = "H: one payout paid more than once"
	kindDebitNoCommit      = "H: a host debit committed without walletgate's payout"
	kindCommitNoDebit      = "H: walletgate's payout committed without the host's debit"
	kindWindow             = "I: a customer's payouts passed the policy's window"
	kindStepUp             = "I: a payout from the step-up amount allowed without a passkey session"
	kindPolicyTwice        = "I: the policy counted one payout more than once"
	kindPolicyMissing      = "I: a host payout committed without the policy's decision"
	kindUnapproved         = "I: a payout the policy holds for approval executed without it"
	kindLost               = "a 200 left no trace in the outbox"
	kindRefusedCommitted   = "a refused operation committed"
)

// Kinds of broken rules of enrolled credentials (J). A credential enrolled
// through a signed retry by a session of a weaker credential type carries
// that session's assurance until its security-change period ends, and any
// credential answers to its enroller's origin until then. The replay
// derives every credential's enrolment from its AUTH_CREDENTIAL.ADDED and
// the session that signed it (checking the SECURITY_NOTICE and the stored
// record against it), and the checker judges each committed change at the
// time it was made.
const (
	// A payout from the step-up amount, decided without an approval, whose
	// signing session's credential is a PASSKEY that carried a weaker
	// assurance when it signed.
	kindStepUpWeak = "J: a payout past a step-up signed by a credential enrolled by a weaker session within its period"
	// A held payout approved by a wallet credential that carried a weaker
	// assurance than its own type's when it approved.
	kindApprovalWeak = "J: a held payout approved by a credential enrolled by a weaker session within its period"
	// A held payout approved by a wallet credential that is not another
	// holder than the credential whose session signed the payout: the same
	// credential, one answering to the same origin then, or any credential
	// once the signer's credential was revoked; or by the sandbox literal.
	kindApprovalNotIndependent = "J: a held payout approved by a credential that is not independent of its signer"
	// A revoke signed by a session of a credential that carried less than
	// its own type's assurance, of a credential enrolled at the same time
	// as that credential or before it (judged by the replay).
	kindRevokeWeak = "J: a credential removed by a credential enrolled by a weaker session within its period, not younger than it"
	// A refresh that gave the new session another authentication time
	// than the one it replaced: a refresh would then reset a policy's
	// maximum session age (judged by the replay).
	kindRefreshAuthenticated = "J: a refreshed session's authentication time differs from the session it replaced"
)

// chaosRules is the payout policy of the host operations' payouts: a
// customer's payouts are at most three thresholds a day; from twice the
// threshold they need a passkey session, and from half of it an approval:
// the risk desk's, which approvePayout gives, or that of a second
// credential of the wallet independent of the payout's signer, which the
// attacker tries to give with credentials it enrolled.
var chaosRules = fmt.Sprintf(`{"referenceCurrency": "USDC",
	"windows": [{"name": "day", "scope": "CUSTOMER", "period": "24h", "maxAmount": %d}],
	"rules": [{"name": "daily-limit", "match": {"exceedsWindows": ["day"]}, "action": "BLOCK"},
		{"name": "step-up", "match": {"minAmount": %d}, "action": "ALLOW", "require": {"credentialTypes": ["PASSKEY"]}},
		{"name": "approval", "match": {"minAmount": %d}, "action": "REQUIRE_APPROVAL",
			"approval": {"count": 1, "operators": ["%s"], "secondCredential": true, "ttl": "1h"}},
		{"name": "default", "match": {}, "action": "ALLOW"}]}`, chaosWindow, chaosStepUp, chaosApproval, chaosRiskDesk)

const (
	chaosWindow   = 3 * chaosThreshold
	chaosStepUp   = 2 * chaosThreshold
	chaosApproval = chaosThreshold / 2
	chaosRiskDesk = "risk-desk"
	// chaosSecurityPeriod is the services' security-change period: longer
	// than any run, so every credential enrolled in a run is within it.
	chaosSecurityPeriod = walletauth.DefaultSecurityChangePeriod
)

// The account types and custodians the test's host knows.
var (
	chaosKnownTypes = []string{ownership.AccountEthereum}
	chaosKnownVASPs = []string{"Vetted Custodian"}
)

// chaosSession is a session a client holds (it may have been revoked since).
type chaosSession struct {
	ID, Credential string
	Key            *authclient.ClientKey
}

// chaosCredential is a credential a client believes exists.
type chaosCredential struct {
	ID      string
	Type    storage.CredentialType
	Subject string // OAUTH
}

// chaosWallet is what the clients of one wallet believe.
type chaosWallet struct {
	ID, Customer string
	ext          []*chaosExternal

	mu       sync.Mutex
	creds    map[string]chaosCredential
	sessions []chaosSession
	subjects int
}

// chaosExternal is an external account of the wallet's customer and the
// keys of the two addresses it moves between.
type chaosExternal struct {
	ID    string
	keys  map[string]*ecdsa.PrivateKey // by address
	addrs [2]string

	mu      sync.Mutex
	message string // the latest challenge message a client got
}

// chaosAccount is how the test renders external accounts (in verify answers
// and STATUS_UPDATED events).
type chaosAccount struct {
	ID            string `json:"id"`
	Status        string `json:"status"`
	Address       string `json:"address"`
	AccountType   string `json:"accountType"`
	VaspName      string `json:"vaspName,omitempty"`
	OwnershipType string `json:"ownershipType,omitempty"`
	Currency      string `json:"currency"`
	Version       int64  `json:"version"`
}

// chaosPayoutData is the data of the test's CHAOS.PAYOUT records: what the
// gate decided on.
type chaosPayoutData struct {
	OpID     string `json:"opId"`
	Amount   int64  `json:"amount"`
	Currency string `json:"currency"`
	Address  string `json:"address"`
	Status   string `json:"status"`
	// Ledger: the host debited its ledger in the same transaction.
	Ledger bool `json:"ledger,omitempty"`
}

// chaosParams are the signed parameters of a host operation.
type chaosParams struct {
	OpID   string         `json:"opId"`
	Payout *chaosPayParam `json:"payout,omitempty"`
}

type chaosPayParam struct {
	AccountID string `json:"accountId"`
	Amount    int64  `json:"amount"`
	Currency  string `json:"currency"`
}

// chaosWorld is one run: the services, the wallets and what the clients saw.
type chaosWorld struct {
	ctx    context.Context // the test's
	auth   []*walletauth.Service
	own    []*ownership.Service
	stores []storage.Store
	check  storage.Store // the checker's store (a pool that is never killed)
	// replicas are what operations run on: one per store, and on
	// PostgreSQL one host replica more per store (see do).
	replicas  []chaosReplica
	checkPool *pgxpool.Pool                     // the checker's pool, nil on the memory store
	ledger    string                            // the host's ledger table, debited by payouts in host transactions
	limits    *policy.Policy                    // decides the host operations' payouts (chaosRules)
	held      []heldPayout                      // payouts held for approval, for approvePayout (under mu)
	credMu    sync.Mutex                        // guards credTypes alone, taken under a wallet's mu
	credTypes map[string]storage.CredentialType // every credential the clients learned of, revoked ones too
	audit     string                            // the host's audit table, written by every host transaction
	hostStats chaosHostStats
	level     pgx.TxIsoLevel // the stores' isolation level; host transactions run at it

	wallets []*chaosWallet
	// target is a wallet only guessed at: wrong codes against its
	// EMAIL_OTP credential, across issuances, and logins.
	target *chaosWallet
	// victim is the wallet the attacker holds a stolen session of; no
	// other client touches it.
	victim   *chaosWallet
	attacker *chaosAttacker
	emails   []string // the addresses email changes pick from

	mu         sync.Mutex
	ops        map[string]*[3]int // ok, refused, maybe by operation
	expects    []chaosExpect
	hostSigner map[string]string // host op id -> the session that stamped it
	hostResult map[string]string // host op id -> "ok", "refused" or "maybe"
	proofs     map[[2]string]int // (account, address) -> verify calls proving it
	wrong      map[string]int    // credential -> wrong codes compared
	compared   map[string]int    // issuance (its target bundle) -> wrong codes compared
	payouts    map[string]int    // payout op id -> CHAOS.PAYOUT events
	debits     map[string]bool   // payout op id -> its CHAOS.PAYOUT says the host debited
	client     []violation
	kills      atomic.Int64
	seq        atomic.Int64
}

// chaosExpect is something a 200 promised: check it against the replays.
type chaosExpect struct {
	Account string
	What    string
	Holds   func(r *replay) bool
}

func (w *chaosWorld) count(op string, err error) string {
	o := outcome(err)
	w.mu.Lock()
	defer w.mu.Unlock()
	c := w.ops[op]
	if c == nil {
		c = new([3]int)
		w.ops[op] = c
	}
	switch o {
	case "ok":
		c[0]++
	case "refused":
		c[1]++
	default:
		c[2]++
	}
	return o
}

// outcome classifies an answer: "ok", "refused" (a 4xx) or "maybe" (a 5xx,
// a deadline, a lost connection: it may have committed).
func outcome(err error) string {
	if err == nil {
		return "ok"
	}
	if e := apierror.As(err); e != nil && e.Status() < 500 {
		return "refused"
	}
	return "maybe"
}

func (w *chaosWorld) expect(account, what string, holds func(r *replay) bool) {
	w.mu.Lock()
	w.expects = append(w.expects, chaosExpect{account, what, holds})
	w.mu.Unlock()
}

func (w *chaosWorld) violate(kind, account, format string, args ...any) {
	w.mu.Lock()
	w.client = append(w.client, violation{Kind: kind, Account: account, Detail: fmt.Sprintf(format, args...)})
	w.mu.Unlock()
}

func (w *chaosWorld) newOpID() string { return fmt.Sprintf("op-%d", w.seq.Add(1)) }

// stamp signs the retry of c with k, as a client does.
func stamp(c signedretry.Request, ch *signedretry.Challenge, k *authclient.ClientKey) (signedretry.Request, error) {
	if ch == nil {
		return c, errors.New("no challenge to sign")
	}
	sig, err := k.Stamp(ch.PayloadToSign)
	c.Signature, c.RequestID = sig, ch.RequestID
	return c, err
}

// signed sends the two legs of a signed call, each on the replica w.do
// picks: send sends req (the call's first leg, then its retry stamped by
// key) and returns the challenge answered. leg1 is the first leg's error
// (the retry is not sent when it fails) and err the retry's.
func (w *chaosWorld) signed(c context.Context, rng *rand.Rand, first signedretry.Request, key *authclient.ClientKey,
	send func(ctx context.Context, r chaosReplica, req signedretry.Request) (*signedretry.Challenge, error)) (leg1, err error) {
	var ch *signedretry.Challenge
	leg1 = w.do(c, rng, func(ctx context.Context, r chaosReplica) (err error) {
		ch, err = send(ctx, r, first)
		return err
	})
	if leg1 != nil {
		return leg1, nil
	}
	retry, err := stamp(first, ch, key)
	if err != nil {
		panic(err)
	}
	return nil, w.do(c, rng, func(ctx context.Context, r chaosReplica) error {
		_, err := send(ctx, r, retry)
		return err
	})
}

// chaosToken is a sandbox ID token (the signature is not checked) for sub,
// bound to the client key's nonce when nonce is set.
func chaosToken(sub, nonce string) string {
	now := time.Now()
	claims := map[string]any{"iss": "https://accounts.google.com", "aud": "chaos-client", "sub": sub,
		"email": sub + "@idp.example", "iat": now.Unix(), "exp": now.Add(10 * time.Minute).Unix()}
	if nonce != "" {
		claims["nonce"] = nonce
	}
	payload, _ := json.Marshal(claims)
	enc := base64.RawURLEncoding
	return enc.EncodeToString([]byte(`{"alg":"ES256","kid":"chaos"}`)) + "." + enc.EncodeToString(payload) + "." + enc.EncodeToString([]byte("sandbox"))
}

func evmKey(label string) (*ecdsa.PrivateKey, string) {
	k, err := crypto.ToECDSA(crypto.Keccak256([]byte(label)))
	if err != nil {
		panic(err)
	}
	return k, crypto.PubkeyToAddress(k.PublicKey).Hex()
}

func evmSignText(k *ecdsa.PrivateKey, msg string) string {
	sig, err := crypto.Sign(accounts.TextHash([]byte(msg)), k)
	if err != nil {
		panic(err)
	}
	sig[64] += 27
	return "0x" + hex.EncodeToString(sig)
}

func renderChaos(a storage.ExternalAccount) any {
	return chaosAccount{ID: a.ID, Status: string(a.Status), Address: a.Address, AccountType: a.AccountType, VaspName: a.VaspName,
		OwnershipType: a.OwnershipType, Currency: a.Currency, Version: a.Version}
}

// newChaosWorld builds one walletauth and one ownership service per store
// (replicas sharing one database), and the wallets with their external
// accounts.
//
// On PostgreSQL (pools set, one per store, and checkPool), every store also
// serves a host replica, whose calls run in transactions of the host's
// that write its audit rows and, for payouts, its ledger (see do).
func newChaosWorld(t *testing.T, stores []storage.Store, check storage.Store, pools []*pgxpool.Pool, checkPool *pgxpool.Pool) *chaosWorld {
	t.Helper()
	ctx := t.Context()
	signing, err := ecdsa.GenerateKey(elliptic.P256(), crand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sealer := testKeyring(t, "chaos-1")
	w := &chaosWorld{ctx: t.Context(), stores: stores, check: check, ops: map[string]*[3]int{}, hostSigner: map[string]string{},
		hostResult: map[string]string{}, proofs: map[[2]string]int{}, wrong: map[string]int{}, compared: map[string]int{},
		payouts: map[string]int{}, debits: map[string]bool{}, checkPool: checkPool}
	rules, err := policy.Parse([]byte(chaosRules))
	if err != nil {
		t.Fatal(err)
	}
	if w.limits, err = policy.New(policy.Config{Rules: rules}); err != nil {
		t.Fatal(err)
	}
	if checkPool != nil {
		pg := check.(*postgres.Store)
		w.ledger = pgx.Identifier{pg.Schema(), "chaos_ledger"}.Sanitize()
		w.audit = pgx.Identifier{pg.Schema(), "chaos_audit"}.Sanitize()
		// No key on the ledger: a payout debited twice shows as two rows.
		if _, err := checkPool.Exec(ctx, "CREATE TABLE "+w.ledger+" (op_id text NOT NULL, account_id text NOT NULL, amount bigint NOT NULL);"+
			"CREATE TABLE "+w.audit+" (at timestamptz NOT NULL)"); err != nil {
			t.Fatal(err)
		}
	}
	for _, st := range stores {
		v, err := oidc.New(context.Background(), oidc.Config{Issuers: []oidc.Issuer{oidc.Google("chaos-client")}, Sandbox: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(v.Close)
		// The relying party of the virtual authenticators (newAuthenticator).
		pk, err := passkey.New(passkey.Config{RelyingParty: passkey.RelyingParty{ID: rpID, Name: "Wallet", Origins: []string{origin}}})
		if err != nil {
			t.Fatal(err)
		}
		svc, err := walletauth.New(walletauth.Config{Store: st, Sandbox: true, OrganizationID: "org-chaos",
			Keys: walletauth.Keys{SigningKey: signing, Sealer: sealer, CodeMACKey: testCodeMACKey}, ClientHeldKeys: true, OIDC: v,
			Passkeys: pk, SecurityChangePeriod: chaosSecurityPeriod, MaxPendingChallenges: chaosMaxPending,
			OTP: walletauth.OTPConfig{ReissueLimit: 1_000_000, ReissueWindow: time.Minute}})
		if err != nil {
			t.Fatal(err)
		}
		own, err := ownership.New(ownership.Config{Store: st, Service: "chaos.example", Render: renderChaos,
			Payouts: ownership.PayoutPolicy{VerificationThresholds: ownership.Limits{ByCurrency: map[string]int64{"USDC": chaosThreshold}},
				MaxAmounts: ownership.Limits{ByCurrency: map[string]int64{"USDC": chaosMaximum}}}})
		if err != nil {
			t.Fatal(err)
		}
		w.auth, w.own = append(w.auth, svc), append(w.own, own)
		r := chaosReplica{auth: svc, own: own, st: st}
		w.replicas = append(w.replicas, r)
		if pools != nil {
			r.pg, r.pool, r.host = st.(*postgres.Store), pools[len(w.auth)-1], true
			w.replicas = append(w.replicas, r)
		}
	}
	for i := range chaosWallets {
		w.emails = append(w.emails, fmt.Sprintf("shared%d@example.com", i))
	}
	w.emails = append(w.emails, "spare@example.com")
	for i := range chaosWallets {
		customer := fmt.Sprintf("Customer:chaos-%d", i)
		acct, cred, err := w.auth[0].CreateWallet(ctx, walletauth.NewWallet{CustomerID: customer, Email: w.emails[i],
			Phone: fmt.Sprintf("+1415555%04d", i)})
		if err != nil {
			t.Fatal(err)
		}
		cw := &chaosWallet{ID: acct.ID, Customer: customer, creds: map[string]chaosCredential{cred.ID: {ID: cred.ID, Type: storage.EmailOTP}}}
		// The payout accounts: a proper self-custody wallet, one of a type
		// spelled in lowercase, one naming a custodian nobody vouches for.
		for j, n := range []ownership.NewAccount{
			{AccountType: ownership.AccountEthereum, OwnershipType: ownership.FirstParty},
			{AccountType: strings.ToLower(ownership.AccountEthereum), OwnershipType: ownership.FirstParty},
			{AccountType: ownership.AccountEthereum, OwnershipType: ownership.FirstParty, VaspName: "Unvetted Exchange"},
		} {
			x := &chaosExternal{keys: map[string]*ecdsa.PrivateKey{}}
			for k := range x.addrs {
				key, addr := evmKey(fmt.Sprintf("chaos-%d-%d-%d", i, j, k))
				x.addrs[k], x.keys[addr] = addr, key
			}
			n.CustomerID, n.Address, n.Currency = customer, x.addrs[0], "USDC"
			a, err := w.own[0].RegisterAccount(ctx, n)
			switch {
			case err == nil:
				x.ID = a.ID
				cw.ext = append(cw.ext, x)
			case j == 0 || outcome(err) != "refused":
				t.Fatalf("registering %+v: %v", n, err)
			default:
				t.Logf("registration of %s (vasp %q) refused: %v", n.AccountType, n.VaspName, err)
			}
		}
		w.wallets = append(w.wallets, cw)
	}
	acct, cred, err := w.auth[0].CreateWallet(ctx, walletauth.NewWallet{CustomerID: "Customer:chaos-target", Email: "target@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	w.target = &chaosWallet{ID: acct.ID, Customer: acct.CustomerID, creds: map[string]chaosCredential{cred.ID: {ID: cred.ID, Type: storage.EmailOTP}}}
	w.attacker = newChaosAttacker(t, w)
	w.victim = w.attacker.victim
	return w
}

// all returns every wallet of the run.
func (w *chaosWorld) all() []*chaosWallet { return append(slices.Clone(w.wallets), w.target, w.victim) }

// opCtx gives an operation its context: mostly a generous deadline, some
// a deadline of a few milliseconds, some a cancellation at a random moment.
func (w *chaosWorld) opCtx(rng *rand.Rand) (context.Context, context.CancelFunc) {
	ctx := w.ctx
	switch n := rng.IntN(100); {
	case n < 4:
		return context.WithTimeout(ctx, time.Duration(1+rng.IntN(15))*time.Millisecond)
	case n < 8:
		c, cancel := context.WithCancel(ctx)
		timer := time.AfterFunc(time.Duration(rng.IntN(25))*time.Millisecond, cancel)
		return c, func() { timer.Stop(); cancel() }
	default:
		return context.WithTimeout(ctx, 10*time.Second)
	}
}

// chaosReplica is one replica: its services and their store, and, on a
// PostgreSQL run, the pool a host of it begins its transactions on.
type chaosReplica struct {
	auth *walletauth.Service
	own  *ownership.Service
	st   storage.Store
	pg   *postgres.Store // nil on the memory store
	pool *pgxpool.Pool
	host bool // a host replica: every call runs in a transaction of the host's
}

// chaosHostStats counts what the host replicas did.
type chaosHostStats struct {
	calls, offLevel                  atomic.Int64
	rolledBackErr, rolledBackOK      atomic.Int64
	committedErr, reruns, standalone atomic.Int64
	isolation, commitFailed          atomic.Int64
}

// errHostRolledBack is what a host answers when it rolled back its
// transaction after walletgate's call succeeded: nothing of it committed.
var errHostRolledBack = apierror.New(apierror.Conflict, "the host rolled its transaction back")

// Host behaviour: the shares of host calls that begin at an isolation
// level other than the store's (SERIALIZABLE beside a READ COMMITTED
// store and the reverse), and of errors and successes after which the
// host rolls back.
const (
	chaosHostOffLevel    = 30 // percent of host transactions begun at a level other than the store's
	chaosHostRollbackErr = 50 // percent of errors the host rolls back (it commits its own rows otherwise)
	chaosHostRollbackOK  = 10 // percent of successes the host rolls back
	chaosHostReruns      = 5  // reruns of a transaction that lost a conflict
)

type ledgerKey struct{}

// chaosLedger is the host's ledger table a payout effect debits, carried by
// the context of a host transaction; empty outside one.
func chaosLedger(ctx context.Context) string {
	name, _ := ctx.Value(ledgerKey{}).(string)
	return name
}

// do runs op on a random replica. On a host replica op runs inside a
// transaction of the host's, bound with Store.WithTx, that first writes the
// host's audit row; the host then rolls back after a share of errors and
// of successes (answering errHostRolledBack for a success it undid), and
// commits otherwise. A share of its transactions begin at another
// isolation level than the store's. It reruns the whole transaction on
// ErrRerun or a serialization failure of its own COMMIT, begins again at
// the store's level when walletgate refuses the level, and calls op again
// without a host transaction when walletgate refuses one for the
// operation (storage.ErrStandalone), as a host that follows the
// documentation does.
func (w *chaosWorld) do(c context.Context, rng *rand.Rand, op func(ctx context.Context, r chaosReplica) error) error {
	r := w.replicas[rng.IntN(len(w.replicas))]
	if !r.host {
		return op(c, r)
	}
	w.hostStats.calls.Add(1)
	level := w.level
	if rng.IntN(100) < chaosHostOffLevel {
		w.hostStats.offLevel.Add(1)
		level = pgx.Serializable
		if w.level == pgx.Serializable {
			level = pgx.ReadCommitted
		}
	}
	for run := 0; ; run++ {
		err := w.hostOnce(c, rng, r, level, op)
		switch {
		case errors.Is(err, storage.ErrStandalone):
			w.hostStats.standalone.Add(1)
			return op(c, r)
		case errors.Is(err, postgres.ErrIsolation) && level != w.level:
			w.hostStats.isolation.Add(1)
			level = w.level
		case postgres.Rerunnable(err) && run < chaosHostReruns:
			w.hostStats.reruns.Add(1)
			time.Sleep(time.Duration(rng.Int64N(int64(time.Millisecond) << run)))
		default:
			return err
		}
	}
}

// hostOnce is one run of a host transaction around op (see do).
func (w *chaosWorld) hostOnce(c context.Context, rng *rand.Rand, r chaosReplica, level pgx.TxIsoLevel,
	op func(ctx context.Context, r chaosReplica) error) error {
	tx, err := r.pool.BeginTx(c, pgx.TxOptions{IsoLevel: level})
	if err != nil {
		return apierror.Internal(err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(c)) }() // a no-op after Commit
	if _, err := tx.Exec(c, "INSERT INTO "+w.audit+" (at) VALUES (clock_timestamp())"); err != nil {
		if postgres.Rerunnable(err) {
			return err // the host's own statement lost a conflict: rerun
		}
		return apierror.Internal(err)
	}
	err = op(context.WithValue(r.pg.WithTx(c, tx), ledgerKey{}, w.ledger), r)
	switch {
	case errors.Is(err, storage.ErrStandalone) || errors.Is(err, postgres.ErrIsolation) || postgres.Rerunnable(err):
		return err // rolled back
	case err != nil && rng.IntN(100) < chaosHostRollbackErr:
		w.hostStats.rolledBackErr.Add(1)
		return err
	case err == nil && rng.IntN(100) < chaosHostRollbackOK:
		w.hostStats.rolledBackOK.Add(1)
		return errHostRolledBack
	}
	if cerr := tx.Commit(c); cerr != nil {
		if postgres.Rerunnable(cerr) {
			// At SERIALIZABLE the serializable checks may refuse the
			// commit itself: nothing committed, and the host reruns.
			return fmt.Errorf("host commit: %w", cerr)
		}
		w.hostStats.commitFailed.Add(1)
		if err == nil {
			// The commit's outcome is unknown to the host: "maybe".
			return apierror.Internal(fmt.Errorf("host commit: %w", cerr))
		}
		return err
	}
	if err != nil {
		w.hostStats.committedErr.Add(1)
	}
	return err
}

// challenge issues a one-time code for cred on a random replica.
func (w *chaosWorld) challenge(c context.Context, rng *rand.Rand, cred string) (*walletauth.ChallengeResponse, error) {
	var m *walletauth.ChallengeResponse
	err := w.do(c, rng, func(ctx context.Context, r chaosReplica) (err error) {
		m, err = r.auth.Challenge(ctx, cred, walletauth.ChallengeRequest{})
		return err
	})
	return m, err
}

// verify runs one leg of a verification of cred on a random replica.
func (w *chaosWorld) verify(c context.Context, rng *rand.Rand, cred string, req walletauth.VerifyRequest,
	call signedretry.Request) (*walletauth.AuthSession, *signedretry.Challenge, error) {
	var sess *walletauth.AuthSession
	var ch *signedretry.Challenge
	err := w.do(c, rng, func(ctx context.Context, r chaosReplica) (err error) {
		sess, ch, err = r.auth.Verify(ctx, cred, req, call)
		return err
	})
	return sess, ch, err
}

// pick helpers read the clients' beliefs of a wallet.

// session picks a session the clients hold, other than those skip names.
func (cw *chaosWallet) session(rng *rand.Rand, skip func(chaosSession) bool) (chaosSession, bool) {
	cw.mu.Lock()
	defer cw.mu.Unlock()
	var ok []chaosSession
	for _, s := range cw.sessions {
		if skip == nil || !skip(s) {
			ok = append(ok, s)
		}
	}
	if len(ok) == 0 {
		return chaosSession{}, false
	}
	return ok[rng.IntN(len(ok))], true
}

// credential picks a credential the clients believe exists, of those keep
// accepts.
func (cw *chaosWallet) credential(rng *rand.Rand, keep func(chaosCredential) bool) (chaosCredential, bool) {
	cw.mu.Lock()
	defer cw.mu.Unlock()
	var ok []chaosCredential
	for _, c := range cw.creds {
		if keep == nil || keep(c) {
			ok = append(ok, c)
		}
	}
	if len(ok) == 0 {
		return chaosCredential{}, false
	}
	slices.SortFunc(ok, func(a, b chaosCredential) int { return strings.Compare(a.ID, b.ID) })
	return ok[rng.IntN(len(ok))], true
}

func (cw *chaosWallet) addSession(s chaosSession) {
	cw.mu.Lock()
	defer cw.mu.Unlock()
	cw.sessions = append(cw.sessions, s)
	if len(cw.sessions) > chaosMaxSessions {
		cw.sessions = slices.Delete(cw.sessions, 0, len(cw.sessions)-chaosMaxSessions)
	}
}

func (cw *chaosWallet) dropSession(id string) {
	cw.mu.Lock()
	defer cw.mu.Unlock()
	cw.sessions = slices.DeleteFunc(cw.sessions, func(s chaosSession) bool { return s.ID == id })
}

func (cw *chaosWallet) dropCredential(id string) {
	cw.mu.Lock()
	defer cw.mu.Unlock()
	delete(cw.creds, id)
	cw.sessions = slices.DeleteFunc(cw.sessions, func(s chaosSession) bool { return s.Credential == id })
}

// resync lets the clients learn the wallet's credentials and active sessions,
// as an app does when it lists them.
func (w *chaosWorld) resync(c context.Context, svc *walletauth.Service, cw *chaosWallet) {
	creds, err := svc.ListCredentials(c, cw.ID)
	if err != nil {
		return
	}
	sessions, err := svc.ListSessions(c, cw.ID)
	if err != nil {
		return
	}
	cw.mu.Lock()
	defer cw.mu.Unlock()
	known := cw.creds
	cw.creds = map[string]chaosCredential{}
	for _, m := range creds {
		cw.creds[m.ID] = chaosCredential{ID: m.ID, Type: m.Type, Subject: known[m.ID].Subject}
		w.learnCredential(m.ID, m.Type)
	}
	active := map[string]bool{}
	for _, s := range sessions {
		active[s.ID] = true
	}
	cw.sessions = slices.DeleteFunc(cw.sessions, func(s chaosSession) bool { return !active[s.ID] })
}

// The operations. Each returns after both legs (when it has two), records
// its outcome and, for a 200, what the outbox must show.

func (w *chaosWorld) loginOTP(c context.Context, rng *rand.Rand, cw *chaosWallet) {
	cred, ok := cw.credential(rng, func(x chaosCredential) bool { return x.Type == storage.EmailOTP || x.Type == storage.SMSOTP })
	if !ok {
		return
	}
	m, err := w.challenge(c, rng, cred.ID)
	if w.count("otp challenge", err) != "ok" {
		return
	}
	key, _ := authclient.NewClientKey()
	bundle, err := key.SealOTP(m.OTPEncryptionTargetBundle, w.auth[0].SigningPublicKey(), walletauth.SandboxOTPCode, nil)
	if err != nil {
		panic(err)
	}
	req := walletauth.VerifyRequest{Type: cred.Type, EncryptedOTPBundle: bundle}
	body, _ := json.Marshal(req)
	first := call("POST", "/auth/credentials/"+cred.ID+"/verify", string(body))
	_, ch, err := w.verify(c, rng, cred.ID, req, first)
	if w.count("otp verify leg 1", err) != "ok" {
		return
	}
	retry, err := stamp(first, ch, key)
	if err != nil {
		panic(err)
	}
	sess, _, err := w.verify(c, rng, cred.ID, req, retry)
	if w.count("otp login", err) != "ok" {
		return
	}
	cw.addSession(chaosSession{ID: sess.ID, Credential: cred.ID, Key: key})
	w.expect(cw.ID, "AUTH_SESSION.CREATED of OTP session "+sess.ID, func(r *replay) bool { return r.Sessions[sess.ID] != nil })
}

func (w *chaosWorld) wrongOTP(c context.Context, rng *rand.Rand, cw *chaosWallet) {
	cred, ok := cw.credential(rng, func(x chaosCredential) bool { return x.Type == storage.EmailOTP || x.Type == storage.SMSOTP })
	if !ok {
		return
	}
	m, err := w.challenge(c, rng, cred.ID)
	if w.count("otp challenge", err) != "ok" {
		return
	}
	n := 1 + rng.IntN(walletauth.DefaultOTPMaxAttempts+2)
	fns := make([]func() error, n)
	for i := range fns {
		fns[i] = w.guess(c, rng, cred, m.OTPEncryptionTargetBundle)
	}
	for _, err := range together(fns...) {
		w.countGuess(cred.ID, m.OTPEncryptionTargetBundle, err)
	}
}

// guess returns a leg 1 of cred with a wrong code sealed to bundle.
func (w *chaosWorld) guess(c context.Context, rng *rand.Rand, cred chaosCredential, bundle string) func() error {
	r := rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64()))
	return func() error {
		key, _ := authclient.NewClientKey()
		sealed, err := key.SealOTP(bundle, w.auth[0].SigningPublicKey(), "123456", nil)
		if err != nil {
			return err
		}
		req := walletauth.VerifyRequest{Type: cred.Type, EncryptedOTPBundle: sealed}
		body, _ := json.Marshal(req)
		_, _, err = w.verify(c, r, cred.ID, req, call("POST", "/auth/credentials/"+cred.ID+"/verify", string(body)))
		return err
	}
}

// countGuess records the answer to a wrong code sent for the issuance of
// bundle: "Invalid OTP code" means the code was compared.
func (w *chaosWorld) countGuess(cred, bundle string, err error) {
	w.count("otp wrong code", err)
	if isAPIError(err, 401, apierror.Unauthorized, "Invalid OTP code") {
		w.mu.Lock()
		w.wrong[cred]++
		w.compared[bundle]++
		w.mu.Unlock()
	}
}

func (w *chaosWorld) loginOAuth(c context.Context, rng *rand.Rand, cw *chaosWallet) {
	cred, ok := cw.credential(rng, func(x chaosCredential) bool { return x.Type == storage.OAuth && x.Subject != "" })
	if !ok {
		return
	}
	key, _ := authclient.NewClientKey()
	sess, _, err := w.verify(c, rng, cred.ID, walletauth.VerifyRequest{Type: storage.OAuth,
		OIDCToken: chaosToken(cred.Subject, oidc.NonceFor(key.PublicKeyHex())), ClientPublicKey: key.PublicKeyHex()}, signedretry.Request{})
	if w.count("oauth login", err) != "ok" {
		return
	}
	cw.addSession(chaosSession{ID: sess.ID, Credential: cred.ID, Key: key})
	w.expect(cw.ID, "AUTH_SESSION.CREATED of OAUTH session "+sess.ID, func(r *replay) bool { return r.Sessions[sess.ID] != nil })
}

func (w *chaosWorld) addCredential(c context.Context, rng *rand.Rand, cw *chaosWallet) {
	signer, ok := cw.session(rng, nil)
	if !ok {
		return
	}
	cw.mu.Lock()
	var has [2]bool
	oauth := 0
	for _, x := range cw.creds {
		switch x.Type {
		case storage.EmailOTP:
			has[0] = true
		case storage.SMSOTP:
			has[1] = true
		case storage.OAuth:
			oauth++
		}
	}
	req := walletauth.AddCredentialRequest{AccountID: cw.ID}
	sub := ""
	switch {
	case !has[0] && rng.IntN(2) == 0:
		req.Type = storage.EmailOTP
	case !has[1] && rng.IntN(2) == 0:
		req.Type = storage.SMSOTP
	case oauth < chaosMaxOAuth:
		cw.subjects++
		sub = fmt.Sprintf("%s-sub-%d", cw.Customer, cw.subjects)
		req.Type, req.OIDCToken = storage.OAuth, chaosToken(sub, "")
	}
	cw.mu.Unlock()
	if req.Type == "" {
		return
	}
	body, _ := json.Marshal(req)
	first := call("POST", "/auth/credentials", string(body))
	var m *walletauth.AuthMethod
	leg1, err := w.signed(c, rng, first, signer.Key, func(ctx context.Context, r chaosReplica, rq signedretry.Request) (ch *signedretry.Challenge, err error) {
		m, ch, err = r.auth.AddCredential(ctx, req, rq)
		return ch, err
	})
	if w.count("add credential leg 1", leg1) != "ok" || w.count("add credential", err) != "ok" {
		return
	}
	cw.mu.Lock()
	cw.creds[m.ID] = chaosCredential{ID: m.ID, Type: m.Type, Subject: sub}
	cw.mu.Unlock()
	w.learnCredential(m.ID, m.Type)
	w.expect(cw.ID, "AUTH_CREDENTIAL.ADDED of "+m.ID+" signed by "+signer.ID, func(r *replay) bool {
		x := r.Credentials[m.ID]
		return x != nil && r.Signers[x.Added] == signer.ID
	})
}

// revokeCredentialLeg1 asks to revoke cred and returns the call and its
// challenge.
func (w *chaosWorld) revokeCredentialLeg1(c context.Context, rng *rand.Rand, cred string) (signedretry.Request, *signedretry.Challenge, error) {
	first := call("DELETE", "/auth/credentials/"+cred, "")
	var ch *signedretry.Challenge
	err := w.do(c, rng, func(ctx context.Context, r chaosReplica) (err error) {
		ch, err = r.auth.RevokeCredential(ctx, cred, first)
		return err
	})
	w.count("revoke credential leg 1", err)
	return first, ch, err
}

// revokeCredentialLeg2 sends the retry of a revoke stamped by signer and
// returns its error.
func (w *chaosWorld) revokeCredentialLeg2(c context.Context, rng *rand.Rand, cw *chaosWallet, cred string,
	first signedretry.Request, ch *signedretry.Challenge, signer chaosSession) error {
	retry, err := stamp(first, ch, signer.Key)
	if err != nil {
		panic(err)
	}
	err = w.do(c, rng, func(ctx context.Context, r chaosReplica) (err error) {
		_, err = r.auth.RevokeCredential(ctx, cred, retry)
		return err
	})
	if w.count("revoke credential", err) == "ok" {
		cw.dropCredential(cred)
		w.expect(cw.ID, "AUTH_CREDENTIAL.REVOKED of "+cred+" signed by "+signer.ID, func(r *replay) bool {
			x := r.Credentials[cred]
			return x != nil && x.Revoked != 0 && r.Signers[x.Revoked] == signer.ID
		})
	}
	return err
}

func (w *chaosWorld) revokeCredential(c context.Context, rng *rand.Rand, cw *chaosWallet) {
	cred, ok := cw.credential(rng, nil)
	if !ok {
		return
	}
	signer, ok := cw.session(rng, func(s chaosSession) bool { return s.Credential == cred.ID })
	if !ok {
		return
	}
	first, ch, err := w.revokeCredentialLeg1(c, rng, cred.ID)
	if err != nil {
		return
	}
	_ = w.revokeCredentialLeg2(c, rng, cw, cred.ID, first, ch, signer)
}

// revokeWhileGuessing revokes a one-time-code credential while wrong codes
// are sent for it: no OTP_LOCKED may follow the REVOKED.
func (w *chaosWorld) revokeWhileGuessing(c context.Context, rng *rand.Rand, cw *chaosWallet) {
	cred, ok := cw.credential(rng, func(x chaosCredential) bool { return x.Type == storage.EmailOTP || x.Type == storage.SMSOTP })
	if !ok {
		return
	}
	signer, ok := cw.session(rng, func(s chaosSession) bool { return s.Credential == cred.ID })
	if !ok {
		return
	}
	m, err := w.challenge(c, rng, cred.ID)
	if w.count("otp challenge", err) != "ok" {
		return
	}
	first, ch, err := w.revokeCredentialLeg1(c, rng, cred.ID)
	if err != nil {
		return
	}
	r := rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64()))
	fns := []func() error{func() error { return w.revokeCredentialLeg2(c, r, cw, cred.ID, first, ch, signer) }}
	for range walletauth.DefaultOTPMaxAttempts + 1 {
		fns = append(fns, w.guess(c, rng, cred, m.OTPEncryptionTargetBundle))
	}
	for _, err := range together(fns...)[1:] {
		w.countGuess(cred.ID, m.OTPEncryptionTargetBundle, err)
	}
}

// crossRevoke revokes two credentials at once, each stamped by a session
// of the other: at most one may succeed.
func (w *chaosWorld) crossRevoke(c context.Context, rng *rand.Rand, cw *chaosWallet) {
	x, ok := cw.credential(rng, nil)
	if !ok {
		return
	}
	y, ok := cw.credential(rng, func(o chaosCredential) bool { return o.ID != x.ID })
	if !ok {
		return
	}
	// Revoking x is stamped by sy (a session of y), revoking y by sx (a
	// session of x).
	sx, okx := cw.session(rng, func(s chaosSession) bool { return s.Credential != x.ID })
	sy, oky := cw.session(rng, func(s chaosSession) bool { return s.Credential != y.ID })
	if !okx || !oky {
		return
	}
	fx, chx, err := w.revokeCredentialLeg1(c, rng, x.ID)
	if err != nil {
		return
	}
	fy, chy, err := w.revokeCredentialLeg1(c, rng, y.ID)
	if err != nil {
		return
	}
	rx, ry := rand.New(rand.NewPCG(rng.Uint64(), 1)), rand.New(rand.NewPCG(rng.Uint64(), 2))
	errs := together(
		func() error { return w.revokeCredentialLeg2(c, rx, cw, x.ID, fx, chx, sy) },
		func() error { return w.revokeCredentialLeg2(c, ry, cw, y.ID, fy, chy, sx) },
	)
	won := 0
	for _, err := range errs {
		if err == nil {
			won++
		}
	}
	w.count(fmt.Sprintf("cross-signed pair, %d won", won), nil)
	if won == 2 {
		w.violate(kindCrossSignedAnswers, cw.ID, "revoke of %s stamped by %s (of %s) and revoke of %s stamped by %s (of %s) both answered 200",
			x.ID, sy.ID, y.ID, y.ID, sx.ID, x.ID)
	}
}

func (w *chaosWorld) refreshSession(c context.Context, rng *rand.Rand, cw *chaosWallet) {
	s, ok := cw.session(rng, nil)
	if !ok {
		return
	}
	fresh, key, leg1, err := w.refresh(c, rng, s)
	if w.count("refresh session leg 1", leg1) != "ok" || w.count("refresh session", err) != "ok" {
		return
	}
	cw.addSession(chaosSession{ID: fresh.ID, Credential: s.Credential, Key: key})
	w.expect(cw.ID, "AUTH_SESSION.REFRESHED of "+s.ID+" into "+fresh.ID, func(r *replay) bool {
		x := r.Sessions[fresh.ID]
		return x != nil && x.Previous == s.ID && r.Signers[x.Refreshed] == s.ID
	})
}

// refresh runs both legs of a refresh of s under a new client key, the
// retry stamped by s's key: leg1 is the first leg's error (the second is
// not sent when it fails) and err the second's.
func (w *chaosWorld) refresh(c context.Context, rng *rand.Rand, s chaosSession) (fresh *walletauth.AuthSession, key *authclient.ClientKey, leg1, err error) {
	key, _ = authclient.NewClientKey()
	req := walletauth.RefreshRequest{ClientPublicKey: key.PublicKeyHex()}
	body, _ := json.Marshal(req)
	first := call("POST", "/auth/sessions/"+s.ID+"/refresh", string(body))
	leg1, err = w.signed(c, rng, first, s.Key, func(ctx context.Context, r chaosReplica, rq signedretry.Request) (ch *signedretry.Challenge, err error) {
		fresh, ch, err = r.auth.RefreshSession(ctx, s.ID, req, rq)
		return ch, err
	})
	return fresh, key, leg1, err
}

func (w *chaosWorld) revokeSession(c context.Context, rng *rand.Rand, cw *chaosWallet) {
	target, ok := cw.session(rng, nil)
	if !ok {
		return
	}
	signer, ok := cw.session(rng, nil)
	if !ok {
		return
	}
	first := call("DELETE", "/auth/sessions/"+target.ID, "")
	leg1, err := w.signed(c, rng, first, signer.Key, func(ctx context.Context, r chaosReplica, req signedretry.Request) (*signedretry.Challenge, error) {
		return r.auth.RevokeSession(ctx, target.ID, req)
	})
	if w.count("revoke session leg 1", leg1) != "ok" || w.count("revoke session", err) != "ok" {
		return
	}
	cw.dropSession(target.ID)
	w.expect(cw.ID, "AUTH_SESSION.REVOKED of "+target.ID, func(r *replay) bool {
		x := r.Sessions[target.ID]
		return x != nil && x.Revoked != 0
	})
}

func (w *chaosWorld) updateEmail(c context.Context, rng *rand.Rand, cw *chaosWallet) {
	email := w.emails[rng.IntN(len(w.emails))]
	body := `{"email":"` + email + `"}`
	first := call("PATCH", "/customers/"+cw.Customer, body)
	var change *walletauth.EmailChange
	var ch *signedretry.Challenge
	err := w.do(c, rng, func(ctx context.Context, r chaosReplica) (err error) {
		change, ch, err = r.auth.UpdateEmail(ctx, cw.Customer, email, nil, first)
		return err
	})
	if w.count("email change leg 1", err) != "ok" {
		return
	}
	if ch != nil {
		signer, ok := cw.session(rng, nil)
		if !ok {
			return
		}
		retry, err := stamp(first, ch, signer.Key)
		if err != nil {
			panic(err)
		}
		err = w.do(c, rng, func(ctx context.Context, r chaosReplica) (err error) {
			change, _, err = r.auth.UpdateEmail(ctx, cw.Customer, email, nil, retry)
			return err
		})
		if w.count("email change", err) != "ok" {
			return
		}
	}
	w.expect(cw.ID, "the account had the address "+change.Email, func(r *replay) bool { return slices.Contains(r.Emails, change.Email) })
}

// hostOperation runs a host operation through Authorize whose effect
// writes the host's record (and, for a payout, decides the gate with
// CheckPayoutIn in the same transaction and records the payout).
func (w *chaosWorld) hostOperation(c context.Context, rng *rand.Rand, cw *chaosWallet) {
	signer, ok := cw.session(rng, nil)
	if !ok {
		return
	}
	var pay *chaosPayParam
	if len(cw.ext) > 0 && rng.IntN(2) == 0 {
		x := cw.ext[rng.IntN(len(cw.ext))]
		pay = &chaosPayParam{AccountID: x.ID, Amount: randomAmount(rng), Currency: randomCurrency(rng)}
	}
	op := "host operation"
	if pay != nil {
		op = "host payout"
	}
	_, leg, err := w.hostOperationBy(c, rng, cw, signer, pay, func(h heldPayout) {
		w.mu.Lock()
		w.held = append(w.held, h)
		w.mu.Unlock()
	})
	if leg == 1 {
		w.count("host operation leg 1", err)
		return
	}
	w.count("host operation leg 1", nil)
	w.count(op, err)
}

// hostOperationBy runs a host operation of cw stamped by signer, a payout
// when pay is set, and returns its op id, the leg it ended on (1 or 2) and
// that leg's error. A payout the policy holds is handed to held, in the
// transaction that holds it (which may roll back). The outcome of the
// retry is recorded for the checker.
func (w *chaosWorld) hostOperationBy(c context.Context, rng *rand.Rand, cw *chaosWallet, signer chaosSession, pay *chaosPayParam,
	held func(heldPayout)) (string, int, error) {
	p := chaosParams{OpID: w.newOpID(), Payout: pay}
	body, _ := json.Marshal(p)
	first := call("POST", "/chaos/operations", string(body))
	var ch *signedretry.Challenge
	err := w.do(c, rng, func(ctx context.Context, r chaosReplica) (err error) {
		_, _, ch, err = walletauth.Authorize(ctx, r.auth, walletauth.HostOperation[chaosParams, struct{}]{Type: chaosHostOp, AccountID: cw.ID, Parameters: p}, first)
		return err
	})
	if err != nil {
		return p.OpID, 1, err
	}
	retry, err := stamp(first, ch, signer.Key)
	if err != nil {
		panic(err)
	}
	w.mu.Lock()
	w.hostSigner[p.OpID] = signer.ID
	w.mu.Unlock()
	var a *signedretry.Authorization
	err = w.do(c, rng, func(ctx context.Context, r chaosReplica) (err error) {
		effect := func(ectx context.Context, tx storage.Tx, a *signedretry.Authorization, sp chaosParams) (struct{}, error) {
			if sp.Payout != nil {
				// The policy decides on the signer of the retry, after the
				// gate (inside payout) and in the same transaction, and
				// makes the payout (execute) only when it allows it.
				decide := func(execute policy.Execute) error {
					out, err := w.limits.Decide(ectx, tx, policy.Payout{ID: sp.OpID, CustomerID: cw.Customer, SourceID: cw.ID,
						DestinationID: sp.Payout.AccountID, Amount: sp.Payout.Amount, Currency: sp.Payout.Currency, Authorization: a}, execute)
					if err != nil || out.Held == nil {
						return err
					}
					held(heldPayout{approval: out.Held.ID, opID: sp.OpID, pay: *sp.Payout, signer: signer})
					return nil // held: it executes on its approval
				}
				if err := payout(ectx, tx, r.own, sp.OpID, sp.Payout, decide); err != nil {
					return struct{}{}, err
				}
			}
			return struct{}{}, appendEvent(ectx, tx, eventHostOp, cw.ID, map[string]string{"opId": sp.OpID})
		}
		_, a, _, err = walletauth.Authorize(ctx, r.auth, walletauth.HostOperation[chaosParams, struct{}]{Type: chaosHostOp, AccountID: cw.ID, Effect: effect}, retry)
		return err
	})
	o := outcome(err)
	w.mu.Lock()
	w.hostResult[p.OpID] = o
	w.mu.Unlock()
	if o == "ok" && a.SessionID != signer.ID {
		w.violate(kindEventData, cw.ID, "host operation %s stamped by %s answered signer %s", p.OpID, signer.ID, a.SessionID)
	}
	return p.OpID, 2, err
}

func randomAmount(rng *rand.Rand) int64 {
	return []int64{chaosThreshold / 2, chaosThreshold * 2, chaosMaximum * 2}[rng.IntN(3)]
}

func randomCurrency(rng *rand.Rand) string {
	switch n := rng.IntN(10); {
	case n < 6:
		return "USDC"
	case n < 9:
		return "usdc"
	default:
		return "EUR"
	}
}

// payout decides the gate in tx and records the payout on the external
// account, as a host that debits in the same database does. Inside a host
// transaction it also writes the host's ledger debit through
// postgres.HostTx, in the same transaction as the gate and the event.
// decide, when set, is the payout policy: it makes the payout through the
// Execute it is handed, which the policy calls only for a payout it
// allows.
func payout(c context.Context, tx storage.Tx, own *ownership.Service, opID string, p *chaosPayParam, decide func(policy.Execute) error) error {
	d, err := own.CheckPayoutIn(c, tx, ownership.Payout{AccountID: p.AccountID, Amount: p.Amount, Currency: p.Currency})
	if err != nil {
		return err
	}
	record := func(c context.Context, tx storage.Tx, _ *policy.Allowed) error {
		return recordPayout(c, tx, opID, p, &d.Account)
	}
	if decide != nil {
		return decide(record)
	}
	return record(c, tx, nil)
}

// recordPayout writes the payout the gate allowed to a: the host's ledger
// debit inside a host transaction, and the test's payout event.
func recordPayout(c context.Context, tx storage.Tx, opID string, p *chaosPayParam, a *storage.ExternalAccount) error {
	data := chaosPayoutData{OpID: opID, Amount: p.Amount, Currency: p.Currency, Address: a.Address, Status: string(a.Status)}
	if ledger := chaosLedger(c); ledger != "" {
		host, err := postgres.HostTx(c, tx)
		if err != nil {
			return err
		}
		data.Ledger = true
		if _, err := host.Exec(c, "INSERT INTO "+ledger+" (op_id, account_id, amount) VALUES ($1, $2, $3)",
			opID, p.AccountID, p.Amount); err != nil {
			return err
		}
	}
	return appendEvent(c, tx, eventPayout, p.AccountID, data)
}

func appendEvent(c context.Context, tx storage.Tx, typ, subject string, data any) error {
	e, err := storage.NewEvent(nil, typ, subject, data, time.Now())
	if err != nil {
		return err
	}
	return tx.Outbox().Append(c, &e)
}

// heldPayout is a payout the policy held for approval (its transaction
// may not have committed: approving an unknown one is 404).
type heldPayout struct {
	approval, opID string
	pay            chaosPayParam
	signer         chaosSession // the session that signed the payout
}

// approvePayout approves a held payout as the risk desk and, when the
// policy then allows it, executes it in the same transaction through the
// gate, as the host that held it would have.
func (w *chaosWorld) approvePayout(c context.Context, rng *rand.Rand) {
	w.mu.Lock()
	if len(w.held) == 0 {
		w.mu.Unlock()
		return
	}
	h := w.held[rng.IntN(len(w.held))]
	w.mu.Unlock()
	err := w.do(c, rng, func(ctx context.Context, r chaosReplica) error {
		return r.st.Atomic(ctx, func(tx storage.Tx) error {
			_, _, err := w.limits.Approve(ctx, tx, h.approval, policy.Approver{Operator: chaosRiskDesk},
				func(ctx context.Context, tx storage.Tx, _ *policy.Allowed) error {
					return payout(ctx, tx, r.own, h.opID, &h.pay, nil)
				})
			return err
		})
	})
	w.count("approve payout", err)
}

func (w *chaosWorld) directPayout(c context.Context, rng *rand.Rand, cw *chaosWallet) {
	if len(cw.ext) == 0 {
		return
	}
	x := cw.ext[rng.IntN(len(cw.ext))]
	p := &chaosPayParam{AccountID: x.ID, Amount: randomAmount(rng), Currency: randomCurrency(rng)}
	id := w.newOpID()
	err := w.do(c, rng, func(ctx context.Context, r chaosReplica) error {
		return r.st.Atomic(ctx, func(tx storage.Tx) error { return payout(ctx, tx, r.own, id, p, nil) })
	})
	w.count("payout", err)
}

func (w *chaosWorld) startChallenge(c context.Context, rng *rand.Rand, x *chaosExternal) {
	var ch *ownership.Challenge
	err := w.do(c, rng, func(ctx context.Context, r chaosReplica) (err error) {
		ch, err = r.own.StartChallenge(ctx, x.ID, ownership.MethodWalletSignature, ownership.CustomerTree)
		return err
	})
	if w.count("ownership challenge", err) != "ok" {
		return
	}
	x.mu.Lock()
	x.message = ch.MessageToSign
	x.mu.Unlock()
}

// verifyOwnership proves the address the latest challenge message names,
// signed by that address's key, as a wallet does.
func (w *chaosWorld) verifyOwnership(c context.Context, rng *rand.Rand, x *chaosExternal) {
	x.mu.Lock()
	msg := x.message
	x.mu.Unlock()
	addr := ""
	for _, line := range strings.Split(msg, "\n") {
		if a, ok := strings.CutPrefix(line, "Address: "); ok {
			addr = a
		}
	}
	key := x.keys[addr]
	if key == nil {
		return
	}
	w.mu.Lock()
	w.proofs[[2]string{x.ID, addr}]++
	w.mu.Unlock()
	var out *storage.ExternalAccount
	err := w.do(c, rng, func(ctx context.Context, r chaosReplica) (err error) {
		out, err = r.own.Verify(ctx, x.ID, ownership.VerifyRequest{Signature: evmSignText(key, msg)}, ownership.CustomerTree)
		return err
	})
	if w.count("ownership verify", err) != "ok" {
		return
	}
	if out.Address != addr || out.Status != storage.StatusActive {
		w.violate(kindProofOther, x.ID, "a proof of %s answered 200 with %+v", addr, out)
	}
}

// changeAddress is the host changing the account's address: the account
// needs a new proof (PENDING_OWNERSHIP_VERIFICATION), recorded with the
// host's own event.
func (w *chaosWorld) changeAddress(c context.Context, rng *rand.Rand, x *chaosExternal) {
	w.count("address change", w.moveAddress(c, rng, x))
}

// proveWhileMoving proves the address of a fresh challenge while the host
// moves the account to its other address: the proof may activate the
// account only at the address it proves.
func (w *chaosWorld) proveWhileMoving(c context.Context, rng *rand.Rand, x *chaosExternal) {
	if err := w.moveAddress(c, rng, x); w.count("address change", err) != "ok" {
		return
	}
	w.startChallenge(c, rng, x)
	r1, r2 := rand.New(rand.NewPCG(rng.Uint64(), 1)), rand.New(rand.NewPCG(rng.Uint64(), 2))
	together(
		func() error { w.verifyOwnership(c, r1, x); return nil },
		func() error {
			time.Sleep(time.Duration(r2.IntN(1000)) * time.Microsecond)
			w.changeAddress(c, r2, x)
			return nil
		})
}

func (w *chaosWorld) moveAddress(c context.Context, rng *rand.Rand, x *chaosExternal) error {
	return w.do(c, rng, func(ctx context.Context, r chaosReplica) error { return moveAddressIn(ctx, r.st, x) })
}

// moveAddressIn moves the account to its other address in one transaction
// of st.
func moveAddressIn(c context.Context, st storage.Store, x *chaosExternal) error {
	return st.Atomic(c, func(tx storage.Tx) error {
		a, err := tx.ExternalAccounts().Lock(c, x.ID)
		if err != nil {
			return err
		}
		switch a.Status {
		case storage.StatusActive, storage.StatusPendingOwnershipVerification, storage.StatusUnverified:
		default:
			return apierror.New(apierror.Conflict, "the account is %s", a.Status)
		}
		if a.Address == x.addrs[1] {
			a.Address = x.addrs[0]
		} else {
			a.Address = x.addrs[1]
		}
		a.Status, a.UpdatedAt = storage.StatusPendingOwnershipVerification, time.Now().UTC()
		if err := tx.ExternalAccounts().Update(c, &a); err != nil {
			return err
		}
		return appendEvent(c, tx, eventAddressChanged, a.ID, renderChaos(a))
	})
}

func (w *chaosWorld) review(c context.Context, rng *rand.Rand, x *chaosExternal) {
	to := storage.StatusUnderReview
	if rng.IntN(2) == 0 {
		to = storage.StatusPendingOwnershipVerification
	}
	err := w.do(c, rng, func(ctx context.Context, r chaosReplica) (err error) {
		_, err = r.own.SetStatus(ctx, x.ID, to)
		return err
	})
	w.count("status change", err)
}

// step runs one random operation on a random wallet.
func (w *chaosWorld) step(rng *rand.Rand) {
	c, cancel := w.opCtx(rng)
	defer cancel()
	cw := w.wallets[rng.IntN(len(w.wallets))]
	if rng.IntN(10) == 0 {
		w.resync(c, w.auth[rng.IntN(len(w.auth))], cw)
	}
	cw.mu.Lock()
	noSession := len(cw.sessions) == 0
	cw.mu.Unlock()
	if noSession {
		w.loginOTP(c, rng, cw)
		w.loginOAuth(c, rng, cw)
		return
	}
	var x *chaosExternal
	if len(cw.ext) > 0 {
		x = cw.ext[rng.IntN(len(cw.ext))]
	}
	switch n := rng.IntN(100); {
	case n < 7:
		w.loginOTP(c, rng, cw)
	case n < 10:
		w.loginOAuth(c, rng, cw)
	case n < 14:
		w.wrongOTP(c, rng, cw)
	case n < 20:
		w.guessTarget(c, rng)
	case n < 27:
		w.addCredential(c, rng, cw)
	case n < 31:
		w.revokeCredential(c, rng, cw)
	case n < 36:
		w.crossRevoke(c, rng, cw)
	case n < 40:
		w.revokeWhileGuessing(c, rng, cw)
	case n < 47:
		w.refreshSession(c, rng, cw)
	case n < 53:
		w.revokeSession(c, rng, cw)
	case n < 58:
		w.updateEmail(c, rng, cw)
	case n < 69:
		w.hostOperation(c, rng, cw)
	case n < 71:
		w.directPayout(c, rng, cw)
	case n < 73:
		w.approvePayout(c, rng)
	case n < 78:
		w.startChallenge(c, rng, x)
	case n < 84:
		w.verifyOwnership(c, rng, x)
	case n < 88:
		w.changeAddress(c, rng, x)
	case n < 98:
		w.proveWhileMoving(c, rng, cw.ext[0])
	default:
		w.review(c, rng, x)
	}
}

// guessTarget sends wrong codes for the target wallet's credential, and
// sometimes logs in with the right one, as an attacker and its owner do.
func (w *chaosWorld) guessTarget(c context.Context, rng *rand.Rand) {
	if rng.IntN(8) == 0 {
		w.loginOTP(c, rng, w.target)
		return
	}
	w.wrongOTP(c, rng, w.target)
}

// run runs the workers for d, and the watcher of email addresses.
func (w *chaosWorld) run(d time.Duration, seed uint64) {
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for i := range chaosServices * chaosWorkersPerSvc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(i)))
			for n := 0; n < chaosMaxOpsPerWorker && time.Now().Before(deadline); n++ {
				w.step(rng)
			}
		}()
	}
	if w.attacker != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, 1<<33))
			for n := 0; n < chaosMaxOpsPerWorker && time.Now().Before(deadline); n++ {
				w.attacker.step(rng)
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for n := 0; n < 100_000 && time.Now().Before(deadline); n++ {
			w.watchEmails()
			time.Sleep(20 * time.Millisecond)
		}
	}()
	wg.Wait()
}

// watchEmails reports an address tied to EMAIL_OTP credentials of two
// customers, read in one statement per address.
func (w *chaosWorld) watchEmails() {
	ctx := w.ctx
	customers := map[string]string{}
	for _, cw := range w.wallets {
		customers[cw.ID] = cw.Customer
	}
	for _, email := range w.emails {
		var creds []storage.Credential
		err := w.check.Atomic(ctx, func(tx storage.Tx) error {
			var err error
			creds, err = tx.Credentials().ListEmailOTPByEmail(ctx, "", email)
			return err
		})
		if err != nil {
			continue
		}
		owners := map[string][]string{}
		for _, c := range creds {
			owners[customers[c.AccountID]] = append(owners[customers[c.AccountID]], c.ID)
		}
		if len(owners) > 1 {
			key := fmt.Sprint(owners)
			w.mu.Lock()
			seen := slices.ContainsFunc(w.client, func(v violation) bool { return v.Kind == kindTwoCustomers && v.Detail == key })
			if !seen {
				w.client = append(w.client, violation{Kind: kindTwoCustomers, Account: email, Detail: key})
			}
			w.mu.Unlock()
		}
	}
}

// verdict replays every account and checks the clients' answers; it
// returns the violations found.
func (w *chaosWorld) verdict(t *testing.T) []violation {
	ctx := t.Context()
	w.watchEmails()
	out := slices.Clone(w.client)
	replays := map[string]*replay{}
	foreign := func(e *storage.Event) (string, bool) {
		if e.Type != eventHostOp {
			return "", false
		}
		var env struct {
			Data struct {
				OpID string `json:"opId"`
			} `json:"data"`
		}
		if json.Unmarshal(e.Payload, &env) != nil {
			return "", false
		}
		return w.hostSigner[env.Data.OpID], true
	}
	hostOps := map[string]bool{}
	rules := &assuranceRules{Period: chaosSecurityPeriod}
	if w.checkPool != nil {
		rules.Resolution = time.Microsecond
	}
	for _, cw := range w.all() {
		r, err := replayOutboxWith(ctx, w.check, cw.ID, foreign, rules)
		if err != nil {
			t.Fatal(err)
		}
		replays[cw.ID] = r
		out = append(out, r.violations...)
		diff, err := r.compareStore(ctx, w.check, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, diff...)
		for _, e := range r.Events {
			if e.Type == eventHostOp {
				var env struct {
					Data struct {
						OpID string `json:"opId"`
					} `json:"data"`
				}
				_ = json.Unmarshal(e.Payload, &env)
				hostOps[env.Data.OpID] = true
			}
		}
	}
	for _, x := range w.expects {
		if !x.Holds(replays[x.Account]) {
			out = append(out, violation{Kind: kindLost, Account: x.Account, Detail: x.What})
		}
	}
	for id, o := range w.hostResult {
		switch {
		case o == "ok" && !hostOps[id]:
			out = append(out, violation{Kind: kindLost, Detail: "host operation " + id})
		case o == "refused" && hostOps[id]:
			out = append(out, violation{Kind: kindRefusedCommitted, Detail: "host operation " + id + " answered 4xx and committed"})
		}
	}
	for bundle, n := range w.compared {
		if n > walletauth.DefaultOTPMaxAttempts {
			out = append(out, violation{Kind: kindIssuanceAttempts, Detail: fmt.Sprintf("%d wrong codes compared for one issuance; its limit is %d",
				n, walletauth.DefaultOTPMaxAttempts), Account: bundle[:min(len(bundle), 24)] + "..."})
		}
	}
	for cred, n := range w.wrong {
		if n > chaosDailyGuessBudget {
			out = append(out, violation{Kind: kindGuessBudget, Account: cred,
				Detail: fmt.Sprintf("%d wrong codes compared in one run; a day's budget for 6 digits at 1e-4 is %d", n, chaosDailyGuessBudget)})
		}
	}
	for _, cw := range append(slices.Clone(w.wallets), w.victim) {
		for _, x := range cw.ext {
			vs, err := w.checkExternal(x)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, vs...)
		}
	}
	vs, err := w.checkLedger(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, vs...)
	return append(out, w.checkPolicy(replays)...)
}

// learnCredential remembers a credential's type for the checker, which
// judges step-ups after the credential may have been revoked.
func (w *chaosWorld) learnCredential(id string, typ storage.CredentialType) {
	w.credMu.Lock()
	defer w.credMu.Unlock()
	if w.credTypes == nil {
		w.credTypes = map[string]storage.CredentialType{}
	}
	w.credTypes[id] = typ
}

// checkPolicy replays the policy's decisions from the wallets' outboxes
// (replays, by wallet): a customer's allowed payouts stay within the day's
// window (the run is shorter than a day), every one from the step-up
// amount was signed by a session of a PASSKEY credential that carried a
// passkey's assurance then, every held one was approved by the risk desk
// or by a credential independent of its signer, none is counted twice,
// and every host payout that committed (a CHAOS.PAYOUT of a host
// operation) was decided by the policy.
func (w *chaosWorld) checkPolicy(replays map[string]*replay) []violation {
	var out []violation
	credTypes := map[string]storage.CredentialType{}
	for _, cw := range w.all() {
		if cw == nil {
			continue
		}
		cw.mu.Lock()
		for id, c := range cw.creds {
			credTypes[id] = c.Type
		}
		cw.mu.Unlock()
	}
	w.credMu.Lock()
	maps.Copy(credTypes, w.credTypes)
	w.credMu.Unlock()
	decided := map[string]int{}
	perCustomer := map[string]int64{}
	for _, cw := range w.all() {
		if cw == nil {
			continue
		}
		r := replays[cw.ID]
		out = append(out, judgeAssurance(r, chaosStepUp, storage.Passkey)...)
		requested := map[string]bool{} // approvals held so far in the wallet's commit order
		for _, e := range r.Events {
			if e.Type != policy.EventDecided && e.Type != policy.EventApprovalRequested {
				continue
			}
			var env struct {
				Data struct {
					PayoutID        string   `json:"payoutId"`
					CustomerID      string   `json:"customerId"`
					ReferenceAmount int64    `json:"referenceAmount"`
					Rule            string   `json:"rule"`
					CredentialID    string   `json:"credentialId"`
					ApprovalID      string   `json:"approvalId"`
					Approvers       []string `json:"approvers"`
				} `json:"data"`
			}
			if err := json.Unmarshal(e.Payload, &env); err != nil {
				out = append(out, violation{Kind: kindEventData, Account: cw.ID, Seq: e.Seq, Detail: err.Error()})
				continue
			}
			d := env.Data
			if e.Type == policy.EventApprovalRequested {
				requested[d.ApprovalID] = true
				continue
			}
			// Held amounts below the step-up's pass only with their approval,
			// given after they were held, by the risk desk or a credential
			// of the wallet (whose independence judgeAssurance judges).
			approver := func(p string) bool { return p == "operator:"+chaosRiskDesk || strings.HasPrefix(p, "credential:") }
			if d.ReferenceAmount >= chaosApproval && d.ReferenceAmount < chaosStepUp &&
				(d.ApprovalID == "" || !requested[d.ApprovalID] || !slices.ContainsFunc(d.Approvers, approver)) {
				out = append(out, violation{Kind: kindUnapproved, Account: cw.ID, Seq: e.Seq,
					Detail: fmt.Sprintf("%d allowed by rule %s with approval %q by %v", d.ReferenceAmount, d.Rule, d.ApprovalID, d.Approvers)})
			}
			decided[d.PayoutID]++
			perCustomer[d.CustomerID] += d.ReferenceAmount
			if perCustomer[d.CustomerID] > chaosWindow {
				out = append(out, violation{Kind: kindWindow, Account: cw.ID, Seq: e.Seq,
					Detail: fmt.Sprintf("customer %s allowed %d in a run, the window holds %d", d.CustomerID, perCustomer[d.CustomerID], chaosWindow)})
			}
			if d.ReferenceAmount >= chaosStepUp && credTypes[d.CredentialID] != storage.Passkey {
				out = append(out, violation{Kind: kindStepUp, Account: cw.ID, Seq: e.Seq,
					Detail: fmt.Sprintf("%d allowed by rule %s, signed by credential %s (%s)", d.ReferenceAmount, d.Rule, d.CredentialID, credTypes[d.CredentialID])})
			}
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for id, n := range decided {
		if n > 1 {
			out = append(out, violation{Kind: kindPolicyTwice, Detail: fmt.Sprintf("payout %s decided %d times", id, n)})
		}
	}
	for id := range w.payouts {
		if _, host := w.hostSigner[id]; host && decided[id] == 0 {
			out = append(out, violation{Kind: kindPolicyMissing, Detail: "host payout " + id})
		}
	}
	return out
}

// checkLedger compares the host's ledger with walletgate's payouts: each
// payout committed at most once, a debit for every payout made in a host
// transaction and none for a payout that did not commit.
func (w *chaosWorld) checkLedger(ctx context.Context) ([]violation, error) {
	var out []violation
	for id, n := range w.payouts {
		if n > 1 {
			out = append(out, violation{Kind: kindPaidTwice, Detail: fmt.Sprintf("payout %s has %d CHAOS.PAYOUT events", id, n)})
		}
	}
	if w.checkPool == nil {
		return out, nil
	}
	rows, err := w.checkPool.Query(ctx, "SELECT op_id, count(*) FROM "+w.ledger+" GROUP BY op_id")
	if err != nil {
		return nil, err
	}
	debited := map[string]int{}
	for rows.Next() {
		var id string
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			return nil, err
		}
		debited[id] = n
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for id, n := range debited {
		switch {
		case n > 1:
			out = append(out, violation{Kind: kindPaidTwice, Detail: fmt.Sprintf("payout %s debited %d times", id, n)})
		case !w.debits[id]:
			out = append(out, violation{Kind: kindDebitNoCommit, Detail: "payout " + id + " debited, and no payout of it committed"})
		}
	}
	for id := range w.debits {
		if debited[id] == 0 {
			out = append(out, violation{Kind: kindCommitNoDebit, Detail: "payout " + id + " committed in a host transaction without its debit"})
		}
	}
	return out, nil
}

// checkExternal replays an external account's outbox: its status and
// address from STATUS_UPDATED and the host's address changes, every payout
// against the gate's rules at its point in commit order, and every
// activation against the proofs the clients submitted.
func (w *chaosWorld) checkExternal(x *chaosExternal) ([]violation, error) {
	ctx := w.ctx
	events, err := committedEvents(ctx, w.check, x.ID)
	if err != nil {
		return nil, err
	}
	var out []violation
	bad := func(kind string, seq int64, format string, args ...any) {
		out = append(out, violation{Kind: kind, Account: x.ID, Seq: seq, Detail: fmt.Sprintf(format, args...)})
	}
	var cur chaosAccount
	proven := false
	activations := map[string]int{}
	for i, e := range events {
		var env struct {
			Data json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(e.Payload, &env); err != nil {
			return nil, err
		}
		switch e.Type {
		case ownership.EventStatusUpdated, eventAddressChanged:
			var a chaosAccount
			if err := json.Unmarshal(env.Data, &a); err != nil {
				return nil, err
			}
			if i > 0 && e.Type == ownership.EventStatusUpdated && a.Status == string(storage.StatusActive) {
				activations[a.Address]++
				w.mu.Lock()
				proofs := w.proofs[[2]string{x.ID, a.Address}]
				w.mu.Unlock()
				if activations[a.Address] > proofs {
					bad(kindProofOther, e.Seq, "ACTIVE at %s (activation %d of that address) with %d proofs of it submitted", a.Address,
						activations[a.Address], proofs)
				}
				proven = true
			} else {
				proven = false
			}
			cur = a
		case eventPayout:
			var p chaosPayoutData
			if err := json.Unmarshal(env.Data, &p); err != nil {
				return nil, err
			}
			// The test's own view of the gate: a wallet type (not a fiat
			// *_ACCOUNT), not THIRD_PARTY, is self custody unless a known
			// custodian holds it; an unknown type or custodian proves
			// nothing.
			unknown := !slices.Contains(chaosKnownTypes, cur.AccountType) || cur.VaspName != "" && !slices.Contains(chaosKnownVASPs, cur.VaspName)
			gated := !strings.HasSuffix(strings.ToUpper(cur.AccountType), "_ACCOUNT") && cur.OwnershipType != ownership.ThirdParty &&
				(cur.VaspName == "" || unknown)
			if p.Currency != cur.Currency {
				bad(kindCurrency, e.Seq, "%d %s paid to an account in %s", p.Amount, p.Currency, cur.Currency)
			}
			if strings.EqualFold(p.Currency, "USDC") && p.Amount > chaosMaximum {
				bad(kindMaximum, e.Seq, "%d %s paid; the maximum is %d USDC", p.Amount, p.Currency, chaosMaximum)
			}
			refused := ""
			switch storage.AccountStatus(cur.Status) {
			case storage.StatusActive:
				if gated && !proven && p.Amount >= chaosThreshold {
					refused = "ACTIVE with no proof"
				}
			case storage.StatusPendingOwnershipVerification:
				if gated && p.Amount >= chaosThreshold {
					refused = fmt.Sprintf("PENDING_OWNERSHIP_VERIFICATION (threshold %d)", chaosThreshold)
				}
			default:
				refused = cur.Status
			}
			switch {
			case refused == "":
			case unknown:
				bad(kindUnproven, e.Seq, "%d %s paid to %s (type %q, vasp %q) while %s", p.Amount, p.Currency,
					cur.Address, cur.AccountType, cur.VaspName, refused)
			default:
				bad(kindGate, e.Seq, "%d %s paid while %s", p.Amount, p.Currency, refused)
			}
			if p.Address != cur.Address {
				bad(kindStalePayout, e.Seq, "paid to %s while the account's address was %s", p.Address, cur.Address)
			}
			w.mu.Lock()
			w.payouts[p.OpID]++
			if p.Ledger {
				w.debits[p.OpID] = true
			}
			w.mu.Unlock()
		}
	}
	var stored storage.ExternalAccount
	err = w.check.Atomic(ctx, func(tx storage.Tx) error {
		var err error
		stored, err = tx.ExternalAccounts().Get(ctx, x.ID)
		return err
	})
	if err != nil {
		return nil, err
	}
	if string(stored.Status) != cur.Status || stored.Address != cur.Address {
		bad(kindStore, 0, "stored %s at %s, the events say %s at %s", stored.Status, stored.Address, cur.Status, cur.Address)
	}
	return out, nil
}

// summarize fails t with the violations grouped by kind (three of each, or
// all with -v) and logs the figures of the run.
func (w *chaosWorld) summarize(t *testing.T, d time.Duration, vs []violation) {
	var names []string
	total, attacks := [3]int{}, [3]int{}
	for name, c := range w.ops {
		names = append(names, name)
		for i := range c {
			total[i] += c[i]
			if strings.HasPrefix(name, chaosAttackPrefix) {
				attacks[i] += c[i]
			}
		}
	}
	sort.Strings(names)
	var b strings.Builder
	fmt.Fprintf(&b, "chaos run of %s: %d operations (%d ok, %d refused, %d maybe), %d connections killed\n",
		d, total[0]+total[1]+total[2], total[0], total[1], total[2], w.kills.Load())
	fmt.Fprintf(&b, "  of them the attacker's: %d (%d ok, %d refused, %d maybe)\n",
		attacks[0]+attacks[1]+attacks[2], attacks[0], attacks[1], attacks[2])
	for _, name := range names {
		c := w.ops[name]
		fmt.Fprintf(&b, "  %-40s ok %6d  refused %6d  maybe %6d\n", name, c[0], c[1], c[2])
	}
	if w.attacker != nil {
		w.attacker.report(&b, testing.Verbose())
	}
	if h := &w.hostStats; h.calls.Load() > 0 {
		fmt.Fprintf(&b, "  host calls %d: %d rolled back after an error, %d after a success, %d committed after an error, "+
			"%d commits failed, %d reruns, %d begun at another level than the store's (%d refused), %d refused as standalone and run outside\n",
			h.calls.Load(), h.rolledBackErr.Load(), h.rolledBackOK.Load(), h.committedErr.Load(), h.commitFailed.Load(),
			h.reruns.Load(), h.offLevel.Load(), h.isolation.Load(), h.standalone.Load())
	}
	t.Log(b.String())
	if len(vs) == 0 {
		return
	}
	byKind := map[string][]violation{}
	var kinds []string
	for _, v := range vs {
		if byKind[v.Kind] == nil {
			kinds = append(kinds, v.Kind)
		}
		byKind[v.Kind] = append(byKind[v.Kind], v)
	}
	sort.Strings(kinds)
	b.Reset()
	fmt.Fprintf(&b, "%d violations:\n", len(vs))
	for _, k := range kinds {
		fmt.Fprintf(&b, "  %4d  %s\n", len(byKind[k]), k)
	}
	for _, k := range kinds {
		for i, v := range byKind[k] {
			if i == 3 && !testing.Verbose() {
				fmt.Fprintf(&b, "    ... and %d more\n", len(byKind[k])-3)
				break
			}
			fmt.Fprintf(&b, "    %s\n", v)
		}
	}
	t.Error(b.String())
}

// TestChaosPostgres runs the chaos test on 4 pools sharing one schema, with
// backends of the test's application_name terminated at random; half the
// calls are a host's, in host transactions (see chaosWorld.do).
func TestChaosPostgres(t *testing.T) { chaosPostgres(t, postgres.Config{}) }

// TestChaosPostgresSerializable runs it on stores configured SERIALIZABLE,
// whose host transactions run SERIALIZABLE too, for half the time.
func TestChaosPostgresSerializable(t *testing.T) {
	chaosPostgres(t, postgres.Config{Isolation: pgx.Serializable, MaxRetries: 50})
}

// chaosPostgres runs the chaos test on stores configured with cfg (its
// Schema is the run's own).
func chaosPostgres(t *testing.T, cfg postgres.Config) {
	ctx := t.Context()
	dsn := pgtest.DSN(t)
	var nb [6]byte
	if _, err := crand.Read(nb[:]); err != nil {
		t.Fatal(err)
	}
	app := "wgchaos_" + hex.EncodeToString(nb[:])
	open := func(name string, conns int32) *pgxpool.Pool {
		cfg, err := pgxpool.ParseConfig(dsn)
		if err != nil {
			t.Fatal(err)
		}
		cfg.MaxConns = conns
		cfg.ConnConfig.RuntimeParams["application_name"] = name
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		return pool
	}
	checkPool := open(app+"_check", 4)
	schema := app
	t.Cleanup(func() {
		if _, err := checkPool.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
		}
	})
	cfg.Schema = schema
	if _, err := postgres.Migrate(ctx, checkPool, cfg); err != nil {
		t.Fatal(err)
	}
	check, err := postgres.New(checkPool, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var pools []*pgxpool.Pool
	var stores []storage.Store
	for range chaosServices {
		p := open(app, chaosConnsPerPool)
		s, err := postgres.New(p, cfg)
		if err != nil {
			t.Fatal(err)
		}
		pools, stores = append(pools, p), append(stores, s)
	}
	w := newChaosWorld(t, stores, check, pools, checkPool)
	w.level = cfg.Isolation
	if w.level == "" {
		w.level = pgx.ReadCommitted
	}
	d := chaosRunTime(t, false)
	if cfg.Isolation == pgx.Serializable {
		d /= 2
	}
	seed := rand.Uint64()
	t.Logf("seed %d, application_name %s", seed, app)

	// The killer terminates a few backends of the test's own
	// application_name at random intervals, never anyone else's.
	stop := make(chan struct{})
	killed := make(chan struct{})
	go func() {
		defer close(killed)
		rng := rand.New(rand.NewPCG(seed, 1<<32))
		for n := 0; n < 100_000; n++ {
			select {
			case <-stop:
				return
			case <-time.After(time.Duration(50+rng.IntN(450)) * time.Millisecond):
			}
			var k int64
			err := checkPool.QueryRow(ctx, `SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity
				WHERE application_name = $1 AND pid <> pg_backend_pid() ORDER BY random() LIMIT $2) k`, app, 1+rng.IntN(2)).Scan(&k)
			if err == nil {
				w.kills.Add(k)
			}
		}
	}()
	w.run(d, seed)
	close(stop)
	<-killed
	// Close the services' pools so that no transaction of theirs is still
	// open on the server when the checker reads.
	for _, p := range pools {
		p.Close()
	}
	w.summarize(t, d, w.verdict(t))
}

// TestChaosMemory runs the chaos test on the memory store (4 services on
// one store), with deadlines and cancellations, under -race.
func TestChaosMemory(t *testing.T) {
	st := memory.New()
	stores := make([]storage.Store, chaosServices)
	for i := range stores {
		stores[i] = st
	}
	w := newChaosWorld(t, stores, st, nil, nil)
	d := chaosRunTime(t, true)
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	w.run(d, seed)
	w.summarize(t, d, w.verdict(t))
}

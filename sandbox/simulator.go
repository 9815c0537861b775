package sandbox

import (
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/operation"
	"github.com/walletgate/walletgate/ownership"
	"github.com/walletgate/walletgate/ownership/payout"
	"github.com/walletgate/walletgate/ownership/policy"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/idempotency"
	"github.com/walletgate/walletgate/storage/memory"
	"github.com/walletgate/walletgate/storage/sweep"
	"github.com/walletgate/walletgate/walletauth"
	"github.com/walletgate/walletgate/walletauth/oidc"
	"github.com/walletgate/walletgate/walletauth/passkey"
	"github.com/walletgate/walletgate/walletauth/secret"
)

// Defaults of [Config].
const (
	// DefaultBasePath is the version segment every route is served under.
	DefaultBasePath = "/2025-10-13"
	// DefaultClientID and DefaultClientSecret are the HTTP Basic platform
	// credentials of a simulator configured without its own.
	DefaultClientID     = "sandbox-client-id"
	DefaultClientSecret = "sandbox-client-secret"
	// DefaultWalletCurrency is the currency of every embedded wallet.
	DefaultWalletCurrency = "USDB"
	// DefaultUMADomain is the domain of the UMA addresses given to customers.
	DefaultUMADomain = "sandbox.walletgate.dev"
	// DefaultVerificationThreshold is the value, in US dollars, from which
	// a destination wallet still pending ownership verification blocks a
	// payout (see Config.VerificationThreshold).
	DefaultVerificationThreshold = 1000
	// DefaultQuoteTTL is how long a quote can be executed.
	DefaultQuoteTTL = 5 * time.Minute
	// MaxAmount is the largest amount, in smallest units, any money-movement
	// request accepts.
	MaxAmount int64 = 100_000_000_000
	// TransactionMaximumUSD is the single-transaction maximum of the
	// simulator's payout gate, in whole US dollars: in every currency, a
	// payout to an external account (transfer-out, quote execution, the
	// payment of a real-time funded quote) of more than this value at the
	// sandbox's fixed rates, rounded down to the smallest unit, is 400
	// TRANSACTION_SIZE_LIMIT_EXCEEDED ([Simulator.Currencies] lists the
	// amounts).
	TransactionMaximumUSD = 50_000
)

// Config configures a [Simulator]. The zero value is usable.
type Config struct {
	// Store holds external accounts, embedded wallets, credentials, sessions
	// and signed-retry requests; nil means a fresh memory store.
	Store storage.Store
	// Clock returns the current time; nil means time.Now. It is the
	// simulator's one source of the current time (timed outcomes, expiries,
	// the walletauth and ownership services, the payout policy,
	// Idempotency-Key records, the sweeper, the relay's due times), moved
	// forward by [Simulator.AdvanceClock]: the simulator's time is always
	// Clock() plus the sum of the advances. Every timed outcome is computed
	// from it when a record is read, so a test advances the simulator's
	// clock, moves this one, or runs in a testing/synctest bubble, instead
	// of sleeping.
	Clock func() time.Time
	// Rand supplies ids and keys; nil means crypto/rand.
	Rand io.Reader
	// BasePath prefixes every route; empty means DefaultBasePath. It is
	// cleaned to start with "/" and not end with one.
	BasePath string
	// ClientID and ClientSecret are the platform's HTTP Basic credentials;
	// empty means DefaultClientID and DefaultClientSecret.
	ClientID     string
	ClientSecret string
	// WalletCurrency is the currency the fund endpoint credits by default;
	// empty means DefaultWalletCurrency.
	WalletCurrency string
	// UMADomain is the domain of generated customer UMA addresses; empty
	// means DefaultUMADomain.
	UMADomain string
	// VerificationThreshold is the value, in whole US dollars, from which
	// a first-party self-custody wallet still pending ownership
	// verification receives no payout (400
	// EXTERNAL_ACCOUNT_VERIFICATION_REQUIRED). It is the same value in
	// every currency: each sandbox currency's threshold is this many
	// dollars at the sandbox's fixed rates, rounded down to its smallest
	// unit (1000 USD is 1000 USDC, 920 EUR, 17500 MXN, 0.01 BTC). Zero
	// means DefaultVerificationThreshold.
	VerificationThreshold int64
	// QuoteTTL is DefaultQuoteTTL when zero.
	QuoteTTL time.Duration
	// PayoutRules is the payout policy (package ownership/policy) that
	// decides every signed payout to an external account, transfer-out and
	// quote execution, on the signed retry, in the transaction that
	// consumes its request: rolling windows, step-up, new-destination
	// cool-off and blocking rules, as data. Amounts are valued in its
	// referenceCurrency, which must be a sandbox currency, at the
	// sandbox's fixed rates, rounded down. Nil means [DefaultPayoutRules]
	// (a daily limit of [DailyPayoutLimitUSD] per customer and two magic
	// amounts). New refuses rules that do not validate ([policy.New]).
	PayoutRules *policy.Rules
	// RelyingParty configures passkeys; the zero value means RP id
	// DefaultRPID with the origins http://localhost and
	// http://localhost:8089. The legacy assertion literal
	// "sandbox-valid-passkey-signature" is accepted.
	RelyingParty passkey.RelyingParty
	// OIDCIssuers are the OpenID issuers OAUTH credentials may come from;
	// empty means Google and Apple with audience DefaultOIDCAudience. ID
	// tokens may carry a dummy signature; every claim is still checked.
	OIDCIssuers []oidc.Issuer
	// Network is the network Bitcoin and Spark wallet addresses must belong
	// to in ownership proofs; the zero value is mainnet.
	Network ownership.Network
	// ContractWallets maps EVM account types to the verifier that proves
	// their wallets registered as contract accounts (EIP-1271 and
	// ERC-6492): each entry becomes its type's verifier, and still checks
	// the type's wallets without a chain id by EIP-191 alone. A contract
	// account is proven on its type's chain on Network only
	// (ownership.ContractChains: BASE_WALLET on 8453, ETHEREUM_WALLET on 1,
	// POLYGON_WALLET on 137, PLASMA_WALLET on 9745 on mainnet), which
	// accountInfo.contractAccount.chainId must name. Typically an
	// evmcontract.Verifier on the host's own nodes or on simulated chains
	// that run under those chain ids, so a test suite runs contract-wallet
	// proofs against its own chain. New refuses a nil entry, and (through
	// ownership.New) a type that has no chain on Network or whose chain its
	// verifier does not serve. A type without an entry has no contract
	// accounts: one is refused at creation (400 on
	// accountInfo.contractAccount.chainId).
	ContractWallets map[string]ownership.ContractVerifier
	// Sealer and CodeMACKey are the at-rest keys of the walletauth service
	// (walletauth.Keys.Sealer and CodeMACKey): the sealed OTP target keys
	// and the code MACs in the Store are made with them. Nil means keys
	// generated for this process, which suits a memory store; simulators that
	// share a database, or one restarted on it while logins are in progress,
	// need the same keys (examples/server takes them from the environment).
	Sealer     secret.Sealer
	CodeMACKey []byte
	// SigningKey is walletauth.Keys.SigningKey, the key that signs OTP and
	// export bundles, which clients pin. Nil means a key generated for this
	// process; simulators sharing a database with clients that pin it need
	// the same key.
	SigningKey *ecdsa.PrivateKey
	// ClientHeldKeys is walletauth.Config.ClientHeldKeys: a compressed
	// clientPublicKey becomes the session key itself and no
	// encryptedSessionSigningKey is returned. By default the server
	// generates each session key and seals it to clientPublicKey.
	ClientHeldKeys bool
	// WebhookURL, when set, is where the simulator delivers the events of
	// its store (every external-account status change, LIVENESS outcomes
	// included, and the walletauth events) as signed webhooks, through
	// storage/relay, and where POST /sandbox/webhooks/test sends its TEST
	// event. Empty: events stay in the store's outbox.
	WebhookURL string
	// WebhookKey signs the webhooks (P-256); nil means a key generated for
	// this process ([Simulator.WebhookPublicKeyPEM] gives the public half).
	WebhookKey *ecdsa.PrivateKey
	// WebhookClient sends the webhooks; nil means a client with
	// webhook.DefaultTimeout.
	WebhookClient *http.Client
	// Telemetry receives the records of the simulator and the records,
	// spans and metrics of every service it builds (walletauth, ownership,
	// signed retries, and the storage components that take one); the zero
	// value reports nothing. A 5xx answer's cause is logged at
	// slog.LevelError with the request id, refusals of authentication at
	// slog.LevelWarn with the code. Spans and metric attributes carry
	// operation names, outcomes and error codes only; nothing secret and
	// no request body is reported.
	Telemetry operation.Telemetry
}

// Simulator is the service's sandbox in process: customers, verifications,
// embedded wallets and their balances, external accounts, transfers, quotes,
// transactions and cards, with the sandbox magic values of the package doc.
//
// Everything it keeps lives in the Store: the library's records (external
// accounts, internal accounts, credentials, sessions, signed-retry
// requests, payout approvals) and the simulator's own (customers,
// balances, quotes, transactions, cards; [storage.Records]), each written
// in the transaction of the operation that decides it. Simulators on one
// store (replicas on one PostgreSQL database) are one sandbox, and none
// holds a lock of its own. A Simulator is safe for concurrent use.
type Simulator struct {
	// cfg is the Config given to New with every default filled in, once;
	// its Clock is clock.now.
	cfg Config
	// clock is the simulator's time: Config.Clock moved by AdvanceClock.
	clock *clock
	auth  *walletauth.Service
	own   *ownership.Service
	// gate is the payout gate's policy, the ownership service's too.
	gate *ownership.PayoutPolicy
	// limits is the payout policy of Config.PayoutRules.
	limits *policy.Policy
	// payouts runs every payout of a wallet: transfers out, quote
	// executions, approvals.
	payouts *payout.Service
	pk      *passkey.Verifier
	oidc    *oidc.Verifier
	// idem keeps the Idempotency-Key records of every route that takes
	// the header in the Store (see keyed).
	idem *idempotency.Once

	hooks webhooks
	// stopSweep ends the sweeper of expired records and waits for it.
	stopSweep func()

	mux     *http.ServeMux
	handler http.Handler
}

// New returns a simulator for cfg, with a walletauth service in sandbox mode
// on the same store. It fails, without starting anything, when cfg names a
// wallet currency the sandbox does not have, a verification threshold beyond
// a currency's range, a base path that is no valid route prefix,
// PayoutRules that do not validate or count in a currency the sandbox does
// not have, or a ContractWallets entry that is nil, under a type without a
// contract-account chain on Network, or whose verifier does not serve its
// type's chain.
func New(cfg Config) (*Simulator, error) {
	cfg, err := cfg.normalize()
	if err != nil {
		return nil, err
	}
	// The one reading of time: from here on cfg.Clock is the host's clock
	// moved by the offset of AdvanceClock, and every service built below,
	// like the simulator itself, reads it and nothing else.
	clk := &clock{base: cfg.Clock}
	cfg.Clock = clk.now
	pk, ov, err := newWalletServices(&cfg)
	if err != nil {
		return nil, err
	}
	auth, err := walletauth.New(walletauth.Config{Store: cfg.Store, Clock: cfg.Clock, Rand: cfg.Rand, Sandbox: true, Guard: platformWallet,
		Passkeys: pk, OIDC: ov, Keys: walletauth.Keys{SigningKey: cfg.SigningKey, Sealer: cfg.Sealer, CodeMACKey: cfg.CodeMACKey},
		OrganizationID: SandboxOrganizationID, WalletSecrets: walletSecrets{}, ClientHeldKeys: cfg.ClientHeldKeys,
		Telemetry: cfg.Telemetry})
	if err != nil {
		ov.Close()
		return nil, err
	}
	s := &Simulator{cfg: cfg, clock: clk, auth: auth, pk: pk, oidc: ov}
	// A store other simulators moved the clock of starts at their time.
	if err := s.syncClock(context.Background()); err != nil {
		ov.Close()
		return nil, err
	}
	// Reservation tokens come from crypto/rand, not cfg.Rand, so keys do not
	// shift a seeded simulator's ids.
	if s.idem, err = idempotency.New(idempotency.Config{Store: cfg.Store, Clock: cfg.Clock, Keep: keepKeyed, Telemetry: cfg.Telemetry}); err != nil {
		ov.Close()
		return nil, err
	}
	gate, err := s.payoutPolicy()
	if err != nil {
		ov.Close()
		return nil, err
	}
	s.gate = &gate
	if s.limits, err = newPayoutLimits(&cfg); err != nil {
		ov.Close()
		return nil, err
	}
	if s.own, err = s.newOwnership(); err != nil {
		ov.Close()
		return nil, err
	}
	if s.payouts, err = payout.New(payout.Config{Store: cfg.Store, Clock: cfg.Clock, Gate: s.own, Policy: s.limits, Wallets: auth}); err != nil {
		ov.Close()
		return nil, err
	}
	// The routes come before anything that runs in the background, so a
	// base path the mux refuses fails here with nothing to stop.
	if err := s.routes(); err != nil {
		ov.Close()
		return nil, err
	}
	if err := s.startWebhooks(); err != nil {
		ov.Close()
		return nil, err
	}
	if err := s.startSweeper(); err != nil {
		s.hooks.close()
		ov.Close()
		return nil, err
	}
	return s, nil
}

// normalize returns cfg with every zero field set to its default, and an
// error for a value no default can stand for.
func (cfg Config) normalize() (Config, error) {
	if cfg.Store == nil {
		cfg.Store = memory.New()
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Reader
	}
	cfg.BasePath = cleanBase(cfg.BasePath)
	if cfg.ClientID == "" {
		cfg.ClientID = DefaultClientID
	}
	if cfg.ClientSecret == "" {
		cfg.ClientSecret = DefaultClientSecret
	}
	if cfg.WalletCurrency == "" {
		cfg.WalletCurrency = DefaultWalletCurrency
	}
	if _, ok := currencies[cfg.WalletCurrency]; !ok {
		return cfg, errors.New("sandbox: Config.WalletCurrency " + cfg.WalletCurrency + " is not a sandbox currency")
	}
	if cfg.UMADomain == "" {
		cfg.UMADomain = DefaultUMADomain
	}
	contracts := make(map[string]ownership.ContractVerifier, len(cfg.ContractWallets))
	for t, cv := range cfg.ContractWallets {
		if cv == nil {
			return cfg, errors.New("sandbox: Config.ContractWallets[" + strconv.Quote(t) + "] is nil")
		}
		contracts[t] = cv
	}
	cfg.ContractWallets = contracts
	if cfg.VerificationThreshold <= 0 {
		cfg.VerificationThreshold = DefaultVerificationThreshold
	}
	if cfg.QuoteTTL <= 0 {
		cfg.QuoteTTL = DefaultQuoteTTL
	}
	if cfg.PayoutRules == nil {
		r, err := defaultPayoutRules()
		if err != nil {
			return cfg, err
		}
		cfg.PayoutRules = r
	}
	if cfg.RelyingParty.ID == "" {
		cfg.RelyingParty = defaultRelyingParty()
	}
	if len(cfg.OIDCIssuers) == 0 {
		cfg.OIDCIssuers = []oidc.Issuer{oidc.Google(DefaultOIDCAudience), oidc.Apple(DefaultOIDCAudience)}
	}
	// Keys the host did not give are made for this process.
	if cfg.SigningKey == nil || cfg.Sealer == nil || cfg.CodeMACKey == nil {
		keys, err := walletauth.EphemeralKeys(nil)
		if err != nil {
			return cfg, err
		}
		if cfg.SigningKey == nil {
			cfg.SigningKey = keys.SigningKey
		}
		if cfg.Sealer == nil {
			cfg.Sealer = keys.Sealer
		}
		if cfg.CodeMACKey == nil {
			cfg.CodeMACKey = keys.CodeMACKey
		}
	}
	return cfg, nil
}

// startSweeper runs a [sweep.Sweeper] on the store until Close, with the
// simulator's clock and the sweeper's defaults: every minute, the records
// that expired more than an hour ago.
func (s *Simulator) startSweeper() error {
	sw, err := sweep.New(sweep.Config{Store: s.cfg.Store, Clock: s.cfg.Clock, Telemetry: s.cfg.Telemetry})
	if err != nil {
		return err
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = sw.Run(ctx)
	}()
	s.stopSweep = func() { stop(); <-done }
	return nil
}

func cleanBase(p string) string {
	if p == "" {
		p = DefaultBasePath
	}
	p = "/" + strings.Trim(p, "/")
	if p == "/" {
		return ""
	}
	return p
}

// Close stops the simulator's background work (the sweeper of expired
// records, the webhook relay, the OpenID verifier) and waits for it. The
// simulator must not be used afterwards.
func (s *Simulator) Close() {
	s.stopSweep()
	s.hooks.close()
	s.oidc.Close()
}

// Passkeys returns the passkey verifier, for the registration challenge and
// the browser options of a page under test.
func (s *Simulator) Passkeys() *passkey.Verifier { return s.pk }

// Auth returns the embedded-wallet authentication service (sandbox mode)
// the simulator provisions wallets with and serves under /auth/.
func (s *Simulator) Auth() *walletauth.Service { return s.auth }

// Store returns the store the simulator and its auth service share.
func (s *Simulator) Store() storage.Store { return s.cfg.Store }

// BasePath returns the cleaned base path every route is served under.
func (s *Simulator) BasePath() string { return s.cfg.BasePath }

// now returns the simulator's time in UTC: the injected clock moved by
// AdvanceClock (see clock).
func (s *Simulator) now() time.Time { return s.clock.now().UTC() }

// newID returns a fresh "<prefix>:<uuid>".
func (s *Simulator) newID(prefix string) (string, error) {
	id, err := storage.NewID(s.cfg.Rand, prefix)
	if err != nil {
		return "", apierror.Internal(err)
	}
	return id, nil
}

// internalIn reads an embedded wallet in st's transaction: 404
// REFERENCE_NOT_FOUND when there is none.
func internalIn(st *state, id string) (storage.InternalAccount, error) {
	notFound := apierror.New(apierror.ReferenceNotFound, "internal account %q not found", id)
	if !storage.ValidID(id, "InternalAccount") {
		return storage.InternalAccount{}, notFound
	}
	a, err := st.tx.InternalAccounts().Get(st.ctx, id)
	if errors.Is(err, storage.ErrNotFound) {
		return a, notFound
	}
	return a, err
}

// externalIn reads an external account in st's transaction: 404
// REFERENCE_NOT_FOUND when there is none or it was deleted.
func externalIn(st *state, id string) (storage.ExternalAccount, error) {
	notFound := apierror.New(apierror.ReferenceNotFound, "external account %q not found", id)
	if !storage.ValidID(id, "ExternalAccount") {
		return storage.ExternalAccount{}, notFound
	}
	a, err := st.tx.ExternalAccounts().Get(st.ctx, id)
	if errors.Is(err, storage.ErrNotFound) {
		return a, notFound
	}
	if err != nil {
		return a, err
	}
	m, err := st.metaOf(id)
	if err != nil {
		return a, err
	}
	if m != nil && m.Deleted {
		return a, notFound
	}
	return a, nil
}

// internalAccount reads an embedded wallet from the store: 404
// REFERENCE_NOT_FOUND when there is none.
func (s *Simulator) internalAccount(ctx context.Context, id string) (a storage.InternalAccount, err error) {
	err = s.read(ctx, func(st *state) error {
		a, err = internalIn(st, id)
		return err
	})
	return a, err
}

// externalAccount reads an external account from the store: 404
// REFERENCE_NOT_FOUND when there is none or it was deleted.
func (s *Simulator) externalAccount(ctx context.Context, id string) (a storage.ExternalAccount, err error) {
	err = s.read(ctx, func(st *state) error {
		a, err = externalIn(st, id)
		return err
	})
	return a, err
}

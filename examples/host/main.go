// Command host is a production-shaped slice of a payment service built on
// walletgate and PostgreSQL, meant to be copied and adapted. What a team
// copies:
//
//   - configuration from the environment, every key required: the process
//     refuses to start without the database, the walletgate keys shared by
//     all replicas, the webhook signing key and target, and the platforms'
//     API keys (no key is ever generated at start);
//   - start-up: walletgate's migrations (postgres.Migrate, or the host's own
//     tool applying postgres.Migrations followed by postgres.CheckSchema),
//     the host's own tables (customers, ledger, payouts) in the same schema;
//   - one host transaction per write that spans both sides (Store.InTx):
//     the host begins a pgx.Tx, binds it with Store.WithTx, runs
//     walletgate's operation in it, writes its own rows through
//     postgres.HostTx and commits; on a lost conflict (postgres.Rerunnable:
//     walletgate's postgres.ErrRerun, or 40001/40P01 from the host's own
//     statements or COMMIT) it rolls back and runs the whole transaction
//     again;
//   - POST /customers: the customer row, its ledger row and its embedded
//     wallet in one transaction;
//   - POST /customers/{id}/external-accounts registers an external wallet;
//     ownership's handler proves it (POST
//     /customers/external-accounts/{id}/challenge, then /verify), for the
//     calling platform's customers only;
//   - POST /customers/{id}/payouts: one signed payout of ownership/payout
//     (payout.Operation through walletauth.Authorize), whose chain (the
//     destination the customer's own, the payout gate
//     ownership.CheckPayoutIn) runs on both legs, so a payout the gate
//     refuses asks for no signature, and whose retry hands the payout
//     policy (RiskPolicy, of PayoutRules) the host's payout: the policy
//     has it made for an allowed payout only, which debits the ledger,
//     records the payout with the signing session and appends the outbox
//     event (signature check, gate, decision, debit and event commit
//     together or not at all), and stores a held payout for the risk desk
//     (202 with the approval);
//   - GET /customers/{id}/payout-approvals/{approvalId}, and the risk
//     desk's POST /operator/payout-approvals/{approvalId}/approve and
//     /refuse (operator keys): an approval (payout.Approve) executes the
//     held payout once, through the same chain and the same payout, in the
//     transaction that records it; a refusal or the approval's expiry ends
//     it;
//   - tenants: every wallet is created with its platform as its tenant,
//     so one platform's customers never collide with another's (an email
//     address per platform), and the services' guards compare the tenant
//     with the calling platform inside every operation's transaction;
//   - the Idempotency-Key middleware on every POST, scoped to the
//     authenticated platform;
//   - an OTP Sender interface (here a logging fake: replace it with the
//     email or SMS provider);
//   - the relay delivering signed webhooks, stopped gracefully on SIGTERM,
//     and the sweeper deleting expired records.
//
// Environment (all required):
//
//	WALLETGATE_POSTGRES_DSN        the database (or -postgres)
//	WALLETGATE_SEAL_KEYS           walletauth's sealer keys (secret.ParseKey), comma-separated
//	WALLETGATE_CODE_MAC_KEY        base64, at least walletauth.MinCodeMACKeyLen bytes
//	WALLETGATE_BUNDLE_SIGNING_KEY  base64 raw P-256 private key (bundles)
//	WALLETGATE_WEBHOOK_SIGNING_KEY base64 raw P-256 private key (webhooks)
//	HOST_WEBHOOK_URL               where the relay delivers events
//	HOST_API_KEYS                  platform=key pairs, comma-separated (keys of 32+ characters)
//
// Optional: HOST_ADDR (default :8080), HOST_METRICS_ADDR (default :9090,
// GET /metrics in the Prometheus format; keep it off the public network),
// HOST_SCHEMA (default walletgate), HOST_OPERATOR_KEYS (operator=key pairs
// of the risk desk, which approves or refuses held payouts under
// /operator/; without it held payouts wait until they expire).
//
// The process logs JSON to stderr (walletgate's components included: a 5xx
// logs its cause at ERROR with the request id, refused codes and
// signatures log at WARN with the code) and exports the components'
// metrics on HOST_METRICS_ADDR.
package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/walletgate/walletgate/apierror/operation"
	"github.com/walletgate/walletgate/apierror/webhooksig"
	"github.com/walletgate/walletgate/ownership"
	"github.com/walletgate/walletgate/ownership/payout"
	"github.com/walletgate/walletgate/ownership/policy"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/postgres"
	"github.com/walletgate/walletgate/storage/relay"
	"github.com/walletgate/walletgate/storage/sweep"
	"github.com/walletgate/walletgate/storage/webhook"
	"github.com/walletgate/walletgate/walletauth"
	"github.com/walletgate/walletgate/walletauth/secret"
)

// Config is the host's configuration, read from the environment.
type Config struct {
	DSN, Addr, Schema string
	MetricsAddr       string
	WebhookURL        string
	Keys              walletauth.Keys
	WebhookKey        *ecdsa.PrivateKey
	Platforms         map[string]string // API key -> platform id
	Operators         map[string]string // operator key -> operator name (HOST_OPERATOR_KEYS)
}

// LoadConfig reads the configuration from getenv; every missing or
// malformed required value is named in the error.
func LoadConfig(getenv func(string) string, dsnFlag string) (Config, error) {
	var errs []error
	need := func(name string) string {
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			errs = append(errs, fmt.Errorf("%s is required", name))
		}
		return v
	}
	c := Config{DSN: dsnFlag, Addr: getenv("HOST_ADDR"), Schema: getenv("HOST_SCHEMA"), Platforms: map[string]string{}, Operators: map[string]string{}}
	if c.DSN == "" {
		c.DSN = need("WALLETGATE_POSTGRES_DSN")
	}
	if c.Addr == "" {
		c.Addr = ":8080"
	}
	if c.MetricsAddr = getenv("HOST_METRICS_ADDR"); c.MetricsAddr == "" {
		c.MetricsAddr = ":9090"
	}
	p256 := func(name string) *ecdsa.PrivateKey {
		v := need(name)
		if v == "" {
			return nil
		}
		b, err := base64.StdEncoding.DecodeString(v)
		if err == nil {
			k, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), b)
			if err == nil {
				return k
			}
		}
		errs = append(errs, fmt.Errorf("%s is not a base64 raw P-256 private key", name))
		return nil
	}
	c.Keys.SigningKey = p256("WALLETGATE_BUNDLE_SIGNING_KEY")
	c.WebhookKey = p256("WALLETGATE_WEBHOOK_SIGNING_KEY")
	if v := need("WALLETGATE_SEAL_KEYS"); v != "" {
		var keys []secret.Key
		for i, s := range strings.Split(v, ",") {
			k, err := secret.ParseKey(s)
			if err != nil {
				errs = append(errs, fmt.Errorf("WALLETGATE_SEAL_KEYS, key %d: %w", i+1, err))
				continue
			}
			keys = append(keys, k)
		}
		if len(keys) > 0 {
			ring, err := secret.NewKeyring(keys[0], keys[1:]...)
			if err != nil {
				errs = append(errs, fmt.Errorf("WALLETGATE_SEAL_KEYS: %w", err))
			}
			c.Keys.Sealer = ring
		}
	}
	if v := need("WALLETGATE_CODE_MAC_KEY"); v != "" {
		b, err := base64.StdEncoding.DecodeString(v)
		if err != nil || len(b) < walletauth.MinCodeMACKeyLen {
			errs = append(errs, fmt.Errorf("WALLETGATE_CODE_MAC_KEY must be base64 of at least %d bytes", walletauth.MinCodeMACKeyLen))
		}
		c.Keys.CodeMACKey = b
	}
	c.WebhookURL = need("HOST_WEBHOOK_URL")
	if v := need("HOST_API_KEYS"); v != "" {
		for _, pair := range strings.Split(v, ",") {
			platform, key, ok := strings.Cut(strings.TrimSpace(pair), "=")
			if !ok || platform == "" || len(key) < 32 {
				errs = append(errs, errors.New("HOST_API_KEYS: want platform=key pairs, keys of at least 32 characters"))
				break
			}
			c.Platforms[key] = platform
		}
	}
	if v := strings.TrimSpace(getenv("HOST_OPERATOR_KEYS")); v != "" {
		for _, pair := range strings.Split(v, ",") {
			name, key, ok := strings.Cut(strings.TrimSpace(pair), "=")
			if !ok || name == "" || len(key) < 32 {
				errs = append(errs, errors.New("HOST_OPERATOR_KEYS: want operator=key pairs, keys of at least 32 characters"))
				break
			}
			if _, taken := c.Platforms[key]; taken {
				errs = append(errs, errors.New("HOST_OPERATOR_KEYS: an operator's key is a platform's key too"))
				break
			}
			c.Operators[key] = name
		}
	}
	return c, errors.Join(errs...)
}

// LogSender is the OTP Sender of this example: it logs that a code was
// sent, never the code. Replace it with the email or SMS provider.
type LogSender struct{ Log *slog.Logger }

// Send logs the delivery of m without its code.
func (s LogSender) Send(_ context.Context, m walletauth.Message) error {
	s.Log.Info("one-time code issued", "channel", m.Channel, "credential", m.CredentialID)
	return nil
}

// Services are the walletgate services of the host, on one store.
type Services struct {
	Store *postgres.Store
	Auth  *walletauth.Service
	// Owner is the ownership service, whose payout gate is configured by
	// [PayoutGate].
	Owner *ownership.Service
	// RiskPolicy is the payout policy of [PayoutRules].
	RiskPolicy *policy.Policy
	// Payouts runs the payouts of the wallets and their approvals on the
	// three services.
	Payouts *payout.Service
}

// PayoutRules is the risk policy of this example, as data, in USDC (six
// decimals), the first rule that matches deciding:
//
//   - daily-limit: 20,000 USDC a day per customer;
//   - new-destination: a destination registered or proven within a day
//     receives at most 2,000 USDC in that day, however many payouts it
//     takes (its cool-off lasts the whole day);
//   - after-security-change: from 1,000 USDC, a payout from a wallet whose
//     credentials or email changed within a day waits for the risk desk,
//     so that a change made with a stolen session moves no money before
//     the owner hears of it;
//   - review: from 10,000 USDC a payout waits for the risk desk;
//   - large-needs-passkey: from 5,000 USDC the payout must be signed by a
//     passkey session authenticated within 15 minutes (a passkey carrying
//     a passkey's assurance);
//   - everything else is allowed.
//
// The risk desk is the operator [RiskDesk]; its approvals execute the
// payout in the transaction that records them.
const PayoutRules = `{
	"referenceCurrency": "USDC",
	"windows": [{"name": "customer-day", "scope": "CUSTOMER", "period": "24h", "maxAmount": 20000000000}],
	"rules": [
		{"name": "daily-limit", "match": {"exceedsWindows": ["customer-day"]}, "action": "BLOCK"},
		{"name": "new-destination", "match": {"newDestinationWithin": "24h", "newDestinationMaxAmount": 2000000000}, "action": "BLOCK"},
		{"name": "after-security-change", "match": {"securityChangeWithin": "24h", "minAmount": 1000000000}, "action": "REQUIRE_APPROVAL",
			"approval": {"count": 1, "operators": ["risk-desk"], "ttl": "24h"}},
		{"name": "review", "match": {"minAmount": 10000000000}, "action": "REQUIRE_APPROVAL",
			"approval": {"count": 1, "operators": ["risk-desk"], "ttl": "24h"}},
		{"name": "large-needs-passkey", "match": {"minAmount": 5000000000}, "action": "ALLOW",
			"require": {"credentialTypes": ["PASSKEY"], "maxSessionAge": "15m"}},
		{"name": "default", "match": {}, "action": "ALLOW"}
	]
}`

// RiskDesk is the operator of the approval rules of [PayoutRules]: the
// holder of an operator key (HOST_OPERATOR_KEYS) of that name approves or
// refuses held payouts.
const RiskDesk = "risk-desk"

// PayoutGate is the payout gate's configuration of this example (the
// ownership rule, [ownership.PayoutPolicy]; the risk policy is
// [PayoutRules]): payouts of USDC at or above 1,000 USDC (six decimals)
// need a proven wallet; none above 1,000,000.
var PayoutGate = ownership.PayoutPolicy{
	VerificationThresholds: ownership.Limits{ByCurrency: map[string]int64{"USDC": 1_000_000_000}},
	MaxAmounts:             ownership.Limits{ByCurrency: map[string]int64{"USDC": 1_000_000_000_000}},
}

// ServicesConfig is what NewServices builds the services from. Pool,
// Keys, Sender and Telemetry.Logger are required.
type ServicesConfig struct {
	Pool   *pgxpool.Pool
	Schema string // the schema of walletgate's tables and the host's; empty: postgres.DefaultSchema
	Keys   walletauth.Keys
	Sender walletauth.Sender
	// Telemetry receives every component's records, spans and metrics.
	Telemetry operation.Telemetry
	// Clock is the services' time; nil means time.Now.
	Clock func() time.Time
}

// NewServices builds the walletgate services on c.Pool. Each service asks
// the host's guard, inside the transaction of every operation, whether
// the calling platform (see withPlatform) may act on the wallet or
// external account the operation names: each is of the platform that
// created it, its tenant, which the guard reads off the row.
func NewServices(c ServicesConfig) (*Services, error) {
	if err := checkTelemetry(c.Telemetry); err != nil {
		return nil, err
	}
	tel := c.Telemetry
	store, err := postgres.New(c.Pool, postgres.Config{Schema: c.Schema,
		Telemetry: tel})
	if err != nil {
		return nil, err
	}
	auth, err := walletauth.New(walletauth.Config{Store: store, Sender: c.Sender, Keys: c.Keys, Clock: c.Clock, Guard: platformWallet,
		Telemetry: tel})
	if err != nil {
		return nil, err
	}
	owner, err := ownership.New(ownership.Config{Store: store, Payouts: PayoutGate, Clock: c.Clock,
		Guard:     platformAccount,
		Telemetry: tel})
	if err != nil {
		return nil, err
	}
	rules, err := policy.Parse([]byte(PayoutRules))
	if err != nil {
		return nil, err
	}
	risk, err := policy.New(policy.Config{Rules: rules, Clock: c.Clock,
		Telemetry: tel})
	if err != nil {
		return nil, err
	}
	clock := c.Clock
	if clock == nil {
		clock = time.Now
	}
	payouts, err := payout.New(payout.Config{Store: store, Gate: owner, Policy: risk, Wallets: auth, Clock: clock})
	if err != nil {
		return nil, err
	}
	return &Services{Store: store, Auth: auth, Owner: owner, RiskPolicy: risk, Payouts: payouts}, nil
}

// NewRelay returns the relay delivering the outbox as webhooks signed
// with key to url, reporting to tel. shutdown bounds how long deliveries in flight may finish
// once Run's context is cancelled (zero: the relay's default); those still
// running are then released, due again at once for any relay.
func NewRelay(store storage.Store, url string, key *ecdsa.PrivateKey, tel operation.Telemetry, shutdown time.Duration) (*relay.Relay, error) {
	if err := checkTelemetry(tel); err != nil {
		return nil, err
	}
	signer, err := webhooksig.NewSigner(key)
	if err != nil {
		return nil, err
	}
	pub, err := webhook.NewPublisher(webhook.PublisherConfig{Target: url, Signer: signer, Client: &http.Client{Timeout: 10 * time.Second},
		Telemetry: tel})
	if err != nil {
		return nil, err
	}
	return relay.New(relay.Config{Store: store, Publisher: pub, ShutdownTimeout: shutdown,
		Telemetry: tel})
}

func main() {
	dsn := flag.String("postgres", "", "PostgreSQL DSN (default $WALLETGATE_POSTGRES_DSN)")
	flag.Parse()
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, log, *dsn); err != nil {
		log.Error("host stopped", "err", err)
		os.Exit(1)
	}
	log.Info("host stopped: requests drained, relay and sweeper stopped")
}

func run(ctx context.Context, log *slog.Logger, dsn string) error {
	cfg, err := LoadConfig(os.Getenv, dsn)
	if err != nil {
		return err
	}
	pool, err := pgxpool.New(ctx, cfg.DSN)
	if err != nil {
		return err
	}
	defer pool.Close()
	if _, err := postgres.Migrate(ctx, pool, postgres.Config{Schema: cfg.Schema}); err != nil {
		return err
	}
	if err := postgres.CheckSchema(ctx, pool, postgres.Config{Schema: cfg.Schema}); err != nil {
		return err
	}
	// Metrics through the OpenTelemetry Prometheus exporter, served on
	// their own listener; spans go nowhere until the host plugs in its
	// tracer provider (an OTLP exporter, for example).
	mp, metrics, err := NewMetrics()
	if err != nil {
		return err
	}
	defer func() { _ = mp.Shutdown(context.WithoutCancel(ctx)) }()
	tel := operation.Telemetry{Logger: log, MeterProvider: mp}
	svc, err := NewServices(ServicesConfig{Pool: pool, Schema: cfg.Schema, Keys: cfg.Keys, Sender: LogSender{Log: log}, Telemetry: tel})
	if err != nil {
		return err
	}
	srv, err := NewServer(ctx, ServerConfig{Pool: pool, Store: svc.Store, Auth: svc.Auth, Owner: svc.Owner, Payouts: svc.Payouts,
		Platforms: cfg.Platforms, Operators: cfg.Operators, Telemetry: tel})
	if err != nil {
		return err
	}
	h, err := srv.Handler()
	if err != nil {
		return err
	}
	rel, err := NewRelay(svc.Store, cfg.WebhookURL, cfg.WebhookKey, tel, 0)
	if err != nil {
		return err
	}
	sw, err := sweep.New(sweep.Config{Store: svc.Store,
		Telemetry: tel})
	if err != nil {
		return err
	}

	// The relay and the sweeper stop with ctx; Run of the relay returns
	// once its deliveries in flight are finished or released, their
	// outcomes recorded. Wait for both before closing the pool.
	bg, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { _ = rel.Run(bg) })
	wg.Go(func() { _ = sw.Run(bg) })
	defer wg.Wait()
	defer cancel()

	hs := &http.Server{Addr: cfg.Addr, Handler: h, ReadHeaderTimeout: 10 * time.Second}
	ms := &http.Server{Addr: cfg.MetricsAddr, Handler: metricsMux(metrics), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 2)
	go func() { errc <- hs.ListenAndServe() }()
	go func() { errc <- ms.ListenAndServe() }()
	defer func() { _ = ms.Close() }()
	log.Info("host listening", "addr", cfg.Addr, "metrics", cfg.MetricsAddr)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shut, done := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer done()
	return hs.Shutdown(shut) // then the deferred cancel stops the relay and sweeper, and wg.Wait waits for them
}

// Command server serves the walletgate sandbox on a port, for manual testing
// with curl or a browser and for test suites in other languages:
//
//	go run ./examples/server -addr 127.0.0.1:8089
//
// Every route is under the base path (/2025-10-13) behind HTTP Basic platform
// credentials (-client-id, -client-secret). Passkeys are served for -rp-id
// and -origin (by default localhost and http://localhost:<port>), and the
// association files at /.well-known/: webauthn (the related origins) always,
// apple-app-site-association with -apple-app-id and assetlinks.json with
// -android-package and -android-fingerprint (404 without them).
// -client-held-keys switches walletauth's client-held session keys on: a
// compressed clientPublicKey becomes the session key and no
// encryptedSessionSigningKey is returned. With -postgres the storage records
// (wallets, credentials, sessions, signed-retry requests, external accounts)
// live in PostgreSQL, migrated on start; the simulator's own records
// (customers, balances, quotes, transactions, cards) stay in the process's
// memory and are lost on exit. Two servers on one database therefore share
// wallets, credentials, sessions and external accounts but not customers,
// balances, quotes or transactions: server B answers 404 for a customer
// made on server A. Run one server per sandbox a client talks to.
// In either store, expired records (signed-retry requests, OTP issuances,
// sessions, challenges, rate-limit windows, idempotency records, delivered
// events) are deleted an hour after they expire by the simulator's sweeper
// (storage/sweep), which runs at start and then every minute until exit.
//
// OTP issuances are stored as production stores them: the code as an
// HMAC-SHA256 and the target private key sealed with AES-256-GCM. The keys
// come from the environment: WALLETGATE_SEAL_KEYS (comma-separated
// "<id>:<base64 of 32 bytes>" keys, the first sealing, all opening) and
// WALLETGATE_CODE_MAC_KEY (base64 of at least 32 bytes). The OTP and export
// bundles are signed with WALLETGATE_BUNDLE_SIGNING_KEY (base64 of a 32-byte
// P-256 private scalar), the key clients pin. -gen-keys prints fresh values
// of all three and exits. Without them the server generates keys per
// process, which is fine in memory; with -postgres, set them so that logins
// in progress survive a restart and several servers can share the database.
//
// The server bounds how long a client can hold a connection, with or
// without credentials: request headers must arrive within 5s and the whole
// request, body included, within -read-timeout (10s); a response must be
// written within -write-timeout (30s) of the end of the request headers; a
// keep-alive connection is closed after -idle-timeout (60s) without a
// request; and request headers larger than -max-header-bytes (16 KiB, plus
// the 4 KiB net/http allows for buffering) are answered 431. On SIGINT or
// SIGTERM the server stops accepting, waits up to -shutdown-timeout (5s) for
// requests in flight and then closes the connections that remain.
// "OPTIONS *" is routed like any other request (401 without credentials,
// JSON 404 with them) instead of net/http's default 200, and OPTIONS on a
// route answers the JSON 405 of a wrong method.
//
// -evm-simulated proves EVM contract accounts (accountInfo.contractAccount:
// EIP-1271 wallets and ERC-6492 signatures of wallets not deployed yet)
// against simulated chains in this process: one go-ethereum simulated
// backend per account type with contract accounts, each running under that
// type's chain id (BASE_WALLET on 8453, ETHEREUM_WALLET on 1, PLASMA_WALLET
// on 9745, POLYGON_WALLET on 137), lost on exit. Without it a contract
// account is refused (400 on accountInfo.contractAccount.chainId). With it,
// two sandbox routes make test wallets that accept their owner's
// personal_sign: POST /sandbox/contract-wallets {"chainId", "owner"}
// deploys one and answers 201 {"chainId", "owner", "address"}; POST
// /sandbox/contract-wallets/counterfactual {"chainId", "owner", "salt"}
// (salt: 0x and 64 hex digits) deploys nothing and answers 200 {"chainId",
// "owner", "salt", "address", "factory", "factoryCalldata"}: the address the
// factory would deploy the wallet at and what an ERC-6492 signature wraps,
// abi.encode(factory, factoryCalldata, ownerSignature) followed by
// 0x6492…6492. Their bodies are read as every route's are (a member whose
// name differs from a field's only in case is 400 INVALID_INPUT naming it;
// unknown members are ignored). Without -evm-simulated they answer 404.
// Servers sharing a -postgres database do not share their chains: a
// deployed wallet is proven on the server that deployed it (a
// counterfactual one on any, the factory being at one address everywhere).
package main

import (
	"context"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/operation"
	"github.com/walletgate/walletgate/examples/server/internal/evmsim"
	"github.com/walletgate/walletgate/sandbox"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/postgres"
	"github.com/walletgate/walletgate/storage/sweep"
	"github.com/walletgate/walletgate/walletauth/passkey"
)

// Defaults of the connection limits; each but readHeaderTimeout can be
// changed with a flag.
const (
	// readHeaderTimeout bounds reading the request headers; it is capped at
	// the read timeout.
	readHeaderTimeout = 5 * time.Second
	// defaultReadTimeout bounds reading a whole request, body included.
	defaultReadTimeout = 10 * time.Second
	// defaultWriteTimeout bounds the time from the end of the request
	// headers to the end of the response.
	defaultWriteTimeout = 30 * time.Second
	// defaultIdleTimeout is how long a keep-alive connection may wait for
	// its next request.
	defaultIdleTimeout = 60 * time.Second
	// defaultMaxHeaderBytes caps the size of the request line and headers.
	defaultMaxHeaderBytes = 16 << 10
	// defaultShutdownTimeout is how long a shutdown waits for requests in
	// flight before it closes their connections.
	defaultShutdownTimeout = 5 * time.Second
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "server:", err)
		os.Exit(1)
	}
}

// run parses args, serves until ctx ends or SIGINT/SIGTERM arrives, and
// prints the address once it is ready.
func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	fs.SetOutput(out)
	addr := fs.String("addr", "127.0.0.1:8089", "address to listen on")
	clientID := fs.String("client-id", sandbox.DefaultClientID, "platform client id (HTTP Basic user)")
	secret := fs.String("client-secret", sandbox.DefaultClientSecret, "platform client secret (HTTP Basic password)")
	rpID := fs.String("rp-id", sandbox.DefaultRPID, "passkey relying party id")
	origin := fs.String("origin", "", "passkey web origin (default http://<rp-id>:<port>)")
	dsn := fs.String("postgres", "", "PostgreSQL DSN for the storage records (wallets, credentials, sessions, external accounts); customers, balances, quotes and transactions stay in this process, so servers sharing a database do not share them; empty keeps everything in memory")
	readTimeout := fs.Duration("read-timeout", defaultReadTimeout, "maximum time to read a whole request, body included")
	writeTimeout := fs.Duration("write-timeout", defaultWriteTimeout, "maximum time from the end of the request headers to the end of the response")
	idleTimeout := fs.Duration("idle-timeout", defaultIdleTimeout, "maximum time a keep-alive connection waits for its next request")
	maxHeaderBytes := fs.Int("max-header-bytes", defaultMaxHeaderBytes, "maximum size of the request line and headers")
	shutdownTimeout := fs.Duration("shutdown-timeout", defaultShutdownTimeout, "time a shutdown waits for requests in flight before closing their connections")
	clientHeld := fs.Bool("client-held-keys", false, "make a compressed clientPublicKey the session key itself (no encryptedSessionSigningKey); by default the server generates each session key and seals it to clientPublicKey")
	var appleAppIDs, androidFingerprints listFlag
	fs.Var(&appleAppIDs, "apple-app-id", "iOS app allowed to use the passkeys, TEAMID.bundle.id (repeatable or comma-separated); serves /.well-known/apple-app-site-association")
	androidPackage := fs.String("android-package", "", "Android app allowed to use the passkeys (needs -android-fingerprint); serves /.well-known/assetlinks.json")
	fs.Var(&androidFingerprints, "android-fingerprint", "SHA-256 fingerprints of the -android-package signing certificates (repeatable or comma-separated)")
	webhookURL := fs.String("webhook-url", "", "deliver the sandbox's events as signed webhooks (X-Grid-Signature) to this URL; empty keeps them in the store")
	webhookKeyOut := fs.String("webhook-public-key", "", "write the SPKI PEM of the webhook signing key to this file (for examples/webhookreceiver -key); the key is generated at each start")
	evmSimulated := fs.Bool("evm-simulated", false, "prove EVM contract accounts (EIP-1271, ERC-6492) on simulated chains in this process, one per contract-capable account type under its chain id, and serve POST /sandbox/contract-wallets and /sandbox/contract-wallets/counterfactual to make test wallets on them")
	genKeys := fs.Bool("gen-keys", false, "print new values for "+envSealKeys+", "+envCodeMACKey+" and "+envSigningKey+", then exit")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *genKeys {
		return printNewKeys(out)
	}
	sealer, codeMACKey, err := atRestKeys()
	if err != nil {
		return err
	}
	signing, err := signingKey()
	if err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		d    time.Duration
	}{{"read-timeout", *readTimeout}, {"write-timeout", *writeTimeout}, {"idle-timeout", *idleTimeout}, {"shutdown-timeout", *shutdownTimeout}} {
		if f.d <= 0 {
			return fmt.Errorf("-%s must be positive, not %v", f.name, f.d)
		}
	}
	if *maxHeaderBytes <= 0 {
		return fmt.Errorf("-max-header-bytes must be positive, not %d", *maxHeaderBytes)
	}
	if (*androidPackage == "") != (len(androidFingerprints) == 0) {
		return errors.New("-android-package and -android-fingerprint go together")
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(out, nil))
	tel := operation.Telemetry{Logger: log}

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	if *origin == "" {
		_, port, _ := net.SplitHostPort(ln.Addr().String())
		*origin = "http://" + *rpID + ":" + port
	}

	var store storage.Store
	if *dsn != "" {
		if sealer == nil {
			log.Warn("OTP at-rest keys generated for this process: codes issued before a restart will not verify; set " +
				envSealKeys + " and " + envCodeMACKey + " (see -gen-keys)")
		}
		pool, err := pgxpool.New(ctx, *dsn)
		if err != nil {
			return err
		}
		defer pool.Close()
		if _, err := postgres.Migrate(ctx, pool, postgres.Config{}); err != nil {
			return fmt.Errorf("migrating: %w", err)
		}
		if store, err = postgres.New(pool, postgres.Config{Telemetry: tel}); err != nil {
			return err
		}
	}
	rp := passkey.RelyingParty{ID: *rpID, Name: "walletgate sandbox", Origins: []string{*origin}, AppleAppIDs: appleAppIDs}
	if *androidPackage != "" {
		rp.AndroidApps = []passkey.AndroidApp{{Package: *androidPackage, CertFingerprints: androidFingerprints}}
	}
	cfg := sandbox.Config{Store: store, ClientID: *clientID, ClientSecret: *secret,
		RelyingParty: rp, Sealer: sealer, CodeMACKey: codeMACKey, SigningKey: signing, ClientHeldKeys: *clientHeld, WebhookURL: *webhookURL,
		Telemetry: tel}
	var chains *evmsim.Chains
	if *evmSimulated {
		// The sandbox's network is cfg.Network's zero value, mainnet.
		if chains, err = evmsim.New(cfg.Network); err != nil {
			return fmt.Errorf("-evm-simulated: %w", err)
		}
		defer chains.Close()
		cfg.ContractWallets = chains.ContractWallets()
	}
	sim, err := sandbox.New(cfg)
	if err != nil {
		return err
	}
	defer sim.Close()
	if chains != nil {
		if err := chains.Register(sim.Handle); err != nil {
			return fmt.Errorf("-evm-simulated: %w", err)
		}
		served := make([]string, 0, len(chains.Served()))
		for _, c := range chains.Served() {
			served = append(served, c.AccountType+"="+strconv.FormatUint(c.ChainID, 10))
		}
		log.Info("simulated EVM chains", "chains", strings.Join(served, ","), "wallet_factory", chains.Factory().Hex())
	}
	if *webhookKeyOut != "" {
		if err := os.WriteFile(*webhookKeyOut, sim.WebhookPublicKeyPEM(), 0o644); err != nil {
			return fmt.Errorf("-webhook-public-key: %w", err)
		}
	}

	srv := &http.Server{
		Handler:           logRequests(log, sim.Handler()),
		ReadHeaderTimeout: min(readHeaderTimeout, *readTimeout),
		ReadTimeout:       *readTimeout,
		WriteTimeout:      *writeTimeout,
		IdleTimeout:       *idleTimeout,
		MaxHeaderBytes:    *maxHeaderBytes,
		// Send "OPTIONS *" through the sandbox's handler (credentials, JSON
		// errors) rather than answering 200 for any client.
		DisableGeneralOptionsHandler: true,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	storeName := "memory"
	if *dsn != "" {
		storeName = "postgres"
	}
	log.Info("serving the walletgate sandbox", "url", "http://"+ln.Addr().String()+sim.BasePath(),
		"client_id", *clientID, "rp_id", *rpID, "origin", *origin, "store", storeName, "webhook_url", *webhookURL,
		"bundle_signing_key", bundleSigningKey(sim), "sweep_interval", sweep.DefaultInterval, "sweep_margin", sweep.DefaultMargin)

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down")
	shutdown, cancel := context.WithTimeout(context.Background(), *shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		if !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		// Requests still in flight (or clients that stopped sending
		// mid-request) must not keep the process alive.
		log.Warn("shutdown timed out; closing the remaining connections", "timeout", *shutdownTimeout)
		if err := srv.Close(); err != nil {
			return err
		}
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// bundleSigningKey is the public key that signs the OTP and export bundles,
// uncompressed and hex-encoded: the value clients pin (for @turnkey/crypto,
// dangerouslyOverrideSignerPublicKey). It is WALLETGATE_BUNDLE_SIGNING_KEY's,
// or generated at each start without it.
func bundleSigningKey(sim *sandbox.Simulator) string {
	k, err := sim.Auth().SigningPublicKey().ECDH()
	if err != nil {
		return ""
	}
	return hex.EncodeToString(k.Bytes())
}

// listFlag is a flag that may be repeated, each value a comma-separated
// list; empty items are dropped.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error {
	for _, item := range strings.Split(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			*l = append(*l, item)
		}
	}
	return nil
}

// logRequests logs each request with its status, duration and request id
// (the X-Request-Id the simulator answered with, which its own records of
// the request carry too).
func logRequests(log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		log.Info("request", "method", r.Method, "path", r.URL.Path, "status", rec.status, "duration", time.Since(start).Round(time.Microsecond),
			"request_id", w.Header().Get(apierror.RequestIDHeader))
	})
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

package main

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// e2eDir holds the Node end-to-end client: package.json, package-lock.json
// and e2e.mjs (node_modules comes from `npm ci`, which .ci/run does).
const e2eDir = "testdata/e2e"

// TestE2ENodeClients starts the server in process and drives its main flows
// with the real JavaScript client libraries (@turnkey/api-key-stamper,
// @turnkey/crypto, ethers, tweetnacl, bs58, jose), as a client team in
// another language would: testdata/e2e/e2e.mjs prints one line per flow and
// exits non-zero on the first failed check. The flows include transfer-out
// as a signed retry and the Idempotency-Key rules; the server delivers its
// webhooks (-webhook-url) to a receiver the script runs on 127.0.0.1, which
// verifies them with WebCrypto against the key -webhook-public-key wrote.
// With -evm-simulated, the script proves EVM contract accounts: an EIP-1271
// wallet it deploys through POST /sandbox/contract-wallets and a
// counterfactual one whose signature ethers wraps in ERC-6492.
// It skips without node or without testdata/e2e/node_modules.
func TestE2ENodeClients(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not on PATH: install Node.js 20+ and run `npm ci` in examples/server/testdata/e2e to run the end-to-end test")
	}
	if _, err := os.Stat(filepath.Join(e2eDir, "node_modules")); err != nil {
		t.Skip("examples/server/testdata/e2e/node_modules is absent: run `npm ci --no-audit --no-fund` there (.ci/run does) to run the end-to-end test")
	}
	// Non-default platform credentials, handed to the script.
	const clientID, clientSecret = "e2e-client", "e2e-secret"
	// A free port for the script's webhook receiver, which listens on it
	// before its first request, and the file the server writes its webhook
	// signing key to.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hookPort := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	keyFile := filepath.Join(t.TempDir(), "webhook.pem")
	srv := start(t, "-client-id", clientID, "-client-secret", clientSecret,
		"-webhook-url", "http://127.0.0.1:"+hookPort+"/webhooks", "-webhook-public-key", keyFile, "-evm-simulated")
	base := srv.base

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "e2e.mjs", base)
	cmd.Dir = e2eDir
	cmd.Env = append(os.Environ(), "NO_COLOR=1", "WALLETGATE_CLIENT_ID="+clientID, "WALLETGATE_CLIENT_SECRET="+clientSecret,
		"WALLETGATE_SIGNING_KEY="+srv.signing, "WALLETGATE_WEBHOOK_PORT="+hookPort, "WALLETGATE_WEBHOOK_KEY_FILE="+keyFile,
		"WALLETGATE_EVM_SIMULATED=1")
	cmd.WaitDelay = 5 * time.Second
	began := time.Now()
	out, err := cmd.CombinedOutput()
	elapsed := time.Since(began).Round(time.Millisecond)
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		t.Fatalf("node e2e.mjs did not finish within 60s; output so far:\n%s", out)
	case err != nil:
		t.Fatalf("node e2e.mjs failed (%v) after %v; output:\n%s", err, elapsed, out)
	}
	t.Logf("node e2e.mjs %s (%v):\n%s", base, elapsed, out)
}

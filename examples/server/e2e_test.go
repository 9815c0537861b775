package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
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
// exits non-zero on the first failed check. It skips without node or
// without testdata/e2e/node_modules.
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
	srv := start(t, "-client-id", clientID, "-client-secret", clientSecret)
	base := srv.base

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "e2e.mjs", base)
	cmd.Dir = e2eDir
	cmd.Env = append(os.Environ(), "NO_COLOR=1", "WALLETGATE_CLIENT_ID="+clientID, "WALLETGATE_CLIENT_SECRET="+clientSecret,
		"WALLETGATE_SIGNING_KEY="+srv.signing)
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

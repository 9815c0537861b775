package ownership_test

import (
	"os/exec"
	"strings"
	"testing"
)

// maxOwnershipDeps bounds the packages outside the standard library that
// importing ownership pulls in (this module's own packages included), so a
// review of its import graph stays small.
const maxOwnershipDeps = 40

// TestImportGraphStaysSmall pins the import graph of ownership: at most
// maxOwnershipDeps non-standard packages, none of the chain-node machinery
// (KZG, gnark, blst) that go-ethereum's accounts package dragged in for the
// EIP-191 hash, and no go-ethereum at all: Keccak-256 comes from
// golang.org/x/crypto/sha3 and secp256k1 recovery from btcec, which the
// Bitcoin verifiers use already.
func TestImportGraphStaysSmall(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not available")
	}
	out, err := exec.Command(gobin, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Skipf("go list failed: %v", err)
	}
	pkgs := strings.Fields(string(out))
	for _, p := range pkgs {
		for _, banned := range []string{"gnark", "kzg", "blst", "github.com/ethereum/go-ethereum"} {
			if strings.Contains(p, banned) {
				t.Errorf("ownership imports %s (matches %q)", p, banned)
			}
		}
	}
	if len(pkgs) > maxOwnershipDeps {
		t.Errorf("ownership imports %d packages outside the standard library, want at most %d:\n%s",
			len(pkgs), maxOwnershipDeps, strings.Join(pkgs, "\n"))
	}
}

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
// maxOwnershipDeps non-standard packages and none of the chain-node
// machinery (KZG, gnark, go-ethereum's accounts or core) that the EIP-191
// hash once dragged in.
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
		for _, banned := range []string{"gnark", "kzg", "go-ethereum/accounts", "go-ethereum/core", "blst"} {
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

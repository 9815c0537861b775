package ownership_test

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// maxOwnershipDeps bounds the packages outside the standard library that
// importing ownership pulls in (this module's own packages included), with
// cgo and without, so a review of its import graph stays small.
const maxOwnershipDeps = 40

// libsecp256k1Binding is go-ethereum's cgo binding of libsecp256k1, which
// EVM and TRON recovery use in a cgo build; allowedGoEthereum lists it and
// its one dependency, the only go-ethereum packages ownership may import.
const libsecp256k1Binding = "github.com/ethereum/go-ethereum/crypto/secp256k1"

var allowedGoEthereum = []string{libsecp256k1Binding, "github.com/ethereum/go-ethereum/common/math"}

// TestImportGraphStaysSmall pins the import graph of ownership in a cgo
// build and in a build without cgo: at most maxOwnershipDeps non-standard
// packages, none of the chain-node machinery (KZG, gnark, blst) that
// go-ethereum's accounts package dragged in for the EIP-191 hash, and of
// go-ethereum only the libsecp256k1 binding and its dependency, in the cgo
// build only: Keccak-256 comes from golang.org/x/crypto/sha3 and the pure-Go
// secp256k1 recovery from btcec, which the Bitcoin verifiers use already.
func TestImportGraphStaysSmall(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not available")
	}
	for _, cgo := range []string{"1", "0"} {
		t.Run("CGO_ENABLED="+cgo, func(t *testing.T) {
			cmd := exec.Command(gobin, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".")
			cmd.Env = append(os.Environ(), "CGO_ENABLED="+cgo)
			out, err := cmd.Output()
			if err != nil {
				t.Skipf("go list failed: %v", err)
			}
			pkgs := strings.Fields(string(out))
			for _, p := range pkgs {
				for _, banned := range []string{"gnark", "kzg", "blst", "github.com/ethereum/go-ethereum"} {
					if !strings.Contains(p, banned) {
						continue
					}
					if banned == "github.com/ethereum/go-ethereum" && cgo == "1" && slices.Contains(allowedGoEthereum, p) {
						continue
					}
					t.Errorf("ownership imports %s (matches %q)", p, banned)
				}
			}
			if got, want := slices.Contains(pkgs, libsecp256k1Binding), cgo == "1"; got != want {
				t.Errorf("ownership imports %s: %v, want %v (libsecp256k1 recovery with cgo only)", libsecp256k1Binding, got, want)
			}
			if len(pkgs) > maxOwnershipDeps {
				t.Errorf("ownership imports %d packages outside the standard library, want at most %d:\n%s",
					len(pkgs), maxOwnershipDeps, strings.Join(pkgs, "\n"))
			}
			t.Logf("%d packages outside the standard library", len(pkgs))
		})
	}
}

package stamper_test

import (
	"bytes"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// serverDependencies are the import path prefixes of what the service links
// and a client must not: WebAuthn and TPM attestation, JOSE, PostgreSQL,
// OpenTelemetry (API and SDK alike) and HPKE, which stamping does not use.
var serverDependencies = []string{
	"github.com/go-webauthn/",
	"github.com/google/go-tpm",
	"github.com/lestrrat-go/",
	"github.com/jackc/",
	"go.opentelemetry.io/",
	"github.com/cloudflare/circl",
}

// ownPackages are the only packages of this module stamper imports: the
// error type, its canonical JSON and the id rules of storage, none of the
// store backends or services.
var ownPackages = []string{
	"github.com/walletgate/walletgate/apierror",
	"github.com/walletgate/walletgate/apierror/internal/canonjson",
	"github.com/walletgate/walletgate/storage",
	"github.com/walletgate/walletgate/signedretry/stamper",
}

// TestImportGraphHoldsNoServerDependency pins the import graph of stamper,
// in a cgo build and in a build without cgo: no package of
// serverDependencies, of this module only ownPackages, and nothing else
// outside the standard library.
func TestImportGraphHoldsNoServerDependency(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not available")
	}
	for _, cgo := range []string{"1", "0"} {
		t.Run("CGO_ENABLED="+cgo, func(t *testing.T) {
			cmd := exec.Command(gobin, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".")
			cmd.Env = append(os.Environ(), "CGO_ENABLED="+cgo)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("go list -deps: %v\n%s", err, stderr.Bytes())
			}
			pkgs := strings.Fields(string(out))
			for _, p := range pkgs {
				for _, banned := range serverDependencies {
					if strings.HasPrefix(p, banned) {
						t.Errorf("stamper imports %s (a server dependency, %s)", p, banned)
					}
				}
				if !slices.Contains(ownPackages, p) {
					t.Errorf("stamper imports %s, outside the standard library and ownPackages", p)
				}
			}
			t.Logf("%d packages outside the standard library: %s", len(pkgs), strings.Join(pkgs, " "))
		})
	}
}

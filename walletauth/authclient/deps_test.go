package authclient_test

import (
	"bytes"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// serverDependencies are the import path prefixes of what the service links
// and a client must not: WebAuthn and TPM attestation, JOSE and JWT,
// PostgreSQL and OpenTelemetry (API and SDK alike).
var serverDependencies = []string{
	"github.com/go-webauthn/",
	"github.com/google/go-tpm",
	"github.com/lestrrat-go/",
	"github.com/golang-jwt/",
	"github.com/jackc/",
	"go.opentelemetry.io/",
}

const module = "github.com/walletgate/walletgate"

// clientGraphs are the client packages and what each may import: of this
// module only own (the error type and its canonical JSON, the id and
// credential types of storage, the client halves; none of the services or
// store backends), of other modules only modules, and at most max packages
// outside the standard library in all, so a review of what a client links
// stays small.
var clientGraphs = []struct {
	pkg     string
	own     []string
	modules []string
	max     int
}{
	{pkg: module + "/walletauth/authclient", max: 40,
		own: []string{module + "/apierror", module + "/apierror/internal/canonjson", module + "/storage",
			module + "/signedretry/stamper", module + "/walletauth/envelope", module + "/walletauth/authclient"},
		// HPKE and its primitives, and base58check of sealed session keys.
		modules: []string{"github.com/cloudflare/circl", "golang.org/x/crypto", "golang.org/x/sys", "github.com/mr-tron/base58"}},
	// Stamping needs nothing but the standard library's ECDSA.
	{pkg: module + "/signedretry/stamper", max: 4,
		own: []string{module + "/apierror", module + "/apierror/internal/canonjson", module + "/storage", module + "/signedretry/stamper"}},
}

// TestImportGraphHoldsNoServerDependency pins the import graph of each
// client package, in a cgo build and in a build without cgo: no package of
// serverDependencies, of this module only its own, of other modules only
// its modules, and at most its max packages outside the standard library.
func TestImportGraphHoldsNoServerDependency(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not available")
	}
	for _, g := range clientGraphs {
		for _, cgo := range []string{"1", "0"} {
			t.Run(g.pkg+"/CGO_ENABLED="+cgo, func(t *testing.T) {
				cmd := exec.Command(gobin, "list", "-deps", "-f",
					"{{if not .Standard}}{{.ImportPath}} {{with .Module}}{{.Path}}{{end}}{{end}}", g.pkg)
				cmd.Env = append(os.Environ(), "CGO_ENABLED="+cgo)
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				out, err := cmd.Output()
				if err != nil {
					t.Fatalf("go list -deps: %v\n%s", err, stderr.Bytes())
				}
				lines := strings.Split(strings.TrimSpace(string(out)), "\n")
				for _, line := range lines {
					pkg, mod, _ := strings.Cut(line, " ")
					for _, banned := range serverDependencies {
						if strings.HasPrefix(pkg, banned) {
							t.Errorf("%s imports %s (a server dependency, %s)", g.pkg, pkg, banned)
						}
					}
					switch {
					case mod == module && !slices.Contains(g.own, pkg):
						t.Errorf("%s imports %s, a package of this module it must not", g.pkg, pkg)
					case mod != module && !slices.Contains(g.modules, mod):
						t.Errorf("%s imports %s of module %q, outside its modules", g.pkg, pkg, mod)
					}
				}
				if len(lines) > g.max {
					t.Errorf("%s imports %d packages outside the standard library, want at most %d:\n%s", g.pkg, len(lines), g.max, out)
				}
				t.Logf("%d packages outside the standard library", len(lines))
			})
		}
	}
}

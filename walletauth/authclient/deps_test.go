package authclient_test

import (
	"bytes"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// maxClientDeps bounds the packages outside the standard library that
// importing authclient pulls in (this module's own included), so a review
// of what a client links stays small.
const maxClientDeps = 40

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

// ownPackages are the only packages of this module authclient imports: the
// error type and its canonical JSON, the id and credential types of
// storage, the client's half of the signed retry and the envelope formats;
// none of the services or store backends.
var ownPackages = []string{
	"github.com/walletgate/walletgate/apierror",
	"github.com/walletgate/walletgate/apierror/internal/canonjson",
	"github.com/walletgate/walletgate/storage",
	"github.com/walletgate/walletgate/signedretry/stamper",
	"github.com/walletgate/walletgate/walletauth/envelope",
	"github.com/walletgate/walletgate/walletauth/authclient",
}

// otherModules are the only other modules authclient's packages come from:
// HPKE and its primitives, and base58check of sealed session keys.
var otherModules = []string{
	"github.com/cloudflare/circl",
	"golang.org/x/crypto",
	"golang.org/x/sys",
	"github.com/mr-tron/base58",
}

// TestImportGraphHoldsNoServerDependency pins the import graph of
// authclient, in a cgo build and in a build without cgo: no package of
// serverDependencies, of this module only ownPackages, of other modules
// only otherModules, and at most maxClientDeps packages outside the
// standard library.
func TestImportGraphHoldsNoServerDependency(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not available")
	}
	const self = "github.com/walletgate/walletgate"
	for _, cgo := range []string{"1", "0"} {
		t.Run("CGO_ENABLED="+cgo, func(t *testing.T) {
			cmd := exec.Command(gobin, "list", "-deps", "-f",
				"{{if not .Standard}}{{.ImportPath}} {{with .Module}}{{.Path}}{{end}}{{end}}", ".")
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
						t.Errorf("authclient imports %s (a server dependency, %s)", pkg, banned)
					}
				}
				switch {
				case mod == self && !slices.Contains(ownPackages, pkg):
					t.Errorf("authclient imports %s, a package of this module outside ownPackages", pkg)
				case mod != self && !slices.Contains(otherModules, mod):
					t.Errorf("authclient imports %s of module %q, outside otherModules", pkg, mod)
				}
			}
			if len(lines) > maxClientDeps {
				t.Errorf("authclient imports %d packages outside the standard library, want at most %d:\n%s",
					len(lines), maxClientDeps, out)
			}
			t.Logf("%d packages outside the standard library", len(lines))
		})
	}
}

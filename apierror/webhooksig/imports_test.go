package webhooksig_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestReceiverImportsNoStorage checks that a receiver verifies a delivery
// without the storage tree: neither this package nor the example receiver
// depends on any package under storage.
func TestReceiverImportsNoStorage(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not available")
	}
	const module = "github.com/walletgate/walletgate"
	for _, pkg := range []string{module + "/apierror/webhooksig", module + "/examples/webhookreceiver"} {
		out, err := exec.Command(gobin, "list", "-deps", pkg).Output()
		if err != nil {
			t.Skipf("go list failed: %v", err)
		}
		for _, dep := range strings.Fields(string(out)) {
			if dep == module+"/storage" || strings.HasPrefix(dep, module+"/storage/") {
				t.Errorf("%s imports %s; a receiver must not need the storage tree", pkg, dep)
			}
		}
	}
}

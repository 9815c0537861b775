package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// bundleDir holds the pinned JavaScript dependencies of the page and the
// entry of their bundle (node_modules comes from `npm ci`, which .ci/run
// does).
const bundleDir = "testdata/bundle"

// bundleOut is the committed bundle, relative to bundleDir, as the build
// script names it.
const bundleOut = "../../web/vendor.js"

// packageJSON is what the tests read of testdata/bundle/package.json.
type packageJSON struct {
	Scripts         map[string]string `json:"scripts"`
	Dependencies    map[string]string `json:"dependencies"`
	DevDependencies map[string]string `json:"devDependencies"`
}

func readPackage(t *testing.T) packageJSON {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(bundleDir, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var p packageJSON
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatalf("package.json: %v", err)
	}
	return p
}

// TestPackagesPinned checks every dependency of the bundle, esbuild
// included, is pinned to one exact version, the same in package-lock.json.
func TestPackagesPinned(t *testing.T) {
	p := readPackage(t)
	b, err := os.ReadFile(filepath.Join(bundleDir, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	var lock struct {
		Packages map[string]struct {
			Version string `json:"version"`
		} `json:"packages"`
	}
	if err := json.Unmarshal(b, &lock); err != nil {
		t.Fatalf("package-lock.json: %v", err)
	}
	exact := regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+$`)
	all := map[string]string{}
	for k, v := range p.Dependencies {
		all[k] = v
	}
	for k, v := range p.DevDependencies {
		all[k] = v
	}
	if all["esbuild"] == "" {
		t.Error("package.json pins no esbuild")
	}
	for name, v := range all {
		if !exact.MatchString(v) {
			t.Errorf("%s is %q in package.json, want an exact version", name, v)
		}
		if got := lock.Packages["node_modules/"+name].Version; got != v {
			t.Errorf("%s is %s in package-lock.json, %s in package.json", name, got, v)
		}
	}
}

// TestBundleMatchesSources rebuilds the bundle with the pinned esbuild and
// the build script of package.json, and fails when the committed
// web/vendor.js differs from it by a byte: after a change of entry.js or of
// a pinned version, run `npm run build` in testdata/bundle and commit the
// result. It skips without node or without testdata/bundle/node_modules.
func TestBundleMatchesSources(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not on PATH: install Node.js 20+ and run `npm ci` in examples/web/testdata/bundle to check the committed bundle")
	}
	if _, err := os.Stat(filepath.Join(bundleDir, "node_modules")); err != nil {
		t.Skip("examples/web/testdata/bundle/node_modules is absent: run `npm ci --no-audit --no-fund` there (.ci/run does) to check the committed bundle")
	}
	p := readPackage(t)
	var installed struct {
		Version string `json:"version"`
	}
	if b, err := os.ReadFile(filepath.Join(bundleDir, "node_modules/esbuild/package.json")); err != nil || json.Unmarshal(b, &installed) != nil {
		t.Fatalf("reading the installed esbuild's version: %v", err)
	}
	if installed.Version != p.DevDependencies["esbuild"] {
		t.Fatalf("node_modules holds esbuild %s, package.json pins %s: run `npm ci` in %s", installed.Version, p.DevDependencies["esbuild"], bundleDir)
	}
	args := strings.Fields(p.Scripts["build"])
	if len(args) < 2 || args[0] != "esbuild" || args[len(args)-1] != "--outfile="+bundleOut {
		t.Fatalf("the build script %q is not `esbuild ... --outfile=%s`", p.Scripts["build"], bundleOut)
	}
	out := filepath.Join(t.TempDir(), "vendor.js")
	// node_modules/.bin/esbuild is the native binary once esbuild's
	// install script ran, a Node launcher of it otherwise; either runs here.
	esbuild, err := filepath.Abs(filepath.Join(bundleDir, "node_modules/.bin/esbuild"))
	if err != nil {
		t.Fatal(err)
	}
	args = append(args[1:len(args)-1], "--outfile="+out, "--log-level=warning")
	cmd := exec.Command(esbuild, args...)
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(node)+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.Dir = bundleDir
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("esbuild %v: %v\n%s", args, err, msg)
	}
	built, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile("web/vendor.js")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(built, committed) {
		t.Fatalf("web/vendor.js (%d bytes) is not what the pinned sources build to (%d bytes): run `npm ci && npm run build` in %s and commit web/vendor.js",
			len(committed), len(built), bundleDir)
	}
}

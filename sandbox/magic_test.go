package sandbox_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/walletgate/walletgate/sandbox"
)

func TestSuffix(t *testing.T) {
	for in, want := range map[string]string{
		"Jane Doe001":                     "001",
		"  REG-002 ":                      "002",
		"testuser.002@pix.com.br":         "002",
		"$pending.long.usd@sandbox.uma":   "usd",
		"0xaaaaaaaaaaaaaaaaaaaaaaaa0a105": "105",
		"12":                              "",
		"ab@example.com":                  "",
		"":                                "",
	} {
		if got := sandbox.Suffix(in); got != want {
			t.Errorf("Suffix(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestCoverageTable keeps testdata/magic-coverage.md honest: every test it
// names exists.
func TestCoverageTable(t *testing.T) {
	table, err := os.ReadFile("testdata/magic-coverage.md")
	if err != nil {
		t.Fatal(err)
	}
	var src strings.Builder
	files, _ := os.ReadDir(".")
	for _, f := range files {
		if strings.HasSuffix(f.Name(), "_test.go") {
			b, _ := os.ReadFile(f.Name())
			src.Write(b)
		}
	}
	names := regexp.MustCompile("`((?:Test|Example|Fuzz)[A-Za-z0-9_]*)`").FindAllStringSubmatch(string(table), -1)
	if len(names) < 30 {
		t.Fatalf("the table names only %d tests", len(names))
	}
	for _, n := range names {
		if !strings.Contains(src.String(), "func "+n[1]+"(") {
			t.Errorf("the table names %s, which does not exist", n[1])
		}
	}
}

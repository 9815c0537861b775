package evmsim

import (
	"encoding/json"
	"flag"
	"os"
	"reflect"
	"testing"
)

// original is the compiler output the copy in contracts.json is taken from.
const original = "../../../../ownership/evmcontract/testdata/contracts.json"

var update = flag.Bool("update", false, "rewrite contracts.json from "+original)

// copyOf returns the part of a contracts.json that this package keeps:
// the compiler, its settings and the two contracts, or nil for a contract
// that is missing.
func copyOf(t *testing.T, raw []byte) map[string]any {
	t.Helper()
	var c struct {
		Compiler  string                     `json:"compiler"`
		Settings  any                        `json:"settings"`
		Contracts map[string]json.RawMessage `json:"contracts"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	contracts := map[string]any{}
	for _, name := range []string{ownerWalletName, walletFactoryName} {
		var v any
		if raw, ok := c.Contracts[name]; ok {
			if err := json.Unmarshal(raw, &v); err != nil {
				t.Fatal(err)
			}
		}
		contracts[name] = v
	}
	return map[string]any{"compiler": c.Compiler, "settings": c.Settings, "contracts": contracts}
}

// TestContractsAreTheCompiledOnes: contracts.json holds exactly
// OwnerWallet and WalletFactory as ownership/evmcontract/testdata/build.js
// last compiled them (ABI, creation code, source, compiler and settings).
// After a rebuild there, run go test -run TestContractsAreTheCompiledOnes
// -update in this directory.
func TestContractsAreTheCompiledOnes(t *testing.T) {
	src, err := os.ReadFile(original)
	if err != nil {
		t.Fatal(err)
	}
	want := copyOf(t, src)
	if *update {
		out, err := json.MarshalIndent(want, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile("contracts.json", append(out, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile("contracts.json")
	if err != nil {
		t.Fatal(err)
	}
	var all struct{ Contracts map[string]json.RawMessage }
	if err := json.Unmarshal(got, &all); err != nil {
		t.Fatal(err)
	}
	if len(all.Contracts) != 2 {
		t.Errorf("contracts.json holds %d contracts, want %s and %s only", len(all.Contracts), ownerWalletName, walletFactoryName)
	}
	for name, c := range want["contracts"].(map[string]any) {
		if c == nil {
			t.Errorf("%s has no %s", original, name)
		}
	}
	if !reflect.DeepEqual(copyOf(t, got), want) {
		t.Fatalf("contracts.json differs from %s; run go test -run TestContractsAreTheCompiledOnes -update in examples/server/internal/evmsim", original)
	}
	if _, err := loadArtifacts(got); err != nil {
		t.Fatal(err)
	}
}

// TestLoadArtifactsRefuses: a contracts.json without a contract, with an
// ABI that does not parse or without creation code is refused.
func TestLoadArtifactsRefuses(t *testing.T) {
	for name, raw := range map[string]string{
		"not JSON":     `{`,
		"no contracts": `{"contracts":{}}`,
		"no factory":   `{"contracts":{"OwnerWallet":{"abi":[],"bytecode":"0x00"}}}`,
		"bad ABI":      `{"contracts":{"OwnerWallet":{"abi":{},"bytecode":"0x00"},"WalletFactory":{"abi":[],"bytecode":"0x00"}}}`,
		"no code":      `{"contracts":{"OwnerWallet":{"abi":[],"bytecode":"0x"},"WalletFactory":{"abi":[],"bytecode":"0x00"}}}`,
		"bad code":     `{"contracts":{"OwnerWallet":{"abi":[],"bytecode":"0x00"},"WalletFactory":{"abi":[],"bytecode":"0xzz"}}}`,
	} {
		if _, err := loadArtifacts([]byte(raw)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

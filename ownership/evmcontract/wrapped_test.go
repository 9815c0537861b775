package evmcontract

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
)

// encodeWrapped is go-ethereum's ABI encoding of a wrapped signature, the
// reference unwrap must agree with.
func encodeWrapped(tb testing.TB, factory common.Address, calldata, sig []byte) []byte {
	tb.Helper()
	args := abi.Arguments{{Type: abiType("address")}, {Type: abiType("bytes")}, {Type: abiType("bytes")}}
	enc, err := args.Pack(factory, calldata, sig)
	if err != nil {
		tb.Fatal(err)
	}
	return append(enc, erc6492Suffix...)
}

func TestUnwrap(t *testing.T) {
	factory := common.HexToAddress("0x00000000000000000000000000000000000fac70")
	sig := bytes.Repeat([]byte{0xab}, 65)
	for _, calldata := range [][]byte{{}, {1}, bytes.Repeat([]byte{2}, 32), bytes.Repeat([]byte{3}, 100)} {
		w, err := unwrap(encodeWrapped(t, factory, calldata, sig))
		if err != nil || w.Factory != factory || !bytes.Equal(w.FactoryCalldata, calldata) || !bytes.Equal(w.Signature, sig) {
			t.Fatalf("unwrap(%x) = %+v, %v", calldata, w, err)
		}
	}
	good := encodeWrapped(t, factory, []byte{1, 2, 3}, sig)
	for name, mutate := range map[string]func([]byte) []byte{
		"no suffix":           func(b []byte) []byte { return b[:len(b)-32] },
		"dirty address word":  func(b []byte) []byte { b[0] = 1; return b },
		"first offset moved":  func(b []byte) []byte { b[63] = 0x80; return b },
		"second offset moved": func(b []byte) []byte { b[95] += 32; return b },
		"huge length":         func(b []byte) []byte { b[96+27] = 1; return b },
		"dirty padding":       func(b []byte) []byte { b[96+32+3] = 9; return b },
		"trailing bytes":      func(b []byte) []byte { return append(b[:len(b)-32], append(make([]byte, 32), erc6492Suffix...)...) },
		"truncated":           func(b []byte) []byte { return append(b[:100], erc6492Suffix...) },
		"only the suffix":     func([]byte) []byte { return bytes.Clone(erc6492Suffix) },
		"length beyond input": func(b []byte) []byte { b[96+31] = 200; return b },
	} {
		_, err := unwrap(mutate(bytes.Clone(good)))
		want := errMalformedWrapper
		if name == "no suffix" {
			want = errNotWrapped
		}
		if !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", name, err, want)
		}
	}
}

// FuzzUnwrap: unwrap never panics; what it accepts re-encodes to exactly
// its input with go-ethereum's ABI encoder (it accepts canonical encodings
// only), and its results do not alias the input.
func FuzzUnwrap(f *testing.F) {
	factory := common.HexToAddress("0x00000000000000000000000000000000000fac70")
	f.Add(encodeWrapped(f, factory, []byte{1, 2, 3}, bytes.Repeat([]byte{0xab}, 65)))
	f.Add(encodeWrapped(f, factory, nil, nil))
	f.Add(encodeWrapped(f, factory, bytes.Repeat([]byte{7}, 64), []byte{1}))
	f.Add(bytes.Clone(erc6492Suffix))
	f.Add([]byte{})
	// The ERC-6492 vector made by ethers.
	if b, err := os.ReadFile("testdata/vectors.json"); err == nil {
		var file struct{ Vectors []struct{ Signature string } }
		if json.Unmarshal(b, &file) == nil {
			for _, v := range file.Vectors {
				if raw, err := hex.DecodeString(strings.TrimPrefix(v.Signature, "0x")); err == nil {
					f.Add(raw)
				}
			}
		}
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		w, err := unwrap(in)
		if err != nil {
			if !errors.Is(err, errNotWrapped) && !errors.Is(err, errMalformedWrapper) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if again := encodeWrapped(t, w.Factory, w.FactoryCalldata, w.Signature); !bytes.Equal(again, in) {
			t.Fatalf("accepted a non-canonical encoding:\n%x\nre-encodes to\n%x", in, again)
		}
		if len(w.Signature) > 0 {
			w.Signature[0] ^= 0xff
			if bytes.Equal(encodeWrapped(t, w.Factory, w.FactoryCalldata, w.Signature), in) {
				t.Fatal("the signature aliases the input")
			}
		}
	})
}

// TestEmbeddedCheckCode: the embedded checking contract is the one
// testdata/build.js compiled from testdata/contracts/SignatureCheck.sol.
func TestEmbeddedCheckCode(t *testing.T) {
	b, err := os.ReadFile("testdata/contracts.json")
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Compiler  string
		Contracts map[string]struct{ Bytecode string }
	}
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	if got := "0x" + hex.EncodeToString(checkCode); got != c.Contracts["SignatureCheck"].Bytecode {
		t.Fatal("signaturecheck.json differs from testdata/contracts.json; run node build.js in testdata")
	}
	var e struct{ Compiler string }
	if err := json.Unmarshal(checkJSON, &e); err != nil || e.Compiler != c.Compiler || !strings.HasPrefix(e.Compiler, "solc-js 0.8.28+") {
		t.Fatalf("compiler %q, testdata %q", e.Compiler, c.Compiler)
	}
}

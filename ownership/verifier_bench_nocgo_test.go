//go:build !cgo || gofuzz

package ownership

import (
	"encoding/hex"
	"testing"

	"github.com/btcsuite/btcd/btcec/v2/ecdsa"
)

// benchRecoverCompact is btcec's pure-Go RecoverCompact over a vector's
// digest and signature in compact form: the primitive under EVM and TRON
// verification without cgo.
func benchRecoverCompact(b *testing.B, name string, digest func([]byte) []byte) {
	vec := benchVector(b, name)
	sig, _ := hex.DecodeString(vec.Signature[2:])
	compact := append([]byte{sig[64]}, sig[:64]...) // v is 27 or 28: an uncompressed key
	d := digest([]byte(vec.Message))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := ecdsa.RecoverCompact(compact, d); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEVMRecoverCompact(b *testing.B) {
	benchRecoverCompact(b, "evm-ethereum-challenge", evmHash)
}

func BenchmarkTronRecoverCompact(b *testing.B) {
	benchRecoverCompact(b, "tron-mainnet-challenge", tronHash)
}

//go:build cgo && !gofuzz

package ownership

import (
	"encoding/hex"
	"testing"

	"github.com/ethereum/go-ethereum/accounts"
	"github.com/ethereum/go-ethereum/crypto"
)

// benchSigToPub is go-ethereum's crypto.SigToPub (libsecp256k1 in a cgo
// build) over a vector's digest and raw r‖s‖v: the primitive under EVM and
// TRON verification with cgo.
func benchSigToPub(b *testing.B, name string, digest func([]byte) []byte) {
	vec := benchVector(b, name)
	sig, _ := hex.DecodeString(vec.Signature[2:])
	sig[64] -= 27
	d := digest([]byte(vec.Message))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := crypto.SigToPub(d, sig); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEVMSigToPub(b *testing.B) {
	benchSigToPub(b, "evm-ethereum-challenge", accounts.TextHash)
}

func BenchmarkTronSigToPub(b *testing.B) {
	benchSigToPub(b, "tron-mainnet-challenge", tronHash)
}

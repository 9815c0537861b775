//go:build cgo && !gofuzz

package ownership

import "github.com/ethereum/go-ethereum/crypto/secp256k1"

// recoverAddress recovers the key that signed the 32-byte digest with sig
// through libsecp256k1 (go-ethereum's cgo binding, the build constraint of
// which this file shares) and returns its Ethereum-style address; false
// when no key recovers. sig has passed [decodeRSV], so the checks that
// libsecp256k1 does not make (low s) are already done.
func recoverAddress(digest []byte, sig *rsv) (evmAddress, bool) {
	pub, err := secp256k1.RecoverPubkey(digest, sig[:])
	if err != nil || len(pub) != 65 {
		return evmAddress{}, false
	}
	return keyHash(pub), true
}

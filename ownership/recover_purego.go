package ownership

import "github.com/btcsuite/btcd/btcec/v2/ecdsa"

// recoverAddressPureGo is the pure-Go (btcec) recovery of the key that
// signed the 32-byte digest with sig, returned as its Ethereum-style
// address; false when no key recovers. It is the recovery of builds
// without cgo, and the reference the libsecp256k1 one is tested against.
func recoverAddressPureGo(digest []byte, sig *rsv) (evmAddress, bool) {
	// btcec's compact form: 27 + recovery id (an uncompressed key), r, s.
	var compact [65]byte
	compact[0] = 27 + sig[64]
	copy(compact[1:], sig[:64])
	pub, _, err := ecdsa.RecoverCompact(compact[:], digest)
	if err != nil {
		return evmAddress{}, false
	}
	return keyHash(pub.SerializeUncompressed()), true
}

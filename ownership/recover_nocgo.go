//go:build !cgo || gofuzz

package ownership

// recoverAddress recovers the key that signed the 32-byte digest with sig
// and returns its Ethereum-style address; false when no key recovers.
// Without cgo it is the pure-Go recovery.
func recoverAddress(digest []byte, sig *rsv) (evmAddress, bool) {
	return recoverAddressPureGo(digest, sig)
}

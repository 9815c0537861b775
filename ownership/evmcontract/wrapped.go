package evmcontract

import (
	"bytes"
	"encoding/binary"
	"errors"
)

// erc6492Suffix is the 32 bytes that end an ERC-6492 wrapped signature.
var erc6492Suffix = bytes.Repeat([]byte{0x64, 0x92}, 16)

// wrapped is an ERC-6492 wrapped signature: the factory and the call that
// deploy the account, and the signature its isValidSignature checks once
// deployed.
type wrapped struct {
	Factory         [20]byte
	FactoryCalldata []byte
	Signature       []byte
}

// Errors of [unwrap].
var (
	// errNotWrapped: the signature does not end in the ERC-6492 suffix.
	errNotWrapped = errors.New("evmcontract: signature is not ERC-6492 wrapped")
	// errMalformedWrapper: it ends in the suffix but what precedes it is
	// not the canonical abi.encode(address, bytes, bytes).
	errMalformedWrapper = errors.New("evmcontract: ERC-6492 wrapper is not canonical abi.encode(address, bytes, bytes)")
)

// unwrap parses an ERC-6492 wrapped signature:
// abi.encode(address factory, bytes factoryCalldata, bytes signature)
// followed by the 32-byte suffix 0x6492…6492. It returns errNotWrapped
// when sig does not end in the suffix, and errMalformedWrapper unless the
// rest is exactly the canonical encoding Solidity's abi.encode and the
// usual clients produce: the address word's upper 12 bytes are zero, the
// offsets are 0x60 and the end of the first byte string, each length fits
// the input, the padding bytes are zero and nothing follows the second
// byte string. The returned slices are copies.
func unwrap(sig []byte) (wrapped, error) {
	if len(sig) < len(erc6492Suffix) || !bytes.Equal(sig[len(sig)-len(erc6492Suffix):], erc6492Suffix) {
		return wrapped{}, errNotWrapped
	}
	body := sig[:len(sig)-len(erc6492Suffix)]
	if len(body) < 3*32 {
		return wrapped{}, errMalformedWrapper
	}
	var w wrapped
	if !allZero(body[:12]) {
		return wrapped{}, errMalformedWrapper
	}
	copy(w.Factory[:], body[12:32])
	first, ok := word(body[32:64])
	if !ok || first != 3*32 {
		return wrapped{}, errMalformedWrapper
	}
	calldata, next, ok := byteString(body, first)
	if !ok {
		return wrapped{}, errMalformedWrapper
	}
	second, ok := word(body[64:96])
	if !ok || second != next {
		return wrapped{}, errMalformedWrapper
	}
	inner, end, ok := byteString(body, second)
	if !ok || end != uint64(len(body)) {
		return wrapped{}, errMalformedWrapper
	}
	w.FactoryCalldata = bytes.Clone(calldata)
	w.Signature = bytes.Clone(inner)
	if w.FactoryCalldata == nil {
		w.FactoryCalldata = []byte{}
	}
	if w.Signature == nil {
		w.Signature = []byte{}
	}
	return w, nil
}

// byteString reads the ABI byte string at offset off of body: a length
// word, then the bytes padded with zeros to a multiple of 32. It returns the
// bytes and the offset just past the padding.
func byteString(body []byte, off uint64) ([]byte, uint64, bool) {
	if off > uint64(len(body)) || uint64(len(body))-off < 32 {
		return nil, 0, false
	}
	n, ok := word(body[off : off+32])
	if !ok {
		return nil, 0, false
	}
	start := off + 32
	padded := (n + 31) / 32 * 32
	if n > uint64(len(body)) || padded > uint64(len(body))-start {
		return nil, 0, false
	}
	if !allZero(body[start+n : start+padded]) {
		return nil, 0, false
	}
	return body[start : start+n], start + padded, true
}

// word decodes a 32-byte big-endian word that fits in 32 bits (every
// offset and length of a signature does).
func word(b []byte) (uint64, bool) {
	if !allZero(b[:28]) {
		return 0, false
	}
	return uint64(binary.BigEndian.Uint32(b[28:32])), true
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

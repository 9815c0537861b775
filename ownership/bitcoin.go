package ownership

import (
	"bytes"
	"context"
	"encoding/base64"
	"strings"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/btcec/v2/ecdsa"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// BitcoinVerifier verifies Bitcoin message signatures for [AccountBitcoin]:
// BIP-137 ("Bitcoin Signed Message"), Electrum's variant of it, and BIP-322
// "simple" (see [SchemeBIP137], [SchemeElectrum], [SchemeBIP322]).
//
// Addresses may be P2PKH (1…), P2SH-P2WPKH (3…), P2WPKH (bc1q…) or P2TR
// (bc1p…) and must belong to Wallet.Network (testnet and signet share their
// encodings). A BIP-137 signature is base64 of 65 bytes header‖r‖s; the
// header range names the address type and key form (27-30 P2PKH
// uncompressed, 31-34 P2PKH compressed, 35-38 P2SH-P2WPKH, 39-42 P2WPKH),
// and each range is accepted only for its own address type, so a key's
// signature never proves a different address derived from it. The
// recovered key is hashed into the claimed address type and compared.
// BIP-137 has no taproot header: P2TR addresses need BIP-322.
type BitcoinVerifier struct{}

// bitcoinMessagePrefix is the magic string of Bitcoin signed messages.
const bitcoinMessagePrefix = "Bitcoin Signed Message:\n"

// Verify implements [Verifier].
func (BitcoinVerifier) Verify(_ context.Context, w Wallet, message []byte, sig Signature) error {
	addr, err := parseBitcoinAddress(w.Address, w.Network)
	if err != nil {
		return err
	}
	value := strings.TrimSpace(sig.Value)
	switch sig.Scheme {
	case "", SchemeBIP137:
		if raw, ok := legacyShape(value); ok {
			return verifyBIP137(addr, message, raw, false)
		}
		return verifyBIP322(addr, message, value)
	case SchemeElectrum:
		raw, ok := legacyShape(value)
		if !ok {
			return malformed("signature is not base64 of 65 bytes with a header of 27-42")
		}
		return verifyBIP137(addr, message, raw, true)
	case SchemeBIP322:
		if _, p2pkh := addr.(*address.AddressPubKeyHash); p2pkh {
			raw, ok := legacyShape(value)
			if !ok {
				return malformed("BIP-322 for a P2PKH address is the legacy 65-byte format")
			}
			return verifyBIP137(addr, message, raw, false)
		}
		return verifyBIP322(addr, message, value)
	}
	return malformed("unknown signature scheme; use bip137, electrum or bip322")
}

// bitcoinParams returns the address parameters of a network.
func bitcoinParams(n Network) (*chaincfg.Params, error) {
	switch n {
	case Mainnet:
		return &chaincfg.MainNetParams, nil
	case Testnet:
		return &chaincfg.TestNet3Params, nil
	case Signet:
		return &chaincfg.SigNetParams, nil
	case Regtest:
		return &chaincfg.RegressionNetParams, nil
	}
	return nil, malformed("unknown network")
}

// parseBitcoinAddress decodes a P2PKH, P2SH, P2WPKH or P2TR address of
// network n. Other address types, and addresses of other networks, are
// rejected with a reason naming the problem.
func parseBitcoinAddress(s string, n Network) (address.Address, error) {
	params, err := bitcoinParams(n)
	if err != nil {
		return nil, err
	}
	s = strings.TrimSpace(s)
	if len(s) > 100 {
		return nil, malformed("address is not a Bitcoin address")
	}
	addr, err := address.DecodeAddress(s, params)
	if err != nil || !addr.IsForNet(params) {
		for _, other := range []Network{Mainnet, Testnet, Regtest} {
			p, _ := bitcoinParams(other)
			if a, err := address.DecodeAddress(s, p); err == nil && a.IsForNet(p) && !sameEncoding(p, params) {
				return nil, malformed(other.String() + " address under " + n.String() + " configuration")
			}
		}
		return nil, malformed("address is not a Bitcoin address")
	}
	switch addr.(type) {
	case *address.AddressPubKeyHash, *address.AddressScriptHash,
		*address.AddressWitnessPubKeyHash, *address.AddressTaproot:
		return addr, nil
	}
	return nil, malformed("address type is not supported; use P2PKH, P2SH-P2WPKH, P2WPKH or P2TR")
}

// sameEncoding reports whether two networks encode addresses identically
// (testnet, signet and regtest share base58 prefixes; only the bech32 HRP of
// regtest differs).
func sameEncoding(a, b *chaincfg.Params) bool {
	return a.PubKeyHashAddrID == b.PubKeyHashAddrID && a.ScriptHashAddrID == b.ScriptHashAddrID &&
		a.Bech32HRPSegwit == b.Bech32HRPSegwit
}

// legacyShape reports whether value is base64 of 65 bytes with a BIP-137
// header byte, returning the bytes.
func legacyShape(value string) ([]byte, bool) {
	if len(value) != 88 {
		return nil, false
	}
	raw, err := base64.StdEncoding.DecodeString(value)
	if err != nil || len(raw) != 65 || raw[0] < 27 || raw[0] > 42 {
		return nil, false
	}
	return raw, true
}

// bitcoinMessageHash is SHA256d(varstr(prefix) ‖ varstr(message)).
func bitcoinMessageHash(message []byte) []byte {
	var buf bytes.Buffer
	buf.Grow(26 + 9 + len(message))
	_ = wire.WriteVarString(&buf, 0, bitcoinMessagePrefix)
	_ = wire.WriteVarBytes(&buf, 0, message)
	return chainhash.DoubleHashB(buf.Bytes())
}

// Header kinds of BIP-137.
const (
	kindP2PKHUncompressed = iota
	kindP2PKHCompressed
	kindP2SHP2WPKH
	kindP2WPKH
)

// verifyBIP137 checks a 65-byte header‖r‖s signature against addr. With
// electrum set, the compressed P2PKH headers are also accepted for P2WPKH
// and P2SH-P2WPKH addresses.
func verifyBIP137(addr address.Address, message, raw []byte, electrum bool) error {
	header := raw[0]
	kind := int(header-27) / 4
	recid := (header - 27) & 3
	switch addr.(type) {
	case *address.AddressPubKeyHash:
		if kind != kindP2PKHUncompressed && kind != kindP2PKHCompressed {
			return malformed("signature header is for a segwit address, not P2PKH")
		}
	case *address.AddressScriptHash:
		if kind != kindP2SHP2WPKH && !(electrum && kind == kindP2PKHCompressed) {
			return malformed(headerReason(kind, electrum, "P2SH-P2WPKH"))
		}
	case *address.AddressWitnessPubKeyHash:
		if kind != kindP2WPKH && !(electrum && kind == kindP2PKHCompressed) {
			return malformed(headerReason(kind, electrum, "P2WPKH"))
		}
	case *address.AddressTaproot:
		return malformed("BIP-137 has no taproot header; sign a P2TR address with BIP-322")
	default:
		return malformed("address type is not supported by BIP-137")
	}
	compressed := kind != kindP2PKHUncompressed
	compact := make([]byte, 65)
	copy(compact, raw)
	compact[0] = 27 + recid
	if compressed {
		compact[0] += 4
	}
	pub, _, err := ecdsa.RecoverCompact(compact, bitcoinMessageHash(message))
	if err != nil {
		return mismatch("no public key recovers from the signature")
	}
	var keyHash []byte
	if compressed {
		keyHash = address.Hash160(pub.SerializeCompressed())
	} else {
		keyHash = address.Hash160(pub.SerializeUncompressed())
	}
	if !bytes.Equal(bip137ScriptHash(addr, keyHash), addr.ScriptAddress()) {
		return mismatch("recovered key does not match the address")
	}
	return nil
}

// bip137ScriptHash returns what addr.ScriptAddress must equal for a key with
// hash160 keyHash: the key hash itself, or for P2SH the hash of the P2WPKH
// redeem script.
func bip137ScriptHash(addr address.Address, keyHash []byte) []byte {
	if _, ok := addr.(*address.AddressScriptHash); ok {
		return address.Hash160(append([]byte{0x00, 0x14}, keyHash...))
	}
	return keyHash
}

// headerReason explains why a header range does not fit a segwit address.
func headerReason(kind int, electrum bool, addrType string) string {
	switch {
	case kind == kindP2PKHCompressed && !electrum:
		return "signature header 31-34 is for P2PKH; use signatureScheme electrum for a " + addrType + " address"
	case kind == kindP2PKHUncompressed:
		return "signature header 27-30 is for an uncompressed P2PKH key, not " + addrType
	}
	return "signature header is for another address type than " + addrType
}

// ValidateAddress implements [AddressValidator]: a P2PKH, P2SH, P2WPKH or
// P2TR address of w.Network.
func (BitcoinVerifier) ValidateAddress(w Wallet) error {
	_, err := parseBitcoinAddress(w.Address, w.Network)
	return err
}

package ownership

import (
	"bytes"
	"encoding/base64"
	"strings"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// BIP-322 "simple" verification: the signature is the witness stack that
// spends the address's output in the virtual to_spend transaction, and
// btcd's script engine checks it with the standard (policy) flags, which
// include LOW_S, strict DER, NULLFAIL and CLEANSTACK.
//
// Supported address types: P2WPKH, P2SH-P2WPKH and P2TR key-path spends. The
// signature hash must be SIGHASH_ALL (a 64-byte taproot signature, which
// means SIGHASH_DEFAULT, is equivalent). The "full" format is not accepted.

// bip322Tag is the tag of the BIP-322 message hash.
const bip322Tag = "BIP0322-signed-message"

// Bounds on a decoded witness stack; the supported spends need at most two
// items of at most 73 bytes.
const (
	maxWitnessItems    = 8
	maxWitnessItemSize = 520
	maxBIP322SigLen    = 4 * 1024
)

// verifyBIP322 checks a base64 BIP-322 simple signature (an optional "smp"
// prefix is stripped) for addr over message.
func verifyBIP322(addr address.Address, message []byte, value string) error {
	switch addr.(type) {
	case *address.AddressWitnessPubKeyHash, *address.AddressScriptHash, *address.AddressTaproot:
	default:
		return malformed("BIP-322 is supported for P2WPKH, P2SH-P2WPKH and P2TR addresses")
	}
	if strings.HasPrefix(value, "ful") {
		return malformed("BIP-322 full format is not supported; send the simple format")
	}
	value = strings.TrimPrefix(value, "smp")
	if len(value) > maxBIP322SigLen {
		return malformed("signature is too long")
	}
	raw, err := base64.StdEncoding.DecodeString(value)
	if err != nil {
		return malformed("signature is not base64")
	}
	witness, err := parseWitness(raw)
	if err != nil {
		return err
	}
	pkScript, err := txscript.PayToAddrScript(addr)
	if err != nil {
		return malformed("address has no output script")
	}
	var scriptSig []byte
	switch addr.(type) {
	case *address.AddressWitnessPubKeyHash:
		if err := checkP2WPKHWitness(witness); err != nil {
			return err
		}
	case *address.AddressScriptHash:
		if err := checkP2WPKHWitness(witness); err != nil {
			return err
		}
		redeem := append([]byte{0x00, 0x14}, address.Hash160(witness[1])...)
		scriptSig, err = txscript.NewScriptBuilder().AddData(redeem).Script()
		if err != nil {
			return malformed("cannot build the P2SH-P2WPKH script")
		}
	case *address.AddressTaproot:
		if len(witness) != 1 {
			return malformed("only taproot key-path signatures (one witness item) are supported")
		}
		switch sig := witness[0]; {
		case len(sig) == 64:
		case len(sig) == 65 && sig[64] == byte(txscript.SigHashAll):
		default:
			return malformed("taproot signature is not 64 bytes, or 65 bytes ending in SIGHASH_ALL")
		}
	}
	toSign := bip322ToSign(pkScript, message, scriptSig, witness)
	fetcher := txscript.NewCannedPrevOutputFetcher(pkScript, 0)
	vm, err := txscript.NewEngine(pkScript, toSign, 0, txscript.StandardVerifyFlags, nil,
		txscript.NewTxSigHashes(toSign, fetcher), 0, fetcher)
	if err != nil {
		return mismatch("BIP-322 signature does not verify for the address")
	}
	if err := vm.Execute(); err != nil {
		return mismatch("BIP-322 signature does not verify for the address")
	}
	return nil
}

// checkP2WPKHWitness requires [DER signature ‖ SIGHASH_ALL, 33-byte key].
func checkP2WPKHWitness(witness wire.TxWitness) error {
	if len(witness) != 2 || len(witness[1]) != 33 {
		return malformed("P2WPKH witness is not a signature and a 33-byte public key")
	}
	sig := witness[0]
	if len(sig) < 9 || sig[len(sig)-1] != byte(txscript.SigHashAll) {
		return malformed("P2WPKH signature does not end in SIGHASH_ALL")
	}
	return nil
}

// parseWitness decodes a consensus-encoded witness stack and requires that it
// uses every byte.
func parseWitness(raw []byte) (wire.TxWitness, error) {
	r := bytes.NewReader(raw)
	n, err := wire.ReadVarInt(r, 0)
	if err != nil || n == 0 || n > maxWitnessItems {
		return nil, malformed("signature is not a BIP-322 witness stack")
	}
	witness := make(wire.TxWitness, 0, n)
	for range n {
		item, err := wire.ReadVarBytes(r, 0, maxWitnessItemSize, "witness item")
		if err != nil {
			return nil, malformed("signature is not a BIP-322 witness stack")
		}
		witness = append(witness, item)
	}
	if r.Len() != 0 {
		return nil, malformed("signature has bytes after the witness stack")
	}
	return witness, nil
}

// bip322MessageHash is the tagged hash of message.
func bip322MessageHash(message []byte) []byte {
	return chainhash.TaggedHash([]byte(bip322Tag), message)[:]
}

// bip322ToSpend builds the virtual transaction whose output 0 pays pkScript.
func bip322ToSpend(pkScript, message []byte) *wire.MsgTx {
	tx := wire.NewMsgTx(0)
	prev := wire.NewOutPoint(&chainhash.Hash{}, 0xFFFFFFFF)
	scriptSig := append([]byte{txscript.OP_0, txscript.OP_DATA_32}, bip322MessageHash(message)...)
	in := wire.NewTxIn(prev, scriptSig, nil)
	in.Sequence = 0
	tx.AddTxIn(in)
	tx.AddTxOut(wire.NewTxOut(0, pkScript))
	return tx
}

// bip322ToSign builds the virtual transaction that spends to_spend with the
// given scriptSig and witness.
func bip322ToSign(pkScript, message, scriptSig []byte, witness wire.TxWitness) *wire.MsgTx {
	toSpend := bip322ToSpend(pkScript, message)
	hash := toSpend.TxHash()
	tx := wire.NewMsgTx(0)
	in := wire.NewTxIn(wire.NewOutPoint(&hash, 0), scriptSig, witness)
	in.Sequence = 0
	tx.AddTxIn(in)
	tx.AddTxOut(wire.NewTxOut(0, []byte{txscript.OP_RETURN}))
	return tx
}

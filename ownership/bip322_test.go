package ownership

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// Published in bitcoin/bips bip-0322/basic-test-vectors.json.
const (
	bipP2WPKH     = "bc1q9vza2e8x573nczrlzms0wvx3gsqjx7vavgkx0l"
	bipP2TR       = "bc1ppv609nr0vr25u07u95waq5lucwfm6tde4nydujnu8npg4q75mr5sxq8lt3"
	bipHelloWorld = "AkcwRAIgZRfIY3p7/DoVTty6YZbWS71bc5Vct9p9Fia83eRmw2QCICK/ENGfwLtptFluMGs2KsqoNSk89pO7F29zJLUx9a/sASECx/EgAxlkQpQ9hYjgGu6EBCPMVPwVIVJqO4XCsMvViHI="
	bipP2TRHello  = "AUHd69PrJQEv+oKTfZ8l+WROBHuy9HKrbFCJu7U1iK2iiEy1vMU5EfMtjc+VSHM7aU0SDbak5IUZRVno2P5mjSafAQ=="
)

func TestBIP322PublishedHashes(t *testing.T) {
	addr, err := address.DecodeAddress(bipP2WPKH, &chaincfg.MainNetParams)
	if err != nil {
		t.Fatal(err)
	}
	pk, _ := txscript.PayToAddrScript(addr)
	for _, c := range []struct{ msg, hash, toSpend, toSign string }{
		{"", "c90c269c4f8fcbe6880f72a721ddfbf1914268a794cbb21cfafee13770ae19f1",
			"c5680aa69bb8d860bf82d4e9cd3504b55dde018de765a91bb566283c545a99a7",
			"1e9654e951a5ba44c8604c4de6c67fd78a27e81dcadcfe1edf638ba3aaebaed6"},
		{"Hello World", "f0eb03b1a75ac6d9847f55c624a99169b5dccba2a31f5b23bea77ba270de0a7a",
			"b79d196740ad5217771c1098fc4a4b51e0535c32236c71f1ea4d61a2d603352b",
			"88737ae86f2077145f93cc4b153ae9a1cb8d56afa511988c149c5c8c9d93bddf"},
	} {
		if got := hex.EncodeToString(bip322MessageHash([]byte(c.msg))); got != c.hash {
			t.Errorf("%q hash %s", c.msg, got)
		}
		if got := bip322ToSpend(pk, []byte(c.msg)).TxHash().String(); got != c.toSpend {
			t.Errorf("%q to_spend %s", c.msg, got)
		}
		if got := bip322ToSign(pk, []byte(c.msg), nil, nil).TxHash().String(); got != c.toSign {
			t.Errorf("%q to_sign %s", c.msg, got)
		}
	}
}

func encodeWitness(items ...[]byte) string {
	var buf bytes.Buffer
	_ = wire.WriteVarInt(&buf, 0, uint64(len(items)))
	for _, it := range items {
		_ = wire.WriteVarBytes(&buf, 0, it)
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes())
}

func TestBIP322Rejections(t *testing.T) {
	msg := []byte("Hello World")
	raw, _ := base64.StdEncoding.DecodeString(bipHelloWorld)
	witness, err := parseWitness(raw)
	if err != nil || len(witness) != 2 {
		t.Fatal(err)
	}
	trRaw, _ := base64.StdEncoding.DecodeString(bipP2TRHello)
	trSig := trRaw[2:]
	check := func(addr, sig, scheme, reason string) {
		t.Helper()
		err := (BitcoinVerifier{}).Verify(t.Context(), Wallet{Address: addr}, msg, Signature{Value: sig, Scheme: scheme})
		if reason == "" {
			if err != nil {
				t.Fatalf("%s: %v", sig, err)
			}
			return
		}
		wantReject(t, err, reason)
	}
	check(bipP2WPKH, bipHelloWorld, SchemeBIP322, "")
	check(bipP2WPKH, "smp"+bipHelloWorld, SchemeBIP322, "")
	check(bipP2TR, bipP2TRHello, "", "")
	check(bipP2WPKH, bipHelloWorld, SchemeElectrum, "signature is not base64 of 65 bytes with a header of 27-42")
	check(bipP2WPKH, "ful"+bipHelloWorld, "", "BIP-322 full format is not supported; send the simple format")
	check(bipP2WPKH, "%%%", "", "signature is not base64")
	check(bipP2WPKH, strings.Repeat("A", 5000), "", "signature is too long")
	check(bipP2WPKH, "", "", "signature is not a BIP-322 witness stack")
	check(bipP2WPKH, "AA==", "", "signature is not a BIP-322 witness stack")                              // zero items
	check(bipP2WPKH, encodeWitness(make([][]byte, 9)...), "", "signature is not a BIP-322 witness stack") // too many
	check(bipP2WPKH, base64.StdEncoding.EncodeToString(raw[:len(raw)-1]), "", "signature is not a BIP-322 witness stack")
	check(bipP2WPKH, base64.StdEncoding.EncodeToString(append(raw, 0)), "", "signature has bytes after the witness stack")
	check(bipP2WPKH, encodeWitness(make([]byte, 521)), "", "signature is not a BIP-322 witness stack")
	check(bipP2WPKH, encodeWitness(witness[0]), "", "P2WPKH witness is not a signature and a 33-byte public key")
	check(bipP2WPKH, encodeWitness(witness[0], witness[1][:32]), "", "P2WPKH witness is not a signature and a 33-byte public key")
	for _, sh := range []byte{0x00, 0x02, 0x03, 0x81} {
		sig := append(append([]byte(nil), witness[0][:len(witness[0])-1]...), sh)
		check(bipP2WPKH, encodeWitness(sig, witness[1]), "", "P2WPKH signature does not end in SIGHASH_ALL")
	}
	// Taproot: 64 bytes or 65 ending in 0x01; key path only.
	for _, sh := range []byte{0x00, 0x02, 0x03, 0x81, 0x83} {
		sig := append(append([]byte(nil), trSig[:64]...), sh)
		check(bipP2TR, encodeWitness(sig), "", "taproot signature is not 64 bytes, or 65 bytes ending in SIGHASH_ALL")
	}
	check(bipP2TR, encodeWitness(trSig[:63]), "", "taproot signature is not 64 bytes, or 65 bytes ending in SIGHASH_ALL")
	check(bipP2TR, encodeWitness(trSig, []byte{0x51}), "", "only taproot key-path signatures (one witness item) are supported")
	// The 65-byte signature with its sighash byte dropped commits to another
	// sighash type and must fail in the engine.
	check(bipP2TR, encodeWitness(trSig[:64]), "", "BIP-322 signature does not verify for the address")
	// A P2SH address whose redeem script is not this key's P2WPKH.
	_, A := btcKey(t, "p2sh", &chaincfg.MainNetParams)
	check(A["p2sh"], bipHelloWorld, "", "BIP-322 signature does not verify for the address")
	check(A["p2wpkh"], bipHelloWorld, "", "BIP-322 signature does not verify for the address")
}

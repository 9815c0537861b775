package ownership

import (
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcec/v2/ecdsa"
	"github.com/btcsuite/btcd/chaincfg/v2"
)

// btcKey returns a deterministic key and its addresses on params.
func btcKey(t testing.TB, label string, params *chaincfg.Params) (*btcec.PrivateKey, map[string]string) {
	t.Helper()
	seed := sha256.Sum256([]byte(label))
	key, _ := btcec.PrivKeyFromBytes(seed[:])
	pub := key.PubKey().SerializeCompressed()
	h := address.Hash160(pub)
	p2pkh, _ := address.NewAddressPubKeyHash(h, params)
	p2pkhU, _ := address.NewAddressPubKeyHash(address.Hash160(key.PubKey().SerializeUncompressed()), params)
	p2sh, _ := address.NewAddressScriptHash(append([]byte{0x00, 0x14}, h...), params)
	p2wpkh, _ := address.NewAddressWitnessPubKeyHash(h, params)
	p2wsh, _ := address.NewAddressWitnessScriptHash(make([]byte, 32), params)
	p2tr, _ := address.NewAddressTaproot(make([]byte, 32), params)
	return key, map[string]string{
		"p2pkh": p2pkh.EncodeAddress(), "p2pkh-u": p2pkhU.EncodeAddress(), "p2sh": p2sh.EncodeAddress(),
		"p2wpkh": p2wpkh.EncodeAddress(), "p2wsh": p2wsh.EncodeAddress(), "p2tr": p2tr.EncodeAddress(),
	}
}

// bip137Sign signs message and sets the header to base + recid.
func bip137Sign(key *btcec.PrivateKey, message []byte, base byte, compressed bool) string {
	sig := ecdsa.SignCompact(key, bitcoinMessageHash(message), compressed)
	recid := (sig[0] - 27) & 3
	sig[0] = base + recid
	return base64.StdEncoding.EncodeToString(sig)
}

func TestBitcoinBIP137Headers(t *testing.T) {
	msg := []byte("bitcoin ownership\nNonce: 9")
	key, A := btcKey(t, "btc", &chaincfg.MainNetParams)
	ctx := t.Context()
	check := func(addr, scheme, sig, reason string) {
		t.Helper()
		err := (BitcoinVerifier{}).Verify(ctx, Wallet{Address: addr}, msg, Signature{Value: sig, Scheme: scheme})
		if reason == "" {
			if err != nil {
				t.Fatalf("%s %s: %v", addr, scheme, err)
			}
			return
		}
		wantReject(t, err, reason)
	}
	uncompressed := bip137Sign(key, msg, 27, false)
	p2pkh := bip137Sign(key, msg, 31, true)
	p2sh := bip137Sign(key, msg, 35, true)
	p2wpkh := bip137Sign(key, msg, 39, true)
	for _, scheme := range []string{"", SchemeBIP137, SchemeElectrum, SchemeBIP322} {
		check(A["p2pkh"], scheme, p2pkh, "")
		check(A["p2pkh-u"], scheme, uncompressed, "")
	}
	for _, scheme := range []string{"", SchemeBIP137, SchemeElectrum} {
		check(A["p2sh"], scheme, p2sh, "")
		check(A["p2wpkh"], scheme, p2wpkh, "")
	}
	// Electrum: compressed P2PKH header for segwit addresses, only with its scheme.
	check(A["p2wpkh"], SchemeElectrum, p2pkh, "")
	check(A["p2sh"], SchemeElectrum, p2pkh, "")
	check(A["p2wpkh"], "", p2pkh, "signature header 31-34 is for P2PKH; use signatureScheme electrum for a P2WPKH address")
	check(A["p2sh"], SchemeBIP137, p2pkh, "signature header 31-34 is for P2PKH; use signatureScheme electrum for a P2SH-P2WPKH address")
	// Nothing looser: the uncompressed range and other segwit ranges stay out.
	check(A["p2wpkh"], SchemeElectrum, uncompressed, "signature header 27-30 is for an uncompressed P2PKH key, not P2WPKH")
	check(A["p2wpkh"], SchemeElectrum, p2sh, "signature header is for another address type than P2WPKH")
	check(A["p2sh"], SchemeElectrum, p2wpkh, "signature header is for another address type than P2SH-P2WPKH")
	check(A["p2pkh"], SchemeElectrum, p2wpkh, "signature header is for a segwit address, not P2PKH")
	check(A["p2pkh"], "", p2sh, "signature header is for a segwit address, not P2PKH")
	// The header's key form is hashed: a compressed-key signature does not
	// prove the uncompressed key's address, nor the reverse.
	check(A["p2pkh-u"], "", p2pkh, "recovered key does not match the address")
	check(A["p2pkh"], "", uncompressed, "recovered key does not match the address")
	check(A["p2tr"], "", p2wpkh, "BIP-137 has no taproot header; sign a P2TR address with BIP-322")
	check(A["p2tr"], SchemeElectrum, p2pkh, "BIP-137 has no taproot header")
	// Header bytes outside 27-42 are not the legacy shape.
	raw, _ := base64.StdEncoding.DecodeString(p2wpkh)
	for _, h := range []byte{0, 26, 43, 255} {
		raw[0] = h
		bad := base64.StdEncoding.EncodeToString(raw)
		check(A["p2wpkh"], SchemeElectrum, bad, "signature is not base64 of 65 bytes with a header of 27-42")
		check(A["p2wpkh"], "", bad, "signature is not a BIP-322 witness stack")
	}
	// BIP-322 scheme for P2PKH means the legacy format.
	check(A["p2pkh"], SchemeBIP322, "AUE=", "BIP-322 for a P2PKH address is the legacy 65-byte format")
	check(A["p2pkh"], "", "AUE=", "BIP-322 is supported for P2WPKH, P2SH-P2WPKH and P2TR addresses")
	check(A["p2wpkh"], "BIP137", p2wpkh, "unknown signature scheme; use bip137, electrum or bip322")
	// r = 0 cannot recover a key.
	zero := make([]byte, 65)
	zero[0] = 39
	check(A["p2wpkh"], "", base64.StdEncoding.EncodeToString(zero), "no public key recovers from the signature")
}

func TestBitcoinAddressNetworks(t *testing.T) {
	_, main := btcKey(t, "net", &chaincfg.MainNetParams)
	_, test := btcKey(t, "net", &chaincfg.TestNet3Params)
	_, reg := btcKey(t, "net", &chaincfg.RegressionNetParams)
	for _, typ := range []string{"p2pkh", "p2sh", "p2wpkh", "p2tr"} {
		for _, c := range []struct {
			addr string
			net  Network
		}{{main[typ], Mainnet}, {test[typ], Testnet}, {test[typ], Signet}, {reg[typ], Regtest}, {strings.ToUpper(main[typ]), Mainnet}} {
			if typ == "p2pkh" || typ == "p2sh" {
				if c.addr != main[typ] && c.addr == strings.ToUpper(main[typ]) {
					continue // base58 is case-sensitive
				}
			}
			if _, err := parseBitcoinAddress(c.addr, c.net); err != nil {
				t.Errorf("%s on %v: %v", c.addr, c.net, err)
			}
		}
	}
	cases := []struct {
		addr   string
		net    Network
		reason string
	}{
		{test["p2wpkh"], Mainnet, "testnet address under mainnet configuration"},
		{test["p2pkh"], Mainnet, "testnet address under mainnet configuration"},
		{test["p2sh"], Mainnet, "testnet address under mainnet configuration"},
		{main["p2tr"], Testnet, "mainnet address under testnet configuration"},
		{main["p2pkh"], Regtest, "mainnet address under regtest configuration"},
		{test["p2wpkh"], Regtest, "testnet address under regtest configuration"},
		{reg["p2wpkh"], Signet, "regtest address under signet configuration"},
		{main["p2wsh"], Mainnet, "address type is not supported; use P2PKH, P2SH-P2WPKH, P2WPKH or P2TR"},
		{"0279be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798", Mainnet, "address type is not supported"},
		{"", Mainnet, "address is not a Bitcoin address"},
		{"bc1qinvalid", Mainnet, "address is not a Bitcoin address"},
		{main["p2wpkh"][:len(main["p2wpkh"])-1] + "q", Mainnet, "address is not a Bitcoin address"},
		{strings.Repeat("1", 200), Mainnet, "address is not a Bitcoin address"},
		{main["p2wpkh"], Network(7), "unknown network"},
	}
	for _, c := range cases {
		err := (BitcoinVerifier{}).Verify(t.Context(), Wallet{Address: c.addr, Network: c.net}, nil, Signature{Value: "x"})
		wantReject(t, err, c.reason)
	}
}

func TestBitcoinMessageHashVarint(t *testing.T) {
	// 253 bytes and more use the 0xfd varint form; the hash must differ
	// from a naive one-byte length and match a sign/verify round trip.
	key, A := btcKey(t, "long", &chaincfg.MainNetParams)
	for _, n := range []int{0, 252, 253, 254, 65535, 65536} {
		msg := []byte(strings.Repeat("a", n))
		sig := bip137Sign(key, msg, 39, true)
		if err := (BitcoinVerifier{}).Verify(t.Context(), Wallet{Address: A["p2wpkh"]}, msg, Signature{Value: sig}); err != nil {
			t.Fatalf("%d: %v", n, err)
		}
	}
}

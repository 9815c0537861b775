package ownership

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/address/v2/bech32"
	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcec/v2/ecdsa"
)

func sparkKey(label string) *btcec.PrivateKey {
	seed := sha256.Sum256([]byte(label))
	k, _ := btcec.PrivKeyFromBytes(seed[:])
	return k
}

// sparkAddress encodes payload as a Spark address with hrp (bech32m unless
// plain is set).
func sparkAddress(t testing.TB, hrp string, payload []byte, plain bool) string {
	t.Helper()
	conv, err := bech32.ConvertBits(payload, 8, 5, true)
	if err != nil {
		t.Fatal(err)
	}
	var s string
	if plain {
		s, err = bech32.Encode(hrp, conv)
	} else {
		s, err = bech32.EncodeM(hrp, conv)
	}
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func sparkPayload(pub []byte) []byte { return append([]byte{0x0a, byte(len(pub))}, pub...) }

func TestSparkAddress(t *testing.T) {
	key := sparkKey("spark")
	pub := key.PubKey().SerializeCompressed()
	ok := map[string]Network{"spark": Mainnet, "sp": Mainnet, "sparkt": Testnet, "spt": Testnet, "sparks": Signet, "sps": Signet, "sparkrt": Regtest, "sprt": Regtest}
	for hrp, n := range ok {
		got, err := parseSparkAddress(sparkAddress(t, hrp, sparkPayload(pub), false), n)
		if err != nil || !got.IsEqual(key.PubKey()) {
			t.Fatalf("%s: %v", hrp, err)
		}
	}
	cases := []struct {
		addr   string
		net    Network
		reason string
	}{
		{"", Mainnet, "address is not bech32m"},
		{"spark1qqqqqq", Mainnet, "address is not bech32m"},
		{sparkAddress(t, "spark", sparkPayload(pub), true), Mainnet, "spark address uses bech32, not bech32m"},
		{sparkAddress(t, "bc", sparkPayload(pub), false), Mainnet, "address prefix is not a spark network"},
		{sparkAddress(t, "sparkl", sparkPayload(pub), false), Mainnet, "local-network spark address is not accepted"},
		{sparkAddress(t, "sparkrt", sparkPayload(pub), false), Mainnet, "regtest address under mainnet configuration"},
		{sparkAddress(t, "spark", sparkPayload(pub), false), Testnet, "mainnet address under testnet configuration"},
		{sparkAddress(t, "spark", append(sparkPayload(pub), 0x12, 0x02, 0x08, 0x01), false), Mainnet, "spark address carries invoice fields"},
		{sparkAddress(t, "spark", sparkPayload(pub[:32]), false), Mainnet, "spark address does not start with a 33-byte identity key"},
		{sparkAddress(t, "spark", append([]byte{0x12, 0x21}, pub...), false), Mainnet, "spark address does not start with a 33-byte identity key"},
		{sparkAddress(t, "spark", sparkPayload(append([]byte{0x04}, pub[1:]...)), false), Mainnet, "spark identity key is not a compressed secp256k1 key"},
		{sparkAddress(t, "spark", sparkPayload(append([]byte{0x02}, make([]byte, 32)...)), false), Mainnet, "spark identity key is not on the curve"},
		{"spark1" + strings.Repeat("q", 1100), Mainnet, "spark address is longer than 1024 characters"},
	}
	for _, c := range cases {
		err := (SparkVerifier{}).Verify(t.Context(), Wallet{Address: c.addr, Network: c.net}, nil, Signature{})
		wantReject(t, err, c.reason)
	}
}

func TestSparkSignature(t *testing.T) {
	key := sparkKey("spark")
	msg := []byte("spark ownership\nNonce: 7")
	digest := sha256.Sum256(msg)
	sig := ecdsa.Sign(key, digest[:])
	der := sig.Serialize()
	r, s := sig.R(), sig.S()
	var compact [64]byte
	r.PutBytesUnchecked(compact[:32])
	s.PutBytesUnchecked(compact[32:])
	w := Wallet{Address: sparkAddress(t, "spark", sparkPayload(key.PubKey().SerializeCompressed()), false)}
	for _, enc := range []string{hex.EncodeToString(der), strings.ToUpper(hex.EncodeToString(der)), hex.EncodeToString(compact[:]),
		base64.StdEncoding.EncodeToString(der), base64.StdEncoding.EncodeToString(compact[:])} {
		if err := (SparkVerifier{}).Verify(t.Context(), w, msg, Signature{Value: enc}); err != nil {
			t.Fatalf("%s: %v", enc, err)
		}
	}
	reject := func(v, reason string) {
		t.Helper()
		wantReject(t, (SparkVerifier{}).Verify(t.Context(), w, msg, Signature{Value: v}), reason)
	}
	const bad = "signature is not hex or base64 of a DER or 64-byte compact ECDSA signature"
	reject("", bad)
	reject("not a signature", bad)
	reject(hex.EncodeToString(compact[:63]), bad)
	reject(hex.EncodeToString(append(compact[:], 0)), bad)
	reject(strings.Repeat("00", 101), bad)
	// Compact r or s of zero, or not below the group order.
	zero := compact
	clear(zero[:32])
	reject(hex.EncodeToString(zero[:]), "signature r or s is out of range")
	over := compact
	copy(over[32:], secp256k1N.Bytes())
	reject(hex.EncodeToString(over[:]), "signature r or s is out of range")
	// High s, compact and DER.
	var highS btcec.ModNScalar
	highS.Set(&s).Negate()
	high := compact
	highS.PutBytesUnchecked(high[32:])
	reject(hex.EncodeToString(high[:]), "signature s is not low")
	// btcec's Serialize always writes a low s, so build this DER by hand.
	reject(hex.EncodeToString(derEncode(compact[:32], high[32:])), "signature s is not low")
	// Non-strict DER: an extra leading zero in r.
	loose := append([]byte{0x30, der[1] + 1, 0x02, der[3] + 1, 0x00}, der[4:]...)
	reject(hex.EncodeToString(loose), "signature is not strict DER")
	// Another message.
	other := sha256.Sum256([]byte("other"))
	reject(hex.EncodeToString(ecdsa.Sign(key, other[:]).Serialize()), "ecdsa signature does not verify for the identity key")
}

// derEncode writes r and s (32-byte big-endian) as a strict DER signature.
func derEncode(r, s []byte) []byte {
	integer := func(b []byte) []byte {
		for len(b) > 1 && b[0] == 0 && b[1]&0x80 == 0 {
			b = b[1:]
		}
		if b[0]&0x80 != 0 {
			b = append([]byte{0}, b...)
		}
		return append([]byte{0x02, byte(len(b))}, b...)
	}
	body := append(integer(r), integer(s)...)
	return append([]byte{0x30, byte(len(body))}, body...)
}

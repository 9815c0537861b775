package ownership

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"testing"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcec/v2/ecdsa"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/mr-tron/base58"
)

// Each verifier's benchmark sits beside the raw primitive it wraps, over
// the same input, so the ratio is the cost of decoding and checks.

// benchVector returns the first valid vector with the given name.
func benchVector(b *testing.B, name string) vector {
	for _, v := range loadVectors(b) {
		if v.Name == name {
			return v
		}
	}
	b.Fatalf("no vector %s", name)
	return vector{}
}

func benchVerify(b *testing.B, v Verifier, vec vector) {
	w := Wallet{AccountType: vec.AccountType, Address: vec.Address, Network: vectorNetwork(vec.Network)}
	msg, sig := []byte(vec.Message), Signature{Value: vec.Signature, Scheme: vec.Scheme}
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		if err := v.Verify(ctx, w, msg, sig); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEVMVerify and BenchmarkTronVerify sit beside the recovery they
// wrap, which depends on the build: go-ethereum's crypto.SigToPub
// (libsecp256k1) with cgo, btcec's RecoverCompact without
// (verifier_bench_cgo_test.go, verifier_bench_nocgo_test.go).
func BenchmarkEVMVerify(b *testing.B) {
	benchVerify(b, EVMVerifier{}, benchVector(b, "evm-ethereum-challenge"))
}

func BenchmarkTronVerify(b *testing.B) {
	benchVerify(b, TronVerifier{}, benchVector(b, "tron-mainnet-challenge"))
}

func BenchmarkSolanaVerify(b *testing.B) {
	benchVerify(b, SolanaVerifier{}, benchVector(b, "solana-mainnet-challenge"))
}

func BenchmarkSolanaEd25519Verify(b *testing.B) {
	vec := benchVector(b, "solana-mainnet-challenge")
	pub, _ := base58.Decode(vec.Address)
	sig, _ := base58.Decode(vec.Signature)
	msg := []byte(vec.Message)
	b.ReportAllocs()
	for b.Loop() {
		if !ed25519.Verify(pub, msg, sig) {
			b.Fatal("invalid")
		}
	}
}

func BenchmarkBitcoinBIP137Verify(b *testing.B) {
	benchVerify(b, BitcoinVerifier{}, benchVector(b, "btc-bip137-mainnet-p2wpkh"))
}

func BenchmarkBitcoinRecoverCompact(b *testing.B) {
	vec := benchVector(b, "btc-bip137-mainnet-p2wpkh")
	sig, _ := base64.StdEncoding.DecodeString(vec.Signature)
	sig[0] = 27 + (sig[0]-27)&3 + 4
	digest := bitcoinMessageHash([]byte(vec.Message))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := ecdsa.RecoverCompact(sig, digest); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBitcoinBIP322P2WPKHVerify(b *testing.B) {
	benchVerify(b, BitcoinVerifier{}, benchVector(b, "btc-bip322-mainnet-p2wpkh"))
}

func BenchmarkBitcoinBIP322P2TRVerify(b *testing.B) {
	benchVerify(b, BitcoinVerifier{}, benchVector(b, "btc-bip322-mainnet-p2tr"))
}

// BenchmarkBitcoinECDSAVerify is the primitive under a BIP-322 P2WPKH
// check: one ECDSA verification of a 32-byte hash.
func BenchmarkBitcoinECDSAVerify(b *testing.B) {
	vec := benchVector(b, "btc-bip322-mainnet-p2wpkh")
	raw, _ := base64.StdEncoding.DecodeString(vec.Signature)
	w, err := parseWitness(raw)
	if err != nil {
		b.Fatal(err)
	}
	sig, err := ecdsa.ParseDERSignature(w[0][:len(w[0])-1])
	if err != nil {
		b.Fatal(err)
	}
	pub, _ := btcec.ParsePubKey(w[1])
	hash := sha256.Sum256([]byte("any 32-byte hash: timing only"))
	b.ReportAllocs()
	for b.Loop() {
		sig.Verify(hash[:], pub)
	}
}

func BenchmarkSparkVerify(b *testing.B) {
	benchVerify(b, SparkVerifier{}, benchVector(b, "spark-mainnet-der"))
}

func BenchmarkSparkECDSAVerify(b *testing.B) {
	vec := benchVector(b, "spark-mainnet-der")
	pub, err := parseSparkAddress(vec.Address, Mainnet)
	if err != nil {
		b.Fatal(err)
	}
	der, _ := hex.DecodeString(vec.Signature)
	sig, _ := ecdsa.ParseDERSignature(der)
	digest := sha256.Sum256([]byte(vec.Message))
	b.ReportAllocs()
	for b.Loop() {
		if !sig.Verify(digest[:], pub) {
			b.Fatal("invalid")
		}
	}
}

func BenchmarkLightningVerify(b *testing.B) {
	benchVerify(b, LightningNodeVerifier{}, benchVector(b, "ln-node-challenge"))
}

func BenchmarkLightningRecoverCompact(b *testing.B) {
	vec := benchVector(b, "ln-node-challenge")
	sig, _ := decodeZBase32(vec.Signature)
	digest := lightningMessageHash([]byte(vec.Message))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := ecdsa.RecoverCompact(sig, digest); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBitcoinBIP322ScriptRun is the primitive a BIP-322 verification
// wraps: one run of the script engine over the prebuilt to_sign transaction
// (sighashes included), for the P2WPKH vector of BenchmarkBitcoinBIP322P2WPKHVerify.
func BenchmarkBitcoinBIP322ScriptRun(b *testing.B) {
	vec := benchVector(b, "btc-bip322-mainnet-p2wpkh")
	addr, err := parseBitcoinAddress(vec.Address, vectorNetwork(vec.Network))
	if err != nil {
		b.Fatal(err)
	}
	raw, _ := base64.StdEncoding.DecodeString(vec.Signature)
	witness, err := parseWitness(raw)
	if err != nil {
		b.Fatal(err)
	}
	pkScript, err := txscript.PayToAddrScript(addr)
	if err != nil {
		b.Fatal(err)
	}
	toSign := bip322ToSign(pkScript, []byte(vec.Message), nil, witness)
	fetcher := txscript.NewCannedPrevOutputFetcher(pkScript, 0)
	b.ReportAllocs()
	for b.Loop() {
		vm, err := txscript.NewEngine(pkScript, toSign, 0, txscript.StandardVerifyFlags, nil,
			txscript.NewTxSigHashes(toSign, fetcher), 0, fetcher)
		if err != nil {
			b.Fatal(err)
		}
		if err := vm.Execute(); err != nil {
			b.Fatal(err)
		}
	}
}

package ownership

import (
	"errors"
	"testing"

	"github.com/walletgate/walletgate/apierror"
)

// mustBeTyped fails unless err is nil or a *apierror.Error with an allowed
// code wrapping ErrMalformed or ErrMismatch.
func mustBeTyped(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var ae *apierror.Error
	if !errors.As(err, &ae) {
		t.Fatalf("untyped error %T: %v", err, err)
	}
	switch ae.Code {
	case apierror.InvalidInput:
		if ae.Reason() == "" {
			t.Fatalf("no details.reason: %v", err)
		}
		if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrMismatch) {
			t.Fatalf("rejection without a cause: %v", err)
		}
	case apierror.Conflict:
	default:
		t.Fatalf("unexpected code %v: %v", ae.Code, err)
	}
}

// seedVectors adds every vector's address and signature to f through add.
func seedVectors(f *testing.F, add func(v vector)) {
	for _, v := range loadVectors(f) {
		add(v)
	}
}

func FuzzEVMAddress(f *testing.F) {
	seedVectors(f, func(v vector) {
		if v.AccountType == AccountEthereum {
			f.Add(v.Address)
		}
	})
	f.Add("0x")
	f.Fuzz(func(t *testing.T, s string) {
		_, err := parseEVMAddress(s)
		mustBeTyped(t, err)
	})
}

func FuzzEVMSignature(f *testing.F) {
	seedVectors(f, func(v vector) {
		if v.AccountType == AccountEthereum || v.AccountType == AccountTron {
			f.Add(v.Signature, v.Message)
		}
	})
	f.Fuzz(func(t *testing.T, sig, msg string) {
		_, err := decodeRSV(sig)
		mustBeTyped(t, err)
		w := Wallet{Address: "0x000000000000000000000000000000000000dEaD"}
		mustBeTyped(t, (EVMVerifier{}).Verify(t.Context(), w, []byte(msg), Signature{Value: sig}))
	})
}

func FuzzTronAddress(f *testing.F) {
	seedVectors(f, func(v vector) {
		if v.AccountType == AccountTron {
			f.Add(v.Address)
		}
	})
	f.Fuzz(func(t *testing.T, s string) {
		_, err := parseTronAddress(s)
		mustBeTyped(t, err)
	})
}

func FuzzSolanaAddress(f *testing.F) {
	seedVectors(f, func(v vector) {
		if v.AccountType == AccountSolana {
			f.Add(v.Address)
		}
	})
	f.Fuzz(func(t *testing.T, s string) {
		_, err := parseSolanaAddress(s)
		mustBeTyped(t, err)
	})
}

func FuzzSolanaSignature(f *testing.F) {
	seedVectors(f, func(v vector) {
		if v.AccountType == AccountSolana {
			f.Add(v.Signature)
		}
	})
	f.Fuzz(func(t *testing.T, s string) {
		raw, err := decodeSolanaSignature(s)
		mustBeTyped(t, err)
		if err == nil && len(raw) != 64 {
			t.Fatalf("decoded %d bytes", len(raw))
		}
	})
}

func FuzzSparkAddress(f *testing.F) {
	seedVectors(f, func(v vector) {
		if v.AccountType == AccountSpark {
			f.Add(v.Address, uint8(vectorNetwork(v.Network)))
		}
	})
	f.Fuzz(func(t *testing.T, s string, n uint8) {
		pub, err := parseSparkAddress(s, Network(n))
		mustBeTyped(t, err)
		if err == nil && pub == nil {
			t.Fatal("nil key")
		}
	})
}

func FuzzSparkSignature(f *testing.F) {
	seedVectors(f, func(v vector) {
		if v.AccountType == AccountSpark {
			f.Add(v.Signature)
		}
	})
	f.Fuzz(func(t *testing.T, s string) {
		sig, err := decodeSparkSignature(s)
		mustBeTyped(t, err)
		if err == nil {
			if sv := sig.S(); sv.IsOverHalfOrder() {
				t.Fatal("high s accepted")
			}
		}
	})
}

func FuzzBitcoinAddress(f *testing.F) {
	seedVectors(f, func(v vector) {
		if v.AccountType == AccountBitcoin {
			f.Add(v.Address, uint8(vectorNetwork(v.Network)))
		}
	})
	f.Fuzz(func(t *testing.T, s string, n uint8) {
		_, err := parseBitcoinAddress(s, Network(n))
		mustBeTyped(t, err)
	})
}

// FuzzBitcoinSignature runs the whole Bitcoin verifier, so BIP-137 headers,
// the BIP-322 witness parser and the script engine all see fuzzed input.
func FuzzBitcoinSignature(f *testing.F) {
	seedVectors(f, func(v vector) {
		if v.AccountType == AccountBitcoin {
			f.Add(v.Address, v.Message, v.Signature, v.Scheme)
		}
	})
	f.Fuzz(func(t *testing.T, addr, msg, sig, scheme string) {
		err := (BitcoinVerifier{}).Verify(t.Context(), Wallet{Address: addr}, []byte(msg), Signature{Value: sig, Scheme: scheme})
		mustBeTyped(t, err)
	})
}

func FuzzBIP322Witness(f *testing.F) {
	f.Add([]byte{0x01, 0x00})
	f.Add([]byte{0x02, 0x01, 0x01, 0x01, 0x02})
	f.Add([]byte{0xfd, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, raw []byte) {
		w, err := parseWitness(raw)
		mustBeTyped(t, err)
		if err == nil && (len(w) == 0 || len(w) > maxWitnessItems) {
			t.Fatalf("%d items", len(w))
		}
	})
}

func FuzzLightningSignature(f *testing.F) {
	seedVectors(f, func(v vector) {
		if v.AccountType == AccountLightning {
			f.Add(v.Address, v.Signature)
		}
	})
	f.Fuzz(func(t *testing.T, node, sig string) {
		if raw, ok := decodeZBase32(sig); ok && encodeZBase32(raw) != sig && len(sig)*5%8 == 0 {
			t.Fatalf("zbase32 round trip: %q", sig)
		}
		err := (LightningNodeVerifier{}).Verify(t.Context(), Wallet{Address: node}, []byte("m"), Signature{Value: sig})
		mustBeTyped(t, err)
	})
}

// FuzzVerifiers drives every registered verifier through the registry.
func FuzzVerifiers(f *testing.F) {
	seedVectors(f, func(v vector) {
		f.Add(v.AccountType, v.Address, v.Message, v.Signature, v.Scheme, uint8(vectorNetwork(v.Network)))
	})
	vs := vectorVerifiers()
	f.Fuzz(func(t *testing.T, typ, addr, msg, sig, scheme string, n uint8) {
		err := vs.Verify(t.Context(), Wallet{AccountType: typ, Address: addr, Network: Network(n)}, []byte(msg), Signature{Value: sig, Scheme: scheme})
		mustBeTyped(t, err)
	})
}

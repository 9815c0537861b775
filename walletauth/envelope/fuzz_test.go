package envelope

import (
	"crypto/ecdsa"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/signedretry/stamper"
)

// Every fuzz target feeds outside input to a parser and checks that it never
// panics, that every rejection is a typed 400 or 401 with details.reason, and
// that every acceptance keeps the parser's guarantees. The seeds include the
// committed interop vectors, so plain `go test` runs them all.

func FuzzOpenOTP(f *testing.F) {
	target := testECDH(f, "fuzz/otp-target")
	pub := compressedHex(f, testKey(f, "fuzz/otp-session"))
	good, err := SealOTP(target.PublicKey(), "123456", pub, seeded("fuzz/otp"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(sealRaw(f, target.PublicKey(), `{"otp_code":"1","public_key":"`+pub+`"}`))
	f.Add(sealRaw(f, target.PublicKey(), `{"otp_code":1}`))
	f.Add(sealRaw(f, target.PublicKey(), "not json"))
	f.Add(strings.Replace(good, `"ciphertext":"`, `"ciphertext":"00`, 1))
	for _, s := range []string{"", "{}", "null", "[]", `{"encappedPublic":"04","ciphertext":"00"}`, `{"encappedPublic":null}`} {
		f.Add(s)
	}
	for _, o := range readJSVectors(f).EncryptedOtpBundles {
		f.Add(o.Bundle)
	}
	f.Fuzz(func(t *testing.T, bundle string) {
		att, err := OpenOTP(target.Bytes(), bundle)
		checkTyped(t, err)
		if err != nil {
			return
		}
		if att.Code == "" || len(att.Code) > MaxOTPCodeLen || att.PublicKey == nil {
			t.Fatalf("accepted an attempt that breaks the guarantees: %+v", att)
		}
		if _, err := signedretry.ParsePublicKey(att.PublicKeyHex); err != nil {
			t.Fatalf("accepted public_key %q that does not parse: %v", att.PublicKeyHex, err)
		}
	})
}

func FuzzParseTargetBundle(f *testing.F) {
	signer := testKey(f, "fuzz/signer")
	good, _, err := NewTargetBundle(signer, "org", "user", seeded("fuzz/target"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(signedParts(f, signer, `{"targetPublic":"04"}`).String())
	f.Add(signedParts(f, signer, `{"targetPublic":"`+compressedHex(f, signer)+`"}`).String())
	f.Add(signedParts(f, signer, "[]").String())
	for _, s := range []string{"", "{}", `{"version":"v1.0.0"}`, "null", `{"version":"v1.0.0","data":"7b7d","dataSignature":"3006020101020101","enclaveQuorumPublic":"04"}`} {
		f.Add(s)
	}
	var v goVectors
	if err := decodeGoVectors(&v); err != nil {
		f.Fatal(err)
	}
	for _, tb := range v.TargetBundles {
		f.Add(tb.Bundle)
	}
	f.Fuzz(func(t *testing.T, bundle string) {
		for _, trusted := range []bool{true, false} {
			var tb *TargetBundle
			var err error
			if trusted {
				tb, err = ParseTargetBundle(bundle, &signer.PublicKey)
			} else {
				tb, err = ParseTargetBundle(bundle, nil)
			}
			checkTyped(t, err)
			if err != nil {
				continue
			}
			if tb.TargetPublic == nil || len(tb.TargetPublic.Bytes()) != uncompressedKeyLen || tb.Signer == nil {
				t.Fatalf("accepted a bundle that breaks the guarantees: %+v", tb)
			}
			if trusted && !tb.Signer.Equal(&signer.PublicKey) {
				t.Fatal("accepted a bundle from an untrusted signer")
			}
		}
	})
}

func FuzzOpenSessionKey(f *testing.F) {
	client := testECDH(f, "fuzz/client")
	good, _, err := SealSessionKey(hex.EncodeToString(client.PublicKey().Bytes()), seeded("fuzz/essk"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)-1])
	f.Add(base58CheckEncode(make([]byte, 81)))
	f.Add(base58CheckEncode(nil))
	for _, s := range []string{"", "1", "11111", "0OIl", "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz"} {
		f.Add(s)
	}
	for _, s := range readJSVectors(f).SessionKeys {
		f.Add(s.SessionKey)
	}
	f.Fuzz(func(t *testing.T, essk string) {
		k, err := OpenSessionKey(client, essk)
		checkTyped(t, err)
		if err == nil && (k == nil || k.D.Sign() <= 0) {
			t.Fatalf("accepted a session key that is not a key: %v", k)
		}
	})
}

func FuzzParsePublicKeyHex(f *testing.F) {
	k := testKey(f, "fuzz/key")
	f.Add(compressedHex(f, k))
	f.Add(uncompressedHex(f, k))
	f.Add("02" + strings.Repeat("ff", 32))
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		pub, problem := parsePublicKeyHex(s)
		if problem != "" {
			if pub != nil {
				t.Fatalf("%q: a key and a problem (%s)", s, problem)
			}
			return
		}
		if c, err := stamper.CompressedHex(pub); err != nil || !strings.EqualFold(c[2:], s[2:66]) {
			t.Fatalf("accepted %q but re-encodes as %q (%v)", s, c, err)
		}
	})
}

func FuzzOpenExportBundle(f *testing.F) {
	signer := testKey(f, "fuzz/export-signer")
	client := testKey(f, "fuzz/export-client")
	clientECDH := testECDH(f, "fuzz/export-client")
	good, err := NewExportBundle(signer, "org", compressedHex(f, client), []byte("leaf lady"), seeded("fuzz/export"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(signedParts(f, signer, `{"encappedPublic":"04","ciphertext":"00","organizationId":"org"}`).String())
	f.Add(signedParts(f, signer, `{"organizationId":"org"}`).String())
	f.Add(signedParts(f, signer, "null").String())
	for _, s := range []string{"", "{}", `{"version":"v1.0.0"}`, "null"} {
		f.Add(s)
	}
	var v goVectors
	if err := decodeGoVectors(&v); err != nil {
		f.Fatal(err)
	}
	for _, e := range v.ExportBundles {
		f.Add(e.Bundle)
	}
	f.Fuzz(func(t *testing.T, bundle string) {
		for _, trusted := range []*ecdsa.PublicKey{&signer.PublicKey, nil} {
			pt, err := OpenExportBundle(clientECDH, bundle, trusted, "org")
			checkTyped(t, err)
			if err == nil && trusted != nil && string(pt) != "leaf lady" {
				// Only this signer's bundles sealed to this client open, and
				// the one seed that does carries this secret.
				t.Fatalf("opened %q from a bundle this test did not make", pt)
			}
		}
	})
}

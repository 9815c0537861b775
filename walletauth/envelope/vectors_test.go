package envelope

import (
	"bytes"
	"crypto/ecdh"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"os"
	"slices"
	"testing"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/signedretry"
)

// The interop vectors live in testdata/turnkey: go-vectors.json is written
// by this file from seeded randomness and checked by the Node script with
// @turnkey/crypto and @hpke/core; js-vectors.json is written by that script
// and records the check. Regenerate both with testdata/turnkey/regenerate.sh.
var updateGoVectors = flag.Bool("update-go-vectors", false, "rewrite testdata/turnkey/go-vectors.json")

const (
	goVectorsPath = "testdata/turnkey/go-vectors.json"
	jsVectorsPath = "testdata/turnkey/js-vectors.json"
)

type goVectors struct {
	Comment             string           `json:"comment"`
	Signer              goKeyPair        `json:"signer"`
	TargetBundles       []goTargetBundle `json:"targetBundles"`
	EncryptedOtpBundles []goSealedOTP    `json:"encryptedOtpBundles"`
	SessionKeys         []goSessionKey   `json:"sessionKeys"`
	ExportBundles       []goExportBundle `json:"exportBundles"`
}

type goKeyPair struct {
	Private string `json:"private"`
	Public  string `json:"public"`
}

type goTargetBundle struct {
	Name           string `json:"name"`
	OrganizationID string `json:"organizationId"`
	UserID         string `json:"userId"`
	TargetPrivate  string `json:"targetPrivate"`
	TargetPublic   string `json:"targetPublic"`
	Bundle         string `json:"otpEncryptionTargetBundle"`
}

type goSealedOTP struct {
	Name          string `json:"name"`
	TargetPrivate string `json:"targetPrivate"`
	TargetPublic  string `json:"targetPublic"`
	OTPCode       string `json:"otpCode"`
	PublicKey     string `json:"publicKey"`
	Plaintext     string `json:"plaintext"`
	Bundle        string `json:"encryptedOtpBundle"`
}

type goSessionKey struct {
	Name            string `json:"name"`
	ClientPrivate   string `json:"clientPrivate"`
	ClientPublicKey string `json:"clientPublicKey"`
	SessionPublic   string `json:"sessionPublic"`
	SessionKey      string `json:"encryptedSessionSigningKey"`
}

type goExportBundle struct {
	Name            string `json:"name"`
	OrganizationID  string `json:"organizationId"`
	ClientPrivate   string `json:"clientPrivate"`
	ClientPublicKey string `json:"clientPublicKey"`
	Mnemonic        string `json:"mnemonic"`
	Bundle          string `json:"exportBundle"`
}

type jsVectors struct {
	Packages            map[string]string `json:"packages"`
	EncryptedOtpBundles []struct {
		Name          string `json:"name"`
		Producer      string `json:"producer"`
		TargetPrivate string `json:"targetPrivate"`
		OTPCode       string `json:"otpCode"`
		PublicKey     string `json:"publicKey"`
		Bundle        string `json:"encryptedOtpBundle"`
		Expect        string `json:"expect"`
	} `json:"encryptedOtpBundles"`
	SessionKeys []struct {
		Name           string `json:"name"`
		Producer       string `json:"producer"`
		ClientPrivate  string `json:"clientPrivate"`
		SessionPrivate string `json:"sessionPrivate"`
		SessionKey     string `json:"encryptedSessionSigningKey"`
	} `json:"sessionKeys"`
	GoVectorsCheck struct {
		File    string   `json:"file"`
		SHA256  string   `json:"sha256"`
		Checked []string `json:"checked"`
		Result  string   `json:"result"`
	} `json:"goVectorsCheck"`
}

// makeGoVectors builds go-vectors.json from seeded randomness; the output is
// a pure function of this code.
func makeGoVectors(t *testing.T) []byte {
	t.Helper()
	signer := testKey(t, "vectors/signer")
	signerPriv, _ := signer.Bytes()
	v := goVectors{
		Comment: "Made by walletauth/envelope (go test -run TestGoVectors -update-go-vectors) from seeded randomness; " +
			"checked by generate.mjs with @turnkey/crypto (encryptOtpCodeToBundle, decryptCredentialBundle, decryptExportBundle) and @hpke/core, which records the check in js-vectors.json.",
		Signer: goKeyPair{Private: hex.EncodeToString(signerPriv), Public: uncompressedHex(t, signer)},
	}
	for _, c := range []struct{ name, org, user string }{
		{"ids", "9b1f6a52-4c3e-4c8e-a7f1-2d8f0e6b1a10", "AuthMethod:0195c3a2-6f1e-7c2b-9d4a-3e5f6a7b8c9d"},
		{"empty-user", "9b1f6a52-4c3e-4c8e-a7f1-2d8f0e6b1a10", ""},
		{"escapes", `org "quoted" <&> é ☕`, "user\\back\u2028slash"},
	} {
		bundle, target, err := NewTargetBundle(signer, c.org, c.user, seeded("vectors/target/"+c.name))
		if err != nil {
			t.Fatal(err)
		}
		v.TargetBundles = append(v.TargetBundles, goTargetBundle{
			Name: c.name, OrganizationID: c.org, UserID: c.user,
			TargetPrivate: hex.EncodeToString(target.Bytes()),
			TargetPublic:  hex.EncodeToString(target.PublicKey().Bytes()),
			Bundle:        bundle,
		})
	}
	session := testKey(t, "vectors/otp-session")
	for _, c := range []struct{ name, code, pub string }{
		{"compressed-key", "123456", compressedHex(t, session)},
		{"uncompressed-key", "000000", uncompressedHex(t, session)},
		{"long-code", "0123456789abcdefABCDEF", compressedHex(t, session)},
	} {
		target := testECDH(t, "vectors/otp-target/"+c.name)
		bundle, err := SealOTP(target.PublicKey(), c.code, c.pub, seeded("vectors/otp-seal/"+c.name))
		if err != nil {
			t.Fatal(err)
		}
		pt, _ := marshalCompact(otpPayload{OTPCode: c.code, PublicKey: c.pub})
		v.EncryptedOtpBundles = append(v.EncryptedOtpBundles, goSealedOTP{
			Name: c.name, TargetPrivate: hex.EncodeToString(target.Bytes()),
			TargetPublic: hex.EncodeToString(target.PublicKey().Bytes()),
			OTPCode:      c.code, PublicKey: c.pub, Plaintext: string(pt), Bundle: bundle,
		})
	}
	for _, c := range []struct {
		name       string
		compressed bool
	}{{"compressed-client", true}, {"uncompressed-client", false}} {
		client := testKey(t, "vectors/client/"+c.name)
		clientPriv, _ := client.Bytes()
		pub := uncompressedHex(t, client)
		if c.compressed {
			pub = compressedHex(t, client)
		}
		essk, sessionPub, err := SealSessionKey(pub, seeded("vectors/essk/"+c.name))
		if err != nil {
			t.Fatal(err)
		}
		sp, _ := sessionPub.Bytes()
		v.SessionKeys = append(v.SessionKeys, goSessionKey{
			Name: c.name, ClientPrivate: hex.EncodeToString(clientPriv), ClientPublicKey: pub,
			SessionPublic: hex.EncodeToString(sp), SessionKey: essk,
		})
	}
	for _, c := range []struct {
		name, org, mnemonic string
		compressed          bool
	}{
		{"compressed-client", "9b1f6a52-4c3e-4c8e-a7f1-2d8f0e6b1a10", "leaf lady until indicate praise final route toast cake minimum insect unknown", true},
		{"uncompressed-client", "9b1f6a52-4c3e-4c8e-a7f1-2d8f0e6b1a10", "abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about", false},
		{"escapes-24-words", `org "quoted" <&> é ☕`, "zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo vote", true},
	} {
		client := testKey(t, "vectors/export-client/"+c.name)
		clientPriv, _ := client.Bytes()
		pub := uncompressedHex(t, client)
		if c.compressed {
			pub = compressedHex(t, client)
		}
		bundle, err := NewExportBundle(signer, c.org, pub, []byte(c.mnemonic), seeded("vectors/export/"+c.name))
		if err != nil {
			t.Fatal(err)
		}
		v.ExportBundles = append(v.ExportBundles, goExportBundle{
			Name: c.name, OrganizationID: c.org, ClientPrivate: hex.EncodeToString(clientPriv),
			ClientPublicKey: pub, Mnemonic: c.mnemonic, Bundle: bundle,
		})
	}
	out, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(out, '\n')
}

// TestGoVectors checks that the committed go-vectors.json is what this code
// produces (so the JS check recorded for it applies to this code) and that
// every vector opens in Go.
func TestGoVectors(t *testing.T) {
	want := makeGoVectors(t)
	if *updateGoVectors {
		if err := os.WriteFile(goVectorsPath, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(goVectorsPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is stale: run testdata/turnkey/regenerate.sh", goVectorsPath)
	}
	var v goVectors
	if err := json.Unmarshal(got, &v); err != nil {
		t.Fatal(err)
	}
	signer, err := signedretry.ParsePublicKey(v.Signer.Public)
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range v.TargetBundles {
		parsed, err := ParseTargetBundle(tb.Bundle, signer)
		if err != nil {
			t.Fatalf("%s: %v", tb.Name, err)
		}
		if hex.EncodeToString(parsed.TargetPublic.Bytes()) != tb.TargetPublic || parsed.OrganizationID != tb.OrganizationID || parsed.UserID != tb.UserID {
			t.Fatalf("%s: parsed %+v", tb.Name, parsed)
		}
	}
	for _, o := range v.EncryptedOtpBundles {
		att, err := OpenOTP(mustTarget(t, o.TargetPrivate).Bytes(), o.Bundle)
		if err != nil {
			t.Fatalf("%s: %v", o.Name, err)
		}
		if att.Code != o.OTPCode || att.PublicKeyHex != o.PublicKey {
			t.Fatalf("%s: opened %+v", o.Name, att)
		}
	}
	for _, s := range v.SessionKeys {
		k, err := OpenSessionKey(mustTarget(t, s.ClientPrivate), s.SessionKey)
		if err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		pub, _ := k.PublicKey.Bytes()
		if hex.EncodeToString(pub) != s.SessionPublic {
			t.Fatalf("%s: session key does not match sessionPublic", s.Name)
		}
	}
	if len(v.ExportBundles) == 0 {
		t.Fatal("no export bundles")
	}
	for _, e := range v.ExportBundles {
		got, err := OpenExportBundle(mustTarget(t, e.ClientPrivate), e.Bundle, signer, e.OrganizationID)
		if err != nil || string(got) != e.Mnemonic {
			t.Fatalf("%s: opened %q, %v", e.Name, got, err)
		}
	}
}

// TestGoVectorsCheckedByJS checks that js-vectors.json records a successful
// @turnkey/crypto check of exactly the committed go-vectors.json.
func TestGoVectorsCheckedByJS(t *testing.T) {
	goFile, err := os.ReadFile(goVectorsPath)
	if err != nil {
		t.Fatal(err)
	}
	js := readJSVectors(t)
	sum := sha256.Sum256(goFile)
	check := js.GoVectorsCheck
	if check.File != "go-vectors.json" || check.SHA256 != hex.EncodeToString(sum[:]) || check.Result != "accepted" {
		t.Fatalf("js-vectors.json goVectorsCheck = %+v; go-vectors.json sha256 is %x: rerun generate.mjs", check, sum)
	}
	var v goVectors
	if err := json.Unmarshal(goFile, &v); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tb := range v.TargetBundles {
		names = append(names, "targetBundles/"+tb.Name)
	}
	for _, o := range v.EncryptedOtpBundles {
		names = append(names, "encryptedOtpBundles/"+o.Name)
	}
	for _, s := range v.SessionKeys {
		names = append(names, "sessionKeys/"+s.Name)
	}
	for _, e := range v.ExportBundles {
		names = append(names, "exportBundles/"+e.Name)
	}
	for _, n := range names {
		if !slices.Contains(check.Checked, n) {
			t.Errorf("go vector %s was not checked by the JS client", n)
		}
	}
}

// TestJSVectors opens every value the JS libraries produced.
func TestJSVectors(t *testing.T) {
	js := readJSVectors(t)
	if js.Packages["@turnkey/crypto"] == "" || len(js.EncryptedOtpBundles) == 0 || len(js.SessionKeys) == 0 {
		t.Fatalf("js-vectors.json is incomplete: %+v", js.Packages)
	}
	for _, o := range js.EncryptedOtpBundles {
		t.Run("otp/"+o.Name, func(t *testing.T) {
			att, err := OpenOTP(mustTarget(t, o.TargetPrivate).Bytes(), o.Bundle)
			if o.Expect != "ok" {
				code, ok := apierror.LookupCode(o.Expect)
				if !ok {
					t.Fatalf("unknown expectation %q", o.Expect)
				}
				wantErr(t, err, code, "", "")
				return
			}
			if err != nil {
				t.Fatalf("%s (%s): %v", o.Name, o.Producer, err)
			}
			if att.Code != o.OTPCode || att.PublicKeyHex != o.PublicKey {
				t.Fatalf("opened %+v, want code %q key %q", att, o.OTPCode, o.PublicKey)
			}
			want, err := signedretry.ParsePublicKey(o.PublicKey)
			if err != nil || !att.PublicKey.Equal(want) {
				t.Fatalf("public key mismatch (%v)", err)
			}
		})
	}
	for _, s := range js.SessionKeys {
		t.Run("essk/"+s.Name, func(t *testing.T) {
			k, err := OpenSessionKey(mustTarget(t, s.ClientPrivate), s.SessionKey)
			if err != nil {
				t.Fatalf("%s (%s): %v", s.Name, s.Producer, err)
			}
			b, _ := k.Bytes()
			if hex.EncodeToString(b) != s.SessionPrivate {
				t.Fatalf("session key %x, want %s", b, s.SessionPrivate)
			}
		})
	}
}

func readJSVectors(t testing.TB) jsVectors {
	t.Helper()
	b, err := os.ReadFile(jsVectorsPath)
	if err != nil {
		t.Fatal(err)
	}
	var js jsVectors
	if err := json.Unmarshal(b, &js); err != nil {
		t.Fatal(err)
	}
	return js
}

// decodeGoVectors reads the committed go-vectors.json.
func decodeGoVectors(v *goVectors) error {
	b, err := os.ReadFile(goVectorsPath)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// mustTarget parses a hex private scalar as a P-256 ECDH key.
func mustTarget(t testing.TB, h string) *ecdh.PrivateKey {
	t.Helper()
	b, err := hex.DecodeString(h)
	if err != nil {
		t.Fatal(err)
	}
	k, err := ecdh.P256().NewPrivateKey(b)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

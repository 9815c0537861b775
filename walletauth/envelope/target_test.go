package envelope

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/asn1"
	"encoding/hex"
	"encoding/json"
	"math/big"
	"strings"
	"testing"

	"github.com/walletgate/walletgate/apierror"
)

func TestNewTargetBundleShape(t *testing.T) {
	signer := testKey(t, "target/signer")
	bundle, target, err := NewTargetBundle(signer, "org-1", "AuthMethod:abc", seeded("target/1"))
	if err != nil {
		t.Fatal(err)
	}
	// Member order and lowercase hex are part of the wire format.
	var env signedEnvelope
	if err := json.Unmarshal([]byte(bundle), &env); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(bundle, `{"version":"v1.0.0","data":"`) || !strings.Contains(bundle, `","dataSignature":"`) || !strings.Contains(bundle, `","enclaveQuorumPublic":"04`) {
		t.Fatalf("bundle shape: %s", bundle)
	}
	for _, h := range []string{env.Data, env.DataSignature, env.EnclaveQuorumPublic} {
		if h != strings.ToLower(h) {
			t.Fatalf("hex %q is not lowercase", h)
		}
	}
	if env.EnclaveQuorumPublic != uncompressedHex(t, signer) {
		t.Fatal("enclaveQuorumPublic is not the signer key")
	}
	data := mustHex(t, env.Data)
	wantData := `{"targetPublic":"` + hex.EncodeToString(target.PublicKey().Bytes()) + `","organizationId":"org-1","userId":"AuthMethod:abc"}`
	if string(data) != wantData {
		t.Fatalf("data = %s, want %s", data, wantData)
	}
	digest := sha256.Sum256(data)
	if !ecdsa.VerifyASN1(&signer.PublicKey, digest[:], mustHex(t, env.DataSignature)) {
		t.Fatal("dataSignature does not verify over the data bytes")
	}
	// Deterministic: same seed, same bundle (RFC 6979 signature).
	again, _, err := NewTargetBundle(signer, "org-1", "AuthMethod:abc", seeded("target/1"))
	if err != nil || again != bundle {
		t.Fatalf("not deterministic (%v)", err)
	}
	// Fresh key per issuance.
	_, other, _ := NewTargetBundle(signer, "org-1", "AuthMethod:abc", nil)
	if other.Equal(target) {
		t.Fatal("two issuances share a target key")
	}
}

func TestParseTargetBundleRoundTrip(t *testing.T) {
	signer := testKey(t, "target/signer")
	for _, ids := range [][2]string{{"org", "user"}, {"org", ""}, {`é "q" <&>`, "\u2028"}} {
		bundle, target, err := NewTargetBundle(signer, ids[0], ids[1], nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, trusted := range []*ecdsa.PublicKey{&signer.PublicKey, nil} {
			tb, err := ParseTargetBundle(bundle, trusted)
			if err != nil {
				t.Fatal(err)
			}
			if !tb.TargetPublic.Equal(target.PublicKey()) || tb.OrganizationID != ids[0] || tb.UserID != ids[1] || !tb.Signer.Equal(&signer.PublicKey) {
				t.Fatalf("parsed %+v", tb)
			}
		}
	}
}

func TestNewTargetBundleErrors(t *testing.T) {
	_, _, err := NewTargetBundle(nil, "o", "u", nil)
	wantErr(t, err, apierror.InternalError, "", "")
	p384, err := ecdsa.GenerateKey(elliptic.P384(), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = NewTargetBundle(p384, "o", "u", nil)
	wantErr(t, err, apierror.InternalError, "", "")
	_, _, err = NewTargetBundle(testKey(t, "target/signer"), "o", "u", failingReader{})
	wantErr(t, err, apierror.InternalError, "", "")
}

// envelopeParts builds target bundles from parts, signing data with signer.
type envelopeParts struct {
	version, data, sig, signerHex string
}

func (p envelopeParts) String() string {
	b, _ := marshalCompact(signedEnvelope{Version: p.version, Data: p.data, DataSignature: p.sig, EnclaveQuorumPublic: p.signerHex})
	return string(b)
}

func signedParts(t testing.TB, signer *ecdsa.PrivateKey, data string) envelopeParts {
	t.Helper()
	digest := sha256.Sum256([]byte(data))
	sig, err := ecdsa.SignASN1(nil, signer, digest[:])
	if err != nil {
		t.Fatal(err)
	}
	return envelopeParts{"v1.0.0", hex.EncodeToString([]byte(data)), hex.EncodeToString(sig), uncompressedHex(t, signer)}
}

func TestParseTargetBundleErrors(t *testing.T) {
	signer := testKey(t, "target/signer")
	stranger := testKey(t, "target/stranger")
	target := testKey(t, "target/key")
	goodData := `{"targetPublic":"` + uncompressedHex(t, target) + `","organizationId":"o","userId":"u"}`
	good := signedParts(t, signer, goodData)
	if _, err := ParseTargetBundle(good.String(), &signer.PublicKey); err != nil {
		t.Fatalf("baseline: %v", err)
	}
	with := func(f func(*envelopeParts)) string { p := good; f(&p); return p.String() }
	withData := func(data string) string { return signedParts(t, signer, data).String() }
	notObject := "otpEncryptionTargetBundle is not a JSON object with string members version, data, dataSignature and enclaveQuorumPublic"
	dataNotObject := "data is not a JSON object with string members targetPublic, organizationId and userId"
	const F = "otpEncryptionTargetBundle"
	bad := apierror.InvalidInput
	unauth := apierror.Unauthorized
	cases := []struct {
		name   string
		bundle string
		code   apierror.Code
		reason string
	}{
		{"empty", "", bad, "otpEncryptionTargetBundle is required"},
		{"too long", strings.Repeat(" ", MaxTargetBundleLen+1), bad, "otpEncryptionTargetBundle exceeds 16384 bytes"},
		{"not JSON", "not json", bad, notObject},
		{"null", "null", bad, notObject},
		{"array", "[]", bad, notObject},
		{"truncated", good.String()[:40], bad, notObject},
		{"trailing data", good.String() + "{}", bad, notObject},
		{"number member", `{"version":1}`, bad, notObject},
		{"version missing", with(func(p *envelopeParts) { p.version = "" }), bad, `version must be "v1.0.0"`},
		{"version other", with(func(p *envelopeParts) { p.version = "v0" }), bad, `version must be "v1.0.0"`},
		{"signer missing", with(func(p *envelopeParts) { p.signerHex = "" }), bad, "enclaveQuorumPublic is required"},
		{"signer not hex", with(func(p *envelopeParts) { p.signerHex = "xyz" }), bad, "enclaveQuorumPublic is not hex"},
		{"signer compressed", with(func(p *envelopeParts) { p.signerHex = compressedHex(t, signer) }), bad, "enclaveQuorumPublic must be a 65-byte uncompressed P-256 point"},
		{"signer off curve", with(func(p *envelopeParts) { p.signerHex = p.signerHex[:128] + flipHex(p.signerHex[128:]) }), bad, "enclaveQuorumPublic is not a point on P-256"},
		{"signer not trusted", signedParts(t, stranger, goodData).String(), unauth, "enclaveQuorumPublic is not the trusted signer key"},
		{"data missing", with(func(p *envelopeParts) { p.data = "" }), bad, "data is required"},
		{"data not hex", with(func(p *envelopeParts) { p.data = "7g" }), bad, "data is not hex"},
		{"signature missing", with(func(p *envelopeParts) { p.sig = "" }), bad, "dataSignature is required"},
		{"signature not hex", with(func(p *envelopeParts) { p.sig = "3044zz" }), bad, "dataSignature is not hex"},
		{"signature garbage", with(func(p *envelopeParts) { p.sig = "3000" }), unauth, "dataSignature does not verify under enclaveQuorumPublic"},
		{"data altered", with(func(p *envelopeParts) { p.data = hex.EncodeToString([]byte(goodData + " ")) }), unauth, "dataSignature does not verify under enclaveQuorumPublic"},
		{"signature by stranger", with(func(p *envelopeParts) { p.sig = signedParts(t, stranger, goodData).sig }), unauth, "dataSignature does not verify under enclaveQuorumPublic"},
		{"data not JSON", withData("hello"), bad, dataNotObject},
		{"data array", withData(`["x"]`), bad, dataNotObject},
		{"data wrong type", withData(`{"targetPublic":4}`), bad, dataNotObject},
		{"targetPublic missing", withData(`{"organizationId":"o"}`), bad, "targetPublic is required"},
		{"targetPublic not hex", withData(`{"targetPublic":"0x04"}`), bad, "targetPublic is not hex"},
		{"targetPublic compressed", withData(`{"targetPublic":"` + compressedHex(t, target) + `"}`), bad, "targetPublic must be a 65-byte uncompressed P-256 point"},
		{"targetPublic off curve", withData(`{"targetPublic":"04` + strings.Repeat("11", 64) + `"}`), bad, "targetPublic is not a point on P-256"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseTargetBundle(c.bundle, &signer.PublicKey)
			field := ""
			if c.code == bad {
				field = F
			}
			wantErr(t, err, c.code, field, c.reason)
		})
	}
}

// TestParseTargetBundleAcceptsHighS: Turnkey's own signer does not
// normalise S, so a client must accept both forms.
func TestParseTargetBundleAcceptsHighS(t *testing.T) {
	signer := testKey(t, "target/signer")
	bundle, _, err := NewTargetBundle(signer, "o", "u", nil)
	if err != nil {
		t.Fatal(err)
	}
	var env signedEnvelope
	_ = json.Unmarshal([]byte(bundle), &env)
	r, s := parseDER(t, mustHex(t, env.DataSignature))
	n := elliptic.P256().Params().N
	env.DataSignature = hex.EncodeToString(encodeDER(r, new(big.Int).Sub(n, s)))
	flipped, _ := marshalCompact(env)
	if _, err := ParseTargetBundle(string(flipped), &signer.PublicKey); err != nil {
		t.Fatalf("the other S of the same signature was rejected: %v", err)
	}
}

type derSignature struct{ R, S *big.Int }

func parseDER(t testing.TB, der []byte) (*big.Int, *big.Int) {
	t.Helper()
	var sig derSignature
	if rest, err := asn1.Unmarshal(der, &sig); err != nil || len(rest) != 0 {
		t.Fatalf("bad DER: %v", err)
	}
	return sig.R, sig.S
}

func encodeDER(r, s *big.Int) []byte {
	b, _ := asn1.Marshal(derSignature{r, s})
	return b
}

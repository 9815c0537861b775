package envelope

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/walletgate/walletgate/apierror"
)

const exportMnemonic = "leaf lady until indicate praise final route toast cake minimum insect unknown"

func TestNewExportBundleShape(t *testing.T) {
	signer := testKey(t, "export/signer")
	client := testKey(t, "export/client")
	bundle, err := NewExportBundle(signer, "org-1", compressedHex(t, client), []byte(exportMnemonic), seeded("export/1"))
	if err != nil {
		t.Fatal(err)
	}
	// Member order and lowercase hex are part of the wire format.
	if !strings.HasPrefix(bundle, `{"version":"v1.0.0","data":"`) || !strings.Contains(bundle, `","dataSignature":"`) || !strings.Contains(bundle, `","enclaveQuorumPublic":"04`) {
		t.Fatalf("bundle shape: %s", bundle)
	}
	var env signedEnvelope
	if err := json.Unmarshal([]byte(bundle), &env); err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{env.Data, env.DataSignature, env.EnclaveQuorumPublic} {
		if h == "" || h != strings.ToLower(h) {
			t.Fatalf("hex %q is empty or not lowercase", h)
		}
	}
	if env.EnclaveQuorumPublic != uncompressedHex(t, signer) {
		t.Fatal("enclaveQuorumPublic is not the signer key")
	}
	data := mustHex(t, env.Data)
	digest := sha256.Sum256(data)
	if !ecdsa.VerifyASN1(&signer.PublicKey, digest[:], mustHex(t, env.DataSignature)) {
		t.Fatal("dataSignature does not verify over the data bytes")
	}
	if !strings.HasPrefix(string(data), `{"encappedPublic":"04`) || !strings.HasSuffix(string(data), `","organizationId":"org-1"}`) || !strings.Contains(string(data), `","ciphertext":"`) {
		t.Fatalf("data = %s", data)
	}
	// Deterministic for a seeded reader; the signature is RFC 6979.
	again, err := NewExportBundle(signer, "org-1", compressedHex(t, client), []byte(exportMnemonic), seeded("export/1"))
	if err != nil || again != bundle {
		t.Fatalf("not deterministic (%v)", err)
	}
}

func TestExportBundleRoundTrip(t *testing.T) {
	signer := testKey(t, "export/signer")
	client := testKey(t, "export/client")
	clientECDH := testECDH(t, "export/client")
	for name, pub := range map[string]string{"compressed": compressedHex(t, client), "uncompressed": uncompressedHex(t, client)} {
		t.Run(name, func(t *testing.T) {
			bundle, err := NewExportBundle(signer, "org-1", pub, []byte(exportMnemonic), nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := OpenExportBundle(clientECDH, bundle, &signer.PublicKey, "org-1")
			if err != nil || string(got) != exportMnemonic {
				t.Fatalf("opened %q, %v", got, err)
			}
		})
	}
}

func TestNewExportBundleErrors(t *testing.T) {
	signer := testKey(t, "export/signer")
	client := compressedHex(t, testKey(t, "export/client"))
	_, err := NewExportBundle(nil, "o", client, []byte("x"), nil)
	wantErr(t, err, apierror.InternalError, "", "")
	p384, err := ecdsa.GenerateKey(elliptic.P384(), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = NewExportBundle(p384, "o", client, []byte("x"), nil)
	wantErr(t, err, apierror.InternalError, "", "")
	_, err = NewExportBundle(signer, "o", client, []byte("x"), failingReader{})
	wantErr(t, err, apierror.InternalError, "", "")
	for key, reason := range map[string]string{
		"":                             "clientPublicKey is required",
		"04":                           "clientPublicKey must be 66 (compressed) or 130 (uncompressed) hex characters",
		strings.Repeat("z", 66):        "clientPublicKey is not hex",
		"02" + strings.Repeat("f", 64): "clientPublicKey is not a point on P-256",
	} {
		_, err := NewExportBundle(signer, "o", key, []byte("x"), nil)
		wantErr(t, err, apierror.InvalidInput, fieldClientPublicKey, reason)
		if s := apierror.As(err).Code.Status(); s != 400 {
			t.Fatalf("status %d, want 400", s)
		}
	}
}

func TestOpenExportBundleErrors(t *testing.T) {
	signer := testKey(t, "export/signer")
	stranger := testKey(t, "export/stranger")
	client := testKey(t, "export/client")
	clientECDH := testECDH(t, "export/client")
	good, err := NewExportBundle(signer, "org-1", compressedHex(t, client), []byte(exportMnemonic), nil)
	if err != nil {
		t.Fatal(err)
	}
	toOther, err := NewExportBundle(signer, "org-1", compressedHex(t, stranger), []byte(exportMnemonic), nil)
	if err != nil {
		t.Fatal(err)
	}
	byStranger, err := NewExportBundle(stranger, "org-1", compressedHex(t, client), []byte(exportMnemonic), nil)
	if err != nil {
		t.Fatal(err)
	}
	var env signedEnvelope
	_ = json.Unmarshal([]byte(good), &env)
	data := string(mustHex(t, env.Data))
	withData := func(d string) string { return signedParts(t, signer, d).String() }
	altered := signedParts(t, signer, data)
	altered.data = hex.EncodeToString([]byte(data + " "))
	const F = fieldExportBundle
	bad, unauth := apierror.InvalidInput, apierror.Unauthorized
	cases := []struct {
		name, bundle, org string
		code              apierror.Code
		status            int
		reason            string
	}{
		{"empty", "", "org-1", bad, 400, "encryptedWalletCredentials is required"},
		{"too long", strings.Repeat(" ", MaxExportBundleLen+1), "org-1", bad, 400, "encryptedWalletCredentials exceeds 65536 bytes"},
		{"not JSON", "nope", "org-1", bad, 400, "encryptedWalletCredentials is not a JSON object with string members version, data, dataSignature and enclaveQuorumPublic"},
		{"unsigned", strings.Replace(good, env.DataSignature, "", 1), "org-1", bad, 400, "dataSignature is required"},
		{"no signer", strings.Replace(good, env.EnclaveQuorumPublic, "", 1), "org-1", bad, 400, "enclaveQuorumPublic is required"},
		{"other signer", byStranger, "org-1", unauth, 401, "enclaveQuorumPublic is not the trusted signer key"},
		{"data altered", altered.String(), "org-1", unauth, 401, "dataSignature does not verify under enclaveQuorumPublic"},
		{"wrong organization", good, "org-2", bad, 400, "organizationId is not the expected organization"},
		{"empty organization", withData(strings.Replace(data, `"org-1"`, `""`, 1)), "", bad, 400, "organizationId is not the expected organization"},
		{"data not object", withData("[]"), "org-1", bad, 400, "data is not a JSON object with string members encappedPublic, ciphertext and organizationId"},
		{"enc compressed", withData(`{"encappedPublic":"` + compressedHex(t, client) + `","ciphertext":"00","organizationId":"org-1"}`), "org-1", bad, 400, "encappedPublic must be a 65-byte uncompressed P-256 point"},
		{"short ciphertext", withData(`{"encappedPublic":"` + uncompressedHex(t, client) + `","ciphertext":"00","organizationId":"org-1"}`), "org-1", bad, 400, "ciphertext is shorter than the 16-byte AES-GCM tag"},
		{"sealed to another key", toOther, "org-1", unauth, 401, reasonExportNotSealedToClient},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := OpenExportBundle(clientECDH, c.bundle, &signer.PublicKey, c.org)
			field := ""
			if c.code == bad {
				field = F
			}
			wantErr(t, err, c.code, field, c.reason)
			if s := apierror.As(err).Code.Status(); s != c.status {
				t.Fatalf("status %d, want %d", s, c.status)
			}
		})
	}
	_, err = OpenExportBundle(nil, good, &signer.PublicKey, "org-1")
	wantErr(t, err, apierror.InternalError, "", "")
}

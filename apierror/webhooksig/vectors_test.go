package webhooksig_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/walletgate/walletgate/apierror/webhooksig"
)

// The vectors: testdata/webcrypto/generate.mjs writes vectors.json (signed
// by WebCrypto) after verifying go_signed.json (signed by the Go Signer,
// written by TestWriteGoSignedVectors). See that script for how to
// regenerate them.
var (
	vectorsPath  = filepath.Join("testdata", "webcrypto", "vectors.json")
	goSignedPath = filepath.Join("testdata", "webcrypto", "go_signed.json")
)

type vector struct {
	Name   string `json:"name"`
	Body   string `json:"body"`
	Header string `json:"header"`
	HighS  bool   `json:"highS,omitempty"`
	Reason string `json:"reason,omitempty"`
}

type goSignedFile struct {
	PublicKeyPEM string   `json:"publicKeyPem"`
	Items        []vector `json:"items"`
}

type vectorsFile struct {
	Generator                   string   `json:"generator"`
	Timestamp                   string   `json:"timestamp"`
	PublicKeyPEM                string   `json:"publicKeyPem"`
	Valid                       []vector `json:"valid"`
	Invalid                     []vector `json:"invalid"`
	GoSignedVerifiedByWebCrypto bool     `json:"goSignedVerifiedByWebCrypto"`
	GoSignedCount               int      `json:"goSignedCount"`
	GoSignedSHA256              string   `json:"goSignedSha256"`
}

// TestWriteGoSignedVectors writes go_signed.json with a fresh key when
// WALLETGATE_WRITE_VECTORS=1: bodies signed by the Signer, alternating high
// and low S so that WebCrypto is shown to accept both.
func TestWriteGoSignedVectors(t *testing.T) {
	if os.Getenv("WALLETGATE_WRITE_VECTORS") != "1" {
		t.Skip("set WALLETGATE_WRITE_VECTORS=1 to rewrite testdata/webcrypto/go_signed.json, then run generate.mjs")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := webhooksig.NewSigner(key)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, 6)
	for i := range ids {
		ids[i] = fmt.Sprintf("Webhook:%08x-1c2d-4e3f-8a4b-%012x", 0x5e0a0000+i, 0x9c8d7e6f5a40+i)
	}
	account := `{"id":"ExternalAccount:9f1c2a4e-7b3d-4c5e-8f6a-1b2c3d4e5f60","status":"%s","currency":"USDC","ownershipType":"FIRST_PARTY","accountInfo":{"accountType":"ETHEREUM_WALLET","address":"0x52908400098527886E0F7030069857D2E4169EE7"}}`
	env := func(id, data string) string {
		return `{"id":"` + id + `","type":"EXTERNAL_ACCOUNT.STATUS_UPDATED","timestamp":"2026-11-23T12:00:00Z","data":` + data + `}`
	}
	bodies := []struct{ name, body string }{
		{"status ACTIVE", env(ids[0], fmt.Sprintf(account, "ACTIVE"))},
		{"status UNVERIFIED", env(ids[1], fmt.Sprintf(account, "UNVERIFIED"))},
		{"empty data", env(ids[2], `{}`)},
		{"non-ASCII and escapes", env(ids[3], `{"nickname":"Zoë ☃ \"cold\" wallet\n\u00e9"}`)},
		{"pretty-printed", "{\n  \"id\": \"" + ids[4] + "\",\n  \"type\": \"EXTERNAL_ACCOUNT.STATUS_UPDATED\",\n  \"timestamp\": \"2026-11-23T12:00:00.5+00:00\",\n  \"data\": {\"status\": \"PENDING\"}\n}\n"},
		{"2 KiB", env(ids[5], `{"memo":"`+strings.Repeat("0123456789abcdef", 128)+`"}`)},
	}
	out := goSignedFile{PublicKeyPEM: string(s.PublicKeyPEM())}
	for i, b := range bodies {
		wantHigh := i%2 == 1
		for {
			h, err := s.Sign([]byte(b.body))
			if err != nil {
				t.Fatal(err)
			}
			if _, sig := sigOf(t, h); (sig.Cmp(halfN) > 0) == wantHigh {
				out.Items = append(out.Items, vector{Name: b.name, Body: b.body, Header: h, HighS: wantHigh})
				break
			}
		}
	}
	data, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(goSignedPath, append(data, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s; now run node %s", goSignedPath, filepath.Join("testdata", "webcrypto", "generate.mjs"))
}

// halfN is n/2: an S above it is high.
var halfN = new(big.Int).Rsh(elliptic.P256().Params().N, 1)

// TestWebCryptoVectors checks both directions of the committed vectors: the
// Verifier accepts every WebCrypto signature (high and low S) and refuses
// the invalid ones with the recorded reason; and generate.mjs verified,
// with WebCrypto, exactly the go_signed.json committed beside it.
func TestWebCryptoVectors(t *testing.T) {
	raw, err := os.ReadFile(vectorsPath)
	if err != nil {
		t.Fatal(err)
	}
	var vf vectorsFile
	if err := json.Unmarshal(raw, &vf); err != nil {
		t.Fatal(err)
	}
	if vf.Timestamp != t0.Format("2006-01-02T15:04:05Z") || !strings.Contains(vf.Generator, "subtle") {
		t.Fatalf("vectors.json header: %q %q", vf.Generator, vf.Timestamp)
	}
	v, err := webhooksig.NewVerifierPEM([]byte(vf.PublicKeyPEM), webhooksig.VerifierConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var high, low int
	for _, c := range vf.Valid {
		d, err := v.VerifyBytes(c.Header, []byte(c.Body), t0)
		if err != nil {
			t.Errorf("%s: %v", c.Name, err)
			continue
		}
		if !strings.HasPrefix(d.ID, "Webhook:") {
			t.Errorf("%s: id %q", c.Name, d.ID)
		}
		if c.HighS {
			high++
		} else {
			low++
		}
	}
	if len(vf.Valid) < 5 || high == 0 || low == 0 {
		t.Fatalf("%d valid vectors, %d high-S, %d low-S", len(vf.Valid), high, low)
	}
	if len(vf.Invalid) < 4 {
		t.Fatalf("%d invalid vectors", len(vf.Invalid))
	}
	for _, c := range vf.Invalid {
		_, err := v.VerifyBytes(c.Header, []byte(c.Body), t0)
		var ve *webhooksig.VerifyError
		if !errors.As(err, &ve) || string(ve.Reason) != c.Reason {
			t.Errorf("%s: error %v, want reason %q", c.Name, err, c.Reason)
		}
	}

	// The other direction: WebCrypto verified the Go signatures, and the
	// file it verified is the one committed here.
	goRaw, err := os.ReadFile(goSignedPath)
	if err != nil {
		t.Fatal(err)
	}
	var gf goSignedFile
	if err := json.Unmarshal(goRaw, &gf); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(goRaw)
	if !vf.GoSignedVerifiedByWebCrypto || vf.GoSignedCount != len(gf.Items) || vf.GoSignedSHA256 != hex.EncodeToString(sum[:]) {
		t.Fatalf("vectors.json records verified=%v count=%d sha256=%s; go_signed.json has %d items, sha256 %x: rerun generate.mjs",
			vf.GoSignedVerifiedByWebCrypto, vf.GoSignedCount, vf.GoSignedSHA256, len(gf.Items), sum)
	}
	gv, err := webhooksig.NewVerifierPEM([]byte(gf.PublicKeyPEM), webhooksig.VerifierConfig{})
	if err != nil {
		t.Fatal(err)
	}
	high, low = 0, 0
	for _, c := range gf.Items {
		if _, err := gv.VerifyBytes(c.Header, []byte(c.Body), t0); err != nil {
			t.Errorf("go_signed %s: %v", c.Name, err)
		}
		if _, s := sigOf(t, c.Header); s.Cmp(halfN) > 0 {
			high++
		} else {
			low++
		}
	}
	if high == 0 || low == 0 {
		t.Fatalf("go_signed.json: %d high-S, %d low-S; want both", high, low)
	}
}

package webhooksig_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/cryptobyte"
	"golang.org/x/crypto/cryptobyte/asn1"

	"github.com/walletgate/walletgate/apierror/webhooksig"
)

// t0 is the time every test envelope carries and the verifiers' clock.
var t0 = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

const testID = "Webhook:0b5c6f4e-2d3a-4f1b-9c8d-7e6f5a4b3c2d"

// testKey is the fixed key of the examples, so that they print the same PEM.
func testKey(tb testing.TB) *ecdsa.PrivateKey {
	tb.Helper()
	return exampleKey()
}

func testSigner(tb testing.TB) *webhooksig.Signer {
	tb.Helper()
	s, err := webhooksig.NewSigner(testKey(tb))
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

func testVerifier(tb testing.TB, cfg webhooksig.VerifierConfig) *webhooksig.Verifier {
	tb.Helper()
	if cfg.Clock == nil {
		cfg.Clock = func() time.Time { return t0 }
	}
	v, err := webhooksig.NewVerifierPEM(testSigner(tb).PublicKeyPEM(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return v
}

func envelope(id, ts string) []byte {
	return []byte(`{"id":"` + id + `","type":"EXTERNAL_ACCOUNT.STATUS_UPDATED","timestamp":"` + ts + `","data":{"id":"ExternalAccount:1","status":"ACTIVE","amount":1.50}}`)
}

var testBody = envelope(testID, "2026-11-23T12:00:00Z")

func sign(tb testing.TB, body []byte) string {
	tb.Helper()
	h, err := testSigner(tb).Sign(body)
	if err != nil {
		tb.Fatal(err)
	}
	return h
}

// derHeader builds a header around arbitrary DER bytes.
func derHeader(der []byte) string {
	return `{"version":1,"signature":"` + base64.StdEncoding.EncodeToString(der) + `"}`
}

// sigOf returns (r, s) of the signature in a header the Signer made.
func sigOf(tb testing.TB, header string) (r, s *big.Int) {
	tb.Helper()
	b64 := strings.TrimSuffix(strings.TrimPrefix(header, `{"version":1,"signature":"`), `"}`)
	der, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		tb.Fatal(err)
	}
	r, s = new(big.Int), new(big.Int)
	in := cryptobyte.String(der)
	var seq cryptobyte.String
	if !in.ReadASN1(&seq, asn1.SEQUENCE) || !seq.ReadASN1Integer(r) || !seq.ReadASN1Integer(s) {
		tb.Fatal("signer produced bad DER")
	}
	return r, s
}

func marshalRS(r, s *big.Int) []byte {
	var b cryptobyte.Builder
	b.AddASN1(asn1.SEQUENCE, func(b *cryptobyte.Builder) {
		b.AddASN1BigInt(r)
		b.AddASN1BigInt(s)
	})
	return b.BytesOrPanic()
}

func TestRoundTrip(t *testing.T) {
	v := testVerifier(t, webhooksig.VerifierConfig{})
	header := sign(t, testBody)
	if !strings.HasPrefix(header, `{"version":1,"signature":"`) {
		t.Fatalf("header %s", header)
	}
	d, err := v.VerifyBytes(header, testBody, t0)
	if err != nil {
		t.Fatal(err)
	}
	if d.ID != testID || d.Type != "EXTERNAL_ACCOUNT.STATUS_UPDATED" || !d.Timestamp.Equal(t0) ||
		string(d.Data) != `{"amount":1.5,"id":"ExternalAccount:1","status":"ACTIVE"}` || !bytes.Equal(d.Body, testBody) {
		t.Fatalf("delivery %+v", d)
	}

	req := httptest.NewRequest(http.MethodPost, "/hook", bytes.NewReader(testBody))
	req.Header.Set(webhooksig.SignatureHeader, header)
	req.Header.Set(webhooksig.IDHeader, testID)
	d2, err := v.Verify(req)
	if err != nil {
		t.Fatal(err)
	}
	if d2.ID != d.ID || string(d2.Data) != string(d.Data) {
		t.Fatalf("Verify %+v, VerifyBytes %+v", d2, d)
	}
}

func TestVerifyAccepts(t *testing.T) {
	v := testVerifier(t, webhooksig.VerifierConfig{})
	header := sign(t, testBody)
	r, s := sigOf(t, header)
	n := elliptic.P256().Params().N
	otherS := marshalRS(r, new(big.Int).Sub(n, s)) // the other S of the pair
	b64 := strings.TrimSuffix(strings.TrimPrefix(header, `{"version":1,"signature":"`), `"}`)
	cases := map[string]struct {
		header string
		body   []byte
	}{
		"the other S (high or low)":  {derHeader(otherS), testBody},
		"member order and spaces":    {` { "signature" : "` + b64 + `" , "version" : 1 } `, testBody},
		"version spelled 1.0":        {`{"version":1.0,"signature":"` + b64 + `"}`, testBody},
		"escaped member name":        {`{"vers\u0069on":1,"signature":"` + b64 + `"}`, testBody},
		"unknown envelope member":    {"", []byte(`{"id":"` + testID + `","type":"T","timestamp":"2026-11-23T12:00:00Z","data":{},"newField":[1,{"x":null}]}`)},
		"timestamp with offset":      {"", envelope(testID, "2026-11-23T13:04:59+01:00")},
		"timestamp with fraction":    {"", envelope(testID, "2026-11-23T11:55:00.123456789Z")},
		"uppercase uuid":             {"", envelope("Webhook:0B5C6F4E-2D3A-4F1B-9C8D-7E6F5A4B3C2D", "2026-11-23T12:00:00Z")},
		"timestamp at window's edge": {"", envelope(testID, "2026-11-23T12:05:00Z")},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			h := c.header
			if h == "" {
				h = sign(t, c.body)
			}
			if _, err := v.VerifyBytes(h, c.body, t0); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestVerifyBytesRejects(t *testing.T) {
	v := testVerifier(t, webhooksig.VerifierConfig{})
	// A signature whose base64 ends in padding and has a + or /, for the
	// encoding cases.
	var header, b64 string
	var der []byte
	for len(der)%3 == 0 || !strings.ContainsAny(b64, "+/") {
		header = sign(t, testBody)
		b64 = strings.TrimSuffix(strings.TrimPrefix(header, `{"version":1,"signature":"`), `"}`)
		der, _ = base64.StdEncoding.DecodeString(b64)
	}
	r, s := sigOf(t, header)
	n := elliptic.P256().Params().N

	otherKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	otherSigner, _ := webhooksig.NewSigner(otherKey)
	otherHeader, _ := otherSigner.Sign(testBody)

	// DER variants of the valid signature that the strict parser refuses.
	longLen := append([]byte{0x30, 0x81, der[1]}, der[2:]...)
	padded := func(x *big.Int) []byte { // INTEGER with a redundant leading zero
		b := x.Bytes()
		if b[0]&0x80 != 0 {
			b = append([]byte{0}, b...) // the minimal encoding
		}
		return append([]byte{0x02, byte(len(b) + 1), 0}, b...)
	}
	withPaddedR := func() []byte {
		var b cryptobyte.Builder
		b.AddASN1(asn1.SEQUENCE, func(b *cryptobyte.Builder) {
			b.AddBytes(padded(r))
			b.AddASN1BigInt(s)
		})
		return b.BytesOrPanic()
	}()
	p1363 := make([]byte, 64)
	r.FillBytes(p1363[:32])
	s.FillBytes(p1363[32:])

	// Flip the last base64 character to one that differs only in the
	// padding bits the decoder ignores without Strict.
	nonCanonical := func() string {
		i := strings.IndexByte(b64, '=') - 1
		const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
		pos := strings.IndexByte(alphabet, b64[i])
		return b64[:i] + string(alphabet[pos^1]) + b64[i+1:]
	}()

	cases := []struct {
		name   string
		header string
		body   []byte
		reason webhooksig.Reason
	}{
		{"no header", "", testBody, webhooksig.ReasonSignatureMissing},
		{"header too long", `{"version":1,"signature":"` + b64 + `"}` + strings.Repeat(" ", 600), testBody, webhooksig.ReasonHeaderMalformed},
		{"not JSON", "v1=" + b64, testBody, webhooksig.ReasonHeaderMalformed},
		{"JSON null", "null", testBody, webhooksig.ReasonHeaderMalformed},
		{"JSON array", `[1,"` + b64 + `"]`, testBody, webhooksig.ReasonHeaderMalformed},
		{"trailing data", header + "x", testBody, webhooksig.ReasonHeaderMalformed},
		{"duplicate member", `{"version":1,"signature":"` + b64 + `","signature":"` + b64 + `"}`, testBody, webhooksig.ReasonHeaderMalformed},
		{"case-colliding member", `{"version":1,"Version":1,"signature":"` + b64 + `"}`, testBody, webhooksig.ReasonHeaderMalformed},
		{"unknown member", `{"version":1,"signature":"` + b64 + `","kid":"k1"}`, testBody, webhooksig.ReasonHeaderMalformed},
		{"version missing", `{"signature":"` + b64 + `"}`, testBody, webhooksig.ReasonHeaderMalformed},
		{"signature missing", `{"version":1}`, testBody, webhooksig.ReasonHeaderMalformed},
		{"signature a number", `{"version":1,"signature":5}`, testBody, webhooksig.ReasonHeaderMalformed},
		{"signature null", `{"version":1,"signature":null}`, testBody, webhooksig.ReasonHeaderMalformed},
		{"version 2", `{"version":2,"signature":"` + b64 + `"}`, testBody, webhooksig.ReasonVersionUnsupported},
		{"version a string", `{"version":"1","signature":"` + b64 + `"}`, testBody, webhooksig.ReasonVersionUnsupported},
		{"version 0.1e1 is 1, but 1.5 is not", `{"version":1.5,"signature":"` + b64 + `"}`, testBody, webhooksig.ReasonVersionUnsupported},
		{"unpadded base64", `{"version":1,"signature":"` + strings.TrimRight(b64, "=") + `"}`, testBody, webhooksig.ReasonSignatureEncoding},
		{"base64url alphabet", `{"version":1,"signature":"` + base64.URLEncoding.EncodeToString(der) + `"}`, testBody, webhooksig.ReasonSignatureEncoding},
		{"line break in base64", `{"version":1,"signature":"` + b64[:10] + `\n` + b64[10:] + `"}`, testBody, webhooksig.ReasonSignatureEncoding},
		{"non-zero padding bits", `{"version":1,"signature":"` + nonCanonical + `"}`, testBody, webhooksig.ReasonSignatureEncoding},
		{"empty signature", `{"version":1,"signature":""}`, testBody, webhooksig.ReasonSignatureDER},
		{"DER with trailing byte", derHeader(append(bytes.Clone(der), 0)), testBody, webhooksig.ReasonSignatureDER},
		{"DER long-form length", derHeader(longLen), testBody, webhooksig.ReasonSignatureDER},
		{"DER INTEGER with redundant zero", derHeader(withPaddedR), testBody, webhooksig.ReasonSignatureDER},
		{"DER negative r", derHeader(marshalRS(new(big.Int).Neg(r), s)), testBody, webhooksig.ReasonSignatureDER},
		{"DER r = 0", derHeader(marshalRS(big.NewInt(0), s)), testBody, webhooksig.ReasonSignatureDER},
		{"DER s = n", derHeader(marshalRS(r, n)), testBody, webhooksig.ReasonSignatureDER},
		{"IEEE P1363 r||s instead of DER", derHeader(p1363), testBody, webhooksig.ReasonSignatureDER},
		{"another key's signature", otherHeader, testBody, webhooksig.ReasonSignatureInvalid},
		{"body changed", header, append(bytes.Clone(testBody), ' '), webhooksig.ReasonSignatureInvalid},
		{"s+1", derHeader(marshalRS(r, new(big.Int).Add(s, big.NewInt(1)))), testBody, webhooksig.ReasonSignatureInvalid},
	}
	bodyCases := []struct {
		name string
		body string
	}{
		{"body not JSON", `id=` + testID},
		{"body empty", ``},
		{"body an array", `[]`},
		{"duplicate id", `{"id":"` + testID + `","id":"` + testID + `","type":"T","timestamp":"2026-11-23T12:00:00Z","data":{}}`},
		{"case-colliding id", `{"id":"` + testID + `","ID":"x","type":"T","timestamp":"2026-11-23T12:00:00Z","data":{}}`},
		{"id missing", `{"type":"T","timestamp":"2026-11-23T12:00:00Z","data":{}}`},
		{"type missing", `{"id":"` + testID + `","timestamp":"2026-11-23T12:00:00Z","data":{}}`},
		{"timestamp missing", `{"id":"` + testID + `","type":"T","data":{}}`},
		{"data missing", `{"id":"` + testID + `","type":"T","timestamp":"2026-11-23T12:00:00Z"}`},
		{"id without prefix", `{"id":"0b5c6f4e-2d3a-4f1b-9c8d-7e6f5a4b3c2d","type":"T","timestamp":"2026-11-23T12:00:00Z","data":{}}`},
		{"id another type", `{"id":"Request:0b5c6f4e-2d3a-4f1b-9c8d-7e6f5a4b3c2d","type":"T","timestamp":"2026-11-23T12:00:00Z","data":{}}`},
		{"id not a uuid", `{"id":"Webhook:1","type":"T","timestamp":"2026-11-23T12:00:00Z","data":{}}`},
		{"id a number", `{"id":7,"type":"T","timestamp":"2026-11-23T12:00:00Z","data":{}}`},
		{"type empty", `{"id":"` + testID + `","type":"","timestamp":"2026-11-23T12:00:00Z","data":{}}`},
		{"timestamp not RFC 3339", `{"id":"` + testID + `","type":"T","timestamp":"23 Nov 2026 12:00","data":{}}`},
		{"timestamp unix number", `{"id":"` + testID + `","type":"T","timestamp":1795435200,"data":{}}`},
		{"data an array", `{"id":"` + testID + `","type":"T","timestamp":"2026-11-23T12:00:00Z","data":[]}`},
		{"data null", `{"id":"` + testID + `","type":"T","timestamp":"2026-11-23T12:00:00Z","data":null}`},
	}
	for _, c := range bodyCases {
		cases = append(cases, struct {
			name   string
			header string
			body   []byte
			reason webhooksig.Reason
		}{c.name, sign(t, []byte(c.body)), []byte(c.body), webhooksig.ReasonEnvelopeMalformed})
	}
	for _, ts := range []string{"2026-11-23T12:05:01Z", "2026-11-20T11:59:59Z", "2025-11-23T12:00:00Z"} {
		body := envelope(testID, ts)
		cases = append(cases, struct {
			name   string
			header string
			body   []byte
			reason webhooksig.Reason
		}{"stale " + ts, sign(t, body), body, webhooksig.ReasonStale})
	}
	wantStatus := map[webhooksig.Reason]int{
		webhooksig.ReasonSignatureMissing: 401, webhooksig.ReasonSignatureInvalid: 401,
		webhooksig.ReasonHeaderMalformed: 400, webhooksig.ReasonVersionUnsupported: 400, webhooksig.ReasonSignatureEncoding: 400,
		webhooksig.ReasonSignatureDER: 400, webhooksig.ReasonEnvelopeMalformed: 400, webhooksig.ReasonStale: 400,
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := v.VerifyBytes(c.header, c.body, t0)
			var ve *webhooksig.VerifyError
			if !errors.As(err, &ve) {
				t.Fatalf("error %v, want a *VerifyError", err)
			}
			if ve.Reason != c.reason || ve.Status() != wantStatus[c.reason] {
				t.Fatalf("reason %q status %d (%v), want %q %d", ve.Reason, ve.Status(), err, c.reason, wantStatus[c.reason])
			}
			if !strings.Contains(err.Error(), string(c.reason)) {
				t.Fatalf("message %q does not name the reason", err)
			}
		})
	}
}

func TestFreshnessOptions(t *testing.T) {
	old := envelope(testID, "2026-11-23T11:00:00Z")
	h := sign(t, old)
	if _, err := testVerifier(t, webhooksig.VerifierConfig{FreshnessWindow: -1}).VerifyBytes(h, old, t0); err != nil {
		t.Fatalf("check switched off: %v", err)
	}
	if _, err := testVerifier(t, webhooksig.VerifierConfig{FreshnessWindow: time.Hour}).VerifyBytes(h, old, t0); err != nil {
		t.Fatalf("one-hour window: %v", err)
	}
	if _, err := testVerifier(t, webhooksig.VerifierConfig{FreshnessWindow: time.Hour - time.Second}).VerifyBytes(h, old, t0); err == nil {
		t.Fatal("59m59s window accepted a one-hour-old event")
	}
	// Verify uses the injected clock.
	v := testVerifier(t, webhooksig.VerifierConfig{Clock: func() time.Time { return t0.Add(webhooksig.DefaultFreshnessWindow + time.Second) }})
	req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(testBody))
	req.Header.Set(webhooksig.SignatureHeader, sign(t, testBody))
	var ve *webhooksig.VerifyError
	if _, err := v.Verify(req); !errors.As(err, &ve) || ve.Reason != webhooksig.ReasonStale {
		t.Fatalf("error %v, want stale", err)
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("connection reset") }

func TestVerifyRequestRejects(t *testing.T) {
	v := testVerifier(t, webhooksig.VerifierConfig{MaxBodyBytes: 300})
	header := sign(t, testBody)
	big := bytes.Repeat([]byte("x"), 301)
	cases := []struct {
		name   string
		req    func() *http.Request
		reason webhooksig.Reason
		status int
	}{
		{"no signature header", func() *http.Request {
			return httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(testBody))
		}, webhooksig.ReasonSignatureMissing, 401},
		{"two signature headers", func() *http.Request {
			r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(testBody))
			r.Header.Add(webhooksig.SignatureHeader, header)
			r.Header.Add(webhooksig.SignatureHeader, header)
			return r
		}, webhooksig.ReasonHeaderRepeated, 400},
		{"two id headers", func() *http.Request {
			r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(testBody))
			r.Header.Set(webhooksig.SignatureHeader, header)
			r.Header.Add(webhooksig.IDHeader, testID)
			r.Header.Add(webhooksig.IDHeader, testID)
			return r
		}, webhooksig.ReasonHeaderRepeated, 400},
		{"id header differs", func() *http.Request {
			r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(testBody))
			r.Header.Set(webhooksig.SignatureHeader, header)
			r.Header.Set(webhooksig.IDHeader, "Webhook:00000000-0000-4000-8000-000000000000")
			return r
		}, webhooksig.ReasonIDMismatch, 400},
		{"Content-Length over the limit", func() *http.Request {
			r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(big))
			r.Header.Set(webhooksig.SignatureHeader, sign(t, big))
			return r
		}, webhooksig.ReasonBodyTooLarge, 413},
		{"chunked body over the limit", func() *http.Request {
			r := httptest.NewRequest(http.MethodPost, "/", io.MultiReader(bytes.NewReader(big)))
			r.ContentLength = -1
			r.Header.Set(webhooksig.SignatureHeader, sign(t, big))
			return r
		}, webhooksig.ReasonBodyTooLarge, 413},
		{"server's MaxBytesReader", func() *http.Request {
			r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(testBody))
			r.Body = http.MaxBytesReader(httptest.NewRecorder(), r.Body, 10)
			r.ContentLength = -1
			r.Header.Set(webhooksig.SignatureHeader, header)
			return r
		}, webhooksig.ReasonBodyTooLarge, 413},
		{"body read fails", func() *http.Request {
			r := httptest.NewRequest(http.MethodPost, "/", failingReader{})
			r.ContentLength = -1
			r.Header.Set(webhooksig.SignatureHeader, header)
			return r
		}, webhooksig.ReasonBodyUnreadable, 400},
		{"no body", func() *http.Request {
			r := httptest.NewRequest(http.MethodPost, "/", nil)
			r.Header.Set(webhooksig.SignatureHeader, header)
			return r
		}, webhooksig.ReasonSignatureInvalid, 401},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := v.Verify(c.req())
			var ve *webhooksig.VerifyError
			if !errors.As(err, &ve) || ve.Reason != c.reason || ve.Status() != c.status {
				t.Fatalf("error %v, want %q (%d)", err, c.reason, c.status)
			}
		})
	}
	// Exactly at the limit is accepted.
	prefix := `{"id":"` + testID + `","type":"T","timestamp":"2026-11-23T12:00:00Z","data":{"pad":"`
	body := []byte(prefix + strings.Repeat("p", 300-len(prefix)-3) + `"}}`)
	if len(body) != 300 {
		t.Fatalf("test body is %d bytes", len(body))
	}
	r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
	r.Header.Set(webhooksig.SignatureHeader, sign(t, body))
	if _, err := v.Verify(r); err != nil {
		t.Fatalf("body of exactly MaxBodyBytes: %v", err)
	}
}

func TestKeysRefused(t *testing.T) {
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if _, err := webhooksig.NewSigner(p384); err == nil || !strings.Contains(err.Error(), "P-256") {
		t.Fatalf("P-384 signer: %v", err)
	}
	if _, err := webhooksig.NewSigner(nil); err == nil {
		t.Fatal("nil signer key accepted")
	}
	if _, err := webhooksig.NewVerifier(&p384.PublicKey, webhooksig.VerifierConfig{}); err == nil || !strings.Contains(err.Error(), "P-256") {
		t.Fatalf("P-384 verifier: %v", err)
	}
	if _, err := webhooksig.NewVerifier(nil, webhooksig.VerifierConfig{}); err == nil {
		t.Fatal("nil verifier key accepted")
	}
	offCurve := &ecdsa.PublicKey{Curve: elliptic.P256(), X: big.NewInt(1), Y: big.NewInt(1)}
	if _, err := webhooksig.NewVerifier(offCurve, webhooksig.VerifierConfig{}); err == nil {
		t.Fatal("point off the curve accepted")
	}
	if _, err := webhooksig.NewVerifier(&testKey(t).PublicKey, webhooksig.VerifierConfig{MaxBodyBytes: -1}); err == nil {
		t.Fatal("negative MaxBodyBytes accepted")
	}

	good := testSigner(t).PublicKeyPEM()
	p384DER, _ := x509.MarshalPKIXPublicKey(&p384.PublicKey)
	p384PEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: p384DER})
	edPub, _, _ := ed25519.GenerateKey(rand.Reader)
	edDER, _ := x509.MarshalPKIXPublicKey(edPub)
	edPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: edDER})
	for name, pemBytes := range map[string][]byte{
		"empty":            nil,
		"not PEM":          []byte("MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE"),
		"private key type": bytes.Replace(good, []byte("PUBLIC KEY"), []byte("EC PRIVATE KEY"), 2),
		"two blocks":       append(bytes.Clone(good), good...),
		"garbage after":    append(bytes.Clone(good), "x"...),
		"truncated SPKI":   []byte("-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----\n"),
		"P-384 key":        p384PEM,
		"Ed25519 key":      edPEM,
	} {
		if _, err := webhooksig.ParsePublicKeyPEM(pemBytes); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := webhooksig.ParsePublicKeyPEM(append([]byte("\n\n"), append(bytes.Clone(good), "\n\n"...)...)); err != nil {
		t.Errorf("PEM with surrounding whitespace: %v", err)
	}
	pub, err := webhooksig.ParsePublicKeyPEM(good)
	if err != nil || !pub.Equal(&testKey(t).PublicKey) {
		t.Fatalf("PEM round trip: %v", err)
	}
}

func TestSignatureIsOverSHA256OfBody(t *testing.T) {
	header := sign(t, testBody)
	r, s := sigOf(t, header)
	digest := sha256.Sum256(testBody)
	if !ecdsa.Verify(&testKey(t).PublicKey, digest[:], r, s) {
		t.Fatal("the header's signature is not over SHA-256 of the body")
	}
}

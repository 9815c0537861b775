package signedretry_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/asn1"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"math/big"
	"os"
	"strings"
	"testing"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/signedretry/stamper"
)

// stampVector is one entry of testdata/stamp/vectors.json, made by
// @turnkey/api-key-stamper (see testdata/stamp/generate.js).
type stampVector struct {
	Name              string `json:"name"`
	Runtime           string `json:"runtime"`
	Payload           string `json:"payload"`
	PayloadHex        string `json:"payloadHex"`
	PrivateKey        string `json:"privateKey"`
	PublicKey         string `json:"publicKey"`
	Stamp             string `json:"stamp"`
	SignatureDERBytes int    `json:"signatureDerBytes"`
	HighS             bool   `json:"highS"`
}

type stampVectorFile struct {
	Library    string        `json:"library"`
	Scheme     string        `json:"scheme"`
	HighSCount int           `json:"highSCount"`
	Vectors    []stampVector `json:"vectors"`
}

func loadStampVectors(tb testing.TB) stampVectorFile {
	tb.Helper()
	raw, err := os.ReadFile("testdata/stamp/vectors.json")
	if err != nil {
		tb.Fatal(err)
	}
	var f stampVectorFile
	if err := json.Unmarshal(raw, &f); err != nil {
		tb.Fatal(err)
	}
	if len(f.Vectors) == 0 {
		tb.Fatal("no vectors in testdata/stamp/vectors.json")
	}
	return f
}

func (v stampVector) payloadBytes(tb testing.TB) []byte {
	tb.Helper()
	b, err := hex.DecodeString(v.PayloadHex)
	if err != nil {
		tb.Fatalf("%s: payloadHex: %v", v.Name, err)
	}
	return b
}

// stampJSON returns the JSON object inside a header value.
func stampJSON(tb testing.TB, header string) map[string]any {
	tb.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(header)
	if err != nil {
		tb.Fatalf("stamp base64: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		tb.Fatalf("stamp JSON: %v", err)
	}
	return m
}

// encodeStamp builds a header value from a JSON object.
func encodeStamp(tb testing.TB, m map[string]any) string {
	tb.Helper()
	raw, err := json.Marshal(m)
	if err != nil {
		tb.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(raw)
}

func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

func uncompressedHex(tb testing.TB, pub *ecdsa.PublicKey) string {
	tb.Helper()
	b, err := pub.Bytes()
	if err != nil {
		tb.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func isHighS(tb testing.TB, der []byte) bool {
	tb.Helper()
	var rs struct{ R, S *big.Int }
	if _, err := asn1.Unmarshal(der, &rs); err != nil {
		tb.Fatal(err)
	}
	half := new(big.Int).Rsh(elliptic.P256().Params().N, 1)
	return rs.S.Cmp(half) > 0
}

func TestStampVectorsVerify(t *testing.T) {
	f := loadStampVectors(t)
	if f.Scheme != stamper.SchemeP256 {
		t.Fatalf("vectors scheme %q", f.Scheme)
	}
	highS, shortDER := 0, 0
	runtimes := map[string]int{}
	for _, v := range f.Vectors {
		t.Run(v.Name, func(t *testing.T) {
			payload := v.payloadBytes(t)
			if string(payload) != v.Payload {
				t.Fatal("payloadHex is not the UTF-8 encoding of payload")
			}
			st, err := signedretry.ParseStamp(v.Stamp)
			if err != nil {
				t.Fatalf("ParseStamp: %v", err)
			}
			if err := st.Verify(payload); err != nil {
				t.Fatalf("Verify: %v", err)
			}
			// The vector's private key yields the stamp's public key.
			d, err := hex.DecodeString(v.PrivateKey)
			if err != nil {
				t.Fatal(err)
			}
			priv, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), d)
			if err != nil {
				t.Fatalf("private key: %v", err)
			}
			compressed, err := stamper.CompressedHex(&priv.PublicKey)
			if err != nil {
				t.Fatal(err)
			}
			if compressed != v.PublicKey {
				t.Fatalf("CompressedHex = %s, vector has %s", compressed, v.PublicKey)
			}
			if !st.SignedBy(&priv.PublicKey) {
				t.Fatal("SignedBy(vector key) = false")
			}
			// The stamp JSON is laid out as NewStamp lays it out.
			raw, _ := base64.RawURLEncoding.DecodeString(v.Stamp)
			prefix := `{"publicKey":"` + v.PublicKey + `","scheme":"SIGNATURE_SCHEME_TK_API_P256","signature":"`
			if !strings.HasPrefix(string(raw), prefix) {
				t.Fatalf("stamp JSON %s does not start with %s", raw, prefix)
			}
			goStamp, err := stamper.NewStamp(priv, payload)
			if err != nil {
				t.Fatal(err)
			}
			goRaw, _ := base64.RawURLEncoding.DecodeString(goStamp)
			if !strings.HasPrefix(string(goRaw), prefix) {
				t.Fatalf("NewStamp JSON %s does not start with %s", goRaw, prefix)
			}
			sig := st.Signature()
			if len(sig) != v.SignatureDERBytes {
				t.Fatalf("signature is %d bytes, vector says %d", len(sig), v.SignatureDERBytes)
			}
			if got := isHighS(t, sig); got != v.HighS {
				t.Fatalf("high-S = %v, vector says %v", got, v.HighS)
			}
		})
		runtimes[v.Runtime]++
		if v.HighS {
			highS++
		}
		if v.SignatureDERBytes < 70 {
			shortDER++
		}
	}
	t.Logf("%d vectors from %s: %d high-S, %d with DER under 70 bytes, per runtime %v",
		len(f.Vectors), f.Library, highS, shortDER, runtimes)
	if highS == 0 || highS == len(f.Vectors) {
		t.Fatalf("%d of %d vectors are high-S; both kinds must be covered", highS, len(f.Vectors))
	}
	if highS != f.HighSCount {
		t.Fatalf("counted %d high-S vectors, file says %d", highS, f.HighSCount)
	}
	for _, rt := range []string{"node", "browser", "purejs"} {
		if runtimes[rt] == 0 {
			t.Fatalf("no vector from the %s signer", rt)
		}
	}
	if shortDER == 0 {
		t.Fatal("no vector with a short DER signature")
	}
}

func TestStampVectorsTampered(t *testing.T) {
	f := loadStampVectors(t)
	for i, v := range f.Vectors {
		other := f.Vectors[(i+1)%len(f.Vectors)]
		t.Run(v.Name, func(t *testing.T) {
			payload := v.payloadBytes(t)
			st, err := signedretry.ParseStamp(v.Stamp)
			if err != nil {
				t.Fatal(err)
			}

			t.Run("tampered payload", func(t *testing.T) {
				apierrortest.Want(t, st.Verify(append(payload, ' ')), apierror.WalletSignatureInvalid, "")
				if len(payload) > 0 {
					flipped := append([]byte(nil), payload...)
					flipped[len(flipped)/2] ^= 0x01
					e := apierrortest.Want(t, st.Verify(flipped), apierror.WalletSignatureInvalid, "")
					if e.Reason() != "signature does not verify" {
						t.Fatalf("reason %q", e.Reason())
					}
				}
				if len(payload) > 1 {
					apierrortest.Want(t, st.Verify(payload[:len(payload)-1]), apierror.WalletSignatureInvalid, "")
				}
			})

			t.Run("swapped key", func(t *testing.T) {
				m := stampJSON(t, v.Stamp)
				m["publicKey"] = other.PublicKey
				swapped, err := signedretry.ParseStamp(encodeStamp(t, m))
				if err != nil {
					t.Fatalf("a well-formed stamp with another key must parse: %v", err)
				}
				apierrortest.Want(t, swapped.Verify(payload), apierror.WalletSignatureInvalid, "")
				if swapped.SignedBy(st.PublicKey()) {
					t.Fatal("SignedBy(original key) = true after the swap")
				}
			})

			t.Run("uncompressed key", func(t *testing.T) {
				m := stampJSON(t, v.Stamp)
				m["publicKey"] = strings.ToUpper(uncompressedHex(t, st.PublicKey()))
				u, err := signedretry.ParseStamp(encodeStamp(t, m))
				if err != nil {
					t.Fatal(err)
				}
				if err := u.Verify(payload); err != nil {
					t.Fatal(err)
				}
				if !u.SignedBy(st.PublicKey()) || !st.SignedBy(u.PublicKey()) {
					t.Fatal("compressed and uncompressed encodings of one key are different signers")
				}
			})

			t.Run("truncated signature", func(t *testing.T) {
				m := stampJSON(t, v.Stamp)
				sig := m["signature"].(string)
				for _, cut := range []int{1, 2, 4, len(sig) - 16} {
					m["signature"] = sig[:len(sig)-cut]
					_, err := signedretry.ParseStamp(encodeStamp(t, m))
					apierrortest.Want(t, err, apierror.WalletSignatureMalformed, "")
				}
			})

			t.Run("padded base64", func(t *testing.T) {
				padding := strings.Repeat("=", (4-len(v.Stamp)%4)%4)
				if padding == "" {
					// Already a multiple of four: padding is never valid.
					_, err := signedretry.ParseStamp(v.Stamp + "====")
					apierrortest.Want(t, err, apierror.WalletSignatureMalformed, "")
					return
				}
				p, err := signedretry.ParseStamp(v.Stamp + padding)
				if err != nil {
					t.Fatalf("padded stamp: %v", err)
				}
				if err := p.Verify(payload); err != nil {
					t.Fatal(err)
				}
				_, err = signedretry.ParseStamp(v.Stamp + padding + "=")
				apierrortest.Want(t, err, apierror.WalletSignatureMalformed, "")
				if len(padding) == 2 {
					_, err = signedretry.ParseStamp(v.Stamp + "=")
					apierrortest.Want(t, err, apierror.WalletSignatureMalformed, "")
				}
			})
		})
	}
}

func TestNewStamp(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	payload := []byte(`{"type":"REVOKE_SESSION","memo":"naïve ☕"}`)
	header, err := stamper.NewStamp(key, payload)
	if err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(header, "=+/") {
		t.Fatalf("header %q is not unpadded base64url", header)
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(header)
	if err != nil {
		t.Fatal(err)
	}
	var w struct{ PublicKey, Scheme, Signature string }
	if err := json.Unmarshal(raw, &w); err != nil {
		t.Fatal(err)
	}
	wantJSON := `{"publicKey":"` + w.PublicKey + `","scheme":"SIGNATURE_SCHEME_TK_API_P256","signature":"` + w.Signature + `"}`
	if string(raw) != wantJSON {
		t.Fatalf("stamp JSON %s, want %s", raw, wantJSON)
	}
	if len(w.PublicKey) != 66 || (w.PublicKey[:2] != "02" && w.PublicKey[:2] != "03") {
		t.Fatalf("publicKey %q is not compressed", w.PublicKey)
	}
	if w.Signature != strings.ToLower(w.Signature) {
		t.Fatal("signature hex is not lowercase")
	}
	der, _ := hex.DecodeString(w.Signature)
	digest := sha256.Sum256(payload)
	if !ecdsa.VerifyASN1(&key.PublicKey, digest[:], der) {
		t.Fatal("signature does not verify with the raw primitive")
	}
	st, err := signedretry.ParseStamp(header)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Verify(payload); err != nil {
		t.Fatal(err)
	}
	if !st.SignedBy(&key.PublicKey) {
		t.Fatal("SignedBy(signing key) = false")
	}
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if st.SignedBy(&other.PublicKey) || st.SignedBy(nil) {
		t.Fatal("SignedBy accepted another key or nil")
	}
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if st.SignedBy(&p384.PublicKey) {
		t.Fatal("SignedBy accepted a P-384 key")
	}

	t.Run("rejects keys that are not P-256", func(t *testing.T) {
		_, err := stamper.NewStamp(nil, payload)
		apierrortest.Want(t, err, apierror.InvalidInput, "")
		_, err = stamper.NewStamp(p384, payload)
		apierrortest.Want(t, err, apierror.InvalidInput, "")
	})
}

// notOnCurveX returns an x coordinate below p for which x³-3x+b has no square
// root mod p, so no P-256 point has it.
func notOnCurveX(tb testing.TB) string {
	tb.Helper()
	for x := int64(1); x < 1000; x++ {
		c := make([]byte, 33)
		c[0] = 0x02
		big.NewInt(x).FillBytes(c[1:])
		if px, _ := elliptic.UnmarshalCompressed(elliptic.P256(), c); px == nil {
			return hex.EncodeToString(c[1:])
		}
	}
	tb.Fatal("no x off the curve found")
	return ""
}

func TestParseStampMalformed(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pubC, _ := stamper.CompressedHex(&key.PublicKey)
	pubU := uncompressedHex(t, &key.PublicKey)
	digest := sha256.Sum256([]byte("payload"))
	derSig, _ := ecdsa.SignASN1(rand.Reader, key, digest[:])
	sig := hex.EncodeToString(derSig)
	offX := notOnCurveX(t)
	n := elliptic.P256().Params().N
	// The key with the lowest bit of y flipped: (x, y^1) is not on the curve.
	offCurve, _ := key.PublicKey.Bytes()
	offCurve[64] ^= 1
	offCurveU := hex.EncodeToString(offCurve)

	obj := func(members string) string { return b64("{" + members + "}") }
	valid := func(pk, scheme, s string) string {
		return obj(`"publicKey":"` + pk + `","scheme":"` + scheme + `","signature":"` + s + `"`)
	}
	derHex := func(r, s *big.Int) string {
		b, err := asn1.Marshal(struct{ R, S *big.Int }{r, s})
		if err != nil {
			t.Fatal(err)
		}
		return hex.EncodeToString(b)
	}
	one := big.NewInt(1)

	cases := []struct {
		name, header, reason string
	}{
		{"empty", "", "header value is empty"},
		{"too long", strings.Repeat("A", signedretry.MaxStampBytes+1), "header value is longer than 4096 bytes"},
		{"sandbox literal", "sandbox-valid-signature", "header value is not valid base64url"},
		{"standard alphabet", "eyJ+", "header value has a character outside the base64url alphabet"},
		{"standard alphabet slash", base64.StdEncoding.EncodeToString([]byte(`{"x":"???"}`)), "header value has a character outside the base64url alphabet"},
		{"space", valid(pubC, stamper.SchemeP256, sig)[:20] + " " + valid(pubC, stamper.SchemeP256, sig)[20:], "header value has a character outside the base64url alphabet"},
		{"newline", valid(pubC, stamper.SchemeP256, sig)[:20] + "\n" + valid(pubC, stamper.SchemeP256, sig)[20:], "header value has a character outside the base64url alphabet"},
		{"impossible length", "e30Ae", "header value is not valid base64url"},
		{"non-zero trailing bits", "e31", "header value is not valid base64url"},
		{"wrong padding", "e30==", "header value is not valid base64url"},
		{"padding only", "====", "header value is not valid base64url"},
		{"padding inside", "e3=0", "header value is not valid base64url"},
		{"JSON array", b64(`[]`), "decoded header is not a JSON object"},
		{"JSON string", b64(`"x"`), "decoded header is not a JSON object"},
		{"JSON null", b64(`null`), "decoded header is not a JSON object"},
		{"not JSON", b64(`publicKey=02`), "decoded header is not a JSON object"},
		{"blank payload", b64(` `), "decoded header is not a JSON object"},
		{"truncated JSON", b64(`{"publicKey":"` + pubC), "decoded header is not valid JSON"},
		{"unclosed object", b64(`{"publicKey":"` + pubC + `"`), "decoded header is not valid JSON"},
		{"bad unknown member", b64(`{"x":[1,}`), "decoded header is not valid JSON"},
		{"repeated unknown member", obj(`"publicKey":"` + pubC + `","scheme":"` + stamper.SchemeP256 + `","signature":"` + sig + `","x":"y","x":"z"`), "decoded header is not valid JSON"},
		{"unknown members alike but for case", obj(`"publicKey":"` + pubC + `","scheme":"` + stamper.SchemeP256 + `","signature":"` + sig + `","x":"y","X":"z"`), "decoded header is not valid JSON"},
		{"invalid UTF-8 in an unknown member", obj(`"publicKey":"` + pubC + `","scheme":"` + stamper.SchemeP256 + `","signature":"` + sig + "\",\"x\":\"\xff\""), "decoded header is not valid JSON"},
		{"unpaired surrogate in an unknown member", obj(`"publicKey":"` + pubC + `","scheme":"` + stamper.SchemeP256 + `","signature":"` + sig + `","x":"\ud800"`), "decoded header is not valid JSON"},
		{"form feed before the object", b64("\f" + `{"publicKey":"` + pubC + `","scheme":"` + stamper.SchemeP256 + `","signature":"` + sig + `"}`), "decoded header is not a JSON object"},
		{"data after object", b64(`{"publicKey":"` + pubC + `","scheme":"` + stamper.SchemeP256 + `","signature":"` + sig + `"}{}`), "decoded header has data after the JSON object"},
		{"missing publicKey", obj(`"scheme":"` + stamper.SchemeP256 + `","signature":"` + sig + `"`), "member publicKey is missing"},
		{"missing scheme", obj(`"publicKey":"` + pubC + `","signature":"` + sig + `"`), "member scheme is missing"},
		{"missing signature", obj(`"publicKey":"` + pubC + `","scheme":"` + stamper.SchemeP256 + `"`), "member signature is missing"},
		{"member name case", obj(`"PublicKey":"` + pubC + `","scheme":"` + stamper.SchemeP256 + `","signature":"` + sig + `"`), "member publicKey is missing"},
		{"duplicate publicKey", obj(`"publicKey":"` + pubC + `","publicKey":"` + pubC + `","scheme":"` + stamper.SchemeP256 + `","signature":"` + sig + `"`), "member publicKey appears more than once"},
		{"duplicate scheme", obj(`"scheme":"` + stamper.SchemeP256 + `","publicKey":"` + pubC + `","scheme":"` + stamper.SchemeP256 + `","signature":"` + sig + `"`), "member scheme appears more than once"},
		{"duplicate signature", obj(`"signature":"` + sig + `","publicKey":"` + pubC + `","scheme":"` + stamper.SchemeP256 + `","signature":"` + sig + `"`), "member signature appears more than once"},
		{"publicKey number", obj(`"publicKey":2,"scheme":"` + stamper.SchemeP256 + `","signature":"` + sig + `"`), "member publicKey is not a string"},
		{"publicKey null", obj(`"publicKey":null,"scheme":"` + stamper.SchemeP256 + `","signature":"` + sig + `"`), "member publicKey is not a string"},
		{"scheme boolean", obj(`"publicKey":"` + pubC + `","scheme":true,"signature":"` + sig + `"`), "member scheme is not a string"},
		{"signature object", obj(`"publicKey":"` + pubC + `","scheme":"` + stamper.SchemeP256 + `","signature":{}`), "member signature is not a string"},
		{"signature array", obj(`"publicKey":"` + pubC + `","scheme":"` + stamper.SchemeP256 + `","signature":["` + sig + `"]`), "member signature is not a string"},
		{"scheme secp256k1", valid(pubC, "SIGNATURE_SCHEME_TK_API_SECP256K1", sig), "scheme is not SIGNATURE_SCHEME_TK_API_P256"},
		{"scheme lowercase", valid(pubC, strings.ToLower(stamper.SchemeP256), sig), "scheme is not SIGNATURE_SCHEME_TK_API_P256"},
		{"scheme empty", valid(pubC, "", sig), "scheme is not SIGNATURE_SCHEME_TK_API_P256"},
		{"publicKey empty", valid("", stamper.SchemeP256, sig), "publicKey is empty"},
		{"publicKey 0x prefix", valid("0x"+pubC, stamper.SchemeP256, sig), "publicKey must be 66 (compressed) or 130 (uncompressed) hex characters"},
		{"publicKey raw x", valid(pubC[2:], stamper.SchemeP256, sig), "publicKey must be 66 (compressed) or 130 (uncompressed) hex characters"},
		{"publicKey huge", valid(strings.Repeat("ab", 1000), stamper.SchemeP256, sig), "publicKey must be 66 (compressed) or 130 (uncompressed) hex characters"},
		{"publicKey bad hex", valid("zz"+pubC[2:], stamper.SchemeP256, sig), "publicKey is not valid hex"},
		{"publicKey prefix 04 compressed", valid("04"+pubC[2:], stamper.SchemeP256, sig), "publicKey in compressed form must start with 02 or 03"},
		{"publicKey prefix 00", valid("00"+pubC[2:], stamper.SchemeP256, sig), "publicKey in compressed form must start with 02 or 03"},
		{"publicKey hybrid 06", valid("06"+pubU[2:], stamper.SchemeP256, sig), "publicKey in uncompressed form must start with 04"},
		{"publicKey prefix 02 uncompressed", valid("02"+pubU[2:], stamper.SchemeP256, sig), "publicKey in uncompressed form must start with 04"},
		{"publicKey x off curve", valid("02"+offX, stamper.SchemeP256, sig), "publicKey is not a point on P-256"},
		{"publicKey x not below p", valid("02"+strings.Repeat("ff", 32), stamper.SchemeP256, sig), "publicKey is not a point on P-256"},
		{"publicKey y off curve", valid(offCurveU, stamper.SchemeP256, sig), "publicKey is not a point on P-256"},
		{"publicKey infinity", valid("04"+strings.Repeat("00", 64), stamper.SchemeP256, sig), "publicKey is not a point on P-256"},
		{"signature empty", valid(pubC, stamper.SchemeP256, ""), "signature must be 16 to 144 hex characters"},
		{"signature too long", valid(pubC, stamper.SchemeP256, sig+strings.Repeat("00", 73)), "signature must be 16 to 144 hex characters"},
		{"signature bad hex", valid(pubC, stamper.SchemeP256, "zz"+sig[2:]), "signature is not valid hex"},
		{"signature odd length", valid(pubC, stamper.SchemeP256, sig[:len(sig)-1]), "signature is not valid hex"},
		{"signature raw r||s", valid(pubC, stamper.SchemeP256, strings.Repeat("7f", 64)), "signature is not a DER ECDSA signature"},
		{"signature trailing byte", valid(pubC, stamper.SchemeP256, "3006020101020101"+"00"), "signature is not a DER ECDSA signature"},
		{"signature truncated", valid(pubC, stamper.SchemeP256, sig[:len(sig)-2]), "signature is not a DER ECDSA signature"},
		{"signature non-minimal integer", valid(pubC, stamper.SchemeP256, "3008020200010202"+"0001"), "signature is not a DER ECDSA signature"},
		{"signature long-form length", valid(pubC, stamper.SchemeP256, "308106020101020101"), "signature is not a DER ECDSA signature"},
		{"signature third integer", valid(pubC, stamper.SchemeP256, "3009020101020101020101"), "signature is not a DER ECDSA signature"},
		{"signature not a sequence", valid(pubC, stamper.SchemeP256, "3106020101020101"), "signature is not a DER ECDSA signature"},
		{"signature r zero", valid(pubC, stamper.SchemeP256, derHex(big.NewInt(0), one)), "signature r is outside [1, n-1]"},
		{"signature r negative", valid(pubC, stamper.SchemeP256, derHex(big.NewInt(-5), one)), "signature r is outside [1, n-1]"},
		{"signature r = n", valid(pubC, stamper.SchemeP256, derHex(n, one)), "signature r is outside [1, n-1]"},
		{"signature s zero", valid(pubC, stamper.SchemeP256, derHex(one, big.NewInt(0))), "signature s is outside [1, n-1]"},
		{"signature s = n", valid(pubC, stamper.SchemeP256, derHex(one, n)), "signature s is outside [1, n-1]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st, err := signedretry.ParseStamp(tc.header)
			if st != nil {
				t.Fatal("a stamp was returned with an error")
			}
			e := apierrortest.Want(t, err, apierror.WalletSignatureMalformed, "")
			if e.Status() != 401 {
				t.Fatalf("status %d", e.Status())
			}
			if e.Reason() != tc.reason {
				t.Fatalf("reason %q, want %q", e.Reason(), tc.reason)
			}
			if !strings.Contains(e.Message, tc.reason) {
				t.Fatalf("message %q does not name %q", e.Message, tc.reason)
			}
		})
	}
}

func TestParseStampAccepts(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	payload := []byte("payload")
	digest := sha256.Sum256(payload)
	der, _ := ecdsa.SignASN1(rand.Reader, key, digest[:])
	sig := hex.EncodeToString(der)
	pubC, _ := stamper.CompressedHex(&key.PublicKey)
	pubU := uncompressedHex(t, &key.PublicKey)
	scheme := stamper.SchemeP256
	cases := map[string]string{
		"go-sdk member order": `{"publicKey":"` + pubC + `","signature":"` + sig + `","scheme":"` + scheme + `"}`,
		"reversed order":      `{"signature":"` + sig + `","scheme":"` + scheme + `","publicKey":"` + pubC + `"}`,
		"whitespace":          " {\n\t\"publicKey\" : \"" + pubC + "\",\r\n \"scheme\":\"" + scheme + "\", \"signature\":\"" + sig + "\" } ",
		"unknown members":     `{"v":2,"publicKey":"` + pubC + `","extra":{"nested":[1,{"a":null}]},"scheme":"` + scheme + `","signature":"` + sig + `","x":"y"}`,
		"uncompressed key":    `{"publicKey":"` + pubU + `","scheme":"` + scheme + `","signature":"` + sig + `"}`,
		"uppercase hex":       `{"publicKey":"` + strings.ToUpper(pubC) + `","scheme":"` + scheme + `","signature":"` + strings.ToUpper(sig) + `"}`,
		"escaped member name": `{"publicKe\u0079":"` + pubC + `","scheme":"` + scheme + `","signature":"` + sig + `"}`,
	}
	for name, js := range cases {
		for _, enc := range []*base64.Encoding{base64.RawURLEncoding, base64.URLEncoding} {
			st, err := signedretry.ParseStamp(enc.EncodeToString([]byte(js)))
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if err := st.Verify(payload); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if !st.SignedBy(&key.PublicKey) {
				t.Fatalf("%s: SignedBy = false", name)
			}
		}
	}
}

func TestParsePublicKey(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pubC, err := stamper.CompressedHex(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	pubU := uncompressedHex(t, &key.PublicKey)
	for _, in := range []string{pubC, pubU, strings.ToUpper(pubC), strings.ToUpper(pubU)} {
		pub, err := signedretry.ParsePublicKey(in)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if !pub.Equal(&key.PublicKey) {
			t.Fatalf("%s: parsed another point", in)
		}
		if c, _ := stamper.CompressedHex(pub); c != pubC {
			t.Fatalf("CompressedHex round trip %s != %s", c, pubC)
		}
	}

	// The fixture key of @turnkey/api-key-stamper (src/__fixtures__).
	fixture, err := hex.DecodeString("487f361ddfd73440e707f4daa6775b376859e8a3c9f29b3bb694a12927c0213c")
	if err != nil {
		t.Fatal(err)
	}
	priv, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), fixture)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := stamper.CompressedHex(&priv.PublicKey)
	if !strings.HasPrefix(c, "02f739f8") || !strings.HasSuffix(c, "0316") {
		t.Fatalf("fixture key compresses to %s", c)
	}

	offX := notOnCurveX(t)
	cases := []struct{ in, reason string }{
		{"", "public key is empty"},
		{pubC[:64], "public key must be 66 (compressed) or 130 (uncompressed) hex characters"},
		{"0x" + pubC, "public key must be 66 (compressed) or 130 (uncompressed) hex characters"},
		{pubU + "00", "public key must be 66 (compressed) or 130 (uncompressed) hex characters"},
		{"g" + pubC[1:], "public key is not valid hex"},
		{"05" + pubC[2:], "public key in compressed form must start with 02 or 03"},
		{"02" + pubU[2:], "public key in uncompressed form must start with 04"},
		{"03" + offX, "public key is not a point on P-256"},
		{"04" + strings.Repeat("00", 64), "public key is not a point on P-256"},
		{"04" + pubU[2:66] + pubU[2:66], "public key is not a point on P-256"},
	}
	for _, tc := range cases {
		_, err := signedretry.ParsePublicKey(tc.in)
		e := apierrortest.Want(t, err, apierror.InvalidInput, "")
		if e.Reason() != tc.reason || !strings.Contains(e.Message, tc.reason) {
			t.Fatalf("%q: reason %q message %q, want %q", tc.in, e.Reason(), e.Message, tc.reason)
		}
	}
}

func TestZeroStamp(t *testing.T) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	for _, st := range []*signedretry.Stamp{nil, {}} {
		apierrortest.Want(t, st.Verify([]byte("x")), apierror.WalletSignatureInvalid, "")
		if st.SignedBy(&key.PublicKey) || st.PublicKey() != nil || st.Signature() != nil {
			t.Fatal("a zero stamp claims a signer")
		}
	}
}

// BenchmarkVerifyStamp measures ParseStamp and Verify of one header, the
// whole verification path; compare with BenchmarkRawVerify.
func BenchmarkVerifyStamp(b *testing.B) {
	v := loadStampVectors(b).Vectors[0]
	payload := v.payloadBytes(b)
	b.ReportAllocs()
	for b.Loop() {
		st, err := signedretry.ParseStamp(v.Stamp)
		if err != nil {
			b.Fatal(err)
		}
		if err := st.Verify(payload); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRawVerify measures the primitive under BenchmarkVerifyStamp:
// SHA-256 and ecdsa.VerifyASN1 of the same payload, key and signature.
func BenchmarkRawVerify(b *testing.B) {
	v := loadStampVectors(b).Vectors[0]
	payload := v.payloadBytes(b)
	st, err := signedretry.ParseStamp(v.Stamp)
	if err != nil {
		b.Fatal(err)
	}
	pub, der := st.PublicKey(), st.Signature()
	b.ReportAllocs()
	for b.Loop() {
		digest := sha256.Sum256(payload)
		if !ecdsa.VerifyASN1(pub, digest[:], der) {
			b.Fatal("signature does not verify")
		}
	}
}

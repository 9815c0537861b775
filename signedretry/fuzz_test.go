package signedretry_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/signedretry/stamper"
)

// FuzzParseStamp feeds each input to ParseStamp twice: as the header value and
// base64url-encoded (so the fuzzer mutates the stamp JSON directly). Every
// rejection must be a typed 401 WALLET_SIGNATURE_MALFORMED naming its check;
// every accepted stamp must hold a P-256 point and a signature that Verify
// judges without failing in any other way, and must survive re-encoding.
func FuzzParseStamp(f *testing.F) {
	for _, v := range loadStampVectors(f).Vectors {
		f.Add([]byte(v.Stamp))
		raw, _ := base64.RawURLEncoding.DecodeString(v.Stamp)
		f.Add(raw)
		f.Add([]byte(base64.URLEncoding.EncodeToString(raw)))
	}
	for _, s := range []string{
		"", "sandbox-valid-signature", "e30", "e30=", "e30==", "====", "eyJ+",
		`{"publicKey":"02","scheme":"SIGNATURE_SCHEME_TK_API_P256","signature":"3006020101020101"}`,
		`{"publicKey":1,"publicKey":"x"}`, `{"signature":["a"]}`, `[]`, `{} {}`, `{"a":{"b":[`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkStamp(t, string(data))
		if len(data) <= signedretry.MaxStampBytes {
			checkStamp(t, base64.RawURLEncoding.EncodeToString(data))
		}
	})
}

func checkStamp(t *testing.T, header string) {
	t.Helper()
	st, err := signedretry.ParseStamp(header)
	if err != nil {
		e, ok := err.(*apierror.Error)
		if !ok || e.Code != apierror.WalletSignatureMalformed || e.Reason() == "" {
			t.Fatalf("ParseStamp(%q): untyped or wrong error %v", header, err)
		}
		if st != nil {
			t.Fatal("stamp returned with an error")
		}
		return
	}
	pub := st.PublicKey()
	if pub == nil || pub.Curve != elliptic.P256() {
		t.Fatal("accepted stamp without a P-256 key")
	}
	compressed, err := stamper.CompressedHex(pub)
	if err != nil {
		t.Fatalf("accepted key cannot be encoded: %v", err)
	}
	if !st.SignedBy(pub) {
		t.Fatal("SignedBy(own key) = false")
	}
	if err := st.Verify([]byte("fuzz")); err != nil && apierror.CodeOf(err) != apierror.WalletSignatureInvalid {
		t.Fatalf("Verify: %v", err)
	}
	// Re-encoded in the form NewStamp writes, the stamp parses to the same key
	// and signature.
	raw, _ := json.Marshal(map[string]string{
		"publicKey": compressed,
		"scheme":    stamper.SchemeP256,
		"signature": hex.EncodeToString(st.Signature()),
	})
	again, err := signedretry.ParseStamp(base64.RawURLEncoding.EncodeToString(raw))
	if err != nil {
		t.Fatalf("re-encoded stamp rejected: %v", err)
	}
	if !again.SignedBy(pub) || hex.EncodeToString(again.Signature()) != hex.EncodeToString(st.Signature()) {
		t.Fatal("re-encoded stamp differs")
	}
	if _, ok := any(pub).(*ecdsa.PublicKey); !ok {
		t.Fatal("unexpected key type")
	}
}

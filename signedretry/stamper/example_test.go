package stamper_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/signedretry/stamper"
)

// A client refreshes its session: before it stamps the payloadToSign that
// came back, it checks that the payload is the refresh it asked for (the
// operation of the route, its account, the digest of the body it sent and
// every parameter) and refuses anything else, such as a wallet export a
// relay slipped in for its own key.
func ExampleExpectation_Stamp() {
	sessionKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	const account, session = "InternalAccount:0b9f5a3c-1d2e-4f60-8a7b-9c0d1e2f3a4b", "Session:5e1f2a3b-4c5d-4e6f-8a9b-0c1d2e3f4a5b"
	const next = "02f9308a019258c31049344f85f89d5229b531c845836f99b08601f113bce036f9"
	body := []byte(`{"clientPublicKey":"` + next + `"}`)
	want := stamper.Expectation{Type: "REFRESH_SESSION", AccountID: account, Body: body,
		Parameters: map[string]string{"sessionId": session, "clientPublicKey": next},
		Now:        time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}

	// What the service answered the first call with.
	digest, _ := stamper.BodyDigest(body)
	refresh := `{"type":"REFRESH_SESSION","requestId":"Request:7c4a8d09-ca37-4e5b-9c1d-2f0b6a3e8f11","accountId":"` + account +
		`","parameters":{"sessionId":"` + session + `","clientPublicKey":"` + next + `"},"bodySha256":"` + hex.EncodeToString(digest[:]) +
		`","timestampMs":"1777636800000","expiresAt":"2026-05-01T12:05:00Z"}`
	stamp, p, err := want.Stamp(sessionKey, refresh)
	fmt.Println("refresh stamped:", err == nil && stamp != "", "retry with", p.RequestID)

	// What a relay answers instead: the export of the wallet to its key.
	export := strings.Replace(strings.Replace(refresh, "REFRESH_SESSION", "EXPORT_WALLET", 1),
		`{"sessionId":"`+session+`","clientPublicKey":"`+next+`"}`, `{"clientPublicKey":"03aa…"}`, 1)
	_, _, err = want.Stamp(sessionKey, export)
	fmt.Println(apierror.CodeOf(err), apierror.As(err).Details["check"])
	// Output:
	// refresh stamped: true retry with Request:7c4a8d09-ca37-4e5b-9c1d-2f0b6a3e8f11
	// UNAUTHORIZED type
}

// A stamp is the Service-Wallet-Signature value: base64url of the key, the
// scheme and a DER signature over SHA-256 of the payload, byte for byte.
func ExampleNewStamp() {
	// The fixture key of @turnkey/api-key-stamper.
	d, _ := hex.DecodeString("487f361ddfd73440e707f4daa6775b376859e8a3c9f29b3bb694a12927c0213c")
	key, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), d)
	if err != nil {
		panic(err)
	}
	payload := []byte(`{"type":"REVOKE_SESSION"}`)
	header, err := stamper.NewStamp(key, payload)
	if err != nil {
		panic(err)
	}

	raw, _ := base64.RawURLEncoding.DecodeString(header)
	var stamp struct{ PublicKey, Scheme, Signature string }
	_ = json.Unmarshal(raw, &stamp)
	sig, _ := hex.DecodeString(stamp.Signature)
	digest := sha256.Sum256(payload)
	fmt.Println("publicKey:", stamp.PublicKey)
	fmt.Println("scheme:", stamp.Scheme)
	fmt.Println("verifies:", ecdsa.VerifyASN1(&key.PublicKey, digest[:], sig))
	// Output:
	// publicKey: 02f739f8c77b32f4d5f13265861febd76e7a9c61a1140d296b8c16302508870316
	// scheme: SIGNATURE_SCHEME_TK_API_P256
	// verifies: true
}

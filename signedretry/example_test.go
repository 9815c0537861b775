package signedretry_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/signedretry"
)

// A client signs the payloadToSign of a 202 challenge with its session key;
// the server parses the header, verifies it over the stored payload and checks
// the signer is the key the request is bound to.
func ExampleNewStamp() {
	sessionKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	payload := []byte(`{"type":"REVOKE_SESSION","requestId":"Request:7c4a8d09-ca37-4e5b-9c1d-2f0b6a3e8f11"}`)

	header, err := signedretry.NewStamp(sessionKey, payload)
	if err != nil {
		panic(err)
	}

	stamp, err := signedretry.ParseStamp(header)
	if err != nil {
		panic(err)
	}
	fmt.Println("verifies:", stamp.Verify(payload) == nil)
	fmt.Println("signed by the session key:", stamp.SignedBy(&sessionKey.PublicKey))
	fmt.Println("other payload:", apierror.CodeOf(stamp.Verify([]byte("{}"))))
	// Output:
	// verifies: true
	// signed by the session key: true
	// other payload: WALLET_SIGNATURE_INVALID
}

// A stamp made by @turnkey/api-key-stamper (its pure-JS signer), as found in
// testdata/stamp/vectors.json.
func ExampleParseStamp() {
	const header = "eyJwdWJsaWNLZXkiOiIwMjk3OWQ0MTFjOGU1NjUwYWVmMWY3OTg2NmRkMTliOWYyMDliY2Q4MjVkMWEwMWJiMTg0ZmEyNDRjYjlkNTRjNTQiLCJzY2hlbWUiOiJTSUdOQVRVUkVfU0NIRU1FX1RLX0FQSV9QMjU2Iiwic2lnbmF0dXJlIjoiMzA0NTAyMjAwYjAxOWMwZmIyMTdlMDZmNDdmM2UwZTI3NDE2ZjRiZTFiYTAxODVkMzI0NmRmNWUyMjE1MmQ0YTUwZGVhYzdkMDIyMTAwYmI3N2Y0Yjg1NTkzNDBmMjc5YWY3OGYzMWQwNmQyZTNlMjg0NWE1MWMwYTYxN2RjNDU5ODFlMmFmYWQzMjEwOCJ9"
	stamp, err := signedretry.ParseStamp(header)
	if err != nil {
		fmt.Println(err)
		return
	}
	key, _ := signedretry.CompressedHex(stamp.PublicKey())
	fmt.Println("key:", key)
	fmt.Println("verifies:", stamp.Verify([]byte("hello from walletgate")) == nil)

	// The key bound to the request, as another part of the protocol stored it.
	bound, err := signedretry.ParsePublicKey("02979d411c8e5650aef1f79866dd19b9f209bcd825d1a01bb184fa244cb9d54c54")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("signed by the bound key:", stamp.SignedBy(bound))

	_, err = signedretry.ParseStamp("sandbox-valid-signature")
	fmt.Println(apierror.CodeOf(err))
	// Output:
	// key: 02979d411c8e5650aef1f79866dd19b9f209bcd825d1a01bb184fa244cb9d54c54
	// verifies: true
	// signed by the bound key: true
	// WALLET_SIGNATURE_MALFORMED
}

// A client refreshes its session: before it stamps the payloadToSign that
// came back, it checks that the payload is the refresh it asked for (the
// operation of the route, its account, the digest of the body it sent and
// every parameter) and refuses anything else, such as a wallet export a
// relay slipped in for its own key.
func ExampleExpectation() {
	sessionKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	const account, session = "InternalAccount:0b9f5a3c-1d2e-4f60-8a7b-9c0d1e2f3a4b", "Session:5e1f2a3b-4c5d-4e6f-8a9b-0c1d2e3f4a5b"
	const next = "02f9308a019258c31049344f85f89d5229b531c845836f99b08601f113bce036f9"
	body := []byte(`{"clientPublicKey":"` + next + `"}`)
	want := signedretry.Expectation{Type: "REFRESH_SESSION", AccountID: account, Body: body,
		Parameters: map[string]string{"sessionId": session, "clientPublicKey": next},
		Now:        time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}

	// What the service answered the first call with.
	digest, _ := signedretry.BodyDigest(body)
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

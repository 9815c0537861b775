package signedretry_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"fmt"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/signedretry/stamper"
)

// A client signs the payloadToSign of a 202 challenge with its session key
// (stamper.NewStamp); the server parses the header, verifies it over the
// stored payload and checks the signer is the key the request is bound to.
func ExampleStamp_Verify() {
	sessionKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	payload := []byte(`{"type":"REVOKE_SESSION","requestId":"Request:7c4a8d09-ca37-4e5b-9c1d-2f0b6a3e8f11"}`)

	header, err := stamper.NewStamp(sessionKey, payload)
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
	key, _ := stamper.CompressedHex(stamp.PublicKey())
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

package envelope_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"fmt"

	"github.com/walletgate/walletgate/signedretry/stamper"
	"github.com/walletgate/walletgate/walletauth/envelope"
)

// The OTP round trip: the server issues a signed target bundle, the client
// checks it against the pinned signer key and seals the code together with
// its fresh session public key, and the server opens the attempt with the
// issuance's private target key.
func Example_otpRoundTrip() {
	// Server: a long-lived envelope signing key, whose public half clients pin.
	signer, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	bundle, target, err := envelope.NewTargetBundle(signer, "org-1", "AuthMethod:1", nil)
	if err != nil {
		panic(err)
	}

	// Client: a fresh session key, then the encryptedOtpBundle.
	session, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	sessionHex, _ := stamper.CompressedHex(&session.PublicKey)
	encrypted, err := envelope.SealOTPForBundle(bundle, &signer.PublicKey, "123456", sessionHex, nil)
	if err != nil {
		panic(err)
	}

	// Server: open the attempt with this issuance's target key.
	attempt, err := envelope.OpenOTP(target.Bytes(), encrypted)
	if err != nil {
		panic(err)
	}
	fmt.Println("code:", attempt.Code)
	fmt.Println("bound to the client's session key:", attempt.PublicKey.Equal(&session.PublicKey))

	// An attempt sealed to another issuance's target is an authentication failure.
	_, other, _ := envelope.NewTargetBundle(signer, "org-1", "AuthMethod:1", nil)
	_, err = envelope.OpenOTP(other.Bytes(), encrypted)
	fmt.Println(err)
	// Output:
	// code: 123456
	// bound to the client's session key: true
	// 401 UNAUTHORIZED: authentication failed: encryptedOtpBundle was not sealed to this challenge's target key
}

// A legacy-flow session key: the server seals a fresh session key to the
// client's key; the client opens it and holds the signing key.
func ExampleSealSessionKey() {
	client, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	clientHex, _ := stamper.CompressedHex(&client.PublicKey)

	essk, sessionPublic, err := envelope.SealSessionKey(clientHex, nil)
	if err != nil {
		panic(err)
	}

	clientECDH, _ := client.ECDH()
	session, err := envelope.OpenSessionKey(clientECDH, essk)
	if err != nil {
		panic(err)
	}
	fmt.Println("client holds the session key:", session.PublicKey.Equal(sessionPublic))
	// Output:
	// client holds the session key: true
}

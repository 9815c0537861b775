package authclient_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"fmt"

	"github.com/walletgate/walletgate/signedretry/stamper"
	"github.com/walletgate/walletgate/walletauth/authclient"
	"github.com/walletgate/walletgate/walletauth/envelope"
)

// A device logs in with a one-time code: it seals the code to the target
// bundle of the challenge answer, checking the bundle's signature against
// the service's pinned bundle signing key, and the key that sealed it signs
// the second leg. Later it asks for a session key sealed to it, opens it
// and stamps with it. The service's side is played here by package
// envelope.
func ExampleClientKey() {
	// The service's bundle signing key; the client pins its public half.
	service, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	// The otpEncryptionTargetBundle of a challenge answer.
	bundle, target, err := envelope.NewTargetBundle(service, "Organization:sandbox", "", nil)
	if err != nil {
		panic(err)
	}

	device, err := authclient.NewClientKey()
	if err != nil {
		panic(err)
	}
	sealed, err := device.SealOTP(bundle, &service.PublicKey, "000000", nil)
	if err != nil {
		panic(err)
	}
	// The encryptedOtpBundle of the verify request, as the service opens it.
	attempt, err := envelope.OpenOTP(target.Bytes(), sealed)
	if err != nil {
		panic(err)
	}
	fmt.Println("code:", attempt.Code)
	fmt.Println("bound to the device key:", attempt.PublicKeyCompressedHex == device.PublicKeyHex())

	// A bundle signed by any other key is refused before anything is sealed.
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	forged, _, _ := envelope.NewTargetBundle(other, "Organization:sandbox", "", nil)
	_, err = device.SealOTP(forged, &service.PublicKey, "000000", nil)
	fmt.Println("forged bundle refused:", err != nil)

	// An encryptedSessionSigningKey sealed to the device key.
	encrypted, sessionPublic, err := envelope.SealSessionKey(device.PublicKeyHex(), nil)
	if err != nil {
		panic(err)
	}
	session, err := device.OpenSessionKey(encrypted)
	if err != nil {
		panic(err)
	}
	want, _ := stamper.CompressedHex(sessionPublic)
	fmt.Println("opened the session key:", session.PublicKeyHex() == want)
	// Output:
	// code: 000000
	// bound to the device key: true
	// forged bundle refused: true
	// opened the session key: true
}

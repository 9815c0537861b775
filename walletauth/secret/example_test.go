package secret_test

import (
	"fmt"

	"github.com/walletgate/walletgate/walletauth/secret"
)

// A keyring seals a record's secret bound to the record's id, and keeps
// opening it after the host rotates to a new key.
func ExampleKeyring() {
	// In production both keys come from a secret manager, e.g.
	// secret.ParseKey(os.Getenv("WALLETGATE_SEAL_KEY")).
	k1, _ := secret.GenerateKey(nil, "2026-01")
	keys, _ := secret.NewKeyring(k1)

	sealed, _ := keys.Seal([]byte("private key of OTP:1"), []byte("OTP:1"))
	id, _ := secret.KeyID(sealed)
	fmt.Println("sealed under", id)

	// The record's bytes moved to another record do not open.
	_, err := keys.Open(sealed, []byte("OTP:2"))
	fmt.Println("moved to OTP:2:", err)

	// Rotate: new values are sealed under k2, old ones still open.
	k2, _ := secret.GenerateKey(nil, "2026-02")
	_ = keys.Rotate(k2)
	plain, _ := keys.Open(sealed, []byte("OTP:1"))
	fmt.Println("after rotation:", string(plain))
	fresh, _ := keys.Seal([]byte("private key of OTP:3"), []byte("OTP:3"))
	id, _ = secret.KeyID(fresh)
	fmt.Println("new values sealed under", id)

	// A Key prints without its secret.
	fmt.Println(k2)
	// Output:
	// sealed under 2026-01
	// moved to OTP:2: secret: sealed value does not authenticate
	// after rotation: private key of OTP:1
	// new values sealed under 2026-02
	// secret.Key(2026-02)
}

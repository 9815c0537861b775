package ownership_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/ownership"
)

// A host verifies a signature submitted for an external account through the
// registry, choosing the verifier by account type.
func ExampleVerifiers() {
	verifiers := ownership.DefaultVerifiers()
	ctx := context.Background()

	// The published BIP-322 vector: "Hello World" signed for a P2WPKH address.
	wallet := ownership.Wallet{
		AccountType: ownership.AccountBitcoin,
		Address:     "bc1q9vza2e8x573nczrlzms0wvx3gsqjx7vavgkx0l",
		Network:     ownership.Mainnet,
	}
	sig := ownership.Signature{
		Value: "AkcwRAIgZRfIY3p7/DoVTty6YZbWS71bc5Vct9p9Fia83eRmw2QCICK/ENGfwLtptFluMGs2KsqoNSk89pO7F29zJLUx9a/sASECx/EgAxlkQpQ9hYjgGu6EBCPMVPwVIVJqO4XCsMvViHI=",
	}
	fmt.Println("valid:", verifiers.Verify(ctx, wallet, []byte("Hello World"), sig) == nil)

	// Another message: 400 INVALID_INPUT with the failed check in details.reason.
	err := verifiers.Verify(ctx, wallet, []byte("Hello World!"), sig)
	e := apierror.As(err)
	fmt.Println(e.Status(), e.Code, e.Reason(), errors.Is(err, ownership.ErrMismatch))

	// Lightning accounts hold no key: 409 CONFLICT.
	_, err = verifiers.Lookup(ownership.AccountLightning)
	fmt.Println(apierror.As(err).Status(), apierror.As(err).Reason())
	// Output:
	// valid: true
	// 400 INVALID_INPUT BIP-322 signature does not verify for the address true
	// 409 lightning accounts hold no signing key
}

// A host adds its own verifier for an account type, for example one that
// checks EIP-1271 contract wallets on a node, tried after plain EIP-191.
func ExampleAnyOf() {
	contractWallets := ownership.VerifierFunc(func(ctx context.Context, w ownership.Wallet, msg []byte, sig ownership.Signature) error {
		// An eth_call of isValidSignature(hash, sig) on w.Address would go here.
		return apierror.New(apierror.InvalidInput, "contract wallet rejected the signature").
			WithDetail("reason", "isValidSignature did not return the magic value")
	})
	verifiers := ownership.DefaultVerifiers()
	verifiers[ownership.AccountEthereum] = ownership.AnyOf(ownership.EVMVerifier{}, contractWallets)

	err := verifiers.Verify(context.Background(), ownership.Wallet{
		AccountType: ownership.AccountEthereum,
		Address:     "0x000000000000000000000000000000000000dEaD",
	}, []byte("message"), ownership.Signature{Value: "0x1234"})
	fmt.Println(apierror.As(err).Reason())
	// Output:
	// signature is not 65 bytes of hex
}

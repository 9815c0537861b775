package ownership

import (
	"testing"

	"github.com/walletgate/walletgate/apierror"
)

// FuzzValidateAddress checks the address entry point used at registration:
// it never panics, every rejection is a typed 400 caused by ErrMalformed,
// and it agrees with Verify, which parses the address first: an address
// that registration rejects is rejected by Verify for the same reason.
func FuzzValidateAddress(f *testing.F) {
	types := []string{AccountEthereum, AccountSolana, AccountTron, AccountSpark, AccountBitcoin, AccountLightning, AccountLightningAlias, "USD_ACCOUNT"}
	for _, s := range []string{
		"0x52908400098527886E0F7030069857D2E4169EE7", "0x12", "TNPeeaaFB7K9cmo4uQpcU32zGK8G1NYqeL",
		"spark1pgss938nvery5elr8epzmux0pdm3072zp5nms6zvk2j6zm7m9w9d47jv34vdjc", "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq",
		"tb1qw508d6qejxtdg4y5r3zarvary0c5xw7kxpjzsx", "4Nd1m6Qkq7RfKuE5vQ9qP9Tn6H94Ueqb4xXHzsAbd8Wg", "", " ", "lnbc1",
	} {
		for i := range types {
			f.Add(uint8(i), uint8(0), s)
		}
	}
	f.Add(uint8(4), uint8(1), "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq")
	vs := DefaultVerifiers()
	vs[AccountLightning] = LightningNodeVerifier{}
	f.Fuzz(func(t *testing.T, typ, network uint8, addr string) {
		w := Wallet{AccountType: types[int(typ)%len(types)], Address: addr, Network: Network(network % 4)}
		err := vs.ValidateAddress(w)
		if err == nil {
			return
		}
		mustBeTyped(t, err)
		if apierror.CodeOf(err) != apierror.InvalidInput {
			t.Fatalf("ValidateAddress(%+v) = %v, want 400", w, err)
		}
		verr := vs.Verify(t.Context(), w, []byte("m"), Signature{Value: "x"})
		if reasonOf(verr) != reasonOf(err) {
			t.Fatalf("ValidateAddress(%+v) = %v but Verify = %v", w, err, verr)
		}
	})
}

package ownership_test

import (
	"encoding/hex"
	"fmt"

	"github.com/walletgate/walletgate/ownership"
)

// EVMMessageHash is the digest an EOA signs with personal_sign and the hash
// a contract account's isValidSignature is asked about.
func ExampleEVMMessageHash() {
	h := ownership.EVMMessageHash([]byte("hello"))
	fmt.Println("0x" + hex.EncodeToString(h[:]))
	// Output: 0x50b2c43fd39106bafbba0da34fc430e1f91e3c96ea2acee2bc34119f92b37750
}

// A contract account is proven on its account type's chain only; the
// table says which chain that is on the service's network.
func ExampleContractChainFor() {
	base, _ := ownership.ContractChainFor(ownership.AccountBase, ownership.Mainnet)
	fmt.Println(base)
	sepolia, _ := ownership.ContractChainFor(ownership.AccountEthereum, ownership.Testnet)
	fmt.Println(sepolia.ChainID)
	_, ok := ownership.ContractChainFor(ownership.AccountSolana, ownership.Mainnet)
	fmt.Println(ok)
	// Output:
	// Base (chain 8453)
	// 11155111
	// false
}

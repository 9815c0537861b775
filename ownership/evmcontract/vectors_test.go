package evmcontract_test

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/ethereum/go-ethereum/accounts/abi/bind/v2"
	"github.com/ethereum/go-ethereum/common"

	"github.com/walletgate/walletgate/ownership"
	"github.com/walletgate/walletgate/ownership/evmcontract"
)

// TestEthersVectors verifies proofs made by ethers (testdata/vectors.js):
// the owner's personal_sign for a deployed wallet, and an ERC-6492
// signature wrapped by ethers' ABI coder for a counterfactual one, whose
// address ethers computed with CREATE2.
func TestEthersVectors(t *testing.T) {
	b, err := os.ReadFile("testdata/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Generator string
		Deployer  common.Address
		Owner     common.Address
		Factory   common.Address
		Vectors   []struct {
			Name      string
			ChainID   uint64
			Address   string
			Message   string
			Signature string
		}
	}
	if err := json.Unmarshal(b, &file); err != nil {
		t.Fatal(err)
	}
	ch := newChain(t, 1337)
	if got := ch.deploy(t, "WalletFactory"); got != file.Factory {
		t.Fatalf("factory at %s, vectors say %s", got, file.Factory)
	}
	ch.deploy(t, "OwnerWallet", file.Owner)
	v, err := evmcontract.New(evmcontract.Config{Chains: map[uint64]bind.ContractCaller{ch.id: ch.client}})
	if err != nil {
		t.Fatal(err)
	}
	for _, vec := range file.Vectors {
		t.Run(vec.Name, func(t *testing.T) {
			w := ownership.Wallet{AccountType: ownership.AccountEthereum, Address: vec.Address, ChainID: vec.ChainID}
			if err := v.Verify(t.Context(), w, []byte(vec.Message), ownership.Signature{Value: vec.Signature}); err != nil {
				t.Fatalf("%s: %v", file.Generator, err)
			}
			other := []byte(vec.Message + " ")
			if err := v.Verify(t.Context(), w, other, ownership.Signature{Value: vec.Signature}); err == nil {
				t.Fatal("accepted for another message")
			}
		})
	}
	cf, _ := ch.counterfactual(t, file.Factory, file.Owner, [32]byte{31: 0x2a})
	if cf.Hex() != file.Vectors[1].Address {
		t.Fatalf("factory's addressOf %s, ethers' CREATE2 %s", cf, file.Vectors[1].Address)
	}
}

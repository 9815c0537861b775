package evmcontract_test

import (
	"encoding/json"
	"math/big"
	"os"
	"testing"

	"github.com/ethereum/go-ethereum/accounts/abi/bind/v2"
	"github.com/ethereum/go-ethereum/common"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/ownership"
	"github.com/walletgate/walletgate/ownership/evmcontract"
)

// TestEthersVectors verifies proofs made by ethers (testdata/vectors.js):
// the owner's personal_sign for a deployed wallet, an ERC-6492 signature
// wrapped by ethers' ABI coder for a counterfactual one, whose address
// ethers computed with CREATE2, and a 2-of-3 Safe-style wallet's owners'
// EIP-712 SafeMessage signatures.
func TestEthersVectors(t *testing.T) {
	b, err := os.ReadFile("testdata/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Generator     string
		Deployer      common.Address
		Owner         common.Address
		Factory       common.Address
		SafeOwners    []common.Address
		SafeThreshold int64
		Vectors       []struct {
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
	ch := newChain(t, 1) // Ethereum mainnet, the chain of ETHEREUM_WALLET
	if got := ch.deploy(t, "WalletFactory"); got != file.Factory {
		t.Fatalf("factory at %s, vectors say %s", got, file.Factory)
	}
	ch.deploy(t, "OwnerWallet", file.Owner)
	ch.deploy(t, "SafeStyleWallet", file.SafeOwners, big.NewInt(file.SafeThreshold))
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

	// Below the threshold: one owner's signature is not the wallet's.
	safe := file.Vectors[2]
	one := safe.Signature[:2+2*65]
	err = v.Verify(t.Context(), ownership.Wallet{AccountType: ownership.AccountEthereum, Address: safe.Address, ChainID: safe.ChainID},
		[]byte(safe.Message), ownership.Signature{Value: one})
	apierrortest.Want(t, err, apierror.InvalidInput, "the contract account did not return the EIP-1271 magic value")
}

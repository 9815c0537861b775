package evmcontract_test

import (
	"encoding/hex"
	"testing"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi/bind/v2"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/walletgate/walletgate/ownership"
	"github.com/walletgate/walletgate/ownership/evmcontract"
)

// BenchmarkEIP1271 compares a contract-account verification (one eth_call
// of the checking contract's creation code, which asks the wallet) with
// the raw primitive: an eth_call of the wallet's isValidSignature, on the
// same simulated chain.
func BenchmarkEIP1271(b *testing.B) {
	ch := newChain(b, 1)
	owner := crypto.PubkeyToAddress(ownerKey.PublicKey)
	wallet := ch.deploy(b, "OwnerWallet", owner)
	const message = "payments.example.com asks you to prove that you control this wallet.\nChain ID: 1"
	sig := sign(b, ownerKey, message)
	hash := ownership.EVMMessageHash([]byte(message))

	b.Run("raw eth_call isValidSignature", func(b *testing.B) {
		input, err := ch.c.abi(b, "OwnerWallet").Pack("isValidSignature", hash, sig)
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			out, err := ch.client.CallContract(b.Context(), ethereum.CallMsg{To: &wallet, Data: input, Gas: evmcontract.DefaultGasCap}, nil)
			if err != nil || len(out) != 32 || out[0] != 0x16 {
				b.Fatalf("%x, %v", out, err)
			}
		}
	})
	b.Run("Verifier.Verify", func(b *testing.B) {
		v, err := evmcontract.New(evmcontract.Config{Chains: map[uint64]bind.ContractCaller{ch.id: ch.client}})
		if err != nil {
			b.Fatal(err)
		}
		w := ownership.Wallet{AccountType: ownership.AccountEthereum, Address: wallet.Hex(), ChainID: ch.id}
		s := ownership.Signature{Value: "0x" + hex.EncodeToString(sig)}
		for b.Loop() {
			if err := v.Verify(b.Context(), w, []byte(message), s); err != nil {
				b.Fatal(err)
			}
		}
	})
}

package evmcontract_test

import (
	"encoding/hex"
	"errors"
	"testing"

	"github.com/ethereum/go-ethereum/accounts/abi/bind/v2"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/ownership"
	"github.com/walletgate/walletgate/ownership/evmcontract"
)

// FuzzVerify sends arbitrary signature values for a deployed wallet, a
// counterfactual one and an address without code, as ETHEREUM_WALLET
// contract accounts on Ethereum's chain or as accounts of types whose
// chain it is not, to a verifier on a simulated chain: it never panics, a
// healthy node never yields a 500, every refusal is a 400 caused by
// ownership.ErrMalformed or ErrMismatch, and only an ETHEREUM_WALLET is
// ever accepted.
func FuzzVerify(f *testing.F) {
	ch := newChain(f, 1)
	owner := crypto.PubkeyToAddress(ownerKey.PublicKey)
	wallet := ch.deploy(f, "OwnerWallet", owner)
	factory := ch.deploy(f, "WalletFactory")
	cf, calldata := ch.counterfactual(f, factory, owner, [32]byte{9})
	v, err := evmcontract.New(evmcontract.Config{Chains: map[uint64]bind.ContractCaller{ch.id: ch.client}})
	if err != nil {
		f.Fatal(err)
	}
	const message = "payments.example.com asks you to prove that you control this wallet.\nChain ID: 1"
	good := sign(f, ownerKey, message)
	addrs := []common.Address{wallet, cf, owner}
	types := []string{ownership.AccountEthereum, ownership.AccountBase, ownership.AccountPolygon, ownership.AccountPlasma, ownership.AccountSolana, ""}
	f.Add(uint8(0), uint8(0), "0x"+hex.EncodeToString(good))
	f.Add(uint8(1), uint8(0), "0x"+hex.EncodeToString(wrap6492(f, factory, calldata, good)))
	f.Add(uint8(1), uint8(0), hex.EncodeToString(wrap6492(f, factory, calldata, sign(f, strangerKey, message))))
	f.Add(uint8(2), uint8(0), "0x"+hex.EncodeToString(good))
	f.Add(uint8(0), uint8(0), "0x")
	f.Add(uint8(0), uint8(0), " 0X"+hex.EncodeToString(good[:64]))
	f.Add(uint8(2), uint8(0), "zz")
	// A valid proof on chain 1 for a type whose chain 1 is not.
	f.Add(uint8(0), uint8(1), "0x"+hex.EncodeToString(good))
	f.Add(uint8(2), uint8(4), "0x"+hex.EncodeToString(good))
	f.Add(uint8(1), uint8(5), "0x"+hex.EncodeToString(wrap6492(f, factory, calldata, good)))
	f.Fuzz(func(t *testing.T, which, typ uint8, sig string) {
		w := ownership.Wallet{AccountType: types[int(typ)%len(types)], Address: addrs[int(which)%len(addrs)].Hex(), ChainID: ch.id}
		err := v.Verify(t.Context(), w, []byte(message), ownership.Signature{Value: sig})
		if err == nil {
			if w.AccountType != ownership.AccountEthereum {
				t.Fatalf("Verify accepted a %s on chain %d", w.AccountType, w.ChainID)
			}
			return
		}
		e := apierror.As(err)
		if e == nil || e.Code != apierror.InvalidInput || e.Reason() == "" {
			t.Fatalf("Verify(%q) = %v, want a 400 with a reason", sig, err)
		}
		if !errors.Is(err, ownership.ErrMalformed) && !errors.Is(err, ownership.ErrMismatch) {
			t.Fatalf("Verify(%q) = %v without an ownership cause", sig, err)
		}
	})
}

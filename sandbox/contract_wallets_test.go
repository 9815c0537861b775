package sandbox_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"math/big"
	"os"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/accounts/abi/bind/v2"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient/simulated"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/ownership"
	"github.com/walletgate/walletgate/ownership/evmcontract"
	"github.com/walletgate/walletgate/sandbox"
)

// deployOwnerWallet deploys the EIP-1271 test wallet of ownership/evmcontract
// (testdata/contracts/Wallets.sol) for owner on a simulated chain.
func deployOwnerWallet(t *testing.T, b *simulated.Backend, deployer, owner common.Address, key []byte) common.Address {
	t.Helper()
	raw, err := os.ReadFile("../ownership/evmcontract/testdata/contracts.json")
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Contracts map[string]struct {
			ABI      json.RawMessage
			Bytecode string
		}
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	w := c.Contracts["OwnerWallet"]
	a, err := abi.JSON(strings.NewReader(string(w.ABI)))
	if err != nil {
		t.Fatal(err)
	}
	args, err := a.Pack("", owner)
	if err != nil {
		t.Fatal(err)
	}
	code, _ := hex.DecodeString(strings.TrimPrefix(w.Bytecode, "0x"))
	priv, _ := crypto.ToECDSA(key)
	client := b.Client()
	nonce, err := client.PendingNonceAt(context.Background(), deployer)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := types.SignNewTx(priv, types.LatestSignerForChainID(big.NewInt(1337)), &types.DynamicFeeTx{ChainID: big.NewInt(1337),
		Nonce: nonce, GasTipCap: big.NewInt(1e9), GasFeeCap: big.NewInt(1e11), Gas: 1_000_000, Data: append(code, args...)})
	if err != nil {
		t.Fatal(err)
	}
	if err := client.SendTransaction(context.Background(), tx); err != nil {
		t.Fatal(err)
	}
	b.Commit()
	r, err := client.TransactionReceipt(context.Background(), tx.Hash())
	if err != nil || r.Status != types.ReceiptStatusSuccessful {
		t.Fatalf("deploy: %+v %v", r, err)
	}
	return r.ContractAddress
}

// TestContractWalletOwnership: a host's test suite gives the sandbox a
// contract-wallet verifier on its own simulated chain and proves an
// EIP-1271 wallet over HTTP.
func TestContractWalletOwnership(t *testing.T) {
	deployerKey, _ := hex.DecodeString("8a1f9a8f95be41cd7ccb6168179afb4504aefe388d1e14474d32c45c72ce7b7a")
	dk, _ := crypto.ToECDSA(deployerKey)
	deployer := crypto.PubkeyToAddress(dk.PublicKey)
	chain := simulated.NewBackend(types.GenesisAlloc{deployer: {Balance: new(big.Int).Lsh(big.NewInt(1), 100)}})
	t.Cleanup(func() { chain.Close() })
	owner, _ := crypto.HexToECDSA("4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318")
	wallet := deployOwnerWallet(t, chain, deployer, crypto.PubkeyToAddress(owner.PublicKey), deployerKey)

	cv, err := evmcontract.New(evmcontract.Config{Chains: map[uint64]bind.ContractCaller{1337: chain.Client()}})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, sandbox.Config{ContractWallets: cv})
	cust, _ := e.customer("Ada Lovelace")
	a := e.external(cust.ID, map[string]any{"currency": "USDC", "ownershipType": "FIRST_PARTY",
		"accountInfo": map[string]any{"accountType": "BASE_WALLET", "address": wallet.Hex(), "contractAccount": map[string]any{"chainId": 1337}}})
	if a.Status != "PENDING_OWNERSHIP_VERIFICATION" {
		t.Fatalf("new contract account is %s", a.Status)
	}
	path := "/customers/external-accounts/" + a.ID
	var c ownership.Challenge
	e.do("POST", path+"/challenge", map[string]string{"method": "WALLET_SIGNATURE"}).ok(t, 201, &c)
	if !strings.Contains(c.MessageToSign, "\nChain ID: 1337\n") {
		t.Fatalf("message %q does not name the chain", c.MessageToSign)
	}
	hash := ownership.EVMMessageHash([]byte(c.MessageToSign))
	sig, _ := crypto.Sign(hash[:], owner)
	sig[64] += 27
	var got sandbox.ExternalAccount
	e.do("POST", path+"/verify", map[string]string{"signature": "0x" + hex.EncodeToString(sig)}).ok(t, 200, &got)
	if got.Status != "ACTIVE" {
		t.Fatalf("status %s", got.Status)
	}

	// A chain the verifier has no node for is refused at creation.
	body := map[string]any{"customerId": cust.ID, "currency": "USDC", "ownershipType": "FIRST_PARTY",
		"accountInfo": map[string]any{"accountType": "BASE_WALLET", "address": wallet.Hex(), "contractAccount": map[string]any{"chainId": 8453}}}
	e.do("POST", "/customers/external-accounts", body).fails(t, 400, apierror.InvalidInput)

	// Without a verifier, contract accounts are refused.
	plain := newEnv(t)
	pc, _ := plain.customer("Grace Hopper")
	body["customerId"] = pc.ID
	plain.do("POST", "/customers/external-accounts", body).fails(t, 400, apierror.InvalidInput)
}

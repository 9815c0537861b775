package evmcontract_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"math/big"
	"time"

	"github.com/ethereum/go-ethereum/accounts/abi/bind/v2"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/eth/ethconfig"
	"github.com/ethereum/go-ethereum/ethclient/simulated"
	"github.com/ethereum/go-ethereum/node"

	"github.com/walletgate/walletgate/ownership"
	"github.com/walletgate/walletgate/ownership/evmcontract"
	"github.com/walletgate/walletgate/storage/memory"
)

// Register the contract-wallet verifier for Ethereum wallets, with a node
// of Ethereum's chain (here a simulated chain running under chain id 1; in
// production an *ethclient.Client), register a wallet as a contract account
// on that chain, the one chain of ETHEREUM_WALLET, and prove it. The
// address below has no code, so the proof falls back to the EOA check.
func ExampleNew() {
	ctx := context.Background()
	ethereum, _ := ownership.ContractChainFor(ownership.AccountEthereum, ownership.Mainnet)
	backend := simulated.NewBackend(types.GenesisAlloc{}, func(_ *node.Config, ec *ethconfig.Config) {
		cfg := *ec.Genesis.Config
		cfg.ChainID = new(big.Int).SetUint64(ethereum.ChainID)
		ec.Genesis.Config = &cfg
	})
	defer backend.Close()

	cv, err := evmcontract.New(evmcontract.Config{
		Chains:      map[uint64]bind.ContractCaller{ethereum.ChainID: backend.Client()},
		CallTimeout: 3 * time.Second,
	})
	if err != nil {
		panic(err)
	}
	vs := ownership.DefaultVerifiers()
	vs[ownership.AccountEthereum] = cv
	svc, err := ownership.New(ownership.Config{Store: memory.New(), Verifiers: vs, Service: "payments.example.com",
		Payouts: ownership.PayoutPolicy{MaxAmounts: ownership.Limits{ByCurrency: map[string]int64{"USDC": 50_000_000_000}}}})
	if err != nil {
		panic(err)
	}

	key, _ := crypto.HexToECDSA("4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318")
	addr := crypto.PubkeyToAddress(key.PublicKey).Hex()
	a, err := svc.RegisterAccount(ctx, ownership.NewAccount{CustomerID: "Customer:1", AccountType: ownership.AccountEthereum,
		Address: addr, Currency: "USDC", OwnershipType: ownership.FirstParty,
		Info: []byte(`{"accountType":"ETHEREUM_WALLET","address":"` + addr + `","contractAccount":{"chainId":1}}`)})
	if err != nil {
		panic(err)
	}
	c, err := svc.StartChallenge(ctx, a.ID, ownership.MethodWalletSignature, ownership.CustomerTree)
	if err != nil {
		panic(err)
	}

	// The wallet signs messageToSign with personal_sign (EIP-191).
	hash := ownership.EVMMessageHash([]byte(c.MessageToSign))
	sig, _ := crypto.Sign(hash[:], key)
	sig[64] += 27

	got, err := svc.Verify(ctx, a.ID, ownership.VerifyRequest{Signature: "0x" + hex.EncodeToString(sig)}, ownership.CustomerTree)
	if err != nil {
		panic(err)
	}
	fmt.Println(a.Status, "->", got.Status)
	// Output: PENDING_OWNERSHIP_VERIFICATION -> ACTIVE
}

package sandbox_test

import (
	"context"
	"crypto/ecdsa"
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
	"github.com/ethereum/go-ethereum/eth/ethconfig"
	"github.com/ethereum/go-ethereum/ethclient/simulated"
	"github.com/ethereum/go-ethereum/node"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/ownership"
	"github.com/walletgate/walletgate/ownership/evmcontract"
	"github.com/walletgate/walletgate/sandbox"
)

// newSimulatedChain is a simulated EVM chain running under chainID (the
// backend's default is 1337, the chain of no account type), with deployer
// funded.
func newSimulatedChain(t *testing.T, chainID uint64, deployer common.Address) *simulated.Backend {
	t.Helper()
	b := simulated.NewBackend(types.GenesisAlloc{deployer: {Balance: new(big.Int).Lsh(big.NewInt(1), 100)}},
		func(_ *node.Config, ec *ethconfig.Config) {
			cfg := *ec.Genesis.Config
			cfg.ChainID = new(big.Int).SetUint64(chainID)
			ec.Genesis.Config = &cfg
		})
	t.Cleanup(func() { b.Close() })
	return b
}

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
	chainID, err := client.ChainID(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	nonce, err := client.PendingNonceAt(context.Background(), deployer)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := types.SignNewTx(priv, types.LatestSignerForChainID(chainID), &types.DynamicFeeTx{ChainID: chainID,
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

// Test keys: the deployer of the test wallets, a customer who owns a
// wallet, and another party.
var (
	deployerKey, _ = hex.DecodeString("8a1f9a8f95be41cd7ccb6168179afb4504aefe388d1e14474d32c45c72ce7b7a")
	ownerKey, _    = crypto.HexToECDSA("4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318")
	otherKey, _    = crypto.HexToECDSA("ae6ae8e5ccbfb04590405997ee2d52d2b330726137b875053c36d94e974d162f")
)

func deployerAddress() common.Address {
	dk, _ := crypto.ToECDSA(deployerKey)
	return crypto.PubkeyToAddress(dk.PublicKey)
}

// signHex is an EIP-191 personal_sign of message by key, as wallets
// return it.
func signHex(key *ecdsa.PrivateKey, message string) string {
	hash := ownership.EVMMessageHash([]byte(message))
	sig, _ := crypto.Sign(hash[:], key)
	sig[64] += 27
	return "0x" + hex.EncodeToString(sig)
}

// TestContractWalletOwnership: a host's test suite gives the sandbox a
// contract-wallet verifier for BASE_WALLET on its own simulated chain,
// running under Base's chain id, and proves an EIP-1271 wallet over HTTP.
func TestContractWalletOwnership(t *testing.T) {
	deployer := deployerAddress()
	chain := newSimulatedChain(t, 8453, deployer)
	wallet := deployOwnerWallet(t, chain, deployer, crypto.PubkeyToAddress(ownerKey.PublicKey), deployerKey)

	cv, err := evmcontract.New(evmcontract.Config{Chains: map[uint64]bind.ContractCaller{8453: chain.Client()}})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, sandbox.Config{ContractWallets: map[string]ownership.ContractVerifier{ownership.AccountBase: cv}})
	cust, _ := e.customer("Ada Lovelace")
	a := e.external(cust.ID, map[string]any{"currency": "USDC", "ownershipType": "FIRST_PARTY",
		"accountInfo": map[string]any{"accountType": "BASE_WALLET", "address": wallet.Hex(), "contractAccount": map[string]any{"chainId": 8453}}})
	if a.Status != "PENDING_OWNERSHIP_VERIFICATION" {
		t.Fatalf("new contract account is %s", a.Status)
	}
	path := "/customers/external-accounts/" + a.ID
	var c ownership.Challenge
	e.do("POST", path+"/challenge", map[string]string{"method": "WALLET_SIGNATURE"}).ok(t, 201, &c)
	if !strings.Contains(c.MessageToSign, "\nChain ID: 8453\n") {
		t.Fatalf("message %q does not name the chain", c.MessageToSign)
	}
	var got sandbox.ExternalAccount
	e.do("POST", path+"/verify", map[string]string{"signature": signHex(ownerKey, c.MessageToSign)}).ok(t, 200, &got)
	if got.Status != "ACTIVE" {
		t.Fatalf("status %s", got.Status)
	}

	// A type without a verifier in ContractWallets has no contract
	// accounts.
	body := map[string]any{"customerId": cust.ID, "currency": "USDC", "ownershipType": "FIRST_PARTY",
		"accountInfo": map[string]any{"accountType": "ETHEREUM_WALLET", "address": wallet.Hex(), "contractAccount": map[string]any{"chainId": 1}}}
	err = e.do("POST", "/customers/external-accounts", body).fails(t, 400, apierror.InvalidInput)
	apierrortest.WantFields(t, err, apierror.InvalidInput, "accountInfo.contractAccount.chainId")

	// Without a verifier, contract accounts are refused.
	plain := newEnv(t)
	pc, _ := plain.customer("Grace Hopper")
	body["customerId"] = pc.ID
	body["accountInfo"].(map[string]any)["accountType"] = "BASE_WALLET"
	body["accountInfo"].(map[string]any)["contractAccount"] = map[string]any{"chainId": 8453}
	err = plain.do("POST", "/customers/external-accounts", body).fails(t, 400, apierror.InvalidInput)
	apierrortest.WantFields(t, err, apierror.InvalidInput, "accountInfo.contractAccount.chainId")
}

// TestContractWalletChainIsTheTypes: a BASE_WALLET contract account is
// proven on Base only. The same address on Ethereum holds a wallet that
// another party owns, and the sandbox has an Ethereum node for
// ETHEREUM_WALLET; a BASE_WALLET registered with Ethereum's chain id is
// refused, so that party's proof on Ethereum cannot make it ACTIVE.
func TestContractWalletChainIsTheTypes(t *testing.T) {
	deployer := deployerAddress()
	base, eth := newSimulatedChain(t, 8453, deployer), newSimulatedChain(t, 1, deployer)
	onBase := deployOwnerWallet(t, base, deployer, crypto.PubkeyToAddress(ownerKey.PublicKey), deployerKey)
	onEth := deployOwnerWallet(t, eth, deployer, crypto.PubkeyToAddress(otherKey.PublicKey), deployerKey)
	if onBase != onEth {
		t.Fatalf("the wallets differ: %s on Base, %s on Ethereum", onBase, onEth)
	}
	cv, err := evmcontract.New(evmcontract.Config{Chains: map[uint64]bind.ContractCaller{8453: base.Client(), 1: eth.Client()}})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, sandbox.Config{ContractWallets: map[string]ownership.ContractVerifier{
		ownership.AccountBase: cv, ownership.AccountEthereum: cv}})
	cust, _ := e.customer("Ada Lovelace")
	onChain := func(typ string, chainID uint64) map[string]any {
		return map[string]any{"customerId": cust.ID, "currency": "USDC", "ownershipType": "FIRST_PARTY",
			"accountInfo": map[string]any{"accountType": typ, "address": onBase.Hex(), "contractAccount": map[string]any{"chainId": chainID}}}
	}
	err = e.do("POST", "/customers/external-accounts", onChain("BASE_WALLET", 1)).fails(t, 400, apierror.InvalidInput)
	ae := apierrortest.WantFields(t, err, apierror.InvalidInput, "accountInfo.contractAccount.chainId")
	if f := ae.FieldErrors()[0]; !strings.Contains(f.Message, "Base (chain 8453)") {
		t.Fatalf("the refusal does not name Base's chain: %+v", f)
	}
	err = e.do("POST", "/customers/external-accounts", onChain("BASE_WALLET", 137)).fails(t, 400, apierror.InvalidInput)
	apierrortest.WantFields(t, err, apierror.InvalidInput, "accountInfo.contractAccount.chainId")

	// The other party's wallet is an Ethereum wallet, proven on Ethereum.
	var a sandbox.ExternalAccount
	e.do("POST", "/customers/external-accounts", onChain("ETHEREUM_WALLET", 1)).ok(t, 201, &a)
	var c ownership.Challenge
	e.do("POST", "/customers/external-accounts/"+a.ID+"/challenge", map[string]string{"method": "WALLET_SIGNATURE"}).ok(t, 201, &c)
	var got sandbox.ExternalAccount
	e.do("POST", "/customers/external-accounts/"+a.ID+"/verify", map[string]string{"signature": signHex(otherKey, c.MessageToSign)}).ok(t, 200, &got)
	if got.Status != "ACTIVE" {
		t.Fatalf("status %s", got.Status)
	}
}

// TestContractWalletsConfig: ContractWallets maps types to verifiers
// explicitly, and New refuses an entry that cannot prove its type's
// contract accounts.
func TestContractWalletsConfig(t *testing.T) {
	eth := newSimulatedChain(t, 1, deployerAddress())
	cv, err := evmcontract.New(evmcontract.Config{Chains: map[uint64]bind.ContractCaller{1: eth.Client()}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		cfg     sandbox.Config
		wantErr string
	}{
		{"nil verifier", sandbox.Config{ContractWallets: map[string]ownership.ContractVerifier{ownership.AccountEthereum: nil}},
			`sandbox: Config.ContractWallets["ETHEREUM_WALLET"] is nil`},
		{"verifier without the type's chain", sandbox.Config{ContractWallets: map[string]ownership.ContractVerifier{ownership.AccountBase: cv}},
			`ownership: the ContractVerifier of Config.Verifiers["BASE_WALLET"] does not serve Base (chain 8453), the chain of BASE_WALLET on mainnet`},
		{"non-EVM type", sandbox.Config{ContractWallets: map[string]ownership.ContractVerifier{ownership.AccountSolana: cv}},
			`ownership: Config.Verifiers["SOLANA_WALLET"] is a ContractVerifier, but SOLANA_WALLET has no contract-account chain on mainnet (only BASE_WALLET, ETHEREUM_WALLET, PLASMA_WALLET, POLYGON_WALLET have, on mainnet and testnet)`},
		{"misspelled type", sandbox.Config{ContractWallets: map[string]ownership.ContractVerifier{"ethereum_wallet": cv}},
			`ownership: Config.Verifiers["ethereum_wallet"] is a ContractVerifier, but ethereum_wallet has no contract-account chain on mainnet (only BASE_WALLET, ETHEREUM_WALLET, PLASMA_WALLET, POLYGON_WALLET have, on mainnet and testnet)`},
		{"mainnet node on a testnet sandbox", sandbox.Config{Network: ownership.Testnet,
			ContractWallets: map[string]ownership.ContractVerifier{ownership.AccountEthereum: cv}},
			`ownership: the ContractVerifier of Config.Verifiers["ETHEREUM_WALLET"] does not serve Ethereum Sepolia (chain 11155111), the chain of ETHEREUM_WALLET on testnet`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sim, err := sandbox.New(tc.cfg)
			if err == nil {
				sim.Close()
			}
			if err == nil || err.Error() != tc.wantErr {
				t.Fatalf("New: %v\nwant %s", err, tc.wantErr)
			}
		})
	}
	sim, err := sandbox.New(sandbox.Config{ContractWallets: map[string]ownership.ContractVerifier{ownership.AccountEthereum: cv}})
	if err != nil {
		t.Fatal(err)
	}
	sim.Close()
}

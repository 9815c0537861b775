package evmsim

import (
	"context"
	"crypto/ecdsa"
	"encoding/hex"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/ownership"
)

// Test keys: a wallet's owner and another party.
var (
	ownerKey, _ = crypto.HexToECDSA("4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318")
	otherKey, _ = crypto.HexToECDSA("ae6ae8e5ccbfb04590405997ee2d52d2b330726137b875053c36d94e974d162f")
)

func newChains(t *testing.T) *Chains {
	t.Helper()
	c, err := New(ownership.Mainnet)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	})
	return c
}

// signHex is PersonalSign for a test.
func signHex(t *testing.T, key *ecdsa.PrivateKey, message string) []byte {
	t.Helper()
	sig, err := PersonalSign(key, message)
	if err != nil {
		t.Fatal(err)
	}
	return sig
}

// wrap6492 is WrapERC6492 for a test.
func wrap6492(t *testing.T, factory common.Address, calldata, sig []byte) []byte {
	t.Helper()
	w, err := WrapERC6492(factory, calldata, sig)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// verify asks the chains' verifier to check sig of message for a contract
// account of typ at addr.
func verify(c *Chains, typ string, chainID uint64, addr common.Address, message string, sig []byte) error {
	w := ownership.Wallet{AccountType: typ, Address: addr.Hex(), ChainID: chainID}
	return c.ContractWallets()[typ].Verify(context.Background(), w, []byte(message),
		ownership.Signature{Value: "0x" + hex.EncodeToString(sig)})
}

// TestChains: one chain per contract-account type on mainnet, each under
// its type's chain id and with the factory at one address; an OwnerWallet
// deployed on Base accepts its owner's signature and refuses another's,
// and on no other chain; a counterfactual one is proven with ERC-6492 and
// stays undeployed.
func TestChains(t *testing.T) {
	c := newChains(t)
	ctx := context.Background()
	var want []ownership.ContractChain
	for _, row := range ownership.ContractChains() {
		if row.Network == ownership.Mainnet {
			want = append(want, row)
		}
	}
	if got := c.Served(); !slices.Equal(got, want) {
		t.Fatalf("served %v, want %v", got, want)
	}
	for _, row := range want {
		id, err := c.chains[row.ChainID].client.ChainID(ctx)
		if err != nil || id.Uint64() != row.ChainID {
			t.Fatalf("%s runs as chain %v (%v)", row, id, err)
		}
		code, err := c.chains[row.ChainID].client.CodeAt(ctx, c.Factory(), nil)
		if err != nil || len(code) == 0 {
			t.Fatalf("no factory on %s at %s (%v)", row, c.Factory(), err)
		}
		if c.ContractWallets()[row.AccountType] == nil {
			t.Fatalf("no verifier for %s", row.AccountType)
		}
	}
	if len(c.ContractWallets()) != len(want) {
		t.Fatalf("ContractWallets %v", c.ContractWallets())
	}

	owner := crypto.PubkeyToAddress(ownerKey.PublicKey)
	const message = "walletgate evmsim test"
	wallet, err := c.DeployOwnerWallet(ctx, 8453, owner)
	if err != nil {
		t.Fatal(err)
	}
	if err := verify(c, ownership.AccountBase, 8453, wallet, message, signHex(t, ownerKey, message)); err != nil {
		t.Fatalf("the owner's signature: %v", err)
	}
	err = verify(c, ownership.AccountBase, 8453, wallet, message, signHex(t, otherKey, message))
	apierrortest.Want(t, err, apierror.InvalidInput, "the contract account did not return the EIP-1271 magic value")
	// Each deployment is a new wallet.
	again, err := c.DeployOwnerWallet(ctx, 8453, owner)
	if err != nil || again == wallet {
		t.Fatalf("second deployment %s (%v), first %s", again, err, wallet)
	}
	// Nothing is at that address on Ethereum.
	if code, err := c.chains[1].client.CodeAt(ctx, wallet, nil); err != nil || len(code) != 0 {
		t.Fatalf("code on Ethereum at the Base wallet's address: %x (%v)", code, err)
	}

	var salt [32]byte
	salt[31] = 7
	cf, err := c.Counterfactual(ctx, 1, owner, salt)
	if err != nil {
		t.Fatal(err)
	}
	initCode := append(slices.Clone(c.art.ownerCode), common.LeftPadBytes(owner.Bytes(), 32)...)
	if want := crypto.CreateAddress2(c.Factory(), salt, crypto.Keccak256(initCode)); cf.Address != want {
		t.Fatalf("counterfactual address %s, CREATE2 gives %s", cf.Address, want)
	}
	if other, err := c.Counterfactual(ctx, 8453, owner, salt); err != nil || other.Address != cf.Address || other.Factory != cf.Factory {
		t.Fatalf("the address on Base is %s (%v), on Ethereum %s", other.Address, err, cf.Address)
	}
	wrapped := wrap6492(t, cf.Factory, cf.FactoryCalldata, signHex(t, ownerKey, message))
	if err := verify(c, ownership.AccountEthereum, 1, cf.Address, message, wrapped); err != nil {
		t.Fatalf("the owner's ERC-6492 signature: %v", err)
	}
	err = verify(c, ownership.AccountEthereum, 1, cf.Address, message, wrap6492(t, cf.Factory, cf.FactoryCalldata, signHex(t, otherKey, message)))
	apierrortest.Want(t, err, apierror.InvalidInput, "the contract account did not return the EIP-1271 magic value")
	if code, err := c.chains[1].client.CodeAt(ctx, cf.Address, nil); err != nil || len(code) != 0 {
		t.Fatalf("the counterfactual wallet was deployed: %x (%v)", code, err)
	}

	for _, f := range []func() error{
		func() error { _, err := c.DeployOwnerWallet(ctx, 1337, owner); return err },
		func() error { _, err := c.Counterfactual(ctx, 84532, owner, salt); return err },
	} {
		if err := f(); err == nil || !strings.Contains(err.Error(), "is not simulated here") {
			t.Fatalf("a chain not simulated: %v", err)
		}
	}
}

// TestConcurrentDeployments: deployments on one chain from many
// goroutines each get their own wallet.
func TestConcurrentDeployments(t *testing.T) {
	c := newChains(t)
	owner := crypto.PubkeyToAddress(ownerKey.PublicKey)
	const n = 8
	addrs := make([]common.Address, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { addrs[i], errs[i] = c.DeployOwnerWallet(context.Background(), 137, owner) })
	}
	wg.Wait()
	seen := map[common.Address]bool{}
	for i := range n {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if seen[addrs[i]] {
			t.Fatalf("two deployments at %s", addrs[i])
		}
		seen[addrs[i]] = true
	}
}

// TestNewRefusesNetworksWithoutChains: signet and regtest have no
// contract-account chains.
func TestNewRefusesNetworksWithoutChains(t *testing.T) {
	for _, n := range []ownership.Network{ownership.Signet, ownership.Regtest} {
		c, err := New(n)
		if err == nil {
			c.Close()
			t.Fatalf("New(%s) succeeded", n)
		}
		if !strings.Contains(err.Error(), "no account type has contract accounts on") {
			t.Fatalf("New(%s): %v", n, err)
		}
	}
}

// TestTestnetChains: on testnet the chains are the test chains.
func TestTestnetChains(t *testing.T) {
	c, err := New(ownership.Testnet)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, row := range c.Served() {
		if row.Network != ownership.Testnet {
			t.Fatalf("served %v", row)
		}
		id, err := c.chains[row.ChainID].client.ChainID(context.Background())
		if err != nil || id.Uint64() != row.ChainID {
			t.Fatalf("%s runs as chain %v (%v)", row, id, err)
		}
	}
	if len(c.Served()) != 4 {
		t.Fatalf("served %v", c.Served())
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// Package evmsim runs simulated EVM chains inside examples/server (its
// -evm-simulated option), so that clients can prove EIP-1271 and ERC-6492
// contract accounts over HTTP without a node of their own.
//
// [New] starts one go-ethereum simulated backend (ethclient/simulated) per
// account type that has contract accounts on the sandbox's network, each
// running under that type's chain id from [ownership.ContractChains]
// (BASE_WALLET on 8453, ETHEREUM_WALLET on 1, PLASMA_WALLET on 9745,
// POLYGON_WALLET on 137 on mainnet), and deploys on each the test contracts'
// WalletFactory. [Chains.ContractWallets] is the sandbox.Config.ContractWallets
// of an [evmcontract.Verifier] on those chains, and [Chains.Register] adds
// the sandbox-only routes that deploy owner wallets and describe
// counterfactual ones.
//
// The contracts are OwnerWallet (an EIP-1271 wallet that accepts a 65-byte
// signature of its owner over the hash it is asked about, so the owner's
// personal_sign of a challenge proves it) and WalletFactory (a CREATE2
// factory of OwnerWallets, for accounts not deployed yet), copied in
// contracts.json from ownership/evmcontract/testdata/contracts.json, which
// compiles ownership/evmcontract/testdata/contracts/Wallets.sol. A test
// fails when the copy and the original differ.
//
// The chains live in the process's memory and are lost on exit. Nothing on
// them has value: transactions are signed by a deployer whose key is fixed
// in this package and funded at genesis, so the factory has the same
// address on every chain and across restarts.
package evmsim

import (
	"context"
	"crypto/ecdsa"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"sync"
	"time"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/accounts/abi/bind/v2"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/eth/ethconfig"
	"github.com/ethereum/go-ethereum/ethclient/simulated"
	"github.com/ethereum/go-ethereum/node"

	"github.com/walletgate/walletgate/ownership"
	"github.com/walletgate/walletgate/ownership/evmcontract"
)

// contractsJSON holds the ABI and creation code of OwnerWallet and
// WalletFactory, copied from ownership/evmcontract/testdata/contracts.json.
//
//go:embed contracts.json
var contractsJSON []byte

// Transaction parameters of the deployer: a fee cap far above the simulated
// chains' base fee and room for any of the two contracts' creation.
const (
	txGas       = 3_000_000
	txGasTipCap = 1_000_000_000
	txGasFeeCap = 100_000_000_000
)

// deployerSeed derives the deployer's key. The key only pays for
// deployments on the simulated chains, where nothing has value.
const deployerSeed = "walletgate examples/server evmsim deployer"

// Chains is one simulated EVM chain per contract-account chain of a
// network, with the WalletFactory deployed on each. It is safe for
// concurrent use.
type Chains struct {
	network  ownership.Network
	rows     []ownership.ContractChain // the served chains, in table order
	chains   map[uint64]*chain
	verifier *evmcontract.Verifier
	factory  common.Address
	deployer deployer
	art      artifacts
	close    sync.Once
	closeErr error
}

// chain is one simulated chain.
type chain struct {
	row     ownership.ContractChain
	backend *simulated.Backend
	client  simulated.Client
	// mu makes one transaction at a time: nonce, send, seal the block.
	mu sync.Mutex
}

// deployer signs the chains' transactions.
type deployer struct {
	key  *ecdsa.PrivateKey
	addr common.Address
}

// New starts a simulated chain for every row of [ownership.ContractChains]
// on network, each running under the row's chain id with the deployer
// funded at genesis, and deploys the WalletFactory on each (at the same
// address on all of them). It fails when network has no contract-account
// chain (signet, regtest) or a chain does not start; the chains already
// started are closed then. Close the Chains when done.
func New(network ownership.Network) (*Chains, error) {
	art, err := loadArtifacts(contractsJSON)
	if err != nil {
		return nil, err
	}
	dk, err := crypto.ToECDSA(crypto.Keccak256([]byte(deployerSeed)))
	if err != nil {
		return nil, fmt.Errorf("evmsim: deployer key: %w", err)
	}
	c := &Chains{network: network, chains: map[uint64]*chain{}, art: art,
		deployer: deployer{key: dk, addr: crypto.PubkeyToAddress(dk.PublicKey)}}
	for _, row := range ownership.ContractChains() {
		if row.Network == network {
			c.rows = append(c.rows, row)
		}
	}
	if len(c.rows) == 0 {
		return nil, fmt.Errorf("evmsim: no account type has contract accounts on %s", network)
	}
	callers := make(map[uint64]bind.ContractCaller, len(c.rows))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i, row := range c.rows {
		b, err := newBackend(row.ChainID, c.deployer.addr)
		if err != nil {
			_ = c.Close()
			return nil, err
		}
		ch := &chain{row: row, backend: b, client: b.Client()}
		c.chains[row.ChainID] = ch
		callers[row.ChainID] = ch.client
		factory, err := ch.create(ctx, c.deployer, art.factoryCode)
		if err != nil {
			_ = c.Close()
			return nil, fmt.Errorf("evmsim: deploying the WalletFactory on %s: %w", row, err)
		}
		if i > 0 && factory != c.factory {
			_ = c.Close()
			return nil, fmt.Errorf("evmsim: the WalletFactory is at %s on %s but at %s on %s", factory, row, c.factory, c.rows[0])
		}
		c.factory = factory
	}
	if c.verifier, err = evmcontract.New(evmcontract.Config{Chains: callers}); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

// newBackend starts a simulated chain under chainID (the backend's own
// default is 1337, the chain of no account type) with funded funded. The
// backend panics when its node cannot start; that is returned as an error.
func newBackend(chainID uint64, funded common.Address) (b *simulated.Backend, err error) {
	defer func() {
		if r := recover(); r != nil {
			b, err = nil, fmt.Errorf("evmsim: starting the simulated chain %d: %v", chainID, r)
		}
	}()
	alloc := types.GenesisAlloc{funded: {Balance: new(big.Int).Lsh(big.NewInt(1), 100)}}
	return simulated.NewBackend(alloc, func(_ *node.Config, ec *ethconfig.Config) {
		cfg := *ec.Genesis.Config
		cfg.ChainID = new(big.Int).SetUint64(chainID)
		ec.Genesis.Config = &cfg
	}), nil
}

// Close stops every chain. It is safe to call more than once; later calls
// return the first call's result.
func (c *Chains) Close() error {
	c.close.Do(func() {
		var errs []error
		for _, ch := range c.chains {
			errs = append(errs, ch.backend.Close())
		}
		c.closeErr = errors.Join(errs...)
	})
	return c.closeErr
}

// ContractWallets returns the sandbox.Config.ContractWallets of the chains:
// each served account type mapped to one [evmcontract.Verifier] on all of
// them, which proves the type's contract accounts on its own chain only.
// Each call returns a new map.
func (c *Chains) ContractWallets() map[string]ownership.ContractVerifier {
	m := make(map[string]ownership.ContractVerifier, len(c.rows))
	for _, row := range c.rows {
		m[row.AccountType] = c.verifier
	}
	return m
}

// Served returns the chains, one row per account type, in the order of
// [ownership.ContractChains]. Each call returns a new slice.
func (c *Chains) Served() []ownership.ContractChain { return slices.Clone(c.rows) }

// Factory returns the address of the WalletFactory, the same on every
// chain.
func (c *Chains) Factory() common.Address { return c.factory }

// DeployOwnerWallet deploys an OwnerWallet of owner on the chain chainID
// and returns its address, which has code once this returns. Each call
// deploys a new wallet at a new address. It fails for a chain not in
// [Chains.Served] or when the deployment fails.
func (c *Chains) DeployOwnerWallet(ctx context.Context, chainID uint64, owner common.Address) (common.Address, error) {
	ch, ok := c.chains[chainID]
	if !ok {
		return common.Address{}, fmt.Errorf("evmsim: chain %d is not simulated here", chainID)
	}
	args, err := c.art.owner.Pack("", owner)
	if err != nil {
		return common.Address{}, fmt.Errorf("evmsim: OwnerWallet constructor: %w", err)
	}
	return ch.create(ctx, c.deployer, append(slices.Clone(c.art.ownerCode), args...))
}

// Counterfactual is an OwnerWallet that the WalletFactory would deploy:
// what an ERC-6492 signature of it wraps.
type Counterfactual struct {
	// Address is where the wallet would be (CREATE2 of the factory), as
	// the factory's addressOf answers.
	Address common.Address
	// Factory is the WalletFactory.
	Factory common.Address
	// FactoryCalldata is the call deploy(owner, salt) that deploys it.
	FactoryCalldata []byte
}

// Counterfactual returns the OwnerWallet of owner that the WalletFactory
// on chain chainID would deploy with salt, without deploying it. The
// address is the same on every chain. It fails for a chain not in
// [Chains.Served] or when the chain cannot answer.
func (c *Chains) Counterfactual(ctx context.Context, chainID uint64, owner common.Address, salt [32]byte) (Counterfactual, error) {
	ch, ok := c.chains[chainID]
	if !ok {
		return Counterfactual{}, fmt.Errorf("evmsim: chain %d is not simulated here", chainID)
	}
	query, err := c.art.factory.Pack("addressOf", owner, salt)
	if err != nil {
		return Counterfactual{}, fmt.Errorf("evmsim: addressOf: %w", err)
	}
	out, err := ch.client.CallContract(ctx, ethereum.CallMsg{To: &c.factory, Data: query}, nil)
	if err != nil {
		return Counterfactual{}, fmt.Errorf("evmsim: WalletFactory.addressOf on %s: %w", ch.row, err)
	}
	res, err := c.art.factory.Unpack("addressOf", out)
	if err != nil || len(res) != 1 {
		return Counterfactual{}, fmt.Errorf("evmsim: WalletFactory.addressOf on %s answered %x", ch.row, out)
	}
	addr, ok := res[0].(common.Address)
	if !ok {
		return Counterfactual{}, fmt.Errorf("evmsim: WalletFactory.addressOf on %s answered %T", ch.row, res[0])
	}
	calldata, err := c.art.factory.Pack("deploy", owner, salt)
	if err != nil {
		return Counterfactual{}, fmt.Errorf("evmsim: deploy: %w", err)
	}
	return Counterfactual{Address: addr, Factory: c.factory, FactoryCalldata: calldata}, nil
}

// create sends a contract creation with code by d, seals it in a block and
// returns the new contract's address, which must hold code.
func (ch *chain) create(ctx context.Context, d deployer, code []byte) (common.Address, error) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	nonce, err := ch.client.PendingNonceAt(ctx, d.addr)
	if err != nil {
		return common.Address{}, err
	}
	id := new(big.Int).SetUint64(ch.row.ChainID)
	tx, err := types.SignNewTx(d.key, types.LatestSignerForChainID(id), &types.DynamicFeeTx{ChainID: id, Nonce: nonce,
		GasTipCap: big.NewInt(txGasTipCap), GasFeeCap: big.NewInt(txGasFeeCap), Gas: txGas, Data: code})
	if err != nil {
		return common.Address{}, err
	}
	if err := ch.client.SendTransaction(ctx, tx); err != nil {
		return common.Address{}, err
	}
	ch.backend.Commit()
	r, err := ch.client.TransactionReceipt(ctx, tx.Hash())
	if err != nil {
		return common.Address{}, err
	}
	if r.Status != types.ReceiptStatusSuccessful {
		return common.Address{}, fmt.Errorf("the creation transaction %s failed", tx.Hash())
	}
	deployed, err := ch.client.CodeAt(ctx, r.ContractAddress, nil)
	if err != nil {
		return common.Address{}, err
	}
	if len(deployed) == 0 {
		return common.Address{}, fmt.Errorf("the creation transaction %s left no code at %s", tx.Hash(), r.ContractAddress)
	}
	return r.ContractAddress, nil
}

// artifacts are the parsed contracts.json.
type artifacts struct {
	owner, factory         abi.ABI
	ownerCode, factoryCode []byte
}

// compiled is the layout of contracts.json (that of
// ownership/evmcontract/testdata/contracts.json, with two contracts).
type compiled struct {
	Compiler  string                      `json:"compiler"`
	Settings  json.RawMessage             `json:"settings"`
	Contracts map[string]compiledContract `json:"contracts"`
}

type compiledContract struct {
	Source   string          `json:"source"`
	ABI      json.RawMessage `json:"abi"`
	Bytecode string          `json:"bytecode"`
}

// Names of the contracts in contracts.json.
const (
	ownerWalletName   = "OwnerWallet"
	walletFactoryName = "WalletFactory"
)

// loadArtifacts parses contracts.json: both contracts must be there with
// an ABI and creation code.
func loadArtifacts(raw []byte) (artifacts, error) {
	var c compiled
	if err := json.Unmarshal(raw, &c); err != nil {
		return artifacts{}, fmt.Errorf("evmsim: contracts.json: %w", err)
	}
	var a artifacts
	for _, x := range []struct {
		name string
		abi  *abi.ABI
		code *[]byte
	}{{ownerWalletName, &a.owner, &a.ownerCode}, {walletFactoryName, &a.factory, &a.factoryCode}} {
		cc, ok := c.Contracts[x.name]
		if !ok {
			return artifacts{}, fmt.Errorf("evmsim: contracts.json has no %s", x.name)
		}
		parsed, err := abi.JSON(strings.NewReader(string(cc.ABI)))
		if err != nil {
			return artifacts{}, fmt.Errorf("evmsim: contracts.json: the ABI of %s: %w", x.name, err)
		}
		code, err := hex.DecodeString(strings.TrimPrefix(cc.Bytecode, "0x"))
		if err != nil || len(code) == 0 {
			return artifacts{}, fmt.Errorf("evmsim: contracts.json: %s has no creation code", x.name)
		}
		*x.abi, *x.code = parsed, code
	}
	return a, nil
}

package evmcontract_test

import (
	"context"
	"crypto/ecdsa"
	"encoding/hex"
	"encoding/json"
	"math/big"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/eth/ethconfig"
	"github.com/ethereum/go-ethereum/ethclient/simulated"
	"github.com/ethereum/go-ethereum/node"

	"github.com/walletgate/walletgate/ownership"
)

// compiled is testdata/contracts.json, written by testdata/build.js.
type compiled struct {
	Compiler  string `json:"compiler"`
	Contracts map[string]struct {
		ABI      json.RawMessage `json:"abi"`
		Bytecode string          `json:"bytecode"`
	} `json:"contracts"`
}

func loadContracts(tb testing.TB) compiled {
	tb.Helper()
	b, err := os.ReadFile("testdata/contracts.json")
	if err != nil {
		tb.Fatal(err)
	}
	var c compiled
	if err := json.Unmarshal(b, &c); err != nil {
		tb.Fatal(err)
	}
	return c
}

func (c compiled) abi(tb testing.TB, name string) abi.ABI {
	tb.Helper()
	a, err := abi.JSON(strings.NewReader(string(c.Contracts[name].ABI)))
	if err != nil {
		tb.Fatal(err)
	}
	return a
}

func (c compiled) code(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := hex.DecodeString(strings.TrimPrefix(c.Contracts[name].Bytecode, "0x"))
	if err != nil || len(b) == 0 {
		tb.Fatalf("no bytecode for %s", name)
	}
	return b
}

// testChain is a simulated EVM chain with the test contracts' deployer
// funded.
type testChain struct {
	id       uint64
	backend  *simulated.Backend
	client   simulated.Client
	deployer *ecdsa.PrivateKey
	c        compiled
}

// Fixed keys, so that two chains deploy the same contracts at the same
// addresses (same deployer, same nonces).
var (
	deployerKey, _ = crypto.HexToECDSA("8a1f9a8f95be41cd7ccb6168179afb4504aefe388d1e14474d32c45c72ce7b7a")
	ownerKey, _    = crypto.HexToECDSA("4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318")
	strangerKey, _ = crypto.HexToECDSA("ae6ae8e5ccbfb04590405997ee2d52d2b330726137b875053c36d94e974d162f")
)

// withChainID sets the simulated chain's id (the backend defaults to 1337).
func withChainID(id uint64) func(*node.Config, *ethconfig.Config) {
	return func(_ *node.Config, ec *ethconfig.Config) {
		cfg := *ec.Genesis.Config
		cfg.ChainID = new(big.Int).SetUint64(id)
		ec.Genesis.Config = &cfg
	}
}

func newChain(tb testing.TB, id uint64) *testChain {
	tb.Helper()
	alloc := types.GenesisAlloc{crypto.PubkeyToAddress(deployerKey.PublicKey): {Balance: new(big.Int).Lsh(big.NewInt(1), 100)}}
	b := simulated.NewBackend(alloc, withChainID(id))
	tb.Cleanup(func() { b.Close() })
	return &testChain{id: id, backend: b, client: b.Client(), deployer: deployerKey, c: loadContracts(tb)}
}

// deploy deploys contract name with constructor arguments args and returns
// its address.
func (ch *testChain) deploy(tb testing.TB, name string, args ...any) common.Address {
	tb.Helper()
	ctx := context.Background()
	input, err := ch.c.abi(tb, name).Pack("", args...)
	if err != nil {
		tb.Fatal(err)
	}
	from := crypto.PubkeyToAddress(ch.deployer.PublicKey)
	nonce, err := ch.client.PendingNonceAt(ctx, from)
	if err != nil {
		tb.Fatal(err)
	}
	tx := types.NewTx(&types.DynamicFeeTx{ChainID: new(big.Int).SetUint64(ch.id), Nonce: nonce, GasTipCap: big.NewInt(1e9),
		GasFeeCap: big.NewInt(1e11), Gas: 3_000_000, Data: append(ch.c.code(tb, name), input...)})
	signed, err := types.SignTx(tx, types.LatestSignerForChainID(tx.ChainId()), ch.deployer)
	if err != nil {
		tb.Fatal(err)
	}
	if err := ch.client.SendTransaction(ctx, signed); err != nil {
		tb.Fatal(err)
	}
	ch.backend.Commit()
	r, err := ch.client.TransactionReceipt(ctx, signed.Hash())
	if err != nil || r.Status != types.ReceiptStatusSuccessful {
		tb.Fatalf("deploy %s: receipt %+v, %v", name, r, err)
	}
	return r.ContractAddress
}

// call makes an eth_call of method on contract to and unpacks its outputs.
func (ch *testChain) call(tb testing.TB, name string, to common.Address, method string, args ...any) []any {
	tb.Helper()
	a := ch.c.abi(tb, name)
	input, err := a.Pack(method, args...)
	if err != nil {
		tb.Fatal(err)
	}
	out, err := ch.client.CallContract(context.Background(), ethereum.CallMsg{To: &to, Data: input}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	res, err := a.Unpack(method, out)
	if err != nil {
		tb.Fatal(err)
	}
	return res
}

// counterfactual returns the address factory would deploy owner's wallet
// with salt at, and the factory call that deploys it.
func (ch *testChain) counterfactual(tb testing.TB, factory common.Address, owner common.Address, salt [32]byte) (common.Address, []byte) {
	tb.Helper()
	addr := ch.call(tb, "WalletFactory", factory, "addressOf", owner, salt)[0].(common.Address)
	calldata, err := ch.c.abi(tb, "WalletFactory").Pack("deploy", owner, salt)
	if err != nil {
		tb.Fatal(err)
	}
	return addr, calldata
}

// sign is an EIP-191 personal_sign of message by key, as wallets return it:
// hex r‖s‖v with v 27 or 28.
func sign(tb testing.TB, key *ecdsa.PrivateKey, message string) []byte {
	tb.Helper()
	h := ownership.EVMMessageHash([]byte(message))
	sig, err := crypto.Sign(h[:], key)
	if err != nil {
		tb.Fatal(err)
	}
	sig[64] += 27
	return sig
}

// wrap6492 is an ERC-6492 wrapped signature, encoded with go-ethereum's ABI
// encoder: abi.encode(factory, calldata, sig) ‖ 0x6492…6492.
func wrap6492(tb testing.TB, factory common.Address, calldata, sig []byte) []byte {
	tb.Helper()
	ty := func(s string) abi.Type {
		t, err := abi.NewType(s, "", nil)
		if err != nil {
			tb.Fatal(err)
		}
		return t
	}
	enc, err := abi.Arguments{{Type: ty("address")}, {Type: ty("bytes")}, {Type: ty("bytes")}}.Pack(factory, calldata, sig)
	if err != nil {
		tb.Fatal(err)
	}
	suffix, _ := hex.DecodeString(strings.Repeat("6492", 16))
	return append(enc, suffix...)
}

// switchable is a node that can go down: while down, every call blocks
// until its context ends, as a node that stopped answering does.
type switchable struct {
	simulated.Client
	down atomic.Bool
}

func (s *switchable) CallContract(ctx context.Context, msg ethereum.CallMsg, block *big.Int) ([]byte, error) {
	if s.down.Load() {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return s.Client.CallContract(ctx, msg, block)
}

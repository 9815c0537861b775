package evmcontract

import (
	"context"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/accounts/abi/bind/v2"
	"github.com/ethereum/go-ethereum/common"
	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/ownership"
)

// Defaults of [Config].
const (
	// DefaultCallTimeout bounds the node calls of one verification.
	DefaultCallTimeout = 5 * time.Second
	// DefaultGasCap is the gas of the one eth_call of a verification:
	// room for a multisig's checks or a passkey's P-256 verification in
	// the EVM, plus an ERC-6492 factory deployment.
	DefaultGasCap = 5_000_000
)

// MaxSignatureBytes bounds a decoded signature, wrapper included. Larger
// ones are refused before any node call.
const MaxSignatureBytes = 16 << 10

// ErrNode is the cause of every 500 that the node, not the signature,
// decided: the node is unreachable, too slow, answered an error or serves
// another chain. Test with errors.Is; the node's own error is wrapped too.
var ErrNode = errors.New("evmcontract: the EVM node could not check the signature")

// Config configures a [Verifier].
type Config struct {
	// Chains maps each EVM chain id the verifier serves to the host's
	// access to a node of that chain: an *ethclient.Client, a simulated
	// backend's client, or any bind.ContractCaller. Only CallContract is
	// used (eth_call at the latest block, never a transaction). When the
	// caller also has ChainID(ctx) (*big.Int, error), as ethclient does,
	// the node's chain id is checked once before its first answer is
	// trusted, and a node of another chain answers 500. Required: at least
	// one chain, each the chain of an account type in
	// [ownership.ContractChains] (8453 for Base, 1 for Ethereum, ...; a
	// simulated chain in a test runs under one of these ids) with a non-nil
	// caller. Which account types the verifier proves is the host's
	// [ownership.Verifiers]: register it under each type whose chain is
	// here, and [ownership.New] refuses it under any other.
	Chains map[uint64]bind.ContractCaller
	// CallTimeout bounds the node calls of one verification (a context
	// deadline, within the caller's own); zero means DefaultCallTimeout.
	CallTimeout time.Duration
	// GasCap is the gas given to the eth_call; zero means DefaultGasCap.
	// A contract that needs more answers as if it had refused.
	GasCap uint64
}

// Verifier proves control of EVM contract accounts: EIP-1271 wallets and
// ERC-6492 wrapped signatures of accounts not deployed yet, on the chains
// of its [Config]. It is an [ownership.ContractVerifier]: register it in
// [ownership.Verifiers] for the EVM account types whose contract accounts
// it should prove, each of which it must serve the chain of
// ([ownership.ContractChainFor]). It is safe for concurrent use.
//
// The hash a contract is asked about is [ownership.EVMMessageHash] of the
// challenge message, the EIP-191 digest an externally owned account signs.
// A wallet without [ownership.Wallet.ChainID] is an externally owned
// account and is checked by [ownership.EVMVerifier] alone, without a node.
//
// A contract account is checked only on the chain of its account type on
// its network: a [ownership.Wallet] whose ChainID is not
// [ownership.ContractChainFor] of its AccountType and Network is refused
// with 400 before any node is asked, whatever chains the verifier serves.
//
// For a contract account, Verify makes one eth_call without a recipient
// whose data is the creation code of a checking contract and its arguments
// (ERC-6492's off-chain validation; nothing is deployed or sent). Within
// that call:
//
//   - a signature ending in ERC-6492's suffix is unwrapped (the canonical
//     abi.encode(factory, factoryCalldata, signature)); when the address
//     has no code, the factory is called with factoryCalldata first;
//   - when the address has code, isValidSignature(hash, signature) must
//     return exactly the EIP-1271 magic value 0x1626ba7e (a 32-byte word
//     0x1626ba7e00…00);
//   - when the address has no code and the signature is not wrapped, the
//     account is an externally owned one: [ownership.EVMVerifier] checks
//     the signature, exactly as for any EOA.
//
// Errors: 400 INVALID_INPUT with details.reason, caused by
// [ownership.ErrMalformed] (a chain id that is not the account type's
// chain, not hex, too long, a malformed wrapper, an invalid address) or [ownership.ErrMismatch] (the contract answered
// another value or reverted, the factory call failed or deployed nothing,
// or the EOA signature does not match; a contract that spends more than
// GasCap counts as reverted). 500 INTERNAL_ERROR with
// details.reason, caused by [ErrNode], when the chain has no node here,
// the node fails, serves another chain or exceeds CallTimeout: the user's
// signature was not judged, so [ownership.Service.Verify] leaves the
// challenge outstanding.
type Verifier struct {
	chains  map[uint64]*chain
	timeout time.Duration
	gasCap  uint64
}

// chain is one configured chain.
type chain struct {
	id     uint64
	caller bind.ContractCaller
	// checked is set once the node's chain id matched (or it cannot
	// report one).
	checked atomic.Bool
}

// New returns a verifier for cfg. It refuses a Config without chains, with
// a chain id that is no account type's chain in [ownership.ContractChains],
// or with a nil caller.
func New(cfg Config) (*Verifier, error) {
	if len(cfg.Chains) == 0 {
		return nil, errors.New("evmcontract: Config.Chains is required")
	}
	known := map[uint64]bool{}
	for _, c := range ownership.ContractChains() {
		known[c.ChainID] = true
	}
	v := &Verifier{chains: make(map[uint64]*chain, len(cfg.Chains)), timeout: cfg.CallTimeout, gasCap: cfg.GasCap}
	for id, c := range cfg.Chains {
		if !known[id] {
			return nil, fmt.Errorf("evmcontract: chain %d in Config.Chains is not the chain of any account type (see ownership.ContractChains)", id)
		}
		if c == nil {
			return nil, fmt.Errorf("evmcontract: chain %d has no caller", id)
		}
		v.chains[id] = &chain{id: id, caller: c}
	}
	if v.timeout <= 0 {
		v.timeout = DefaultCallTimeout
	}
	if v.gasCap == 0 {
		v.gasCap = DefaultGasCap
	}
	return v, nil
}

// ServesChain implements [ownership.ContractVerifier]: chainID is in
// Config.Chains. A nil *Verifier serves none.
func (v *Verifier) ServesChain(chainID uint64) bool {
	if v == nil {
		return false
	}
	_, ok := v.chains[chainID]
	return ok
}

// ValidateAddress implements [ownership.AddressValidator] with the EVM
// address rule of [ownership.EVMVerifier].
func (v *Verifier) ValidateAddress(w ownership.Wallet) error {
	return ownership.EVMVerifier{}.ValidateAddress(w)
}

// Verify implements [ownership.Verifier]; see [Verifier] for the checks.
func (v *Verifier) Verify(ctx context.Context, w ownership.Wallet, message []byte, sig ownership.Signature) error {
	eoa := ownership.Wallet{AccountType: w.AccountType, Address: w.Address, Network: w.Network}
	if w.ChainID == 0 {
		return ownership.EVMVerifier{}.Verify(ctx, eoa, message, sig)
	}
	if want, ok := ownership.ContractChainFor(w.AccountType, w.Network); !ok || want.ChainID != w.ChainID {
		return refusal(ownership.ErrMalformed, "chain "+strconv.FormatUint(w.ChainID, 10)+" is not the contract-account chain of "+
			w.AccountType+" on "+w.Network.String())
	}
	c, ok := v.chains[w.ChainID]
	if !ok {
		return nodeFailure("no EVM node is configured for chain "+strconv.FormatUint(w.ChainID, 10), nil)
	}
	if err := v.ValidateAddress(eoa); err != nil {
		return err
	}
	signer := common.HexToAddress(strings.TrimSpace(w.Address))
	raw, err := decodeSignature(sig.Value)
	if err != nil {
		return err
	}
	var factory common.Address
	calldata, inner := []byte{}, raw
	switch wr, err := unwrap(raw); {
	case err == nil:
		factory, calldata, inner = wr.Factory, wr.FactoryCalldata, wr.Signature
	case errors.Is(err, errMalformedWrapper):
		return refusal(ownership.ErrMalformed, "the ERC-6492 wrapper is not canonical abi.encode(address, bytes, bytes)")
	}
	data, err := checkArgs.Pack(signer, ownership.EVMMessageHash(message), factory, calldata, inner)
	if err != nil {
		return apierror.Internal(err)
	}

	ctx, cancel := context.WithTimeout(ctx, v.timeout)
	defer cancel()
	if err := c.check(ctx); err != nil {
		return err
	}
	out, err := c.caller.CallContract(ctx, ethereum.CallMsg{Gas: v.gasCap, Data: append(append([]byte{}, checkCode...), data...)}, nil)
	if err != nil {
		return callFailure(ctx, w.ChainID, err)
	}
	if len(out) != 1 {
		return nodeFailure("the EVM node answered the signature check with "+strconv.Itoa(len(out))+" bytes, not 1", nil)
	}
	switch out[0] {
	case answerValid:
		return nil
	case answerOtherValue:
		return refusal(ownership.ErrMismatch, "the contract account did not return the EIP-1271 magic value")
	case answerReverted:
		return refusal(ownership.ErrMismatch, "the contract account's isValidSignature reverted or ran out of gas")
	case answerFactoryFailed:
		return refusal(ownership.ErrMismatch, "the ERC-6492 factory call reverted")
	case answerNoCode:
		return refusal(ownership.ErrMismatch, "the ERC-6492 factory call left no code at the address")
	case answerNotContract:
		return ownership.EVMVerifier{}.Verify(ctx, eoa, message, sig)
	}
	return nodeFailure("the EVM node answered the signature check with an unknown value", nil)
}

// Answers of the checking contract (testdata/contracts/SignatureCheck.sol).
const (
	answerOtherValue    = 0x00
	answerValid         = 0x01
	answerReverted      = 0x02
	answerFactoryFailed = 0x03
	answerNoCode        = 0x04
	answerNotContract   = 0x05
)

// check verifies, once, that the node serves c's chain, when it can say.
func (c *chain) check(ctx context.Context) error {
	if c.checked.Load() {
		return nil
	}
	cc, ok := c.caller.(interface {
		ChainID(context.Context) (*big.Int, error)
	})
	if ok {
		got, err := cc.ChainID(ctx)
		if err != nil {
			return callFailure(ctx, c.id, err)
		}
		if !got.IsUint64() || got.Uint64() != c.id {
			return nodeFailure("the EVM node configured for chain "+strconv.FormatUint(c.id, 10)+" serves chain "+got.String(), nil)
		}
	}
	c.checked.Store(true)
	return nil
}

// decodeSignature decodes hex (0x optional, surrounding space ignored) of
// at most MaxSignatureBytes bytes.
func decodeSignature(value string) ([]byte, error) {
	s := strings.TrimSpace(value)
	if len(s) >= 2 && (s[:2] == "0x" || s[:2] == "0X") {
		s = s[2:]
	}
	if len(s) > 2*MaxSignatureBytes {
		return nil, refusal(ownership.ErrMalformed, "signature is longer than "+strconv.Itoa(MaxSignatureBytes)+" bytes")
	}
	raw, err := hex.DecodeString(s)
	if err != nil || len(raw) == 0 {
		return nil, refusal(ownership.ErrMalformed, "signature is not hex")
	}
	return raw, nil
}

// refusal is the 400 of a signature the user must fix.
func refusal(cause error, reason string) error {
	return apierror.New(apierror.InvalidInput, "invalid wallet signature: %s", reason).
		WithDetail("reason", reason).WithCause(cause)
}

// nodeFailure is the 500 of a check the node could not make.
func nodeFailure(reason string, err error) error {
	cause := ErrNode
	if err != nil {
		cause = fmt.Errorf("%w: %w", ErrNode, err)
	}
	return apierror.New(apierror.InternalError, "the wallet signature could not be checked: %s", reason).
		WithDetail("reason", reason).WithCause(cause)
}

// callFailure is nodeFailure for an error of a node call. A *url.Error is
// replaced by the error it wraps: its text holds the node's URL, which
// often carries the provider's API key, and the cause reaches the host's
// logs through Error().
func callFailure(ctx context.Context, chainID uint64, err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	id := strconv.FormatUint(chainID, 10)
	if ctx.Err() != nil {
		return nodeFailure("the EVM node for chain "+id+" did not answer in time", err)
	}
	return nodeFailure("the EVM node for chain "+id+" failed", err)
}

// checkJSON is the compiled checking contract, written by testdata/build.js.
//
//go:embed signaturecheck.json
var checkJSON []byte

// checkCode is the creation code of the checking contract; checkArgs are
// its constructor's parameters.
var (
	checkCode = mustCheckCode()
	checkArgs = abi.Arguments{{Type: abiType("address")}, {Type: abiType("bytes32")}, {Type: abiType("address")},
		{Type: abiType("bytes")}, {Type: abiType("bytes")}}
)

func mustCheckCode() []byte {
	var c struct {
		Bytecode string `json:"bytecode"`
	}
	if err := json.Unmarshal(checkJSON, &c); err != nil {
		panic("evmcontract: signaturecheck.json: " + err.Error())
	}
	code, err := hex.DecodeString(strings.TrimPrefix(c.Bytecode, "0x"))
	if err != nil || len(code) == 0 {
		panic("evmcontract: signaturecheck.json has no bytecode")
	}
	return code
}

func abiType(name string) abi.Type {
	t, err := abi.NewType(name, "", nil)
	if err != nil {
		panic(err)
	}
	return t
}

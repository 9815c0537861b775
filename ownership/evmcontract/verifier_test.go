package evmcontract_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/accounts/abi/bind/v2"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/ownership"
	"github.com/walletgate/walletgate/ownership/evmcontract"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/memory"
)

// harness is an ownership service on mainnet whose wallets of some EVM
// types (Ethereum unless named) are checked by an evmcontract.Verifier
// against simulated chains.
type harness struct {
	svc   *ownership.Service
	store storage.Store
}

var testNow = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

func newHarness(t *testing.T, cfg evmcontract.Config) *harness {
	t.Helper()
	return newHarnessFor(t, cfg, ownership.AccountEthereum)
}

// newHarnessFor is newHarness with the verifier registered for types.
func newHarnessFor(t *testing.T, cfg evmcontract.Config, types ...string) *harness {
	t.Helper()
	cv, err := evmcontract.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	vs := ownership.DefaultVerifiers()
	for _, typ := range types {
		vs[typ] = cv
	}
	store := memory.New()
	svc, err := ownership.New(ownership.Config{Store: store, Verifiers: vs, Service: "payments.example.com",
		Payouts: ownership.PayoutPolicy{MaxAmounts: ownership.Limits{ByCurrency: map[string]int64{"USDC": 1 << 40}}},
		Clock:   func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	return &harness{svc: svc, store: store}
}

// register registers a FIRST_PARTY Ethereum wallet at addr as a contract
// account on chainID and returns it.
func (h *harness) register(t *testing.T, addr common.Address, chainID uint64) *storage.ExternalAccount {
	t.Helper()
	a, err := h.registerAs(t, ownership.AccountEthereum, addr, chainID)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// registerAs registers a FIRST_PARTY wallet of typ at addr as a contract
// account on chainID.
func (h *harness) registerAs(t *testing.T, typ string, addr common.Address, chainID uint64) (*storage.ExternalAccount, error) {
	t.Helper()
	return h.svc.RegisterAccount(t.Context(), ownership.NewAccount{CustomerID: "Customer:1", AccountType: typ,
		Address: addr.Hex(), Currency: "USDC", OwnershipType: ownership.FirstParty, Info: contractInfo(typ, addr, chainID)})
}

func contractInfo(typ string, addr common.Address, chainID uint64) json.RawMessage {
	return json.RawMessage(`{"accountType":"` + typ + `","address":"` + addr.Hex() + `","contractAccount":{"chainId":` +
		strconv.FormatUint(chainID, 10) + `}}`)
}

// challenge starts a WALLET_SIGNATURE challenge and returns its message.
func (h *harness) challenge(t *testing.T, id string) string {
	t.Helper()
	c, err := h.svc.StartChallenge(t.Context(), id, ownership.MethodWalletSignature, ownership.CustomerTree)
	if err != nil {
		t.Fatal(err)
	}
	return c.MessageToSign
}

func (h *harness) verify(t *testing.T, id string, sig []byte) (*storage.ExternalAccount, error) {
	t.Helper()
	return h.svc.Verify(t.Context(), id, ownership.VerifyRequest{Signature: "0x" + hex.EncodeToString(sig)}, ownership.CustomerTree)
}

func (h *harness) status(t *testing.T, id string) storage.AccountStatus {
	t.Helper()
	var a storage.ExternalAccount
	err := h.store.Atomic(t.Context(), func(tx storage.Tx) error {
		var err error
		a, err = tx.ExternalAccounts().Get(t.Context(), id)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return a.Status
}

func TestContractWalletProofs(t *testing.T) {
	ch := newChain(t, 1)
	owner := crypto.PubkeyToAddress(ownerKey.PublicKey)
	wallet := ch.deploy(t, "OwnerWallet", owner)
	reverting := ch.deploy(t, "RevertingWallet")
	other := ch.deploy(t, "OtherValueWallet", owner)
	factory := ch.deploy(t, "WalletFactory")
	h := newHarness(t, evmcontract.Config{Chains: map[uint64]bind.ContractCaller{ch.id: ch.client}})

	burner := ch.deploy(t, "GasBurningWallet")
	t.Run("deployed EIP-1271 wallet", func(t *testing.T) {
		a := h.register(t, wallet, ch.id)
		if a.Status != storage.StatusPendingOwnershipVerification {
			t.Fatalf("starting status %s", a.Status)
		}
		msg := h.challenge(t, a.ID)
		got, err := h.verify(t, a.ID, sign(t, ownerKey, msg))
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != storage.StatusActive {
			t.Fatalf("status %s, want ACTIVE", got.Status)
		}
	})
	t.Run("counterfactual ERC-6492 wallet", func(t *testing.T) {
		addr, calldata := ch.counterfactual(t, factory, owner, [32]byte{1})
		a := h.register(t, addr, ch.id)
		msg := h.challenge(t, a.ID)
		if _, err := h.verify(t, a.ID, wrap6492(t, factory, calldata, sign(t, ownerKey, msg))); err != nil {
			t.Fatal(err)
		}
		if h.status(t, a.ID) != storage.StatusActive {
			t.Fatal("not ACTIVE")
		}
		code, err := ch.client.CodeAt(t.Context(), addr, nil)
		if err != nil || len(code) != 0 {
			t.Fatalf("the proof deployed the wallet (%d bytes of code, %v); it must only simulate", len(code), err)
		}
	})
	t.Run("wrapped signature of a deployed wallet", func(t *testing.T) {
		// The wallet has code, so the factory is not called (its call would
		// deploy another address) and the wallet is asked with the inner
		// signature.
		_, calldata := ch.counterfactual(t, factory, owner, [32]byte{2})
		a := h.register(t, wallet, ch.id)
		msg := h.challenge(t, a.ID)
		if _, err := h.verify(t, a.ID, wrap6492(t, factory, calldata, sign(t, ownerKey, msg))); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("EOA fallback", func(t *testing.T) {
		a := h.register(t, owner, ch.id)
		msg := h.challenge(t, a.ID)
		if _, err := h.verify(t, a.ID, sign(t, ownerKey, msg)); err != nil {
			t.Fatal(err)
		}
	})

	refusals := []struct {
		name   string
		addr   func(t *testing.T) common.Address
		sig    func(t *testing.T, msg string) []byte
		reason string
	}{
		{"wrong owner", func(*testing.T) common.Address { return wallet },
			func(t *testing.T, msg string) []byte { return sign(t, strangerKey, msg) },
			"the contract account did not return the EIP-1271 magic value"},
		{"reverting contract", func(*testing.T) common.Address { return reverting },
			func(t *testing.T, msg string) []byte { return sign(t, ownerKey, msg) },
			"the contract account's isValidSignature reverted or ran out of gas"},
		{"contract returning another value", func(*testing.T) common.Address { return other },
			func(t *testing.T, msg string) []byte { return sign(t, ownerKey, msg) },
			"the contract account did not return the EIP-1271 magic value"},
		{"counterfactual wallet of another owner", func(t *testing.T) common.Address {
			addr, _ := ch.counterfactual(t, factory, owner, [32]byte{3})
			return addr
		}, func(t *testing.T, msg string) []byte {
			_, calldata := ch.counterfactual(t, factory, owner, [32]byte{3})
			return wrap6492(t, factory, calldata, sign(t, strangerKey, msg))
		}, "the contract account did not return the EIP-1271 magic value"},
		{"factory call deploying another address", func(t *testing.T) common.Address {
			addr, _ := ch.counterfactual(t, factory, owner, [32]byte{4})
			return addr
		}, func(t *testing.T, msg string) []byte {
			_, calldata := ch.counterfactual(t, factory, owner, [32]byte{5})
			return wrap6492(t, factory, calldata, sign(t, ownerKey, msg))
		}, "the ERC-6492 factory call left no code at the address"},
		{"factory call reverting", func(t *testing.T) common.Address {
			addr, _ := ch.counterfactual(t, factory, owner, [32]byte{6})
			return addr
		}, func(t *testing.T, msg string) []byte {
			return wrap6492(t, reverting, []byte{0xde, 0xad}, sign(t, ownerKey, msg))
		}, "the ERC-6492 factory call reverted"},
		{"contract exceeding the gas cap", func(*testing.T) common.Address { return burner },
			func(t *testing.T, msg string) []byte { return sign(t, ownerKey, msg) },
			"the contract account's isValidSignature reverted or ran out of gas"},
		{"EOA fallback with another key", func(*testing.T) common.Address { return owner },
			func(t *testing.T, msg string) []byte { return sign(t, strangerKey, msg) },
			"recovered address does not match"},
		{"malformed wrapper", func(*testing.T) common.Address { return wallet },
			func(t *testing.T, msg string) []byte {
				w := wrap6492(t, factory, []byte{1}, sign(t, ownerKey, msg))
				w[40] = 1 // the first offset
				return w
			}, "the ERC-6492 wrapper is not canonical abi.encode(address, bytes, bytes)"},
	}
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			a := h.register(t, tc.addr(t), ch.id)
			msg := h.challenge(t, a.ID)
			_, err := h.verify(t, a.ID, tc.sig(t, msg))
			e := apierrortest.Want(t, err, apierror.InvalidInput, tc.reason)
			if !errors.Is(e, ownership.ErrMismatch) && !errors.Is(e, ownership.ErrMalformed) {
				t.Fatalf("%v: no ownership cause", err)
			}
			if got := h.status(t, a.ID); got != storage.StatusUnverified {
				t.Fatalf("status %s, want UNVERIFIED", got)
			}
		})
	}
}

// TestContractWalletChainBinding: a proof made for a wallet on one chain
// is refused for the same wallet address on another chain, although the
// contract there (same code, same owner, same address) accepts any
// signature of its owner over any hash.
func TestContractWalletChainBinding(t *testing.T) {
	eth, base := newChain(t, 1), newChain(t, 8453)
	owner := crypto.PubkeyToAddress(ownerKey.PublicKey)
	we, wb := eth.deploy(t, "OwnerWallet", owner), base.deploy(t, "OwnerWallet", owner)
	if we != wb {
		t.Fatalf("the wallets differ: %s on %d, %s on %d", we, eth.id, wb, base.id)
	}
	h := newHarnessFor(t, evmcontract.Config{Chains: map[uint64]bind.ContractCaller{eth.id: eth.client, base.id: base.client}},
		ownership.AccountEthereum, ownership.AccountBase)
	onEth := h.register(t, we, eth.id)
	onBase, err := h.registerAs(t, ownership.AccountBase, wb, base.id)
	if err != nil {
		t.Fatal(err)
	}
	msgEth, msgBase := h.challenge(t, onEth.ID), h.challenge(t, onBase.ID)
	if !containsLine(msgEth, "Chain ID: 1") || !containsLine(msgBase, "Chain ID: 8453") {
		t.Fatalf("the messages do not name their chains:\n%s\n---\n%s", msgEth, msgBase)
	}
	_, err = h.verify(t, onBase.ID, sign(t, ownerKey, msgEth))
	apierrortest.Want(t, err, apierror.InvalidInput, "the contract account did not return the EIP-1271 magic value")
	if _, err := h.verify(t, onEth.ID, sign(t, ownerKey, msgEth)); err != nil {
		t.Fatal(err)
	}
}

// TestContractAccountOnAnotherTypesChain: a BASE_WALLET is proven on Base
// only. Registered with Ethereum's chain id, where the same address may
// hold code that another party controls, it is refused, although the
// verifier has an Ethereum node and the Ethereum contract would accept the
// proof; and the verifier itself refuses a BASE_WALLET on chain 1 without
// asking the node.
func TestContractAccountOnAnotherTypesChain(t *testing.T) {
	eth, base := newChain(t, 1), newChain(t, 8453)
	attacker := crypto.PubkeyToAddress(strangerKey.PublicKey)
	wallet := eth.deploy(t, "OwnerWallet", attacker) // the address's code on Ethereum belongs to the attacker
	cfg := evmcontract.Config{Chains: map[uint64]bind.ContractCaller{eth.id: eth.client, base.id: base.client}}
	h := newHarnessFor(t, cfg, ownership.AccountEthereum, ownership.AccountBase)

	_, err := h.registerAs(t, ownership.AccountBase, wallet, eth.id)
	apierrortest.WantFields(t, err, apierror.InvalidInput, "accountInfo.contractAccount.chainId")
	_, err = h.registerAs(t, ownership.AccountEthereum, wallet, base.id)
	apierrortest.WantFields(t, err, apierror.InvalidInput, "accountInfo.contractAccount.chainId")

	cv, err := evmcontract.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	const message = "payments.example.com asks you to prove that you control this wallet.\nChain ID: 1"
	sig := ownership.Signature{Value: "0x" + hex.EncodeToString(sign(t, strangerKey, message))}
	if err := cv.Verify(t.Context(), ownership.Wallet{AccountType: ownership.AccountEthereum, Address: wallet.Hex(), ChainID: eth.id},
		[]byte(message), sig); err != nil {
		t.Fatalf("the Ethereum contract does not accept its owner's proof: %v", err)
	}
	for _, w := range []ownership.Wallet{
		{AccountType: ownership.AccountBase, Address: wallet.Hex(), ChainID: eth.id},
		{AccountType: ownership.AccountBase, Address: wallet.Hex(), ChainID: eth.id, Network: ownership.Testnet},
		{AccountType: ownership.AccountEthereum, Address: wallet.Hex(), ChainID: eth.id, Network: ownership.Testnet},
		{AccountType: ownership.AccountSolana, Address: wallet.Hex(), ChainID: eth.id},
	} {
		err := cv.Verify(t.Context(), w, []byte(message), sig)
		e := apierrortest.Want(t, err, apierror.InvalidInput,
			"chain 1 is not the contract-account chain of "+w.AccountType+" on "+w.Network.String())
		if !errors.Is(e, ownership.ErrMalformed) {
			t.Fatalf("%+v: %v is not caused by ErrMalformed", w, err)
		}
	}
}

func containsLine(text, line string) bool {
	for len(text) > 0 {
		i := 0
		for i < len(text) && text[i] != '\n' {
			i++
		}
		if text[:i] == line {
			return true
		}
		if i == len(text) {
			break
		}
		text = text[i+1:]
	}
	return false
}

// TestNodeTimeoutKeepsChallenge: a node that does not answer within
// CallTimeout is the service's failure, not the user's: 500 with a reason,
// the account unchanged and the challenge still outstanding, so the same
// signature succeeds once the node answers again.
func TestNodeTimeoutKeepsChallenge(t *testing.T) {
	ch := newChain(t, 1)
	owner := crypto.PubkeyToAddress(ownerKey.PublicKey)
	wallet := ch.deploy(t, "OwnerWallet", owner)
	node := &switchable{Client: ch.client}
	// Long enough for the node that is up to answer on a loaded machine;
	// the node that is down never answers, so the call takes all of it.
	h := newHarness(t, evmcontract.Config{Chains: map[uint64]bind.ContractCaller{ch.id: node}, CallTimeout: time.Second})
	a := h.register(t, wallet, ch.id)
	sig := sign(t, ownerKey, h.challenge(t, a.ID))

	node.down.Store(true)
	start := time.Now()
	_, err := h.verify(t, a.ID, sig)
	e := apierrortest.Want(t, err, apierror.InternalError, "the EVM node for chain 1 did not answer in time")
	if !errors.Is(e, evmcontract.ErrNode) || !errors.Is(e, context.DeadlineExceeded) {
		t.Fatalf("cause of %v is not ErrNode and the deadline", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the call took %v; CallTimeout is 1s", d)
	}
	if got := h.status(t, a.ID); got != storage.StatusPendingOwnershipVerification {
		t.Fatalf("status %s after a node failure", got)
	}

	node.down.Store(false)
	got, err := h.verify(t, a.ID, sig)
	if err != nil {
		t.Fatalf("the challenge did not survive the node failure: %v", err)
	}
	if got.Status != storage.StatusActive {
		t.Fatalf("status %s", got.Status)
	}
}

// TestNodeOfAnotherChain: a node configured under the wrong chain id is
// caught before its answer is trusted.
func TestNodeOfAnotherChain(t *testing.T) {
	ch := newChain(t, 1337)
	owner := crypto.PubkeyToAddress(ownerKey.PublicKey)
	wallet := ch.deploy(t, "OwnerWallet", owner)
	h := newHarness(t, evmcontract.Config{Chains: map[uint64]bind.ContractCaller{1: ch.client}})
	a := h.register(t, wallet, 1)
	sig := sign(t, ownerKey, h.challenge(t, a.ID))
	_, err := h.verify(t, a.ID, sig)
	apierrortest.Want(t, err, apierror.InternalError, "the EVM node configured for chain 1 serves chain 1337")
	if got := h.status(t, a.ID); got != storage.StatusPendingOwnershipVerification {
		t.Fatalf("status %s after a node failure", got)
	}
}

func TestRegistration(t *testing.T) {
	ch := newChain(t, 1)
	h := newHarness(t, evmcontract.Config{Chains: map[uint64]bind.ContractCaller{ch.id: ch.client}})
	addr := crypto.PubkeyToAddress(ownerKey.PublicKey)
	for _, tc := range []struct {
		name, typ, info, field string
	}{
		{"chain id zero", ownership.AccountEthereum, `{"contractAccount":{"chainId":0}}`, "accountInfo.contractAccount.chainId"},
		{"chain id as a string", ownership.AccountEthereum, `{"contractAccount":{"chainId":"1"}}`, "accountInfo.contractAccount.chainId"},
		{"chain id with a fraction", ownership.AccountEthereum, `{"contractAccount":{"chainId":1.0}}`, "accountInfo.contractAccount.chainId"},
		{"chain id missing", ownership.AccountEthereum, `{"contractAccount":{}}`, "accountInfo.contractAccount.chainId"},
		{"unknown member", ownership.AccountEthereum, `{"contractAccount":{"chainId":1,"kind":"safe"}}`, "accountInfo.contractAccount.kind"},
		{"given twice", ownership.AccountEthereum, `{"contractAccount":{"chainId":1},"contractAccount":{"chainId":1}}`, "accountInfo.contractAccount"},
		{"other spelling", ownership.AccountEthereum, `{"ContractAccount":{"chainId":1}}`, "accountInfo.ContractAccount"},
		{"not an object", ownership.AccountEthereum, `{"contractAccount":true}`, "accountInfo.contractAccount"},
		{"another type's chain", ownership.AccountEthereum, `{"contractAccount":{"chainId":8453}}`, "accountInfo.contractAccount.chainId"},
		{"a local chain", ownership.AccountEthereum, `{"contractAccount":{"chainId":1337}}`, "accountInfo.contractAccount.chainId"},
		{"the testnet chain on mainnet", ownership.AccountEthereum, `{"contractAccount":{"chainId":11155111}}`, "accountInfo.contractAccount.chainId"},
		{"type without a contract verifier", ownership.AccountBase, `{"contractAccount":{"chainId":8453}}`, "accountInfo.contractAccount.chainId"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := h.svc.RegisterAccount(t.Context(), ownership.NewAccount{CustomerID: "Customer:1", AccountType: tc.typ,
				Address: addr.Hex(), Currency: "USDC", OwnershipType: ownership.FirstParty, Info: json.RawMessage(tc.info)})
			apierrortest.WantFields(t, err, apierror.InvalidInput, tc.field)
		})
	}

	// A contract account starts and is gated like any first-party
	// self-custody wallet: pending, and refused above the threshold.
	a := h.register(t, addr, ch.id)
	if a.Status != storage.StatusPendingOwnershipVerification {
		t.Fatalf("starting status %s", a.Status)
	}
	if !ownership.Gated(a) {
		t.Fatal("a first-party contract account is not gated")
	}
	policy := ownership.PayoutPolicy{VerificationThresholds: ownership.Limits{ByCurrency: map[string]int64{"USDC": 1000}},
		MaxAmounts: ownership.Limits{ByCurrency: map[string]int64{"USDC": 1_000_000}}}
	_, err := policy.Decide(a, ownership.Payout{AccountID: a.ID, Amount: 1000, Currency: "USDC"})
	apierrortest.Want(t, err, apierror.ExternalAccountVerificationRequired, "")
	if _, err := policy.Decide(a, ownership.Payout{AccountID: a.ID, Amount: 999, Currency: "USDC"}); err != nil {
		t.Fatal(err)
	}
}

// TestEOAVerifierRefusesContractAccounts: without a contract-wallet
// verifier, a contract account's proof is a configuration failure (500),
// never an EIP-191 check of the contract's address.
func TestEOAVerifierRefusesContractAccounts(t *testing.T) {
	err := ownership.EVMVerifier{}.Verify(t.Context(), ownership.Wallet{AccountType: ownership.AccountEthereum,
		Address: crypto.PubkeyToAddress(ownerKey.PublicKey).Hex(), ChainID: 1}, []byte("m"), ownership.Signature{Value: "0x00"})
	apierrortest.Want(t, err, apierror.InternalError, "contract accounts need a contract-wallet verifier")
}

func TestNewRefusesBadConfig(t *testing.T) {
	ch := newChain(t, 1337)
	for name, tc := range map[string]struct {
		cfg evmcontract.Config
		err string
	}{
		"no chains":  {evmcontract.Config{}, "evmcontract: Config.Chains is required"},
		"chain id 0": {evmcontract.Config{Chains: map[uint64]bind.ContractCaller{0: ch.client}}, "evmcontract: chain 0 in Config.Chains is not the chain of any account type (see ownership.ContractChains)"},
		"huge chain": {evmcontract.Config{Chains: map[uint64]bind.ContractCaller{1 << 63: ch.client}}, "evmcontract: chain 9223372036854775808 in Config.Chains is not the chain of any account type (see ownership.ContractChains)"},
		"a local chain": {evmcontract.Config{Chains: map[uint64]bind.ContractCaller{1: ch.client, 1337: ch.client}},
			"evmcontract: chain 1337 in Config.Chains is not the chain of any account type (see ownership.ContractChains)"},
		"nil caller": {evmcontract.Config{Chains: map[uint64]bind.ContractCaller{1: nil}}, "evmcontract: chain 1 has no caller"},
	} {
		if _, err := evmcontract.New(tc.cfg); err == nil || err.Error() != tc.err {
			t.Errorf("%s: New = %v, want %s", name, err, tc.err)
		}
	}
	// Every chain of the table is accepted, testnet chains included.
	all := map[uint64]bind.ContractCaller{}
	for _, c := range ownership.ContractChains() {
		all[c.ChainID] = ch.client
	}
	if _, err := evmcontract.New(evmcontract.Config{Chains: all}); err != nil {
		t.Fatal(err)
	}
}

// TestOwnershipRefusesVerifierOffTheTypesChain: the verifier is mapped to
// account types in ownership.Verifiers, and ownership.New refuses it under
// a type whose chain it has no node for.
func TestOwnershipRefusesVerifierOffTheTypesChain(t *testing.T) {
	cv, err := evmcontract.New(evmcontract.Config{Chains: map[uint64]bind.ContractCaller{1: newChain(t, 1).client}})
	if err != nil {
		t.Fatal(err)
	}
	vs := ownership.DefaultVerifiers()
	vs[ownership.AccountEthereum], vs[ownership.AccountBase] = cv, cv
	_, err = ownership.New(ownership.Config{Store: memory.New(), Verifiers: vs})
	const want = `ownership: the ContractVerifier of Config.Verifiers["BASE_WALLET"] does not serve Base (chain 8453), the chain of BASE_WALLET on mainnet`
	if err == nil || err.Error() != want {
		t.Fatalf("ownership.New = %v, want %s", err, want)
	}
}

// TestNodeUnreachable: a node that refuses connections is a 500 caused by
// ErrNode, and the account and its challenge are left as they were.
func TestNodeUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// Providers put the API key in the path.
	url := "http://" + l.Addr().String() + "/v3/provider-api-key-3f9c"
	l.Close() // nothing listens there any more
	client, err := ethclient.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	h := newHarness(t, evmcontract.Config{Chains: map[uint64]bind.ContractCaller{1: client}})
	wallet := common.HexToAddress("0x00000000000000000000000000000000000a11e7")
	a := h.register(t, wallet, 1)
	_, err = h.verify(t, a.ID, sign(t, ownerKey, h.challenge(t, a.ID)))
	e := apierrortest.Want(t, err, apierror.InternalError, "the EVM node for chain 1 failed")
	if !errors.Is(e, evmcontract.ErrNode) {
		t.Fatalf("cause of %v is not ErrNode", err)
	}
	if strings.Contains(e.Error(), "provider-api-key") {
		t.Fatalf("the error names the node's URL and its API key: %v", e)
	}
	if got := h.status(t, a.ID); got != storage.StatusPendingOwnershipVerification {
		t.Fatalf("status %s after a node failure", got)
	}
	// The challenge is still outstanding: verifying again reaches the node
	// again instead of answering 409 (no challenge).
	_, err = h.verify(t, a.ID, sign(t, ownerKey, "x"))
	apierrortest.Want(t, err, apierror.InternalError, "the EVM node for chain 1 failed")
}

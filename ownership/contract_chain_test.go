package ownership

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/memory"
)

// chainsVerifier is a ContractVerifier with a node on each of chains, where
// every contract accepts the signature "0xaccept": a contract that another
// party controls accepts whatever that party wants. It records the chains
// it was asked about.
type chainsVerifier struct {
	chains map[uint64]bool
	mu     sync.Mutex
	asked  []uint64
}

func newChainsVerifier(chains ...uint64) *chainsVerifier {
	v := &chainsVerifier{chains: map[uint64]bool{}}
	for _, c := range chains {
		v.chains[c] = true
	}
	return v
}

func (v *chainsVerifier) ServesChain(id uint64) bool { return v.chains[id] }

func (v *chainsVerifier) Verify(ctx context.Context, w Wallet, message []byte, sig Signature) error {
	if w.ChainID == 0 {
		return EVMVerifier{}.Verify(ctx, w, message, sig)
	}
	v.mu.Lock()
	v.asked = append(v.asked, w.ChainID)
	v.mu.Unlock()
	if !v.chains[w.ChainID] {
		return apierror.New(apierror.InternalError, "no node").WithDetail("reason", "no node")
	}
	if sig.Value != "0xaccept" {
		return mismatch("the contract account did not return the EIP-1271 magic value")
	}
	return nil
}

func (v *chainsVerifier) askedChains() []uint64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	return slices.Clone(v.asked)
}

var chainTestNow = time.Date(2026, 7, 1, 10, 0, 0, 0, time.UTC)

func newChainService(t *testing.T, vs Verifiers, network Network) (*Service, storage.Store) {
	t.Helper()
	store := memory.New()
	svc, err := New(Config{Store: store, Verifiers: vs, Network: network, Clock: func() time.Time { return chainTestNow },
		Payouts: PayoutPolicy{MaxAmounts: Limits{ByCurrency: map[string]int64{"USDC": 1 << 40}}}})
	if err != nil {
		t.Fatal(err)
	}
	return svc, store
}

const chainTestAddress = "0x52908400098527886E0F7030069857D2E4169EE7"

func contractAccount(typ string, chain uint64) NewAccount {
	return NewAccount{CustomerID: "Customer:1", AccountType: typ, Address: chainTestAddress, Currency: "USDC", OwnershipType: FirstParty,
		Info: json.RawMessage(`{"contractAccount":{"chainId":` + strconv.FormatUint(chain, 10) + `}}`)}
}

func storedAccount(t *testing.T, store storage.Store, id string) storage.ExternalAccount {
	t.Helper()
	var a storage.ExternalAccount
	if err := store.Atomic(t.Context(), func(tx storage.Tx) error {
		var err error
		a, err = tx.ExternalAccounts().Get(t.Context(), id)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return a
}

// TestContractAccountProvesOnItsTypesChainOnly: a BASE_WALLET contract
// account is proven on Base (8453) and nowhere else. Registering it on
// Ethereum (chain 1), where the code at the same address may belong to
// someone else, is refused although the service's contract verifier has an
// Ethereum node; an account stored with chain 1 (registered before the
// rule) can be neither challenged nor verified, and no node is asked.
func TestContractAccountProvesOnItsTypesChainOnly(t *testing.T) {
	cv := newChainsVerifier(1, 8453)
	vs := DefaultVerifiers()
	vs[AccountBase], vs[AccountEthereum] = cv, cv
	svc, store := newChainService(t, vs, Mainnet)
	ctx := t.Context()

	_, err := svc.RegisterAccount(ctx, contractAccount(AccountBase, 1))
	e := apierrortest.WantFields(t, err, apierror.InvalidInput, "accountInfo.contractAccount.chainId")
	if f := e.FieldErrors()[0]; f.Constraint == nil || !slices.Equal(f.Constraint.Enum, []string{"8453"}) ||
		!strings.Contains(f.Message, "Base (chain 8453)") {
		t.Fatalf("field error %+v does not name Base's chain", f)
	}
	_, err = svc.RegisterAccount(ctx, contractAccount(AccountEthereum, 8453))
	apierrortest.WantFields(t, err, apierror.InvalidInput, "accountInfo.contractAccount.chainId")

	// On its type's chain it is proven there.
	a, err := svc.RegisterAccount(ctx, contractAccount(AccountBase, 8453))
	if err != nil {
		t.Fatal(err)
	}
	c, err := svc.StartChallenge(ctx, a.ID, MethodWalletSignature, CustomerTree)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(c.MessageToSign, "\nNetwork: Base mainnet\nChain ID: 8453\n") {
		t.Fatalf("message %q does not name Base's chain", c.MessageToSign)
	}
	got, err := svc.Verify(ctx, a.ID, VerifyRequest{Signature: "0xaccept"}, CustomerTree)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != storage.StatusActive {
		t.Fatalf("status %s", got.Status)
	}
	if asked := cv.askedChains(); !slices.Equal(asked, []uint64{8453}) {
		t.Fatalf("the verifier was asked about chains %v, want [8453]", asked)
	}

	// A BASE_WALLET stored with chain 1, with a challenge the service
	// issued for it, as the service did before registration checked the
	// chain.
	legacy := storage.ExternalAccount{ID: "ExternalAccount:0b9f3c1e-7a52-4d8e-9c61-2f4a8d3e5b70", CustomerID: "Customer:1",
		OwnershipType: FirstParty, Currency: "USDC", AccountType: AccountBase, Address: chainTestAddress,
		Status: storage.StatusPendingOwnershipVerification, Info: json.RawMessage(`{"contractAccount":{"chainId":1}}`),
		CreatedAt: chainTestNow, UpdatedAt: chainTestNow}
	const reason = "the account's contractAccount.chainId 1 is not the chain of BASE_WALLET, Base (chain 8453); register the account again"
	if err := store.Atomic(ctx, func(tx storage.Tx) error { return tx.ExternalAccounts().Create(ctx, &legacy) }); err != nil {
		t.Fatal(err)
	}
	_, err = svc.StartChallenge(ctx, legacy.ID, MethodWalletSignature, CustomerTree)
	apierrortest.Want(t, err, apierror.Conflict, reason)
	ch := storage.OwnershipChallenge{ID: "Challenge:6c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f", AccountID: legacy.ID, Method: MethodWalletSignature,
		Nonce: "k3x7q2m9v4t8w1z6y5r0p3n2la", IssuedAt: chainTestNow, ExpiresAt: chainTestNow.Add(time.Hour)}
	stored := storedAccount(t, store, legacy.ID)
	ch.Message = svc.message(&stored, ch.Nonce, ch.IssuedAt, ch.ExpiresAt)
	if err := store.Atomic(ctx, func(tx storage.Tx) error { return tx.Challenges().Put(ctx, &ch) }); err != nil {
		t.Fatal(err)
	}
	_, err = svc.Verify(ctx, legacy.ID, VerifyRequest{Signature: "0xaccept"}, CustomerTree)
	apierrortest.Want(t, err, apierror.Conflict, reason)
	if st := storedAccount(t, store, legacy.ID).Status; st != storage.StatusPendingOwnershipVerification {
		t.Fatalf("the legacy account is %s", st)
	}
	if asked := cv.askedChains(); !slices.Equal(asked, []uint64{8453}) {
		t.Fatalf("the verifier was asked about chains %v; the legacy account must not reach it", asked)
	}
}

// TestContractChainsTable pins the table: every EVM account type has one
// chain on mainnet and one on testnet, no chain serves two rows, and no
// other type or network has a row.
func TestContractChainsTable(t *testing.T) {
	want := []ContractChain{
		{AccountBase, Mainnet, 8453, "Base"},
		{AccountBase, Testnet, 84532, "Base Sepolia"},
		{AccountEthereum, Mainnet, 1, "Ethereum"},
		{AccountEthereum, Testnet, 11155111, "Ethereum Sepolia"},
		{AccountPlasma, Mainnet, 9745, "Plasma"},
		{AccountPlasma, Testnet, 9746, "Plasma Testnet"},
		{AccountPolygon, Mainnet, 137, "Polygon"},
		{AccountPolygon, Testnet, 80002, "Polygon Amoy"},
	}
	got := ContractChains()
	if !slices.Equal(got, want) {
		t.Fatalf("ContractChains() = %+v\nwant %+v", got, want)
	}
	got[0].ChainID = 1
	if c, _ := ContractChainFor(AccountBase, Mainnet); c.ChainID != 8453 {
		t.Fatal("a caller's copy changed the table")
	}
	ids := map[uint64]bool{}
	for _, c := range want {
		if ids[c.ChainID] {
			t.Errorf("chain %d has two rows", c.ChainID)
		}
		ids[c.ChainID] = true
		if r, ok := ContractChainFor(c.AccountType, c.Network); !ok || r != c {
			t.Errorf("ContractChainFor(%s, %s) = %+v, %v", c.AccountType, c.Network, r, ok)
		}
	}
	for typ, v := range DefaultVerifiers() {
		_, evm := v.(EVMVerifier)
		for _, n := range []Network{Mainnet, Testnet, Signet, Regtest} {
			_, ok := ContractChainFor(typ, n)
			if wantRow := evm && (n == Mainnet || n == Testnet); ok != wantRow {
				t.Errorf("ContractChainFor(%s, %s) has a row: %v, want %v", typ, n, ok, wantRow)
			}
		}
	}
	for _, typ := range []string{"base_wallet", "ARBITRUM_WALLET", AccountLightning, "USD_ACCOUNT", ""} {
		if c, ok := ContractChainFor(typ, Mainnet); ok {
			t.Errorf("ContractChainFor(%q) = %+v", typ, c)
		}
	}
	if s := want[0].String(); s != "Base (chain 8453)" {
		t.Errorf("String() = %q", s)
	}
}

// TestNewRefusesContractVerifierOffItsChain: a ContractVerifier is mapped
// to an account type explicitly, and New refuses one that cannot prove the
// type's contract accounts.
func TestNewRefusesContractVerifierOffItsChain(t *testing.T) {
	for _, tc := range []struct {
		name    string
		typ     string
		chains  []uint64
		network Network
		err     string
	}{
		{"Base verifier with an Ethereum node only", AccountBase, []uint64{1}, Mainnet,
			`ownership: the ContractVerifier of Config.Verifiers["BASE_WALLET"] does not serve Base (chain 8453), the chain of BASE_WALLET on mainnet`},
		{"mainnet node on a testnet service", AccountBase, []uint64{8453}, Testnet,
			`ownership: the ContractVerifier of Config.Verifiers["BASE_WALLET"] does not serve Base Sepolia (chain 84532), the chain of BASE_WALLET on testnet`},
		{"EVM type on regtest", AccountEthereum, []uint64{1}, Regtest,
			`ownership: Config.Verifiers["ETHEREUM_WALLET"] is a ContractVerifier, but ETHEREUM_WALLET has no contract-account chain on regtest (only BASE_WALLET, ETHEREUM_WALLET, PLASMA_WALLET, POLYGON_WALLET have, on mainnet and testnet)`},
		{"non-EVM type", AccountSolana, []uint64{1}, Mainnet,
			`ownership: Config.Verifiers["SOLANA_WALLET"] is a ContractVerifier, but SOLANA_WALLET has no contract-account chain on mainnet (only BASE_WALLET, ETHEREUM_WALLET, PLASMA_WALLET, POLYGON_WALLET have, on mainnet and testnet)`},
		{"type missing from the table", "ARBITRUM_WALLET", []uint64{42161}, Mainnet,
			`ownership: Config.Verifiers["ARBITRUM_WALLET"] is a ContractVerifier, but ARBITRUM_WALLET has no contract-account chain on mainnet (only BASE_WALLET, ETHEREUM_WALLET, PLASMA_WALLET, POLYGON_WALLET have, on mainnet and testnet)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vs := DefaultVerifiers()
			vs[tc.typ] = newChainsVerifier(tc.chains...)
			_, err := New(Config{Store: memory.New(), Verifiers: vs, Network: tc.network})
			if err == nil || err.Error() != tc.err {
				t.Fatalf("New: %v\nwant %s", err, tc.err)
			}
		})
	}

	// On testnet the types' test chains are the ones.
	vs := DefaultVerifiers()
	vs[AccountBase] = newChainsVerifier(84532)
	svc, _ := newChainService(t, vs, Testnet)
	if _, err := svc.RegisterAccount(t.Context(), contractAccount(AccountBase, 84532)); err != nil {
		t.Fatal(err)
	}
	_, err := svc.RegisterAccount(t.Context(), contractAccount(AccountBase, 8453))
	apierrortest.WantFields(t, err, apierror.InvalidInput, "accountInfo.contractAccount.chainId")
}

// TestRegisterContractAccountRefusals: every way a contract account can be
// refused at registration names its field.
func TestRegisterContractAccountRefusals(t *testing.T) {
	vs := DefaultVerifiers()
	vs[AccountBase] = newChainsVerifier(8453)
	svc, _ := newChainService(t, vs, Mainnet)
	regtest, _ := newChainService(t, DefaultVerifiers(), Regtest)
	for _, tc := range []struct {
		name  string
		svc   *Service
		n     NewAccount
		field string
	}{
		{"another type's chain", svc, contractAccount(AccountBase, 137), "accountInfo.contractAccount.chainId"},
		{"a chain of no type", svc, contractAccount(AccountBase, 1337), "accountInfo.contractAccount.chainId"},
		{"the type's testnet chain on mainnet", svc, contractAccount(AccountBase, 84532), "accountInfo.contractAccount.chainId"},
		{"type whose verifier proves no contracts", svc, contractAccount(AccountPolygon, 137), "accountInfo.contractAccount.chainId"},
		{"EVM type on regtest", regtest, contractAccount(AccountEthereum, 1), "accountInfo.contractAccount.chainId"},
		{"non-EVM type", svc, func() NewAccount {
			n := contractAccount(AccountTron, 1)
			n.Address = "TNPeeaaFB7K9cmo4uQpcU32zGK8G1NYqeL"
			return n
		}(), "accountInfo.contractAccount"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.svc.RegisterAccount(t.Context(), tc.n)
			apierrortest.WantFields(t, err, apierror.InvalidInput, tc.field)
		})
	}
}

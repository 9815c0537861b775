package main

import (
	"context"
	"crypto/ecdsa"
	"encoding/hex"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/examples/client"
	"github.com/walletgate/walletgate/examples/server/internal/evmsim"
	"github.com/walletgate/walletgate/ownership"
	"github.com/walletgate/walletgate/sandbox"
)

// Keys of the contract-wallet tests: a wallet's owner and another party.
var (
	evmOwnerKey, _ = crypto.HexToECDSA("4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318")
	evmOtherKey, _ = crypto.HexToECDSA("ae6ae8e5ccbfb04590405997ee2d52d2b330726137b875053c36d94e974d162f")
)

// personalSign is evmsim.PersonalSign for a test.
func personalSign(t *testing.T, key *ecdsa.PrivateKey, message string) []byte {
	t.Helper()
	sig, err := evmsim.PersonalSign(key, message)
	if err != nil {
		t.Fatal(err)
	}
	return sig
}

// erc6492 is evmsim.WrapERC6492 of the hex factory and calldata of a
// counterfactual answer, hex-encoded.
func erc6492(t *testing.T, factory, calldata string, sig []byte) string {
	t.Helper()
	data, err := hex.DecodeString(strings.TrimPrefix(calldata, "0x"))
	if err != nil {
		t.Fatal(err)
	}
	w, err := evmsim.WrapERC6492(common.HexToAddress(factory), data, sig)
	if err != nil {
		t.Fatal(err)
	}
	return "0x" + hex.EncodeToString(w)
}

// customers numbers the customers of the tests, whose emails must differ.
var customers atomic.Int64

// contractAccount registers a FIRST_PARTY contract account of typ at
// address on chainID for a new customer and opens its WALLET_SIGNATURE
// challenge; it returns the account's path and the message to sign.
func contractAccount(t *testing.T, c *client.Client, typ, address string, chainID uint64) (string, string) {
	t.Helper()
	ctx := context.Background()
	var cust sandbox.Customer
	if _, err := c.Do(ctx, "POST", "/customers", map[string]any{"customerType": "INDIVIDUAL", "fullName": "Ada Lovelace",
		"email": fmt.Sprintf("ada+%d@example.com", customers.Add(1))}, nil, &cust); err != nil {
		t.Fatalf("create customer: %v", err)
	}
	var a sandbox.ExternalAccount
	if _, err := c.Do(ctx, "POST", "/customers/external-accounts", map[string]any{"customerId": cust.ID, "currency": "USDC",
		"ownershipType": "FIRST_PARTY", "accountInfo": map[string]any{"accountType": typ, "address": address,
			"contractAccount": map[string]any{"chainId": chainID}}}, nil, &a); err != nil {
		t.Fatalf("register the %s contract account: %v", typ, err)
	}
	if a.Status != "PENDING_OWNERSHIP_VERIFICATION" {
		t.Fatalf("a new contract account is %s", a.Status)
	}
	path := "/customers/external-accounts/" + a.ID
	var ch ownership.Challenge
	if _, err := c.Do(ctx, "POST", path+"/challenge", map[string]string{"method": "WALLET_SIGNATURE"}, nil, &ch); err != nil {
		t.Fatalf("challenge: %v", err)
	}
	return path, ch.MessageToSign
}

// verifyWith posts signature to the account's verify route.
func verifyWith(c *client.Client, path, signature string) (sandbox.ExternalAccount, error) {
	var a sandbox.ExternalAccount
	_, err := c.Do(context.Background(), "POST", path+"/verify", map[string]string{"signature": signature}, nil, &a)
	return a, err
}

// status reads the account's status back.
func status(t *testing.T, c *client.Client, path string) string {
	t.Helper()
	var a sandbox.ExternalAccount
	if _, err := c.Do(context.Background(), "GET", path, nil, nil, &a); err != nil {
		t.Fatal(err)
	}
	return a.Status
}

// TestServerEVMSimulatedEIP1271: with -evm-simulated, a BASE_WALLET
// contract account at a wallet deployed through POST
// /sandbox/contract-wallets becomes ACTIVE with its owner's signature of
// the challenge, after another party's signature was refused with 400
// INVALID_INPUT (the wallet did not answer the EIP-1271 magic value).
func TestServerEVMSimulatedEIP1271(t *testing.T) {
	c := clientOf(t, running(t, "-evm-simulated"))
	ctx := context.Background()
	owner := crypto.PubkeyToAddress(evmOwnerKey.PublicKey)
	var w evmsim.DeployResponse
	res, err := c.Do(ctx, "POST", "/sandbox/contract-wallets", map[string]any{"chainId": 8453, "owner": strings.ToLower(owner.Hex())}, nil, &w)
	if err != nil || res.Status != 201 {
		t.Fatalf("deploy: %v %+v", err, res)
	}
	if w.ChainID != 8453 || w.Owner != owner.Hex() || !common.IsHexAddress(w.Address) || common.HexToAddress(w.Address) == owner {
		t.Fatalf("deploy answered %+v", w)
	}
	path, msg := contractAccount(t, c, ownership.AccountBase, w.Address, 8453)
	if !strings.Contains(msg, "\nChain ID: 8453\n") {
		t.Fatalf("the message does not name Base: %q", msg)
	}

	_, err = verifyWith(c, path, "0x"+hex.EncodeToString(personalSign(t, evmOtherKey, msg)))
	apierrortest.Want(t, err, apierror.InvalidInput, "the contract account did not return the EIP-1271 magic value")
	if got := status(t, c, path); got != "UNVERIFIED" {
		t.Fatalf("after another party's signature the account is %s, want UNVERIFIED", got)
	}

	var ch ownership.Challenge
	if _, err := c.Do(ctx, "POST", path+"/challenge", map[string]string{"method": "WALLET_SIGNATURE"}, nil, &ch); err != nil {
		t.Fatal(err)
	}
	a, err := verifyWith(c, path, "0x"+hex.EncodeToString(personalSign(t, evmOwnerKey, ch.MessageToSign)))
	if err != nil || a.Status != "ACTIVE" {
		t.Fatalf("the owner's signature: %v, status %s", err, a.Status)
	}
	if got := status(t, c, path); got != "ACTIVE" {
		t.Fatalf("read back %s", got)
	}

	// The same wallet registered as an Ethereum account: no code there, and
	// a plain signature of a contract account without code is an EOA's,
	// which the owner's key is not.
	path, msg = contractAccount(t, c, ownership.AccountEthereum, w.Address, 1)
	_, err = verifyWith(c, path, "0x"+hex.EncodeToString(personalSign(t, evmOwnerKey, msg)))
	apierrortest.Want(t, err, apierror.InvalidInput, "")
}

// TestServerEVMSimulatedERC6492: with -evm-simulated, an ETHEREUM_WALLET
// contract account at the counterfactual address POST
// /sandbox/contract-wallets/counterfactual names becomes ACTIVE with its
// owner's signature wrapped in ERC-6492 from the factory and calldata that
// route gives; another party's wrapped signature is refused first.
func TestServerEVMSimulatedERC6492(t *testing.T) {
	c := clientOf(t, running(t, "-evm-simulated"))
	ctx := context.Background()
	owner := crypto.PubkeyToAddress(evmOwnerKey.PublicKey)
	salt := "0x" + strings.Repeat("00", 31) + "2a"
	var cf evmsim.CounterfactualResponse
	res, err := c.Do(ctx, "POST", "/sandbox/contract-wallets/counterfactual", map[string]any{"chainId": 1, "owner": owner.Hex(), "salt": salt}, nil, &cf)
	if err != nil || res.Status != 200 {
		t.Fatalf("counterfactual: %v %+v", err, res)
	}
	if cf.ChainID != 1 || cf.Owner != owner.Hex() || cf.Salt != salt || !common.IsHexAddress(cf.Address) || !common.IsHexAddress(cf.Factory) ||
		!strings.HasPrefix(cf.FactoryCalldata, "0x") {
		t.Fatalf("counterfactual answered %+v", cf)
	}
	path, msg := contractAccount(t, c, ownership.AccountEthereum, cf.Address, 1)

	_, err = verifyWith(c, path, erc6492(t, cf.Factory, cf.FactoryCalldata, personalSign(t, evmOtherKey, msg)))
	apierrortest.Want(t, err, apierror.InvalidInput, "the contract account did not return the EIP-1271 magic value")

	var ch ownership.Challenge
	if _, err := c.Do(ctx, "POST", path+"/challenge", map[string]string{"method": "WALLET_SIGNATURE"}, nil, &ch); err != nil {
		t.Fatal(err)
	}
	// Without the wrapper there is no code to ask: the owner's key is not
	// the address's.
	_, err = verifyWith(c, path, "0x"+hex.EncodeToString(personalSign(t, evmOwnerKey, ch.MessageToSign)))
	apierrortest.Want(t, err, apierror.InvalidInput, "")
	if _, err := c.Do(ctx, "POST", path+"/challenge", map[string]string{"method": "WALLET_SIGNATURE"}, nil, &ch); err != nil {
		t.Fatal(err)
	}
	a, err := verifyWith(c, path, erc6492(t, cf.Factory, cf.FactoryCalldata, personalSign(t, evmOwnerKey, ch.MessageToSign)))
	if err != nil || a.Status != "ACTIVE" {
		t.Fatalf("the owner's ERC-6492 signature: %v, status %s", err, a.Status)
	}
	// The proof deployed nothing: the address is still counterfactual, so
	// the same route still names it.
	var again struct{ Address string }
	if _, err := c.Do(ctx, "POST", "/sandbox/contract-wallets/counterfactual", map[string]any{"chainId": 1, "owner": owner.Hex(), "salt": salt},
		nil, &again); err != nil || again.Address != cf.Address {
		t.Fatalf("again: %+v %v", again, err)
	}
}

// TestServerEVMSimulatedRoutes: the routes' refusals over HTTP (400
// INVALID_INPUT naming the field, 401 without credentials), and without
// -evm-simulated the routes are unknown (404) and a contract account is
// refused at registration.
func TestServerEVMSimulatedRoutes(t *testing.T) {
	ctx := context.Background()
	s := running(t, "-evm-simulated")
	c := clientOf(t, s)
	owner := crypto.PubkeyToAddress(evmOwnerKey.PublicKey).Hex()
	for _, tc := range []struct {
		path  string
		body  string
		field string
	}{
		{"/sandbox/contract-wallets", `{"chainId":8453,"Owner":"` + owner + `"}`, "Owner"},
		{"/sandbox/contract-wallets", `{"chainId":1337,"owner":"` + owner + `"}`, "chainId"},
		{"/sandbox/contract-wallets", `{"chainId":8453,"owner":"0x1234"}`, "owner"},
		{"/sandbox/contract-wallets/counterfactual", `{"chainId":1,"owner":"` + owner + `","salt":"0x00"}`, "salt"},
		{"/sandbox/contract-wallets/counterfactual", `{"chainId":1,"owner":"` + owner + `","Salt":"0x` + strings.Repeat("00", 32) + `"}`, "Salt"},
	} {
		_, err := c.Do(ctx, "POST", tc.path, []byte(tc.body), nil, nil)
		apierrortest.WantFields(t, err, apierror.InvalidInput, tc.field)
	}
	_, err := c.Do(ctx, "POST", "/sandbox/contract-wallets", []byte(`{"chainId":8453`), nil, nil)
	apierrortest.Want(t, err, apierror.InvalidInput, "")
	_, err = c.Do(ctx, "GET", "/sandbox/contract-wallets", nil, nil, nil)
	apierrortest.Want(t, err, apierror.MethodNotAllowed, "")
	anon := client.New(s.base, "someone", "wrong")
	_, err = anon.Do(ctx, "POST", "/sandbox/contract-wallets", map[string]any{"chainId": 8453, "owner": owner}, nil, nil)
	apierrortest.Want(t, err, apierror.Unauthorized, "")

	plain := clientOf(t, running(t))
	for _, p := range []string{"/sandbox/contract-wallets", "/sandbox/contract-wallets/counterfactual"} {
		_, err := plain.Do(ctx, "POST", p, map[string]any{"chainId": 8453, "owner": owner}, nil, nil)
		apierrortest.Want(t, err, apierror.ReferenceNotFound, "")
	}
	var cust sandbox.Customer
	if _, err := plain.Do(ctx, "POST", "/customers", map[string]any{"customerType": "INDIVIDUAL", "fullName": "Grace Hopper",
		"email": "grace@example.com"}, nil, &cust); err != nil {
		t.Fatal(err)
	}
	_, err = plain.Do(ctx, "POST", "/customers/external-accounts", map[string]any{"customerId": cust.ID, "currency": "USDC",
		"ownershipType": "FIRST_PARTY", "accountInfo": map[string]any{"accountType": "BASE_WALLET", "address": owner,
			"contractAccount": map[string]any{"chainId": 8453}}}, nil, nil)
	apierrortest.WantFields(t, err, apierror.InvalidInput, "accountInfo.contractAccount.chainId")
}

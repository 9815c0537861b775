// Package evmcontract proves control of EVM contract accounts for
// ownership: EIP-1271 wallets (Safe, smart-contract and passkey wallets)
// and ERC-6492 wrapped signatures of accounts that are not deployed yet,
// checked against the host's nodes with go-ethereum.
//
// It is a separate package so that ownership itself imports no chain-node
// code: a host that proves contract accounts imports this package and
// registers its [Verifier] in [ownership.Verifiers] for the EVM account
// types concerned; every other host keeps ownership's small import graph.
//
// A contract account is proven on the chain of its account type and on no
// other: [ownership.ContractChains] is the table (BASE_WALLET on Base 8453,
// ETHEREUM_WALLET on Ethereum 1, POLYGON_WALLET on Polygon 137,
// PLASMA_WALLET on Plasma 9745, and their test chains on a testnet
// service). Registration requires accountInfo.contractAccount.chainId to
// name that chain (see [ownership.NewAccount]); the challenge message
// names it, and the verifier asks a node of that chain only, so a proof is
// bound to its chain and the code at the same address on another chain,
// which may belong to someone else, is never asked. [Config].Chains gives
// a node per chain of the table; the host's [ownership.Verifiers] says
// which account types the verifier proves. Verification only reads the
// chain (eth_call): it never signs or sends a transaction, and an ERC-6492
// account stays undeployed.
//
// testdata/ holds the Solidity sources of the checking contract the
// verifier runs and of the test wallets, the compiled output
// (testdata/contracts.json) and the script that rebuilds it with the
// solc-js version pinned in testdata/package-lock.json; the checking
// contract's creation code is embedded from signaturecheck.json, which the
// same script writes.
package evmcontract

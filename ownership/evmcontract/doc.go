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
// A contract account is registered on one chain
// (accountInfo.contractAccount.chainId, see [ownership.NewAccount]); its
// challenge message names that chain, and the verifier asks a node of that
// chain, so a proof is bound to its chain. Verification only reads the
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

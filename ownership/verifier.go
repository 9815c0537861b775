package ownership

import (
	"context"
	"errors"
	"strings"

	"github.com/walletgate/walletgate/apierror"
)

// Verifier checks a wallet signature over a server-issued message.
//
// Implementations are safe for concurrent use and never panic on any input.
// Every rejection is a *apierror.Error: 400 INVALID_INPUT whose details.reason
// names the failed check, wrapping [ErrMalformed] or [ErrMismatch]. A verifier
// that needs the network (for example an EIP-1271 contract-wallet check) may
// also return other codes, such as 500 INTERNAL_ERROR when its node fails.
type Verifier interface {
	// Verify returns nil when sig is a valid signature over message by the
	// wallet w. The message is compared byte for byte: it is never trimmed or
	// normalised. The address and the signature value may carry surrounding
	// whitespace, which is ignored.
	Verify(ctx context.Context, w Wallet, message []byte, sig Signature) error
}

// VerifierFunc adapts an ordinary function to [Verifier].
type VerifierFunc func(ctx context.Context, w Wallet, message []byte, sig Signature) error

// Verify calls f.
func (f VerifierFunc) Verify(ctx context.Context, w Wallet, message []byte, sig Signature) error {
	return f(ctx, w, message, sig)
}

// Wallet is the account whose control is being proven.
type Wallet struct {
	// AccountType is the external-account type, for example ETHEREUM_WALLET;
	// it selects the verifier in [Verifiers].
	AccountType string
	// Address is the identifier the user claims: a 0x address, a Bitcoin
	// address, a base58 Solana or TRON address, a spark1… address, or a
	// Lightning node public key.
	Address string
	// Network is the network the service runs on. Bitcoin and Spark
	// addresses must belong to it; EVM, Solana and TRON addresses do not
	// encode a network and ignore it.
	Network Network
	// ChainID is, for a wallet registered as a contract account, the EVM
	// chain its proof is checked on: the chain of AccountType on Network
	// ([ContractChainFor]), which [Service] takes from the table, never
	// from the stored accountInfo.contractAccount.chainId. Zero for every
	// other wallet. Only a [ContractVerifier] checks a wallet with a chain
	// id; [EVMVerifier] refuses one with 500 INTERNAL_ERROR.
	ChainID uint64
}

// Signature is the proof submitted by the user.
type Signature struct {
	// Value is the encoded signature, as the wallet returned it.
	Value string
	// Scheme is the Bitcoin message-signing format: "" or [SchemeBIP137]
	// (the default), [SchemeElectrum] or [SchemeBIP322]. Verifiers of other
	// chains ignore it.
	Scheme string
}

// Bitcoin signature schemes accepted in [Signature.Scheme].
const (
	// SchemeBIP137 selects BIP-137 signed messages: each header range only
	// for its own address type. A BIP-322 "simple" signature is recognised
	// by its shape and verified as BIP-322.
	SchemeBIP137 = "bip137"
	// SchemeElectrum accepts what BIP-137 accepts plus the compressed P2PKH
	// headers 31-34 for P2WPKH and P2SH-P2WPKH addresses, as Electrum signs.
	SchemeElectrum = "electrum"
	// SchemeBIP322 selects BIP-322 "simple" signatures (an optional "smp"
	// prefix is stripped). For P2PKH addresses BIP-322 prescribes the legacy
	// format, which is then verified as BIP-137.
	SchemeBIP322 = "bip322"
)

// Network is the network a wallet lives on. The zero value is Mainnet.
type Network uint8

// Networks.
const (
	Mainnet Network = iota
	Testnet
	Signet
	Regtest
)

// String returns "mainnet", "testnet", "signet", "regtest" or "unknown".
func (n Network) String() string {
	switch n {
	case Mainnet:
		return "mainnet"
	case Testnet:
		return "testnet"
	case Signet:
		return "signet"
	case Regtest:
		return "regtest"
	}
	return "unknown"
}

// ParseNetwork maps "mainnet", "testnet", "signet" or "regtest" (any case)
// to its Network.
func ParseNetwork(s string) (Network, bool) {
	switch strings.ToLower(s) {
	case "mainnet":
		return Mainnet, true
	case "testnet":
		return Testnet, true
	case "signet":
		return Signet, true
	case "regtest":
		return Regtest, true
	}
	return 0, false
}

// Wallet account types. All but [AccountBitcoin] are the service's
// ExternalAccountType values.
const (
	AccountBase     = "BASE_WALLET"
	AccountEthereum = "ETHEREUM_WALLET"
	AccountPolygon  = "POLYGON_WALLET"
	AccountPlasma   = "PLASMA_WALLET"
	AccountSolana   = "SOLANA_WALLET"
	AccountSpark    = "SPARK_WALLET"
	AccountTron     = "TRON_WALLET"
	// AccountBitcoin is a Bitcoin L1 self-custody wallet. The service has no
	// Bitcoin external-account type; this name is walletgate's own, used
	// for the Bitcoin verifier (BIP-137, Electrum and BIP-322 signatures).
	AccountBitcoin = "BITCOIN_WALLET"
	// AccountLightning and AccountLightningAlias name the Lightning variant
	// (an invoice, BOLT12 offer or Lightning address). They hold no signing
	// key, so [Verifiers.Lookup] answers 409 for them unless a verifier has
	// been registered explicitly (for example [LightningNodeVerifier]).
	AccountLightning      = "LIGHTNING"
	AccountLightningAlias = "LIGHTNING_ACCOUNT"
)

// Verifiers selects a [Verifier] by account type. Build it once with
// [DefaultVerifiers], add or replace entries (for example a
// [ContractVerifier], such as ownership/evmcontract's, in place of the
// EIP-191 verifier of each EVM type whose contract accounts it proves; it
// must serve that type's chain, see [ContractChains]) before sharing it,
// and do not modify it afterwards: concurrent reads are safe, concurrent
// writes are not.
type Verifiers map[string]Verifier

// DefaultVerifiers returns the built-in verifiers: EIP-191 for the EVM
// types, Ed25519 for Solana, TIP-191 for TRON, the identity-key ECDSA for
// Spark and BIP-137/Electrum/BIP-322 for [AccountBitcoin]. Lightning types
// are deliberately absent. Each call returns a new map.
func DefaultVerifiers() Verifiers {
	evm := EVMVerifier{}
	return Verifiers{
		AccountBase:     evm,
		AccountEthereum: evm,
		AccountPolygon:  evm,
		AccountPlasma:   evm,
		AccountSolana:   SolanaVerifier{},
		AccountTron:     TronVerifier{},
		AccountSpark:    SparkVerifier{},
		AccountBitcoin:  BitcoinVerifier{},
	}
}

// Lookup returns the verifier for accountType. The two Lightning spellings
// ([AccountLightning] and [AccountLightningAlias]) are one type: a verifier
// registered under either serves both (an entry under the exact spelling
// wins). A Lightning type without a
// registered verifier answers 409 CONFLICT ("lightning accounts hold no
// signing key"); any other unknown type answers 400 INVALID_INPUT.
func (vs Verifiers) Lookup(accountType string) (Verifier, error) {
	if v, ok := vs[accountType]; ok && v != nil {
		return v, nil
	}
	// One registration covers both spellings of the Lightning type.
	other := ""
	switch accountType {
	case AccountLightning:
		other = AccountLightningAlias
	case AccountLightningAlias:
		other = AccountLightning
	}
	if v, ok := vs[other]; ok && other != "" && v != nil {
		return v, nil
	}
	if accountType == AccountLightning || accountType == AccountLightningAlias {
		const reason = "lightning accounts hold no signing key"
		return nil, apierror.New(apierror.Conflict, "ownership cannot be proven by signature: %s", reason).
			WithDetail("reason", reason)
	}
	return nil, malformed("account type has no signature verifier").WithDetail("accountType", accountType)
}

// Verify looks up the verifier for w.AccountType and runs it.
func (vs Verifiers) Verify(ctx context.Context, w Wallet, message []byte, sig Signature) error {
	v, err := vs.Lookup(w.AccountType)
	if err != nil {
		return err
	}
	return v.Verify(ctx, w, message, sig)
}

// AnyOf returns a verifier that accepts when any of vs accepts, trying them
// in order. When all reject, it returns the first error that is not 400
// INVALID_INPUT (so an outage of a network-backed verifier is not reported
// as a bad signature), or else the first rejection.
func AnyOf(vs ...Verifier) Verifier {
	return VerifierFunc(func(ctx context.Context, w Wallet, message []byte, sig Signature) error {
		var first error
		for _, v := range vs {
			err := v.Verify(ctx, w, message, sig)
			if err == nil {
				return nil
			}
			if apierror.CodeOf(err) != apierror.InvalidInput {
				return err
			}
			if first == nil {
				first = err
			}
		}
		if first == nil {
			return malformed("no verifier configured")
		}
		return first
	})
}

// ErrMalformed is the cause of every rejection of input that cannot be
// decoded or is not allowed (bad encoding, wrong length, wrong network, an
// unsupported address type or scheme). Test with errors.Is.
var ErrMalformed = errors.New("ownership: malformed address or signature")

// ErrMismatch is the cause of every rejection of a well-formed signature
// that does not prove control of the address (a different key, another
// message, another chain's format). Test with errors.Is.
var ErrMismatch = errors.New("ownership: signature does not match the address")

// malformed returns 400 INVALID_INPUT with details.reason, caused by ErrMalformed.
func malformed(reason string) *apierror.Error {
	return invalid(reason, ErrMalformed)
}

// mismatch returns 400 INVALID_INPUT with details.reason, caused by ErrMismatch.
func mismatch(reason string) *apierror.Error {
	return invalid(reason, ErrMismatch)
}

func invalid(reason string, cause error) *apierror.Error {
	return apierror.New(apierror.InvalidInput, "invalid wallet signature: %s", reason).
		WithDetail("reason", reason).
		WithCause(cause)
}

package ownership

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/storage"
)

// ContractVerifier is a [Verifier] that also proves control of EVM contract
// accounts (EIP-1271 wallets such as Safe, and ERC-6492 wrapped signatures of
// accounts not deployed yet) on the chains it has a node for.
//
// A contract account is proven on one chain only: the chain of its account
// type on the service's network, as [ContractChains] states it (Base
// mainnet 8453 for BASE_WALLET, Ethereum mainnet 1 for ETHEREUM_WALLET, and
// so on). The customer does not choose it: registration requires
// accountInfo.contractAccount.chainId to name exactly that chain, and
// [Service.Verify] hands the table's chain, never the stored member, to
// Verify as [Wallet.ChainID]. The challenge message names the chain ("Chain
// ID: <id>"), so the hash the contract is asked about differs per chain and
// a proof made for one chain is refused on another, even by a contract that
// would accept one hash on every chain.
//
// A ContractVerifier is registered in [Verifiers] per account type, and
// [New] refuses one registered for a type that has no chain on the
// service's network (every non-EVM type, and any type missing from the
// table) or whose chain it does not serve. A type whose verifier is not a
// ContractVerifier has no contract accounts: registration refuses them.
// A wallet without a chain id is an externally owned account: Verify checks
// it exactly as [EVMVerifier] does, without a node, so a ContractVerifier
// can replace EVMVerifier for an account type.
//
// Verify answers 400 INVALID_INPUT only for the user's signature (the
// contract refused it, reverted, or answered another value); a node that is
// unreachable, slow or misconfigured answers 500 INTERNAL_ERROR with
// details.reason, which leaves the challenge outstanding.
// ownership/evmcontract implements it on go-ethereum.
type ContractVerifier interface {
	Verifier
	// ServesChain reports whether Verify can check contract accounts on the
	// EVM chain chainID.
	ServesChain(chainID uint64) bool
}

// ContractChain is one row of the table of contract-account chains: a
// contract account of AccountType, on a service that runs on Network, is
// proven on the EVM chain ChainID and on no other.
type ContractChain struct {
	// AccountType is an EVM wallet type, e.g. BASE_WALLET.
	AccountType string
	// Network is the service's network: [Mainnet] or [Testnet].
	Network Network
	// ChainID is the EIP-155 chain id, e.g. 8453.
	ChainID uint64
	// Name is the chain's usual name, e.g. "Base" or "Base Sepolia".
	Name string
}

// String returns the name and the id, e.g. "Base (chain 8453)".
func (c ContractChain) String() string {
	return c.Name + " (chain " + strconv.FormatUint(c.ChainID, 10) + ")"
}

// contractChains is the one table of the chains on which contract accounts
// are proven: one row per EVM account type and network, each chain id in
// one row only. A type or network without a row has no contract accounts.
var contractChains = [...]ContractChain{
	{AccountBase, Mainnet, 8453, "Base"},
	{AccountBase, Testnet, 84532, "Base Sepolia"},
	{AccountEthereum, Mainnet, 1, "Ethereum"},
	{AccountEthereum, Testnet, 11155111, "Ethereum Sepolia"},
	{AccountPlasma, Mainnet, 9745, "Plasma"},
	{AccountPlasma, Testnet, 9746, "Plasma Testnet"},
	{AccountPolygon, Mainnet, 137, "Polygon"},
	{AccountPolygon, Testnet, 80002, "Polygon Amoy"},
}

// ContractChains returns the table of the chains on which contract accounts
// are proven, one row per EVM account type (BASE_WALLET, ETHEREUM_WALLET,
// PLASMA_WALLET, POLYGON_WALLET) and network: mainnet rows name each
// type's main chain (8453, 1, 9745, 137), testnet rows its public test
// chain (Base Sepolia 84532, Ethereum Sepolia 11155111, Plasma Testnet
// 9746, Polygon Amoy 80002). No chain id appears twice. Signet and regtest
// have no rows: a service on them has no contract accounts. Each call
// returns a new slice, ordered by account type, then network.
func ContractChains() []ContractChain {
	return append([]ContractChain(nil), contractChains[:]...)
}

// ContractChainFor returns the chain on which a contract account of
// accountType is proven on a service that runs on network, and false when
// the table has no row for them: accountType (spelled exactly) is not an
// EVM wallet type, or network is signet or regtest.
func ContractChainFor(accountType string, network Network) (ContractChain, bool) {
	for _, c := range contractChains {
		if c.AccountType == accountType && c.Network == network {
			return c, true
		}
	}
	return ContractChain{}, false
}

// contractTypes lists the account types of the table once each, for
// messages.
func contractTypes() string {
	var types []string
	for _, c := range contractChains {
		if len(types) == 0 || types[len(types)-1] != c.AccountType {
			types = append(types, c.AccountType)
		}
	}
	return strings.Join(types, ", ")
}

// checkContractVerifiers returns an error naming the first account type,
// in sorted order, whose verifier in vs is a [ContractVerifier] although
// the type has no contract-account chain on network, or does not serve
// that chain. Verifiers that are not ContractVerifiers are not checked.
func (vs Verifiers) checkContractVerifiers(network Network) error {
	types := make([]string, 0, len(vs))
	for t := range vs {
		types = append(types, t)
	}
	sort.Strings(types)
	for _, t := range types {
		cv, ok := vs[t].(ContractVerifier)
		if !ok {
			continue
		}
		c, ok := ContractChainFor(t, network)
		if !ok {
			return fmt.Errorf("ownership: Config.Verifiers[%q] is a ContractVerifier, but %s has no contract-account chain on %s (only %s have, on mainnet and testnet)",
				t, t, network, contractTypes())
		}
		if !cv.ServesChain(c.ChainID) {
			return fmt.Errorf("ownership: the ContractVerifier of Config.Verifiers[%q] does not serve %s, the chain of %s on %s",
				t, c, t, network)
		}
	}
	return nil
}

// EVMMessageHash is the EIP-191 personal_sign digest of message,
// keccak256("\x19Ethereum Signed Message:\n" + len(message) + message): the
// digest [EVMVerifier] recovers the signer from, and the hash a contract
// account's isValidSignature is asked about.
func EVMMessageHash(message []byte) [32]byte {
	return [32]byte(evmHash(message))
}

// contractAccountMember is the accountInfo member that registers an EVM
// wallet as a contract account: {"contractAccount": {"chainId": 8453}}.
const contractAccountMember = "contractAccount"

// maxChainID is the largest chain id accepted: EIP-2294's bound,
// floor(MaxUint64 / 2) - 36, the largest whose EIP-155 v still fits 64 bits.
const maxChainID = 1<<63 - 1 - 36

// errNotObject is the reason an accountInfo is not a JSON object.
var errNotObject = errors.New("is not a JSON object")

// contractChainOf returns the chain id of a contract account, read from
// accountInfo.contractAccount.chainId, and 0 when info is empty, not an
// object, or has no contractAccount member (an externally owned account or
// another kind of account). The member is decoded strictly: the object must
// be well formed JSON; contractAccount, spelled exactly and present once (another spelling of
// it, such as "ContractAccount", is refused rather than ignored), must be
// an object holding exactly one member, chainId, a JSON integer from 1 to
// 9223372036854775771 written in plain decimal. On failure it returns the
// dot path of the offending field and a sentence.
func contractChainOf(info json.RawMessage) (uint64, string, error) {
	const field = "accountInfo." + contractAccountMember
	if len(bytes.TrimSpace(info)) == 0 {
		return 0, "", nil
	}
	dec := json.NewDecoder(bytes.NewReader(info))
	dec.UseNumber()
	if !delim(dec, '{') {
		return 0, "", nil // not an object: it holds no contractAccount
	}
	var chain uint64
	seen := false
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return 0, "accountInfo", errNotObject
		}
		key, _ := tok.(string)
		if key != contractAccountMember {
			if strings.EqualFold(key, contractAccountMember) {
				return 0, "accountInfo." + key, errors.New("must be spelled contractAccount")
			}
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return 0, "accountInfo", errNotObject
			}
			continue
		}
		if seen {
			return 0, field, errors.New("is given twice")
		}
		seen = true
		var f string
		if chain, f, err = decodeContractAccount(dec); err != nil {
			return 0, f, err
		}
	}
	if !delim(dec, '}') {
		return 0, "accountInfo", errNotObject
	}
	if _, err := dec.Token(); err != io.EOF {
		return 0, "accountInfo", errNotObject
	}
	return chain, "", nil
}

// decodeContractAccount reads the value of accountInfo.contractAccount.
func decodeContractAccount(dec *json.Decoder) (uint64, string, error) {
	const field = "accountInfo." + contractAccountMember
	const idField = field + ".chainId"
	if !delim(dec, '{') {
		return 0, field, errors.New("must be an object with a chainId")
	}
	var chain uint64
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return 0, field, errors.New("must be an object with a chainId")
		}
		key, _ := tok.(string)
		if key != "chainId" {
			return 0, field + "." + key, errors.New("is not a member of contractAccount (only chainId is)")
		}
		if chain != 0 {
			return 0, idField, errors.New("is given twice")
		}
		tok, err = dec.Token()
		n, ok := tok.(json.Number)
		if err != nil || !ok || !plainDecimal(string(n)) {
			return 0, idField, errors.New("must be a positive integer in plain decimal")
		}
		chain, err = strconv.ParseUint(string(n), 10, 64)
		if err != nil || chain > maxChainID {
			return 0, idField, errors.New("is beyond the largest chain id (9223372036854775771)")
		}
	}
	if !delim(dec, '}') {
		return 0, field, errors.New("must be an object with a chainId")
	}
	if chain == 0 {
		return 0, idField, errors.New("is required")
	}
	return chain, "", nil
}

// plainDecimal reports whether s is 1-20 digits without a leading zero.
func plainDecimal(s string) bool {
	if s == "" || len(s) > 20 || s[0] == '0' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// delim reads the next token and reports whether it is the delimiter d.
func delim(dec *json.Decoder, d json.Delim) bool {
	tok, err := dec.Token()
	got, ok := tok.(json.Delim)
	return err == nil && ok && got == d
}

// checkContractAccount adds to v what is wrong with the contract-account
// member of n.Info, if it has one, for a service on network: a malformed
// member, an account type without contract accounts, a chain id that is
// not the type's chain, or a type whose verifier is not a
// [ContractVerifier].
func (vs Verifiers) checkContractAccount(v *apierror.Validation, n NewAccount, network Network) {
	const idField = "accountInfo." + contractAccountMember + ".chainId"
	if !json.Valid(n.Info) {
		return // reported as accountInfo
	}
	chain, field, err := contractChainOf(n.Info)
	if err != nil {
		v.Add(field, nil, err.Error())
		return
	}
	if chain == 0 {
		return
	}
	c, ok := ContractChainFor(n.AccountType, network)
	if !ok {
		if _, mainnet := ContractChainFor(n.AccountType, Mainnet); mainnet {
			v.Add(idField, nil, n.AccountType+" has no contract accounts on "+network.String())
			return
		}
		v.Add("accountInfo."+contractAccountMember, nil, "is only for the EVM wallet types ("+contractTypes()+")")
		return
	}
	if chain != c.ChainID {
		v.Add(idField, apierror.OneOf(strconv.FormatUint(c.ChainID, 10)),
			"is not the chain of "+n.AccountType+": its contract accounts are proven on "+c.String()+" only")
		return
	}
	cv, ok := vs[n.AccountType].(ContractVerifier)
	v.Check(ok && cv.ServesChain(c.ChainID), idField, nil,
		"no contract-wallet verifier serves "+c.String()+" on this service")
}

// wallet is the Wallet whose control a proof for a must show on the
// service's network. For a contract account its ChainID is the chain of the
// account type ([ContractChainFor]), never the stored member: a stored
// chain id that is not the type's chain, or a type whose verifier does not
// serve the chain, is a 409 CONFLICT with details.reason, so no verifier
// is asked. A malformed stored member is a 500.
func (s *Service) wallet(a *storage.ExternalAccount) (Wallet, error) {
	w := Wallet{AccountType: a.AccountType, Address: a.Address, Network: s.cfg.Network}
	stored, _, err := contractChainOf(a.Info)
	if err != nil {
		return Wallet{}, apierror.Internal(errors.New("ownership: stored accountInfo of " + a.ID + " has a malformed contractAccount"))
	}
	if stored == 0 {
		return w, nil
	}
	notApplicable := func(reason string) error {
		return apierror.New(apierror.Conflict, "ownership verification does not apply: %s", reason).WithDetail("reason", reason)
	}
	c, ok := ContractChainFor(a.AccountType, s.cfg.Network)
	switch {
	case !ok:
		return Wallet{}, notApplicable(a.AccountType + " has no contract accounts on " + s.cfg.Network.String())
	case stored != c.ChainID:
		return Wallet{}, notApplicable("the account's contractAccount.chainId " + strconv.FormatUint(stored, 10) +
			" is not the chain of " + a.AccountType + ", " + c.String() + "; register the account again")
	}
	if cv, ok := s.cfg.Verifiers[a.AccountType].(ContractVerifier); !ok || !cv.ServesChain(c.ChainID) {
		return Wallet{}, notApplicable("no contract-wallet verifier serves the account's chain, " + c.String())
	}
	w.ChainID = c.ChainID
	return w, nil
}

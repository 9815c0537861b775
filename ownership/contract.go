package ownership

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/storage"
)

// ContractVerifier is a [Verifier] that also proves control of EVM contract
// accounts (EIP-1271 wallets such as Safe, and ERC-6492 wrapped signatures of
// accounts not deployed yet) on the chains it has a node for.
//
// A wallet registered as a contract account carries its chain id in
// accountInfo.contractAccount.chainId; [Wallet.ChainID] hands it to Verify,
// and the challenge message names it ("Chain ID: <id>"), so the hash the
// contract is asked about differs per chain and a proof made for one chain
// is refused on another, even by a contract that would accept one hash on
// every chain. Registration accepts a contract account only when the
// verifier of its account type implements ContractVerifier and serves its
// chain. A wallet without a chain id is an externally owned account: Verify
// checks it exactly as [EVMVerifier] does, without a node, so a
// ContractVerifier can replace EVMVerifier for an account type.
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
// member of n.Info, if it has one: a malformed member, or an account type
// whose verifier does not serve the chain.
func (vs Verifiers) checkContractAccount(v *apierror.Validation, n NewAccount) {
	if !json.Valid(n.Info) {
		return // reported as accountInfo
	}
	chain, field, err := contractChainOf(n.Info)
	switch {
	case err != nil:
		v.Add(field, nil, err.Error())
	case chain != 0:
		cv, ok := vs[n.AccountType].(ContractVerifier)
		v.Check(ok && cv.ServesChain(chain), "accountInfo.contractAccount.chainId", nil,
			"no contract-wallet verifier for this account type serves chain "+strconv.FormatUint(chain, 10))
	}
}

// wallet is the Wallet whose control a proof for a must show on the
// service's network, with the chain id of a contract account.
func (s *Service) wallet(a *storage.ExternalAccount) (Wallet, error) {
	chain, _, err := contractChainOf(a.Info)
	if err != nil {
		return Wallet{}, apierror.Internal(errors.New("ownership: stored accountInfo of " + a.ID + " has a malformed contractAccount"))
	}
	return Wallet{AccountType: a.AccountType, Address: a.Address, Network: s.cfg.Network, ChainID: chain}, nil
}

// contractIneligible returns why a contract account cannot be challenged
// (its chain has no verifier, or its stored member is malformed), or nil.
func (s *Service) contractIneligible(a *storage.ExternalAccount) error {
	w, err := s.wallet(a)
	if err != nil || w.ChainID == 0 {
		return err
	}
	if cv, ok := s.cfg.Verifiers[a.AccountType].(ContractVerifier); ok && cv.ServesChain(w.ChainID) {
		return nil
	}
	reason := "no contract-wallet verifier serves the account's chain " + strconv.FormatUint(w.ChainID, 10)
	return apierror.New(apierror.Conflict, "ownership verification does not apply: %s", reason).WithDetail("reason", reason)
}

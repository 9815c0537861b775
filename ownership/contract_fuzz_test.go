package ownership

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/walletgate/walletgate/apierror"
)

func TestContractChainOf(t *testing.T) {
	for _, tc := range []struct {
		info  string
		chain uint64
		field string // "" when accepted
	}{
		{``, 0, ""},
		{`{}`, 0, ""},
		{`[]`, 0, ""},
		{`{"accountType":"ETHEREUM_WALLET","address":"0x00"}`, 0, ""},
		{`{"contractAccount":{"chainId":8453}}`, 8453, ""},
		{` {"a":[1,{"contractAccount":1}],"contractAccount":{"chainId":1}} `, 1, ""},
		{`{"contractAccount":{"chainId":9223372036854775771}}`, 9223372036854775771, ""},
		{`{"contractAccount":{"chainId":9223372036854775772}}`, 0, "accountInfo.contractAccount.chainId"},
		{`{"contractAccount":{"chainId":18446744073709551616}}`, 0, "accountInfo.contractAccount.chainId"},
		{`{"contractAccount":{"chainId":0}}`, 0, "accountInfo.contractAccount.chainId"},
		{`{"contractAccount":{"chainId":01}}`, 0, "accountInfo.contractAccount.chainId"},
		{`{"contractAccount":{"chainId":-1}}`, 0, "accountInfo.contractAccount.chainId"},
		{`{"contractAccount":{"chainId":1e3}}`, 0, "accountInfo.contractAccount.chainId"},
		{`{"contractAccount":{"chainId":1.0}}`, 0, "accountInfo.contractAccount.chainId"},
		{`{"contractAccount":{"chainId":"1"}}`, 0, "accountInfo.contractAccount.chainId"},
		{`{"contractAccount":{"chainId":null}}`, 0, "accountInfo.contractAccount.chainId"},
		{`{"contractAccount":{"chainId":1,"chainId":2}}`, 0, "accountInfo.contractAccount.chainId"},
		{`{"contractAccount":{"chainid":1}}`, 0, "accountInfo.contractAccount.chainid"},
		{`{"contractAccount":{}}`, 0, "accountInfo.contractAccount.chainId"},
		{`{"contractAccount":null}`, 0, "accountInfo.contractAccount"},
		{`{"contractAccount":[1]}`, 0, "accountInfo.contractAccount"},
		{`{"contractAccount":{"chainId":1},"contractAccount":{"chainId":1}}`, 0, "accountInfo.contractAccount"},
		{`{"contractaccount":{"chainId":1}}`, 0, "accountInfo.contractaccount"},
		{`{"contractAccount":{"chainId":1}} {}`, 0, "accountInfo"},
	} {
		chain, field, err := contractChainOf(json.RawMessage(tc.info))
		if tc.field == "" {
			if err != nil || chain != tc.chain {
				t.Errorf("%s: %d, %s %v; want %d", tc.info, chain, field, err, tc.chain)
			}
			continue
		}
		if err == nil || field != tc.field || chain != 0 {
			t.Errorf("%s: %d, %q %v; want a refusal of %s", tc.info, chain, field, err, tc.field)
		}
	}
}

// FuzzContractAccount checks the accountInfo.contractAccount parser: it
// never panics, a refusal names a field under accountInfo and returns no
// chain, and an accepted chain id is in range and is what the member says.
func FuzzContractAccount(f *testing.F) {
	for _, s := range []string{`{"contractAccount":{"chainId":8453}}`, `{"contractAccount":{"chainId":0}}`,
		`{"ContractAccount":{"chainId":1}}`, `{"contractAccount":{"chainId":1,"x":2}}`, `{"x":{"contractAccount":1}}`,
		`{"contractAccount":{"chainId":99999999999999999999}}`, `[]`, `{`, `null`, ``} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, info string) {
		chain, field, err := contractChainOf(json.RawMessage(info))
		if err != nil {
			if chain != 0 || !strings.HasPrefix(field, "accountInfo") {
				t.Fatalf("%q: refusal with chain %d, field %q", info, chain, field)
			}
			return
		}
		if chain > maxChainID {
			t.Fatalf("%q: chain %d out of range", info, chain)
		}
		if chain != 0 && !strings.Contains(info, strconv.FormatUint(chain, 10)) {
			t.Fatalf("%q: chain %d is not in the input", info, chain)
		}
		if chain != 0 && !json.Valid([]byte(info)) {
			t.Fatalf("%q: accepted invalid JSON", info)
		}
	})
}

// FuzzContractAccountChain checks the registration rule of contract
// accounts on any accountInfo, account type and network: it never panics,
// every refusal names a field under accountInfo.contractAccount (or
// accountInfo), and an accepted contract account names exactly its type's
// chain on the network, which the type's verifier serves.
func FuzzContractAccountChain(f *testing.F) {
	types := []string{AccountBase, AccountEthereum, AccountPolygon, AccountPlasma, AccountSolana, "ARBITRUM_WALLET", ""}
	for _, s := range []string{`{"contractAccount":{"chainId":8453}}`, `{"contractAccount":{"chainId":1}}`,
		`{"contractAccount":{"chainId":84532}}`, `{"contractAccount":{"chainId":137}}`, `{"contractAccount":{"chainId":1337}}`,
		`{"contractAccount":{"chainId":0}}`, `{}`, ``} {
		for i := range types {
			for n := range 4 {
				f.Add(uint8(i), uint8(n), s)
			}
		}
	}
	vs := DefaultVerifiers()
	vs[AccountBase] = newChainsVerifier(8453, 84532)
	vs[AccountEthereum] = newChainsVerifier(1)
	f.Fuzz(func(t *testing.T, typ, network uint8, info string) {
		n := NewAccount{AccountType: types[int(typ)%len(types)], Info: json.RawMessage(info)}
		nw := Network(network % 4)
		var v apierror.Validation
		vs.checkContractAccount(&v, n, nw)
		if err := v.Err(); err != nil {
			for _, fe := range apierror.As(err).FieldErrors() {
				if !strings.HasPrefix(fe.Field, "accountInfo") {
					t.Fatalf("%s %s %q: refusal of field %q", n.AccountType, nw, info, fe.Field)
				}
			}
			return
		}
		chain, _, err := contractChainOf(n.Info)
		if err != nil && json.Valid(n.Info) {
			t.Fatalf("%s %s %q: accepted a malformed member (%v)", n.AccountType, nw, info, err)
		}
		if chain == 0 {
			return
		}
		c, ok := ContractChainFor(n.AccountType, nw)
		cv, isCV := vs[n.AccountType].(ContractVerifier)
		if !ok || c.ChainID != chain || !isCV || !cv.ServesChain(chain) {
			t.Fatalf("%s %s %q: accepted chain %d; the type's chain is %+v (%v)", n.AccountType, nw, info, chain, c, ok)
		}
	})
}

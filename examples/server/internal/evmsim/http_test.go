package evmsim

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/ownership"
)

// mainnetRows are the chains New(ownership.Mainnet) serves.
func mainnetRows() []ownership.ContractChain {
	var rows []ownership.ContractChain
	for _, row := range ownership.ContractChains() {
		if row.Network == ownership.Mainnet {
			rows = append(rows, row)
		}
	}
	return rows
}

const (
	ownerHex = "0x2c7536E3605D9C16a7a3D7b1898e529396a65c23" // EIP-55
	saltHex  = "0x00000000000000000000000000000000000000000000000000000000000000ff"
)

// TestParseDeploy: what the deploy route accepts, and each refusal with
// the field it names.
func TestParseDeploy(t *testing.T) {
	req, err := parseDeploy([]byte(`{"chainId":8453,"owner":"`+ownerHex+`"}`), mainnetRows())
	if err != nil || req.chainID != 8453 || req.owner != common.HexToAddress(ownerHex) {
		t.Fatalf("%+v %v", req, err)
	}
	for _, owner := range []string{strings.ToLower(ownerHex), "0x" + strings.ToUpper(ownerHex[2:])} {
		if _, err := parseDeploy([]byte(`{"chainId":1,"owner":"`+owner+`"}`), mainnetRows()); err != nil {
			t.Fatalf("%s: %v", owner, err)
		}
	}
	for _, tc := range []struct {
		name, body string
		fields     []string
	}{
		{"case variant", `{"chainID":8453,"owner":"` + ownerHex + `"}`, []string{"chainID"}},
		{"chain as a string", `{"chainId":"8453","owner":"` + ownerHex + `"}`, []string{"chainId"}},
		{"negative chain", `{"chainId":-1,"owner":"` + ownerHex + `"}`, []string{"chainId"}},
		{"fractional chain", `{"chainId":8453.5,"owner":"` + ownerHex + `"}`, []string{"chainId"}},
		{"missing chain", `{"owner":"` + ownerHex + `"}`, []string{"chainId"}},
		{"chain not simulated", `{"chainId":1337,"owner":"` + ownerHex + `"}`, []string{"chainId"}},
		{"testnet chain", `{"chainId":84532,"owner":"` + ownerHex + `"}`, []string{"chainId"}},
		{"missing owner", `{"chainId":8453}`, []string{"owner"}},
		{"owner not hex", `{"chainId":8453,"owner":"0x2c7536e3605d9c16a7a3d7b1898e529396a65cZZ"}`, []string{"owner"}},
		{"owner too short", `{"chainId":8453,"owner":"0x2c7536e3605d9c16a7a3d7b1898e529396a65c"}`, []string{"owner"}},
		{"owner bad checksum", `{"chainId":8453,"owner":"0x2C7536E3605D9C16a7a3D7b1898e529396a65c23"}`, []string{"owner"}},
		{"owner with space", `{"chainId":8453,"owner":" ` + ownerHex + `"}`, []string{"owner"}},
		{"zero owner", `{"chainId":8453,"owner":"0x0000000000000000000000000000000000000000"}`, []string{"owner"}},
		{"both wrong", `{"chainId":5,"owner":"alice"}`, []string{"chainId", "owner"}},
		{"null", `null`, []string{"chainId", "owner"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseDeploy([]byte(tc.body), mainnetRows())
			apierrortest.WantFields(t, err, apierror.InvalidInput, tc.fields...)
		})
	}
	for _, body := range []string{``, `[]`, `{`, `{"chainId":1,"chainId":1}`, `{"chainId":1} {}`, `"x"`} {
		_, err := parseDeploy([]byte(body), mainnetRows())
		apierrortest.Want(t, err, apierror.InvalidInput, "")
	}
}

// TestParseCounterfactual: the salt is 0x and 64 hex digits, and the
// shared members are checked as in the deploy route.
func TestParseCounterfactual(t *testing.T) {
	req, err := parseCounterfactual([]byte(`{"chainId":137,"owner":"`+ownerHex+`","salt":"`+saltHex+`"}`), mainnetRows())
	if err != nil || req.chainID != 137 || req.owner != common.HexToAddress(ownerHex) || req.salt[31] != 0xff {
		t.Fatalf("%+v %v", req, err)
	}
	for _, tc := range []struct {
		name, body string
		fields     []string
	}{
		{"missing salt", `{"chainId":137,"owner":"` + ownerHex + `"}`, []string{"salt"}},
		{"salt without 0x", `{"chainId":137,"owner":"` + ownerHex + `","salt":"` + saltHex[2:] + `"}`, []string{"salt"}},
		{"short salt", `{"chainId":137,"owner":"` + ownerHex + `","salt":"0xff"}`, []string{"salt"}},
		{"long salt", `{"chainId":137,"owner":"` + ownerHex + `","salt":"` + saltHex + `00"}`, []string{"salt"}},
		{"salt not hex", `{"chainId":137,"owner":"` + ownerHex + `","salt":"0x` + strings.Repeat("g", 64) + `"}`, []string{"salt"}},
		{"salt a number", `{"chainId":137,"owner":"` + ownerHex + `","salt":255}`, []string{"salt"}},
		{"all wrong", `{"chainId":0,"owner":"","salt":""}`, []string{"chainId", "owner", "salt"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseCounterfactual([]byte(tc.body), mainnetRows())
			apierrortest.WantFields(t, err, apierror.InvalidInput, tc.fields...)
		})
	}
}

// routes serves c's routes on a mux, without the sandbox around them.
func routes(t *testing.T, c *Chains) http.Handler {
	t.Helper()
	mux := http.NewServeMux()
	if err := c.Register(func(p string, h http.Handler) error { mux.Handle(p, h); return nil }); err != nil {
		t.Fatal(err)
	}
	return mux
}

func post(t *testing.T, h http.Handler, path, body string, out any) int {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", path, strings.NewReader(body)))
	if out != nil {
		if err := json.Unmarshal(rec.Body.Bytes(), out); err != nil {
			t.Fatalf("%s: %q: %v", path, rec.Body, err)
		}
	}
	return rec.Code
}

// TestRoutes: the deploy route answers 201 with a wallet that has code,
// the counterfactual one 200 with what ERC-6492 wraps, and refusals are
// 400 INVALID_INPUT error bodies.
func TestRoutes(t *testing.T) {
	c := newChains(t)
	h := routes(t, c)
	var d DeployResponse
	if code := post(t, h, "/sandbox/contract-wallets", `{"chainId":8453,"owner":"`+strings.ToLower(ownerHex)+`"}`, &d); code != 201 {
		t.Fatalf("deploy: %d %+v", code, d)
	}
	if d.ChainID != 8453 || d.Owner != ownerHex || !common.IsHexAddress(d.Address) || d.Address != common.HexToAddress(d.Address).Hex() {
		t.Fatalf("deploy answered %+v", d)
	}
	var cf CounterfactualResponse
	if code := post(t, h, "/sandbox/contract-wallets/counterfactual", `{"chainId":1,"owner":"`+ownerHex+`","salt":"`+strings.ToUpper(saltHex[:2])+saltHex[2:]+`"}`, &cf); code != 400 {
		t.Fatalf("salt with 0X: %d", code)
	}
	if code := post(t, h, "/sandbox/contract-wallets/counterfactual", `{"chainId":1,"owner":"`+ownerHex+`","salt":"`+saltHex+`"}`, &cf); code != 200 {
		t.Fatalf("counterfactual: %d %+v", code, cf)
	}
	want, err := c.Counterfactual(t.Context(), 1, common.HexToAddress(ownerHex), [32]byte{31: 0xff})
	if err != nil {
		t.Fatal(err)
	}
	if cf.ChainID != 1 || cf.Owner != ownerHex || cf.Salt != saltHex || cf.Address != want.Address.Hex() || cf.Factory != c.Factory().Hex() ||
		cf.FactoryCalldata != "0x"+hex.EncodeToString(want.FactoryCalldata) {
		t.Fatalf("counterfactual answered %+v, want %+v", cf, want)
	}
	// deploy(address,bytes32) is what the factory call invokes.
	if sel := hex.EncodeToString(crypto.Keccak256([]byte("deploy(address,bytes32)"))[:4]); !strings.HasPrefix(cf.FactoryCalldata, "0x"+sel) {
		t.Fatalf("factoryCalldata %s does not call deploy(address,bytes32) (%s)", cf.FactoryCalldata, sel)
	}

	for _, tc := range []struct{ path, body, field string }{
		{"/sandbox/contract-wallets", `{"chainId":8453,"Owner":"` + ownerHex + `"}`, "Owner"},
		{"/sandbox/contract-wallets", `{"chainId":84532,"owner":"` + ownerHex + `"}`, "chainId"},
		{"/sandbox/contract-wallets/counterfactual", `{"chainId":8453,"owner":"` + ownerHex + `"}`, "salt"},
		{"/sandbox/contract-wallets", `{"chainId":8453,"owner":"` + ownerHex + `"` + strings.Repeat(" ", maxBodyBytes) + `}`, ""},
		{"/sandbox/contract-wallets", ``, ""},
	} {
		var e apierror.Error
		if code := post(t, h, tc.path, tc.body, &e); code != 400 {
			t.Fatalf("%s %.80s: %d", tc.path, tc.body, code)
		}
		if tc.field == "" {
			apierrortest.Want(t, &e, apierror.InvalidInput, "")
		} else {
			apierrortest.WantFields(t, &e, apierror.InvalidInput, tc.field)
		}
	}
}

// TestRegisterStopsAtTheFirstError: an error of handle is returned and
// nothing more is registered.
func TestRegisterStopsAtTheFirstError(t *testing.T) {
	var c Chains
	var patterns []string
	boom := errors.New("boom")
	err := c.Register(func(p string, _ http.Handler) error { patterns = append(patterns, p); return boom })
	if !errors.Is(err, boom) || len(patterns) != 1 || patterns[0] != RouteDeploy {
		t.Fatalf("%v %q", err, patterns)
	}
}

// checkParsed fails unless err is nil with a request the routes can use,
// or a 400 INVALID_INPUT.
func checkParsed(t *testing.T, req request, err error, rows []ownership.ContractChain) {
	t.Helper()
	if err != nil {
		e := apierror.As(err)
		if e == nil || e.Code != apierror.InvalidInput {
			t.Fatalf("refusal %v (%T) is not 400 INVALID_INPUT", err, err)
		}
		return
	}
	served := false
	for _, row := range rows {
		served = served || row.ChainID == req.chainID
	}
	if !served || req.owner == (common.Address{}) {
		t.Fatalf("accepted %+v", req)
	}
}

func fuzzSeeds(f *testing.F) {
	for _, s := range []string{
		`{"chainId":8453,"owner":"` + ownerHex + `"}`,
		`{"chainId":1,"owner":"` + strings.ToLower(ownerHex) + `","salt":"` + saltHex + `"}`,
		`{"chainId":137,"owner":"` + ownerHex + `","salt":"0x` + strings.Repeat("Ab", 32) + `"}`,
		`{"chainId":18446744073709551615,"owner":"0x","salt":"0x"}`,
		`{"chainId":1e3,"owner":null}`,
		`{"ChainId":1}`, `{"chainId":1,"chainId":2}`, `null`, `[]`, ``, `{"owner":"\u0030x00"}`,
	} {
		f.Add([]byte(s))
	}
}

// FuzzParseDeploy: any body is a usable request or 400 INVALID_INPUT,
// never a panic.
func FuzzParseDeploy(f *testing.F) {
	fuzzSeeds(f)
	rows := mainnetRows()
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := parseDeploy(body, rows)
		checkParsed(t, req, err, rows)
	})
}

// FuzzParseCounterfactual: as FuzzParseDeploy, with the salt.
func FuzzParseCounterfactual(f *testing.F) {
	fuzzSeeds(f)
	rows := mainnetRows()
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := parseCounterfactual(body, rows)
		checkParsed(t, req, err, rows)
	})
}
